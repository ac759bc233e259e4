//! Prompt templates: every text the models or users read comes from prompts/,
//! embedded at build time and rendered with the Jinja subset in [`template`]
//! (what minijinja would render, with `trim_blocks`; a test checks each template
//! against minijinja itself).

mod template;

use std::sync::OnceLock;

use serde::Serialize;

pub use template::Error;

/// Every template, by name. Adding a template is one line here.
const TEMPLATES: &[(&str, &str)] = &[
    ("budget_exhausted", include_str!("../prompts/budget_exhausted.md.j2")),
    ("branch_question", include_str!("../prompts/branch_question.md.j2")),
    ("branch_system", include_str!("../prompts/branch_system.md.j2")),
    ("channel_system", include_str!("../prompts/channel_system.md.j2")),
    ("channel_turn", include_str!("../prompts/channel_turn.md.j2")),
    ("command_ack", include_str!("../prompts/command_ack.md")),
    ("resend_note", include_str!("../prompts/resend_note.md")),
    ("compactor_system", include_str!("../prompts/compactor_system.md.j2")),
    ("cortex_bulletin", include_str!("../prompts/cortex_bulletin.md.j2")),
    ("history_message", include_str!("../prompts/history_message.md.j2")),
    ("history_summaries", include_str!("../prompts/history_summaries.md.j2")),
    ("model_failure", include_str!("../prompts/model_failure.md.j2")),
    ("schedule_disabled", include_str!("../prompts/schedule_disabled.md.j2")),
    ("notices/group_nudge", include_str!("../prompts/notices/group_nudge.md")),
    ("notices/loop_guard", include_str!("../prompts/notices/loop_guard.md")),
    ("tools/branch", include_str!("../prompts/tools/branch.md")),
    ("tools/cancel", include_str!("../prompts/tools/cancel.md")),
    ("tools/channel_disengage", include_str!("../prompts/tools/channel_disengage.md")),
    ("tools/channel_recall", include_str!("../prompts/tools/channel_recall.md")),
    ("tools/http_fetch", include_str!("../prompts/tools/http_fetch.md")),
    ("tools/memory_delete", include_str!("../prompts/tools/memory_delete.md")),
    ("tools/memory_recall", include_str!("../prompts/tools/memory_recall.md")),
    ("tools/memory_save", include_str!("../prompts/tools/memory_save.md")),
    ("tools/react", include_str!("../prompts/tools/react.md")),
    ("tools/reply", include_str!("../prompts/tools/reply.md")),
    ("tools/route", include_str!("../prompts/tools/route.md")),
    ("tools/schedule", include_str!("../prompts/tools/schedule.md")),
    ("tools/set_status", include_str!("../prompts/tools/set_status.md")),
    ("tools/skip", include_str!("../prompts/tools/skip.md")),
    ("tools/spawn_worker", include_str!("../prompts/tools/spawn_worker.md")),
    ("tools/task_create", include_str!("../prompts/tools/task_create.md")),
    ("tools/task_list", include_str!("../prompts/tools/task_list.md")),
    ("tools/task_update", include_str!("../prompts/tools/task_update.md")),
    ("tools/web_search", include_str!("../prompts/tools/web_search.md")),
    ("tools/worker_inspect", include_str!("../prompts/tools/worker_inspect.md")),
    ("worker_nudge", include_str!("../prompts/worker_nudge.md")),
    ("worker_system", include_str!("../prompts/worker_system.md.j2")),
    ("worker_task", include_str!("../prompts/worker_task.md.j2")),
];

/// Every template, parsed once.
fn environment() -> &'static [(&'static str, Vec<template::Node>)] {
    static ENVIRONMENT: OnceLock<Vec<(&'static str, Vec<template::Node>)>> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| {
        TEMPLATES
            .iter()
            .map(|(name, source)| match template::parse(source) {
                Ok(nodes) => (*name, nodes),
                // The templates are part of the binary and covered by tests, so a
                // broken one fails `cargo test`, never a request.
                Err(error) => panic!("prompt template {name} does not parse: {error}"),
            })
            .collect()
    })
}

fn find(name: &str) -> Option<&'static [template::Node]> {
    environment().iter().find(|(candidate, _)| *candidate == name).map(|(_, nodes)| nodes.as_slice())
}

/// Renders a template with the given context, trimmed.
pub fn render(name: &str, context: impl Serialize) -> Result<String, Error> {
    let nodes = find(name).ok_or_else(|| Error::new(format!("template {name} not found")))?;
    let context = serde_json::to_value(context).map_err(|error| Error::new(error.to_string()))?;
    Ok(template::render(nodes, &context, &find)?.trim().to_string())
}

/// A template's text with no variables (tool descriptions, fixed messages).
pub fn text(name: &str) -> String {
    render(name, ()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_template_renders_without_variables_or_with_defaults() {
        for (name, _) in TEMPLATES {
            assert!(render(name, ()).is_ok(), "{name} failed to render");
        }
    }

    /// minijinja as the prompts were rendered before (the reference for every test below).
    fn minijinja() -> minijinja::Environment<'static> {
        let mut environment = minijinja::Environment::new();
        environment.set_trim_blocks(true);
        for (name, source) in TEMPLATES {
            environment.add_template(name, source).unwrap();
        }
        environment
    }

    /// Contexts with every variable the templates use: realistic ones, empty ones,
    /// and values of every other type in each place.
    fn contexts() -> Vec<serde_json::Value> {
        let odd = json!([1, -2, 2.5, 1e21, 3.0, "q\"uote\n\u{e9}", null, true, false, {"b": false, "a": 1.0}, [], {}]);
        let process = json!({ "id": "p1", "label": "worker", "task": "count", "status": "half way", "waiting": false,
            "body": "done: 42", "failed": false, "interactive": true });
        let message = json!({ "author": "Ann", "text": "hi {{ there }}", "attachments": ["image", "file"] });
        let realistic = |notice: &str, is_dm: bool| {
            json!({
                "bot_name": "edgebot", "platform": "telegram", "is_dm": is_dm, "now_utc": "2026-01-01 10:00",
                "bulletin": "Ann likes tea.", "running": [process, {"id": "p2", "label": "branch", "task": "t",
                "status": null, "waiting": true}], "completed": [process, {"id": "p3", "label": "branch", "task": "t",
                "body": "b", "failed": true}, {"id": "p4", "waiting": true}], "context": [message],
                "current": [message, {"author": "Bo", "text": "yo", "attachments": []}], "notice": notice,
                "summaries": ["first", "second"], "author": "Ann", "text": "hello", "question": "why?", "task": "do it",
                "id": 7, "max_words": 300, "interactive": true,
                "sections": [{"title": "Facts", "memories": ["a", "b"]}, {"title": "Empty", "memories": []}],
            })
        };
        let mut contexts = vec![
            json!(null),
            json!({}),
            realistic("loop_guard", true),
            realistic("group_nudge", false),
            realistic("", false),
            json!({ "running": [], "completed": [], "context": [], "current": [], "summaries": [], "sections": [] }),
        ];
        let names = [
            "bot_name",
            "platform",
            "is_dm",
            "now_utc",
            "bulletin",
            "running",
            "completed",
            "context",
            "current",
            "notice",
            "summaries",
            "author",
            "text",
            "question",
            "task",
            "id",
            "max_words",
            "interactive",
            "sections",
        ];
        for value in odd.as_array().unwrap() {
            let mut context = realistic("loop_guard", true);
            for name in names {
                context[name] = value.clone();
            }
            contexts.push(context);
            let mut nested = realistic("group_nudge", false);
            for list in ["running", "completed", "context", "current", "sections"] {
                nested[list] = json!([{ "label": value, "id": value, "task": value, "status": value, "waiting": value,
                    "failed": value, "body": value, "author": value, "text": value, "attachments": value,
                    "title": value, "memories": value }]);
            }
            contexts.push(nested);
        }
        contexts
    }

    #[test]
    fn every_template_renders_as_minijinja_renders_it() {
        let reference = minijinja();
        for (name, _) in TEMPLATES {
            for context in contexts() {
                let theirs = reference.get_template(name).unwrap().render(&context);
                let ours = template::render(find(name).unwrap(), &context, &find);
                match (&theirs, &ours) {
                    (Ok(theirs), Ok(ours)) => assert_eq!(ours, theirs, "{name} with {context}"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("{name} with {context}: minijinja {theirs:?}, ours {ours:?}"),
                }
            }
        }
    }

    #[test]
    fn the_supported_syntax_renders_as_minijinja_renders_it() {
        let sources: &[&'static str] = &[
            "{{ a }}|{{ b }}|{{ missing }}|{{ none }}|{{ true }}|{{ False }}|{{ 'x' }}|{{ \"y\\\"z\" }}|{{ 42 }}",
            "{% if a == 'x' %}1{% elif not b %}2{% else %}3{% endif %}",
            "{% if missing %}1{% elif zero %}2{% elif empty %}3{% elif s %}4{% endif %}",
            "{{ a or b }} {{ a and b }} {{ not a }} {{ (a or b) and c }} {{ missing or 'd' }} {{ zero and x }}",
            "{% for x in list %}{{ loop.index }}/{{ loop.length }}{% if loop.first %}F{% endif %}\
             {% if loop.last %}L{% endif %}{{ x }} {% else %}empty{% endfor %}",
            "{% for x in empty %}{{ x }}{% else %}none{% endfor %}{% for x in missing %}{{ x }}{% endfor %}",
            "{% for k in map %}{{ k }};{% endfor %}{% for c in s %}{{ c }}.{% endfor %}{% for x in n %}{% endfor %}",
            "{% for x in list %}{% for y in list %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}\
             {% endfor %}{{ loop.index }}{% endfor %}{{ x }}",
            "a\n{% if a %}\nb\n{% endif %}\nc\n",
            "x\r\n{% if a %}\r\ny{% endif %}\r\n\n",
            "{# a comment #}\nafter {# another\n #}{{ a }}\n\n",
            "{{ a == 'x' }} {{ one == onef }} {{ t == 1 }} {{ t == true }} {{ n == none }} {{ missing == none }} \
             {{ missing == other }} {{ list == list }} {{ map == map }} {{ a != 'x' }} {{ one == '1' }} {{ s == s }}",
            "{{ list }} {{ map }} {{ f }} {{ whole }} {{ big }} {{ neg }} {{ n }} {{ t }} {{ nested }}",
            "{{ s.attr }}{{ n.attr }}{{ list.attr }}{{ map.a }}{{ map.missing }}{{ nested.inner.deep }}",
            "{{ missing.attr }}",
            "{% for x in t %}{% endfor %}",
            "text with { braces } and {x} and a lone {",
            "",
            "\n",
        ];
        let context = json!({
            "a": "x", "b": 0, "c": [1], "zero": 0, "empty": [], "s": "héllo", "n": null, "t": true, "one": 1, "onef": 1.0,
            "list": ["p", 2, 2.5, null, false, {"k": "v"}], "map": {"b": 1, "a": "\"q\""}, "f": 1.5, "whole": 2.0,
            "big": 1e21, "neg": -3, "nested": {"inner": {"deep": [true, "x\ty"]}},
        });
        let reference = minijinja();
        for source in sources {
            let theirs = reference.render_str(source, &context);
            let ours = template::parse(source).and_then(|nodes| template::render(&nodes, &context, &find));
            match (&theirs, &ours) {
                (Ok(theirs), Ok(ours)) => assert_eq!(ours, theirs, "{source:?}"),
                // Both refuse an attribute of undefined and iterating a bool.
                (Err(_), Err(_)) => assert!(source.contains("missing.attr") || source.contains("in t %"), "{source:?}"),
                _ => panic!("{source:?}: minijinja {theirs:?}, ours {ours:?}"),
            }
        }
    }

    #[test]
    fn other_syntax_is_refused_when_the_templates_load() {
        for source in [
            "{{ a|upper }}",
            "{% set x = 1 %}",
            "{{- a }}",
            "{{ a -}}",
            "{{ loop }}",
            "{{ x[0] }}",
            "{% if a %}",
            "{% endif %}",
            "{% for x in y %}",
            "{{ a < b }}",
            "{{ 1.5 }}",
            "{% macro m() %}{% endmacro %}",
            "{% include name %}",
            "{{ a == b == c }}",
            "{# unclosed",
            "{{ 'unclosed }}",
            "{% for loop in x %}{% endfor %}",
        ] {
            assert!(template::parse(source).is_err(), "{source:?} parsed");
        }
    }

    #[test]
    fn fixed_texts_are_not_empty() {
        for name in ["tools/reply", "tools/skip", "tools/channel_disengage", "model_failure", "notices/loop_guard"] {
            assert!(!text(name).is_empty(), "{name}");
        }
    }
}
