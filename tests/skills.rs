//! Skills (docs/skills.md): an operator installs a skill (JSON or a zip) for an
//! agent, lists, disables, enables and restores it; the channel's prompt lists
//! the enabled ones, a turn opens one with `open_skill` and follows it, and a
//! worker's `run_code` imports a skill's script from `skills/{name}/`. A skill
//! with a secret, an oversized file or a bad path is refused whole.

use std::io::Write;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{dm_update, wait_for, Scripted, TestEnv};
use crate::workers::{spawn, status, tool_results, worker_requests, WORKER};

const SKILLS: &str = "/api/agents/default/skills";

const HAIKU: &str = "---\nname: haiku\ndescription: Answers in a haiku when someone asks for a poem.\n---\n\n\
                     Answer in exactly three lines of 5, 7 and 5 syllables. HAIKU-RULE-7.\n";

fn system(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

/// A zip of a folder `haiku/` as a file manager makes it.
fn zipped(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (path, text) in entries {
        writer.start_file(*path, options).unwrap();
        writer.write_all(text.as_bytes()).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

async fn install_zip(env: &TestEnv, zip: Vec<u8>) -> (u16, Value) {
    let headers = [
        ("authorization", format!("Bearer {}", crate::harness::ADMIN_TOKEN)),
        ("content-type", "application/zip".to_string()),
    ];
    let response = env.post(SKILLS, &headers, zip).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Sends a DM and returns the system prompt of the turn's first model request.
async fn turn_prompt(env: &TestEnv, update_id: i64, text: &str) -> String {
    let before = env.llm.requests().len();
    env.telegram_update(&dm_update(update_id, 501, text)).await;
    wait_for("the turn's model request", Duration::from_secs(20), || async {
        env.llm.requests().get(before).map(system)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_installed_skill_is_listed_opened_and_followed_and_bad_skills_are_refused() {
    let env = TestEnv::start().await;
    // Installed as a zip (a folder zipped), then a new version as JSON.
    let (code, installed) =
        install_zip(&env, zipped(&[("haiku/SKILL.md", HAIKU), ("haiku/examples.md", "Old pond")])).await;
    assert_eq!(code, 200, "{installed}");
    assert_eq!((installed["name"].as_str(), installed["version"].as_i64()), (Some("haiku"), Some(1)));
    assert_eq!((installed["enabled"].as_bool(), installed["author"].as_str()), (Some(true), Some("admin token")));
    assert_eq!(installed["paths"], json!(["SKILL.md", "examples.md"]));
    let v2 = json!({ "files": { "SKILL.md": HAIKU.replace("HAIKU-RULE-7", "HAIKU-RULE-8") } });
    let (code, updated) = env.admin_send(Method::POST, SKILLS, Some(v2.clone())).await;
    assert_eq!(
        (code, updated["version"].as_i64(), updated["saved"].as_bool()),
        (200, Some(2), Some(true)),
        "{updated}"
    );
    let (_, again) = env.admin_send(Method::POST, SKILLS, Some(v2)).await;
    assert_eq!((again["version"].as_i64(), again["saved"].as_bool()), (Some(2), Some(false)), "same files: no version");
    let listed = env.admin(SKILLS).await;
    assert_eq!(listed["skills"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["skills"][0]["description"], "Answers in a haiku when someone asks for a poem.");

    // Refused whole, nothing stored: a key in a file (which file, never the key), an
    // oversized file, a hidden file, a path out, no operator.
    let key = format!("sk-ant-api03-{}", "Q".repeat(40));
    let refusals = [
        (
            json!({ "files": { "SKILL.md": HAIKU, "scripts/call.js": format!("const KEY = '{key}';") } }),
            400,
            "scripts/call.js",
        ),
        (json!({ "files": { "SKILL.md": HAIKU, "big.txt": "x".repeat(70 * 1024) } }), 413, "big.txt"),
        (json!({ "files": { "SKILL.md": HAIKU, ".env": "A=1" } }), 400, ".env"),
        (json!({ "files": { "SKILL.md": HAIKU, "../up.md": "x" } }), 400, "../up.md"),
        (json!({ "files": { "README.md": "no skill file" } }), 400, "SKILL.md"),
    ];
    for (body, expected, names) in refusals {
        let (code, refused) = env.admin_send(Method::POST, SKILLS, Some(body)).await;
        let error = refused["error"].as_str().unwrap_or_default();
        assert_eq!(code, expected, "{refused}");
        assert!(error.contains(names) && !error.contains("sk-ant"), "{error}");
    }
    let (code, _) = install_zip(&env, zipped(&[("SKILL.md", HAIKU), ("bin.dat", &"\0".repeat(80 * 1024))])).await;
    assert_eq!(code, 413, "an oversized file in a zip");
    let anonymous =
        env.post(SKILLS, &[], serde_json::to_vec(&json!({ "files": { "SKILL.md": HAIKU } })).unwrap()).await;
    assert_eq!(anonymous.status(), 401);
    let versions = env.admin(&format!("{SKILLS}/haiku/versions")).await;
    assert_eq!(versions["versions"].as_array().map(Vec::len), Some(2), "the refusals stored nothing: {versions}");

    // Restore version 1: a third version with its files, saying where it came from.
    let (code, restored) = env.admin_send(Method::POST, &format!("{SKILLS}/haiku/restore/1"), None).await;
    assert_eq!((code, restored["version"].as_i64(), restored["restored_from"].as_i64()), (200, Some(3), Some(1)));
    assert!(restored["files"]["SKILL.md"].as_str().unwrap_or_default().contains("HAIKU-RULE-7"), "{restored}");

    // A turn: the prompt lists the skill, the model opens it, reads its instructions and follows them.
    env.llm.push(Scripted::ToolCalls(vec![("open_skill".into(), json!({ "name": "haiku" }))]));
    env.llm.push(Scripted::Reply("Old pond, a frog jumps\nthe sound of water rises\nsilence comes again".into()));
    let prompt = turn_prompt(&env, 1, "write me a poem about a frog").await;
    assert!(
        prompt.contains("## Skills") && prompt.contains("- haiku: Answers in a haiku when someone asks for a poem.")
    );
    assert!(!prompt.contains("HAIKU-RULE"), "the prompt lists, it does not carry instructions: {prompt}");
    let sent = env.wait_for_sent(1).await;
    assert!(sent[0]["text"].as_str().unwrap_or_default().starts_with("Old pond, a frog jumps"), "{sent:?}");
    let opened = env.llm.requests().iter().flat_map(tool_results).find(|result| result.contains("# Skill: haiku"));
    let opened = opened.unwrap_or_else(|| panic!("open_skill's result reached the model: {:?}", env.llm.requests()));
    assert!(opened.contains("HAIKU-RULE-7") && opened.contains("- examples.md"), "{opened}");

    // Disabled: gone from the next prompt, and open_skill no longer finds it.
    let (code, disabled) = env.admin_send(Method::POST, &format!("{SKILLS}/haiku/disable"), None).await;
    assert_eq!((code, disabled["enabled"].as_bool()), (200, Some(false)));
    env.llm.push(Scripted::ToolCalls(vec![("open_skill".into(), json!({ "name": "haiku" }))]));
    env.llm.push(Scripted::Reply("No haiku today.".into()));
    let prompt = turn_prompt(&env, 2, "another poem?").await;
    assert!(!prompt.contains("## Skills"), "{prompt}");
    env.wait_for_sent(2).await;
    let refused = env.llm.requests().iter().flat_map(tool_results).any(|result| result.contains("no enabled skill"));
    assert!(refused, "a disabled skill cannot be opened");
    let (code, _) = env.admin_send(Method::POST, &format!("{SKILLS}/haiku/enable"), None).await;
    assert_eq!(code, 200);
    assert_eq!(env.admin(SKILLS).await["skills"][0]["enabled"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_runs_a_skills_script_from_its_read_only_folder() {
    let env = TestEnv::start_with(&[("LLM_TIMEOUT_MS", "10000")]).await;
    let skill = "---\nname: csv-sum\ndescription: Sums a CSV column.\n---\n\nImport `sum` from `./skills/csv-sum/scripts/sum.js`.\n";
    let script = "export function sum(csv, column) {\n  const [head, ...rows] = csv.trim().split('\\n');\n  \
                  const index = head.split(',').indexOf(column);\n  \
                  return rows.reduce((total, row) => total + Number(row.split(',')[index]), 0);\n}\n";
    let body = json!({ "files": { "SKILL.md": skill, "scripts/sum.js": script } });
    let (code, installed) = env.admin_send(Method::POST, SKILLS, Some(body)).await;
    assert_eq!(code, 200, "{installed}");

    let code = "import { sum } from './skills/csv-sum/scripts/sum.js';\n\
                export default async function main({ workspace }) {\n  \
                const listed = workspace.list().filter((file) => file.path.startsWith('skills/'));\n  \
                let refused = '';\n  try { workspace.write('skills/csv-sum/SKILL.md', 'x'); } catch (error) { refused = error.message; }\n  \
                return { total: sum('region,sales\\nnorth,120\\nsouth,80\\n', 'sales'), listed, refused };\n}";
    env.llm.push(spawn("sum the sales with the csv-sum skill", false, "Summing."));
    env.llm.push_for(WORKER, Scripted::ToolCalls(vec![("run_code".into(), json!({ "code": code }))]));
    env.llm.push_for(WORKER, status("outcome", "The sales total 200."));
    env.llm.answer_always(Scripted::Reply("The sales total 200.".into()));
    env.telegram_update(&dm_update(1, 502, "sum the sales")).await;
    wait_for("the outcome", Duration::from_secs(90), || async {
        env.telegram.calls("sendMessage").iter().any(|call| call["text"] == "The sales total 200.").then_some(())
    })
    .await;
    let last = worker_requests(&env).last().cloned().unwrap();
    let result = tool_results(&last).into_iter().next().unwrap_or_default();
    assert!(result.contains("\"total\": 200"), "the skill's script ran: {result}");
    assert!(result.contains("skills/csv-sum/scripts/sum.js") && result.contains("\"readOnly\": true"), "{result}");
    assert!(result.contains("read-only"), "the skill's files cannot be overwritten: {result}");
    // Nothing under skills/ reached the conversation's own workspace.
    let workspace = env.admin("/api/conversations/telegram:502/workspace").await;
    assert!(!workspace.to_string().contains("skills/"), "{workspace}");
}
