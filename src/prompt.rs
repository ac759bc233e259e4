//! Prompt templates: every text the models or users read comes from prompts/,
//! embedded at build time and rendered with minijinja (`trim_blocks` on, lenient
//! undefined values, no auto-escaping: the templates' names carry no `.html`).
//! Only the features the templates use are compiled in (see Cargo.toml):
//! statements, expressions, `loop`, and `{% include %}`; a template that needs a
//! filter or a macro turns on `builtins` or `macros` there.

use std::sync::OnceLock;

use minijinja::Environment;
use serde::Serialize;

/// A template that does not parse or cannot render.
pub type Error = minijinja::Error;

/// Every template, by name. Adding a template is one line here.
const TEMPLATES: &[(&str, &str)] = &[
    ("approval_ask", include_str!("../prompts/approval_ask.md.j2")),
    ("approval_settled", include_str!("../prompts/approval_settled.md.j2")),
    ("budget_exhausted", include_str!("../prompts/budget_exhausted.md.j2")),
    ("branch_question", include_str!("../prompts/branch_question.md.j2")),
    ("branch_system", include_str!("../prompts/branch_system.md.j2")),
    ("channel_system", include_str!("../prompts/channel_system.md.j2")),
    ("channel_turn", include_str!("../prompts/channel_turn.md.j2")),
    ("command_ack", include_str!("../prompts/command_ack.md")),
    ("resend_note", include_str!("../prompts/resend_note.md")),
    ("compactor_system", include_str!("../prompts/compactor_system.md.j2")),
    ("cortex_bulletin", include_str!("../prompts/cortex_bulletin.md.j2")),
    ("describe_image", include_str!("../prompts/describe_image.md")),
    ("file_refused", include_str!("../prompts/file_refused.md.j2")),
    ("history_message", include_str!("../prompts/history_message.md.j2")),
    ("history_summaries", include_str!("../prompts/history_summaries.md.j2")),
    ("identity_context", include_str!("../prompts/identity_context.md.j2")),
    ("model_failure", include_str!("../prompts/model_failure.md.j2")),
    ("not_set_up", include_str!("../prompts/not_set_up.md.j2")),
    ("schedule_disabled", include_str!("../prompts/schedule_disabled.md.j2")),
    ("notices/group_nudge", include_str!("../prompts/notices/group_nudge.md")),
    ("notices/loop_guard", include_str!("../prompts/notices/loop_guard.md")),
    ("tools/attachment_read", include_str!("../prompts/tools/attachment_read.md")),
    ("tools/attachment_recall", include_str!("../prompts/tools/attachment_recall.md")),
    ("tools/branch", include_str!("../prompts/tools/branch.md")),
    ("tools/browse", include_str!("../prompts/tools/browse.md")),
    ("tools/cancel", include_str!("../prompts/tools/cancel.md")),
    ("tools/channel_disengage", include_str!("../prompts/tools/channel_disengage.md")),
    ("tools/channel_recall", include_str!("../prompts/tools/channel_recall.md")),
    ("tools/file_edit", include_str!("../prompts/tools/file_edit.md")),
    ("tools/file_list", include_str!("../prompts/tools/file_list.md")),
    ("tools/file_read", include_str!("../prompts/tools/file_read.md")),
    ("tools/file_write", include_str!("../prompts/tools/file_write.md")),
    ("tools/http_fetch", include_str!("../prompts/tools/http_fetch.md")),
    ("tools/memory_delete", include_str!("../prompts/tools/memory_delete.md")),
    ("tools/memory_recall", include_str!("../prompts/tools/memory_recall.md")),
    ("tools/memory_save", include_str!("../prompts/tools/memory_save.md")),
    ("tools/person_forget", include_str!("../prompts/tools/person_forget.md")),
    ("tools/person_note", include_str!("../prompts/tools/person_note.md")),
    ("tools/react", include_str!("../prompts/tools/react.md")),
    ("tools/reply", include_str!("../prompts/tools/reply.md")),
    ("tools/route", include_str!("../prompts/tools/route.md")),
    ("tools/run_code", include_str!("../prompts/tools/run_code.md")),
    ("tools/schedule", include_str!("../prompts/tools/schedule.md")),
    ("tools/send_file", include_str!("../prompts/tools/send_file.md")),
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
    ("modal_refused", include_str!("../prompts/modal_refused.md")),
    ("tools/send_agent_message", include_str!("../prompts/tools/send_agent_message.md")),
    ("tools/conclude_link", include_str!("../prompts/tools/conclude_link.md")),
    ("link_closed", include_str!("../prompts/link_closed.md.j2")),
    ("tools/open_skill", include_str!("../prompts/tools/open_skill.md")),
];

/// Every template, parsed once.
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
pub fn render(name: &str, context: impl Serialize) -> Result<String, Error> {
    Ok(environment().get_template(name)?.render(context)?.trim().to_string())
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
                "id": 7, "max_words": 300, "interactive": true, "identity": "## Soul\n\nKind {{ x }}.",
                "soul": "Warm.", "user": "Ada, in Berlin.", "conversation": "Be formal here.",
                "sections": [{"title": "Facts", "memories": ["a", "b"]}, {"title": "Empty", "memories": []}],
                "people": [{"name": "Dana", "key": "telegram:7", "seen_as": "dana.w", "is_bot": false,
                "time_zone": "Europe/Berlin", "language": "German", "notes": ["prefers short answers", "has a cat"]},
                {"name": "helper", "key": "slack:B1", "is_bot": true, "notes": []}],
                "skills": [{"name": "haiku", "description": "Answers in a haiku."}, {"name": "x"}],
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
            "identity",
            "soul",
            "user",
            "conversation",
            "people",
            "skills",
        ];
        for value in odd.as_array().unwrap() {
            let mut context = realistic("loop_guard", true);
            for name in names {
                context[name] = value.clone();
            }
            contexts.push(context);
            let mut nested = realistic("group_nudge", false);
            for list in ["running", "completed", "context", "current", "sections", "people"] {
                nested[list] = json!([{ "label": value, "id": value, "task": value, "status": value, "waiting": value,
                    "failed": value, "body": value, "author": value, "text": value, "attachments": value,
                    "title": value, "memories": value, "name": value, "key": value, "seen_as": value,
                    "is_bot": value, "time_zone": value, "language": value, "notes": value }]);
            }
            contexts.push(nested);
        }
        contexts
    }

    /// Each template's output over every context in [`contexts`] (each rendering, or
    /// `<error>`, followed by a NUL), SHA-256. Recorded from the hand-written renderer
    /// minijinja replaced, which a test had held equal to minijinja on these contexts:
    /// the switch changed no prompt. A template edit changes its line here on purpose.
    const RENDERED: &[(&str, &str)] = &[
        ("approval_ask", "dee5954373c622f351298c72dbdba6f2751b21038e82b569e046cc4f36892b6d"),
        ("approval_settled", "f30028f6d858d8ca2111caed552682f823d8e4b87e1bd9cda49f0e3a2f550a4e"),
        ("branch_question", "c64ffe04d9520b78a7dec356538c4f44caf610f872563290308fe77c771fdb1d"),
        ("branch_system", "fea5fdb7df2f314c08bf2b9981a4f68b5cd6f95e1b6dae36d7ae13c7ff641ff5"),
        ("budget_exhausted", "4186e509a4e87a3e3898d0155b29fd891d4a83f93f1a0977dd42fde72dfd8b6e"),
        ("channel_system", "4cc703d2d13ddbe1605f56c5ba7b12aebb0f29f1d172610aad796d2f45afce76"),
        ("channel_turn", "8761a7169d9724863328438dec02da41ee871a53440482214d3ed6787836c9e4"),
        ("command_ack", "033dcde9dd7c365bb338322a90d40c417e66f3d169f9f6a7d5edceaf2cebdc51"),
        ("compactor_system", "930ecf29dc7ff5f4a5b55337d178210e69f6371dc548fcb0c6accde65b202900"),
        ("cortex_bulletin", "f193728008206ec258d9a4197f56135cc3faca54167e22fe0acd247f5e4cbb52"),
        ("describe_image", "3fffd31eaae088e6e96b58ccf60ef69886c8e5c8e17613027f8e960471b4301f"),
        ("file_refused", "4ad259397610a825b93a3e68176783c158ceb0e977cb288ba99ee7fa0884d5fe"),
        ("history_message", "1903d1203e941ff6934fce1885686df040516a70e36031361bd7e9407b126864"),
        ("history_summaries", "676d7ea57c778a7af92c1b7226896577daf51d2e44c407e0cd18650879e8b350"),
        ("identity_context", "42f6e306d3139f3a4729f3729dbc6c7cfe2d8866723c8904721e2eeba5cb12ee"),
        ("model_failure", "4a6fc5516ced0bc81681ba71e5dfb6ad3bc50219eccb8a5de5a276851d824449"),
        ("not_set_up", "f05c025be2dcabbe7f653deae19c6a401157aa6395ff2389bb9eedec7cc3a8a9"),
        ("notices/group_nudge", "9d8a994c44c81c46d082569e93c1f9e1efc3abbb4215c91af8ae52ea31ee2b10"),
        ("notices/loop_guard", "5753a8ecdf3923ef602cb3ff0b8e5ba3cd4b79305996fa536864c706e0dd0e07"),
        ("resend_note", "25df2d72c7b2fefba4f7f2c87806df456df48021b93e610619d489179ca2c910"),
        ("schedule_disabled", "2ebc184d63db1c87d5af26dd232c1fbd5689fd2634dd2c2d59ab0f7bd6709abc"),
        ("tools/attachment_read", "7291eae924d8e81c0b4ddc662d6e08a6e27e4ccc313ffc5df4514c49278b3a02"),
        ("tools/attachment_recall", "a4e2b51b194499e5b20b6de9b2f6b6662a95673343ca8d1b0b344b1496373794"),
        ("tools/branch", "2eed2f9aef86ce03e85b65d94eaad376d5173f52515d71c53715eb466f31ef03"),
        ("tools/browse", "331d79c2d0ad6ac5d6a5b8ac5acf0ce4ff9c290fc59fa2fb642f6948388d2cc4"),
        ("tools/cancel", "99825a2790d5fa6dca664f254e28df634d2d7bd28eceae9c2f4894fec26fd6b8"),
        ("tools/channel_disengage", "0fd3acd37c4ac8e4e7cbd44ec60c4da68bcecb3a4ea4a745b2c4d789973e1080"),
        ("tools/channel_recall", "f1627731e165fbc2fc03bc85ce34e84b895ab130bcb688c36c255029c7b0b868"),
        ("tools/file_edit", "025918088ecf96bb1932227e9488d71024a80687f99750f34cf2d7d3c90af376"),
        ("tools/file_list", "f8b7d6a4e22c92289aa123a02bdc422f2189e73f5e0371a2381167d6d8c6156d"),
        ("tools/file_read", "4dde8eff5ceb9ba307a3dfa7b59e2bac4e0d2ba9a4245509b547b38919928c76"),
        ("tools/file_write", "f0100814f9927c4a1621aa80eca74f93e6ce482adc57acafe87347e12fbedb0b"),
        ("tools/http_fetch", "aa7c3ad10e53d562cb49aaaab41dbe17d1783f4bc03061c9c8c8b92ef21c4807"),
        ("tools/memory_delete", "213d4bef39e450ff7e0618442ad3622c51909eb5e8ee1296b5a0ff1199eb8072"),
        ("tools/memory_recall", "f2f390fd5152c27db794c2a039a96e949146d024d98d986e19a19e3906e952f8"),
        ("tools/memory_save", "26fa6ba594368a1f9bcfa54c61399f01a755307b8f1230a98627d55410cced97"),
        ("tools/person_forget", "99b3d36eca80d15d6e2b9e24e2e2952d3ef813fee79ee1e4d3848ee703cb89f9"),
        ("tools/person_note", "5fe926e2e8be8030c183c35379d045b6fc0c3c8f7afda8f8801d1aeabc93f4c8"),
        ("tools/react", "5b5050ed428f9c7b6c11a16a7ac85ccfbe649bebb47545fe931df08e77badbe9"),
        ("tools/reply", "5eb9ed6a4e4dceb5b431b0dbd0eb9b6a35ef39dcb85d87a7a654691d5bc15784"),
        ("tools/route", "3fbd91c50182ff9fa47fcae206ccbbeffa352622dde8be028cafcf3d68fd79f4"),
        ("tools/run_code", "c293d706d056097c82b512a6a062846da7742d12611d8a9d19bd4dc40e04e157"),
        ("tools/schedule", "a491e56d0ca35bbb4647e226471a29fc1195b11ec37c86d3ca0bec28005a28ec"),
        ("tools/send_file", "e4d8c6a45ded845fb0d752300fbe62e70db7546d5ff9a535db3e2b2fbc4b5bde"),
        ("tools/set_status", "2215ff00f0d5f15a671bf1a0523a23b5bf5a15d99bfddb241ae09b6a6bfd3f19"),
        ("tools/skip", "df9fdbe2156f285bf221ed4da9e6e1931297be7fe0f5784b503e76fc436e9b9d"),
        ("tools/spawn_worker", "7aa4c06d1af428269f54459c01b034dcf31d801633c722ad4e0b5319b435c6c3"),
        ("tools/task_create", "2bce4a671cbc77428d22bb8b832db59fe5cef65b54b273ac7ebf1430aef8209e"),
        ("tools/task_list", "f81c0d00fc4acde5210fb3e4dc76e99f1df52b17b15d1f31772f951188b0ce44"),
        ("tools/task_update", "91bef88650a2fede66c619af841694a8acec8a110af5446b2487dd24aa164042"),
        ("tools/web_search", "3a32f300a1ac9c4e330dc994d04ce03c87180fd8a3ba8e03ee8570f236ad982d"),
        ("tools/worker_inspect", "9d12d337eb0716b7e7a0d694b23edac3518854197b2e4c0b5fc130a9cce6dafa"),
        ("worker_nudge", "383a4a0f39a25fc3ef6e67844ee02bf4a02e3bcb92f318f9c8f66edfeb8e9053"),
        ("worker_system", "33ad19a170a9b11866c4dbef5ad9a126a756178fcf80b7529750ce136991bc56"),
        ("worker_task", "30fddd7e8487de4fa0f1cd77b775efb0d50ea7a41687653cf110e9fcf82a743a"),
        ("modal_refused", "9e4d47d82e3aae01a4cf4b035ec4001890a4897531cfb628d04cc93a05d7b435"),
        ("tools/send_agent_message", "68c557dd4aa8af39b58972b313fb39dfc310abc74e049874fb30287bb08e47f0"),
        ("tools/conclude_link", "3b105bd33a13012e2cb5cfa46ab54b4425e245c543844a836bde9c773364ec67"),
        ("link_closed", "a68201ceed1fd86e98b4ebf2948d4e808e1987d07fdf920f21b6190cd1c419c6"),
        ("tools/open_skill", "95c778a98fe9d0ac12f1783f67ecb6d96b95ddfb58163a2cc2a79c870a105027"),
    ];

    fn digest(name: &str) -> String {
        use sha2::{Digest, Sha256};
        let template = environment().get_template(name).unwrap();
        let mut hasher = Sha256::new();
        for context in contexts() {
            let rendered = template.render(&context).unwrap_or_else(|_| "<error>".to_string());
            hasher.update(rendered.as_bytes());
            hasher.update([0]);
        }
        hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
    }

    #[test]
    fn every_template_renders_what_it_rendered_before() {
        assert_eq!(RENDERED.len(), TEMPLATES.len(), "a template without a recorded digest");
        for (name, expected) in RENDERED {
            assert_eq!(digest(name), *expected, "{name} renders differently");
        }
    }

    #[test]
    fn an_approval_says_why_it_asks_when_containment_asked() {
        let ask = |why: Option<&str>| {
            let context =
                json!({ "kind": "tool", "what": "http_fetch", "arguments": "{}", "asker": "Ada", "why": why });
            render("approval_ask", context).unwrap()
        };
        assert!(ask(Some("evil.example is new")).contains("It asks because evil.example is new."));
        assert!(!ask(None).contains("It asks because"));
    }

    #[test]
    fn a_turn_reads_as_written() {
        let context = &contexts()[2];
        let turn = render("channel_turn", context).unwrap();
        assert!(turn.contains("Ann"), "{turn}");
        let message = render("history_message", json!({ "author": "Ann", "text": "hi {{ there }}" })).unwrap();
        // Values are printed, never rendered again as templates.
        assert!(message.contains("hi {{ there }}"), "{message}");
        assert!(render("no_such_template", ()).is_err());
    }

    #[test]
    fn prompt_authors_get_jinja() {
        // Beyond what the templates use today: `set`, `loop.last`, `not`.
        let source =
            "{% set sep = ', ' %}{% for x in items %}{{ x }}{% if not loop.last %}{{ sep }}{% endif %}{% endfor %}";
        let rendered = environment().render_str(source, json!({ "items": [1, 2, 3] }));
        assert_eq!(rendered.unwrap(), "1, 2, 3");
    }

    #[test]
    fn fixed_texts_are_not_empty() {
        for name in ["tools/reply", "tools/skip", "tools/channel_disengage", "model_failure", "notices/loop_guard"] {
            assert!(!text(name).is_empty(), "{name}");
        }
    }

    #[test]
    fn approval_messages_say_what_who_and_until_when() {
        let ask = render(
            "approval_ask",
            json!({ "kind": "tool", "what": "mcp_tracker_create_issue", "arguments": "{\"title\":\"x\"}",
                    "asker": "Ada", "until": "2026-11-25 10:00 UTC" }),
        )
        .unwrap();
        for part in ["`mcp_tracker_create_issue`", "{\"title\":\"x\"}", "Asked by Ada", "2026-11-25 10:00 UTC"] {
            assert!(ask.contains(part), "{part}: {ask}");
        }
        let task =
            render("approval_ask", json!({ "kind": "task", "what": "Write the report", "arguments": "" })).unwrap();
        assert!(task.contains("**Write the report**") && task.contains("backlog"), "{task}");
        let settled = |verdict: &str| {
            render("approval_settled", json!({ "kind": "tool", "what": "t", "verdict": verdict, "by": "Bo" })).unwrap()
        };
        assert!(settled("approved").starts_with("**Approved** by Bo"));
        assert!(settled("denied").contains("was not run"));
        assert!(settled("timed_out").starts_with("**Timed out:**"));
        assert!(settled("withdrawn").starts_with("**Withdrawn:**"));
    }
}
