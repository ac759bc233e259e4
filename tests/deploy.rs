//! `make deploy` (scripts/deploy.sh) against fakes, with no Cloudflare account:
//! a fake `wrangler` first on PATH (tests/deploy/bin/wrangler: records its argv,
//! keeps what it created in a state file, prints what wrangler 4.164 prints) and
//! one loopback HTTP server standing in for the Telegram and Discord APIs and for
//! the deployed Worker. Each test works on a temp copy of wrangler.toml.
//!
//! Run through `make test` (or `cargo test --test deploy` with Node 22 on PATH).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Router;
use serde_json::{json, Value};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TELEGRAM_TOKEN: &str = "4242:telegram-token-d41d8cd9";
const TELEGRAM_SECRET: &str = "webhook-secret-8f00b204";
const DISCORD_TOKEN: &str = "discord-token-e9800998";
const ADMIN_TOKEN: &str = "admin-token-ecf8427e";
const OPENAI_KEY: &str = "sk-openai-key-5d41402a";

/// One recorded request to the fake platforms or the fake Worker.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// A loopback server: `/telegram/...` is the Bot API, `/discord/api/v10/...` the
/// Discord API, `/worker/...` the deployed Worker. Stopped when dropped.
struct FakeServer {
    base: String,
    requests: Arc<Mutex<Vec<Request>>>,
    /// Paths (prefixes) answered with this status and body instead of success.
    refusals: Arc<Mutex<Vec<(String, u16, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    async fn start() -> Self {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let refusals: Arc<Mutex<Vec<(String, u16, Value)>>> = Arc::new(Mutex::new(Vec::new()));
        let (seen, refused) = (requests.clone(), refusals.clone());
        let router = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (seen, refused) = (seen.clone(), refused.clone());
            async move {
                let path = uri.path().to_string();
                seen.lock().unwrap().push(Request {
                    method: method.to_string(),
                    path: path.clone(),
                    authorization: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string),
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                });
                let refusal = refused.lock().unwrap().iter().find(|(prefix, ..)| path.starts_with(prefix)).cloned();
                if let Some((_, status, body)) = refusal {
                    return (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
                }
                let answer = if path.starts_with("/telegram/") {
                    json!({"ok": true, "result": true, "description": "Webhook was set"})
                } else if path.starts_with("/teams/") {
                    json!({"token_type": "Bearer", "expires_in": 3600, "access_token": "teams-token"})
                } else if path.starts_with("/graph/") {
                    json!({"success": true})
                } else if path.ends_with("/commands") {
                    json!([{"id": "1", "name": "ask"}, {"id": "2", "name": "Ask edgebot"}])
                } else {
                    json!({"ok": true})
                };
                axum::Json(answer).into_response()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        FakeServer { base, requests, refusals, task }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    fn refuse(&self, prefix: &str, status: u16, body: Value) {
        self.refusals.lock().unwrap().push((prefix.to_string(), status, body));
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One deployment's world: a temp config, secrets file and fake-wrangler state.
struct World {
    dir: tempfile::TempDir,
    server: FakeServer,
}

impl World {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(Path::new(ROOT).join("wrangler.toml"), dir.path().join("wrangler.toml")).unwrap();
        World { dir, server: FakeServer::start().await }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config(&self) -> String {
        std::fs::read_to_string(self.path("wrangler.toml")).unwrap()
    }

    fn write_secrets(&self, text: &str) {
        std::fs::write(self.path(".prod.vars"), text).unwrap();
    }

    /// The URL the fake `wrangler deploy` prints for the Worker.
    fn worker_url(&self) -> String {
        format!("{}/worker", self.server.base)
    }

    /// Runs scripts/deploy.sh with the fake wrangler first on PATH.
    async fn deploy(&self, extra: &[(&str, &str)]) -> Run {
        let path = format!("{}/tests/deploy/bin:{}", ROOT, std::env::var("PATH").unwrap_or_default());
        let mut command = tokio::process::Command::new("bash");
        command
            .arg(Path::new(ROOT).join("scripts/deploy.sh"))
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("WRANGLER_CONFIG", self.path("wrangler.toml"))
            .env("SECRETS_FILE", self.path(".prod.vars"))
            .env("FAKE_WRANGLER_LOG", self.path("wrangler.log"))
            .env("FAKE_WRANGLER_STATE", self.path("state.json"))
            .env("FAKE_MIGRATIONS_DIR", Path::new(ROOT).join("migrations"))
            .env("FAKE_WRANGLER_URL", self.worker_url())
            .env("TELEGRAM_API_BASE", format!("{}/telegram", self.server.base))
            .env("DISCORD_API_BASE", format!("{}/discord/api/v10", self.server.base))
            .env("WHATSAPP_API_BASE", format!("{}/graph/v21.0", self.server.base))
            .env_remove("WORKER_URL")
            .env_remove("VECTORIZE_DIMENSIONS")
            .env_remove("FAKE_WRANGLER_LOGGED_OUT")
            .kill_on_drop(true);
        for (key, value) in extra {
            command.env(key, value);
        }
        let output: Output = command.output().await.expect("bash runs scripts/deploy.sh");
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Every fake-wrangler call so far, as argv.
    fn wrangler_calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.path("wrangler.log"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.path("state.json")).unwrap()).unwrap()
    }
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The line the script printed for `step`.
    fn line(&self, step: &str) -> String {
        let prefix = format!("deploy: {step}: ");
        self.stdout
            .lines()
            .find(|line| line.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for {step:?} in:\n{}", self.all()))
            .to_string()
    }
}

/// The calls that create something (the second run must make none).
fn creations(calls: &[Vec<String>]) -> Vec<String> {
    calls
        .iter()
        .filter(|argv| argv.iter().take(3).any(|word| word.starts_with("create")))
        .map(|argv| argv.join(" "))
        .collect()
}

/// The calls whose first words are `words`.
fn calls_to<'a>(calls: &'a [Vec<String>], words: &[&str]) -> Vec<&'a Vec<String>> {
    calls.iter().filter(|argv| argv.len() >= words.len() && argv[..words.len()] == *words).collect()
}

fn full_secrets() -> String {
    format!(
        "# production\nADMIN_TOKEN={ADMIN_TOKEN}\nOPENAI_API_KEY=\"{OPENAI_KEY}\"\nANTHROPIC_API_KEY=\n\
         TELEGRAM_BOT_TOKEN={TELEGRAM_TOKEN}\nTELEGRAM_WEBHOOK_SECRET={TELEGRAM_SECRET}\n\
         TELEGRAM_API_BASE=https://api.telegram.org\n\
         DISCORD_APPLICATION_ID=1234567890\nDISCORD_PUBLIC_KEY=abcdef\nDISCORD_BOT_TOKEN={DISCORD_TOKEN}\n\
         DISCORD_GATEWAY=on\nSLACK_SIGNING_SECRET=\nSLACK_BOT_TOKEN=\n"
    )
}

fn assert_no_secret_printed(run: &Run) {
    for secret in [TELEGRAM_TOKEN, TELEGRAM_SECRET, DISCORD_TOKEN, ADMIN_TOKEN, OPENAI_KEY] {
        assert!(!run.all().contains(secret), "printed a secret value:\n{}", run.all());
    }
}

#[tokio::test]
async fn the_first_run_creates_and_records_everything_and_the_second_changes_nothing() {
    let world = World::new().await;
    world.write_secrets(&full_secrets());
    let original = world.config();

    let first = world.deploy(&[]).await;
    assert!(first.ok, "first run failed:\n{}", first.all());
    assert_no_secret_printed(&first);

    // Everything missing was created, once, against the production environment.
    let calls = world.wrangler_calls();
    assert_eq!(
        creations(&calls),
        [
            "d1 create edgebot",
            "queues create edgebot-jobs",
            "queues create edgebot-index",
            "queues create edgebot-jobs-dlq",
            "r2 bucket create edgebot-files",
            "vectorize create edgebot-memories --dimensions=384 --metric=cosine",
            "vectorize create-metadata-index edgebot-memories --property-name=memory_type --type=string",
            "vectorize create-metadata-index edgebot-memories --property-name=scope --type=string",
        ]
        .map(|call| format!("{call} --config {} --env production", world.path("wrangler.toml").display()))
    );
    for argv in &calls {
        assert!(argv.ends_with(&["--env".into(), "production".into()]), "not the production env: {argv:?}");
    }
    assert_eq!(calls_to(&calls, &["d1", "migrations", "apply", "DB", "--remote"]).len(), 1);
    assert_eq!(calls_to(&calls, &["secret", "bulk"]).len(), 1);
    assert_eq!(calls_to(&calls, &["deploy"]).len(), 1);
    let uuid = world.state()["d1"][0]["uuid"].as_str().unwrap().to_string();
    assert!(first.line("d1 database edgebot").contains(&format!("created (id {uuid})")));
    assert!(first.line("queue edgebot-jobs-dlq").ends_with("created"));
    let migrations = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations")).unwrap().count();
    let applied = format!("applied {migrations} (0001_history.sql,");
    assert!(first.line("d1 migrations DB").contains(&applied), "{}", first.stdout);

    // The id is recorded in [env.production], and that is the config's only change.
    let (before, after): (Vec<&str>, Vec<String>) =
        (original.lines().collect(), world.config().lines().map(String::from).collect());
    assert_eq!(before.len(), after.len());
    let changed: Vec<usize> = (0..before.len()).filter(|&i| before[i] != after[i]).collect();
    assert_eq!(changed.len(), 1, "one line changes");
    assert_eq!(after[changed[0]], format!("database_id = \"{uuid}\""));
    let production = after.iter().position(|line| line == "[[env.production.d1_databases]]").unwrap();
    assert!(changed[0] > production, "the top-level (local) id stays the placeholder");

    // Secrets: the non-empty keys, but not the plain vars; their values intact.
    assert_eq!(
        world.state()["secrets"]["edgebot"],
        json!({"ADMIN_TOKEN": ADMIN_TOKEN, "OPENAI_API_KEY": OPENAI_KEY, "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
               "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET, "DISCORD_APPLICATION_ID": "1234567890",
               "DISCORD_PUBLIC_KEY": "abcdef", "DISCORD_BOT_TOKEN": DISCORD_TOKEN, "DISCORD_GATEWAY": "on"})
    );
    assert!(first.stdout.contains("not uploaded: TELEGRAM_API_BASE"));
    assert!(first.line("worker").contains(&format!("at {}", world.worker_url())), "the URL from the deploy output");

    // Telegram: the webhook points at the Worker, with the secret.
    let requests = world.server.requests();
    let set_webhook: Vec<&Request> =
        requests.iter().filter(|r| r.path == format!("/telegram/bot{TELEGRAM_TOKEN}/setWebhook")).collect();
    assert_eq!(set_webhook.len(), 1);
    assert_eq!(
        set_webhook[0].body,
        json!({"url": format!("{}/webhooks/telegram", world.worker_url()), "secret_token": TELEGRAM_SECRET,
               "allowed_updates": ["message", "edited_message", "message_reaction", "callback_query"]})
    );

    // Discord: the commands file, the interactions endpoint, the Gateway started as admin.
    let commands: Vec<&Request> =
        requests.iter().filter(|r| r.path == "/discord/api/v10/applications/1234567890/commands").collect();
    assert_eq!(commands.len(), 1);
    assert_eq!(commands[0].method, "PUT");
    assert_eq!(commands[0].authorization.as_deref(), Some(format!("Bot {DISCORD_TOKEN}").as_str()));
    let shipped: Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(ROOT).join("scripts/discord-commands.json")).unwrap())
            .unwrap();
    assert_eq!(commands[0].body, shipped);
    let endpoint = requests.iter().find(|r| r.path == "/discord/api/v10/applications/@me").expect("endpoint set");
    assert_eq!(endpoint.method, "PATCH");
    assert_eq!(endpoint.body["interactions_endpoint_url"], format!("{}/webhooks/discord", world.worker_url()));
    let gateway = requests.iter().find(|r| r.path == "/worker/api/discord/gateway").expect("gateway started");
    assert_eq!(gateway.method, "POST");
    assert_eq!(gateway.authorization.as_deref(), Some(format!("Bearer {ADMIN_TOKEN}").as_str()));

    // Slack has no credentials yet: its manual steps are printed.
    assert!(first.line("slack").contains("skipped"));
    assert!(first.stdout.contains(&format!("make slack-manifest URL={}", world.worker_url())));
    assert!(first.stdout.contains("Install to Workspace"));

    // The second run creates nothing and leaves the config byte-identical.
    let recorded = std::fs::read(world.path("wrangler.toml")).unwrap();
    let second = world.deploy(&[]).await;
    assert!(second.ok, "second run failed:\n{}", second.all());
    let again = world.wrangler_calls()[calls.len()..].to_vec();
    assert_eq!(creations(&again), Vec::<String>::new(), "the second run created something");
    assert_eq!(std::fs::read(world.path("wrangler.toml")).unwrap(), recorded, "the config changed");
    assert!(second.line("d1 database edgebot").ends_with(&format!("exists (id {uuid}), skipped")));
    for step in [
        "queue edgebot-jobs",
        "queue edgebot-jobs-dlq",
        "queue edgebot-index",
        "vectorize metadata index edgebot-memories.memory_type",
        "vectorize metadata index edgebot-memories.scope",
    ] {
        assert!(second.line(step).ends_with("exists, skipped"), "{step}: {}", second.line(step));
    }
    assert!(second.line("vectorize index edgebot-memories").ends_with("skipped"));
    assert_eq!(second.line("d1 migrations DB"), "deploy: d1 migrations DB: none to apply, skipped");
    assert_eq!(world.state()["d1"].as_array().unwrap().len(), 1);
    assert_eq!(world.state()["deployments"], 2);
}

#[tokio::test]
async fn d1_shards_are_created_bound_and_migrated_once() {
    let world = World::new().await;
    world.write_secrets(&format!("{}D1_SHARDS=4\n", full_secrets()));

    let first = world.deploy(&[]).await;
    assert!(first.ok, "first run failed:\n{}", first.all());
    assert_eq!(first.line("d1 shards"), "deploy: d1 shards: 4: bound DB_SHARD_0, DB_SHARD_1, DB_SHARD_2, DB_SHARD_3");
    let calls = world.wrangler_calls();
    let made: Vec<String> = creations(&calls).into_iter().filter(|call| call.starts_with("d1 create")).collect();
    assert_eq!(made.len(), 5, "the shared database and four shards: {made:?}");
    for shard in 0..4 {
        assert!(made.iter().any(|call| call.starts_with(&format!("d1 create edgebot-shard-{shard} "))), "{made:?}");
        let binding = format!("DB_SHARD_{shard}");
        assert_eq!(calls_to(&calls, &["d1", "migrations", "apply", &binding, "--remote"]).len(), 1, "{binding}");
        // Bound in production, with the id of the database made for it.
        let uuid = world.state()["d1"]
            .as_array()
            .unwrap()
            .iter()
            .find(|database| database["name"] == format!("edgebot-shard-{shard}"))
            .map(|database| database["uuid"].as_str().unwrap().to_string())
            .expect("the shard's database");
        let config = world.config();
        let mut blocks = config.split("[[env.production.d1_databases]]").skip(1);
        let block = blocks.find(|block| block.contains(&binding)).unwrap();
        assert!(block.contains(&format!("database_id = \"{uuid}\"")), "{block}");
    }

    let second = world.deploy(&[]).await;
    assert!(second.ok, "second run failed:\n{}", second.all());
    assert_eq!(second.line("d1 shards"), "deploy: d1 shards: 4: all bound, skipped");
    assert_eq!(world.state()["d1"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn a_shard_count_that_is_not_a_power_of_two_stops_the_deploy() {
    let world = World::new().await;
    world.write_secrets(&format!("{}D1_SHARDS=3\n", full_secrets()));
    let original = world.config();
    let run = world.deploy(&[]).await;
    assert!(!run.ok, "D1_SHARDS=3 must stop the deploy:\n{}", run.all());
    assert!(run.stderr.contains("D1_SHARDS is 3"), "{}", run.all());
    assert_eq!(world.config(), original);
    assert!(creations(&world.wrangler_calls()).is_empty());
}

#[tokio::test]
async fn a_missing_login_stops_with_a_clear_message_before_anything_changes() {
    let world = World::new().await;
    world.write_secrets(&full_secrets());
    let original = world.config();

    let run = world.deploy(&[("FAKE_WRANGLER_LOGGED_OUT", "1")]).await;
    assert!(!run.ok, "a deploy without a login must fail:\n{}", run.all());
    assert!(run.stderr.contains("not logged in to Cloudflare"), "{}", run.all());
    assert!(run.stderr.contains("npx wrangler login") && run.stderr.contains("CLOUDFLARE_API_TOKEN"));
    let calls = world.wrangler_calls();
    assert_eq!(calls.len(), 1, "only whoami ran: {calls:?}");
    assert_eq!(calls[0][..2], ["whoami", "--json"]);
    assert_eq!(world.config(), original);
    assert!(world.server.requests().is_empty());
}

#[tokio::test]
async fn without_secrets_each_platform_step_says_it_is_skipped() {
    let world = World::new().await;

    let run = world.deploy(&[]).await;
    assert!(run.ok, "{}", run.all());
    assert!(run.line("secrets").contains("no ") && run.line("secrets").contains("skipped"));
    assert!(calls_to(&world.wrangler_calls(), &["secret", "bulk"]).is_empty());
    for step in ["telegram", "discord", "discord gateway", "slack", "teams", "whatsapp", "webhook"] {
        assert!(run.line(step).contains("skipped"), "{step}: {}", run.line(step));
    }
    assert!(world.server.requests().is_empty(), "no platform was called");
    assert_eq!(calls_to(&world.wrangler_calls(), &["deploy"]).len(), 1, "the Worker is still deployed");
}

#[tokio::test]
async fn a_platform_that_refuses_fails_the_deploy_without_printing_its_token() {
    let world = World::new().await;
    world.write_secrets(&full_secrets());
    world.server.refuse("/telegram/", 401, json!({"ok": false, "error_code": 401, "description": "Unauthorized"}));

    let run = world.deploy(&[]).await;
    assert!(!run.ok, "a failed setWebhook must fail the deploy:\n{}", run.all());
    assert!(run.line("telegram").contains("setWebhook failed (401: Unauthorized)"), "{}", run.all());
    assert!(run.stderr.contains("1 platform step(s) failed"));
    assert!(run.line("discord gateway").contains("started"), "the other platforms still run");
    assert_no_secret_printed(&run);
}

#[tokio::test]
async fn a_worker_url_override_wins_over_the_deploy_output() {
    let world = World::new().await;
    world.write_secrets(&full_secrets());
    let custom = format!("{}/custom", world.server.base);

    let run = world.deploy(&[("WORKER_URL", &format!("{custom}/"))]).await;
    assert!(run.ok, "{}", run.all());
    assert!(run.line("worker").ends_with(&format!("at {custom}")));
    let requests = world.server.requests();
    let webhook = requests.iter().find(|r| r.path.ends_with("/setWebhook")).unwrap();
    assert_eq!(webhook.body["url"], format!("{custom}/webhooks/telegram"));
    assert!(requests.iter().any(|r| r.path == "/custom/api/discord/gateway"));
}

/// Wrangler inherits no bindings or vars into an environment: production must
/// repeat every one the local profile has (it may add Workers AI and Vectorize).
#[test]
fn the_production_environment_repeats_every_top_level_binding() {
    let script = r#"
        const { unstable_readConfig } = require("wrangler");
        const pick = (env) => {
          const c = unstable_readConfig({ config: "wrangler.toml", env });
          return { name: c.name, main: c.main, crons: c.triggers.crons, migrations: c.migrations,
                   durable_objects: c.durable_objects, queues: c.queues, vars: c.vars, r2: c.r2_buckets,
                   d1: c.d1_databases.map(({ binding, database_name, migrations_dir }) =>
                         ({ binding, database_name, migrations_dir })),
                   ai: c.ai ?? null, vectorize: c.vectorize };
        };
        console.log(JSON.stringify({ top: pick(undefined), production: pick("production") }));
    "#;
    let output = std::process::Command::new("node")
        .args(["-e", script])
        .current_dir(ROOT)
        .env("WRANGLER_SEND_METRICS", "false")
        .output()
        .expect("node runs (make test puts Node 22 on PATH)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let configs: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let (top, production) = (&configs["top"], &configs["production"]);
    for key in ["name", "main", "crons", "migrations", "durable_objects", "queues", "r2"] {
        assert_eq!(top[key], production[key], "production's {key} differs from the local profile's");
    }
    // The local profile binds four D1 shards (for D1_SHARDS up to 4 under `wrangler dev`);
    // production binds the shards `make deploy` adds for its own D1_SHARDS.
    let unsharded: Vec<&Value> = top["d1"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|binding| !binding["binding"].as_str().unwrap().starts_with("DB_SHARD_"))
        .collect();
    assert_eq!(json!(unsharded), production["d1"], "production's d1 differs from the local profile's");
    for (name, value) in top["vars"].as_object().unwrap() {
        assert_eq!(&production["vars"][name], value, "production lacks the var {name}");
    }
    assert_eq!(top["ai"], Value::Null, "the local profile has no Workers AI (no simulator)");
    assert_eq!(top["vectorize"], json!([]), "the local profile has no Vectorize (no simulator)");
    assert_eq!(production["ai"]["binding"], "AI");
    assert_eq!(production["vectorize"], json!([{"binding": "VECTORS", "index_name": "edgebot-memories"}]));
    assert_eq!(production["vars"]["VECTOR_BACKEND"], "vectorize");
}

#[test]
fn the_slack_manifest_points_every_request_at_the_worker() {
    let script = Path::new(ROOT).join("scripts/slack-manifest.sh");
    let output =
        std::process::Command::new("bash").arg(&script).arg("https://edgebot.ada.workers.dev/").output().unwrap();
    assert!(output.status.success());
    let manifest = String::from_utf8(output.stdout).unwrap();
    assert!(!manifest.contains("${WORKER_URL}"), "the placeholder is filled in");
    // Events, the slash command and button presses (interactivity) all come to the one route.
    assert_eq!(manifest.matches("url: https://edgebot.ada.workers.dev/webhooks/slack").count(), 3, "{manifest}");
    assert!(manifest.contains("interactivity:\n    is_enabled: true"), "approval buttons need it: {manifest}");
    assert!(manifest.contains("- command: /ask"));
    for event in ["app_mention", "message.channels", "message.groups", "message.im", "message.mpim"] {
        assert!(manifest.contains(&format!("      - {event}\n")), "bot event {event}");
    }
    for scope in ["app_mentions:read", "chat:write", "reactions:write", "commands", "channels:read", "mpim:history"] {
        assert!(manifest.contains(&format!("      - {scope}\n")), "scope {scope}");
    }
    // "Add to Slack": the callback is a redirect URL, uninstalls are heard, and the install
    // link asks for exactly the manifest's scopes.
    assert!(manifest.contains("    - https://edgebot.ada.workers.dev/slack/oauth/callback\n"), "{manifest}");
    for event in ["app_uninstalled", "tokens_revoked"] {
        assert!(manifest.contains(&format!("      - {event}\n")), "bot event {event}");
    }
    let bot_scopes: Vec<&str> = manifest
        .split("    bot:\n")
        .nth(1)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .map_while(|line| line.strip_prefix("- "))
        .collect();
    assert_eq!(bot_scopes, edgebot::platforms::slack::install::rules::BOT_SCOPES, "{manifest}");

    let missing = std::process::Command::new("bash").arg(&script).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("usage: make slack-manifest URL="));
}

#[tokio::test]
async fn teams_credentials_are_checked_and_what_cannot_be_registered_is_printed() {
    const TEAMS_PASSWORD: &str = "teams-secret-0cc175b9";
    let world = World::new().await;
    let token_url = format!("{}/teams/token", world.server.base);

    let without = world.deploy(&[("TEAMS_TOKEN_URL", &token_url)]).await;
    assert!(without.ok, "{}", without.all());
    assert!(without.line("teams").contains("skipped"), "{}", without.line("teams"));
    assert!(without.stdout.contains(&format!("{}/webhooks/teams", world.worker_url())), "{}", without.stdout);
    assert!(world.server.requests().iter().all(|request| !request.path.starts_with("/teams/")));

    world.write_secrets(&format!("TEAMS_APP_ID=app-1\nTEAMS_APP_PASSWORD={TEAMS_PASSWORD}\n"));
    let with = world.deploy(&[("TEAMS_TOKEN_URL", &token_url)]).await;
    assert!(with.ok, "{}", with.all());
    assert!(with.line("teams").contains("credentials work"), "{}", with.line("teams"));
    assert!(with.line("teams").contains(&format!("{}/webhooks/teams", world.worker_url())));
    assert!(with.stdout.contains("make deploy cannot set it"), "what cannot be registered is said");
    let asked: Vec<Request> = world.server.requests().into_iter().filter(|r| r.path == "/teams/token").collect();
    assert_eq!(asked.len(), 1, "one token request");
    assert!(!with.all().contains(TEAMS_PASSWORD), "the secret is never printed");

    world.server.refuse("/teams/", 401, json!({"error": "invalid_client"}));
    let refused = world.deploy(&[("TEAMS_TOKEN_URL", &token_url)]).await;
    assert!(!refused.ok, "wrong credentials fail the deploy:\n{}", refused.all());
    assert!(refused.line("teams").contains("got no token (401: invalid_client)"), "{}", refused.line("teams"));
    assert!(!refused.all().contains(TEAMS_PASSWORD));
}

#[tokio::test]
async fn whatsapps_webhook_is_subscribed_through_the_graph_api_with_the_app_token() {
    let world = World::new().await;
    let app_secret = "wa-app-secret-8c1f";
    world.write_secrets(&format!(
        "ADMIN_TOKEN={ADMIN_TOKEN}\nWHATSAPP_APP_ID=99887766\nWHATSAPP_APP_SECRET={app_secret}\n\
         WHATSAPP_VERIFY_TOKEN=verify-me\nWHATSAPP_ACCESS_TOKEN=EAAG-token\n"
    ));

    let run = world.deploy(&[]).await;
    assert!(run.ok, "{}", run.all());
    let callback = format!("{}/webhooks/whatsapp", world.worker_url());
    assert!(run.line("whatsapp").contains(&format!("webhook subscribed: {callback}")), "{}", run.all());
    let requests = world.server.requests();
    let subscribed =
        requests.iter().find(|request| request.path == "/graph/v21.0/99887766/subscriptions").expect("called");
    assert_eq!(subscribed.method, "POST");
    assert_eq!(subscribed.authorization.as_deref(), Some(format!("Bearer 99887766|{app_secret}").as_str()));
    assert_eq!(
        subscribed.body,
        json!({"object": "whatsapp_business_account", "callback_url": callback, "verify_token": "verify-me", "fields": "messages"})
    );
    assert!(!run.all().contains(app_secret), "the app secret is not printed");

    world.server.refuse("/graph/", 400, json!({"error": {"message": "Invalid OAuth access token", "code": 190}}));
    let refused = world.deploy(&[]).await;
    assert!(!refused.ok, "a refused subscription fails the deploy");
    assert!(refused.line("whatsapp").contains("(400: Invalid OAuth access token)"), "{}", refused.all());
    assert!(!refused.all().contains(app_secret));
}

#[tokio::test]
async fn email_routing_sends_the_address_to_the_worker_once_and_says_what_to_click() {
    let world = World::new().await;
    world.write_secrets(
        "ADMIN_TOKEN=admin-token-0123456789\nEMAIL_ADDRESS=bot@ada.example\nEMAIL_ALLOW=ada@example.com\n",
    );

    let off = world.deploy(&[]).await;
    assert!(off.ok, "the Worker deploys without Email Routing: {}", off.all());
    assert!(off.line("email").contains("turn it on in the dashboard"), "{}", off.line("email"));

    let zones = [("FAKE_EMAIL_ROUTING_ZONES", "ada.example")];
    let on = world.deploy(&zones).await;
    assert!(on.ok, "{}", on.all());
    assert_eq!(on.line("email"), "deploy: email: routed bot@ada.example to edgebot");
    let rules = world.state()["emailRules"].clone();
    assert_eq!(
        rules,
        json!([{ "domain": "ada.example", "name": "edgebot bot@ada.example", "to": "bot@ada.example", "worker": "edgebot" }])
    );

    let again = world.deploy(&zones).await;
    assert!(again.line("email").contains("exists, skipped"), "{}", again.line("email"));
    assert_eq!(world.state()["emailRules"].as_array().unwrap().len(), 1, "one rule");
    let uploaded = world.state()["secrets"]["edgebot"].clone();
    assert_eq!(uploaded["EMAIL_ALLOW"], "ada@example.com", "the allow-list reaches the Worker");
    assert!(uploaded.get("EMAIL_ADDRESS").is_none(), "the address is for the deploy only: {uploaded}");
}
