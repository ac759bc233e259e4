//! `run_code`'s call: the conversation's workspace goes in (a snapshot, the
//! attachments read-only), the code runs in a fresh isolate, and the files it
//! wrote are stored back through the workspace, each held to its quotas; what
//! the model reads is redacted like any tool output.

use worker::Env;

use crate::config::Config;
use crate::runtime::config::redactor;
use crate::sandbox::arguments::RunCodeArguments;
use crate::sandbox::loader;
use crate::sandbox::rules::{format_report, SandboxFile, Stored, CODE_LIMIT_CHARS};
use crate::workspace::rules::WorkspacePath;
use crate::workspace::store::Workspace;

/// Runs the model's module on the conversation's workspace. `network`: the
/// run may fetch (through the fetch guard) if the operator allows it too
/// (`SANDBOX_NETWORK = "guarded"`, and an admin token to sign with).
pub async fn run_code(
    config: &Config,
    env: &Env,
    conversation: &str,
    arguments: &RunCodeArguments,
    network: bool,
) -> String {
    let code = arguments.code.trim();
    if code.is_empty() {
        return "error: `code` is empty: give an ES module with `export default async function main({ workspace })`"
            .to_string();
    }
    if code.chars().count() > CODE_LIMIT_CHARS {
        return format!("error: the module is longer than {CODE_LIMIT_CHARS} characters");
    }
    let workspace = match Workspace::open(env, conversation) {
        Ok(workspace) => workspace,
        Err(error) => return format!("error: the workspace cannot be opened now: {error}"),
    };
    // A run that may fetch sees none of the workspace: nothing private can
    // leave through it (it may still write files).
    let egress_key = match network && config.sandbox_network {
        true => crate::sandbox::network::egress_key(config.admin_token.expose()),
        false => None,
    };
    let files = match egress_key {
        Some(_) => Vec::new(),
        None => match workspace.snapshot(config.sandbox.max_input_bytes).await {
            Ok(files) => files
                .into_iter()
                .map(|(path, bytes, read_only)| SandboxFile { path, bytes, read_only })
                .collect::<Vec<_>>(),
            Err(error) => return format!("error: {error}"),
        },
    };
    // The agent's enabled skills, read-only under `skills/{name}/`; kept out
    // of a run that may fetch, as the workspace is.
    let mut files = files;
    if egress_key.is_none() {
        let mounted = crate::skills::store::mount(env, conversation, &mut files, config.sandbox.max_input_bytes);
        if let Err(error) = mounted.await {
            return format!("error: {error}");
        }
    }
    let report = match loader::run(env, code, &files, &config.sandbox, egress_key).await {
        Ok(report) => report,
        Err(error) => return redactor().redact(&error).into_owned(),
    };
    let mut stored: Stored = Vec::new();
    for (path, bytes) in &report.written {
        let outcome = match WorkspacePath::parse(path) {
            // The skills' folder is the agent's, mounted for the run: never stored back.
            Ok(_) if crate::skills::rules::is_mounted(path) => Err(crate::skills::rules::MOUNT_READ_ONLY.to_string()),
            Ok(parsed) => workspace.write(&parsed, bytes).await.map(|()| bytes.len() as u64),
            Err(error) => Err(error),
        };
        stored.push((path.clone(), outcome));
    }
    redactor().redact(&format_report(&report, &stored)).into_owned()
}
