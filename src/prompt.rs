//! Prompt templates: every text the models or users read comes from prompts/,
//! embedded at build time and rendered with minijinja.

use std::sync::OnceLock;

use minijinja::Environment;
use serde::Serialize;

/// Every template, by name. Adding a template is one line here.
const TEMPLATES: &[(&str, &str)] = &[
    ("branch_question", include_str!("../prompts/branch_question.md.j2")),
    ("branch_system", include_str!("../prompts/branch_system.md.j2")),
    ("channel_system", include_str!("../prompts/channel_system.md.j2")),
    ("channel_turn", include_str!("../prompts/channel_turn.md.j2")),
    ("command_ack", include_str!("../prompts/command_ack.md")),
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

fn environment() -> &'static Environment<'static> {
    static ENVIRONMENT: OnceLock<Environment<'static>> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| {
        let mut environment = Environment::new();
        environment.set_trim_blocks(true);
        for (name, source) in TEMPLATES {
            // The templates are part of the binary and covered by tests, so a
            // broken one fails `cargo test`, never a request.
            if let Err(error) = environment.add_template(name, source) {
                panic!("prompt template {name} does not parse: {error}");
            }
        }
        environment
    })
}

/// Renders a template with the given context, trimmed.
pub fn render(name: &str, context: impl Serialize) -> Result<String, minijinja::Error> {
    let template = environment().get_template(name)?;
    Ok(template.render(context)?.trim().to_string())
}

/// A template's text with no variables (tool descriptions, fixed messages).
pub fn text(name: &str) -> String {
    render(name, ()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_renders_without_variables_or_with_defaults() {
        for (name, _) in TEMPLATES {
            assert!(render(name, ()).is_ok(), "{name} failed to render");
        }
    }

    #[test]
    fn fixed_texts_are_not_empty() {
        for name in ["tools/reply", "tools/skip", "tools/channel_disengage", "model_failure", "notices/loop_guard"] {
            assert!(!text(name).is_empty(), "{name}");
        }
    }
}
