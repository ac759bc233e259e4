//! The Worker under test: `wrangler dev` (local workerd) on a free port, with
//! its own persisted state, stopped (with its whole process group) on drop.
//!
//! Every Worker's output is kept under `target/e2e-logs/` (cleared when a test
//! run starts), and every secret the harness configures is listed there, so
//! `scripts/check-e2e-logs.sh` can prove no log line of the run carried one.
//! Secrets reach the Worker as secrets (an env file), as in production: wrangler
//! prints plain vars' values when it starts, never secrets'.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tempfile::TempDir;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

pub struct Worker {
    pub base_url: String,
    /// wrangler's DevTools inspector for the Worker (`make bench` profiles through it).
    #[allow(dead_code)] // used by `make bench`
    pub inspector_port: u16,
    /// How long the `GET /health` that found the Worker ready took: the first
    /// request a fresh isolate serves (`make bench` reports it as startup).
    #[allow(dead_code)] // used by `make bench`
    pub first_health: Duration,
    child: Option<Child>,
    log_path: PathBuf,
}

fn project_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn wrangler() -> PathBuf {
    project_root().join("node_modules/.bin/wrangler")
}

/// The run's log directory, emptied the first time a test run asks for it.
fn log_dir() -> &'static Path {
    static DIRECTORY: OnceLock<PathBuf> = OnceLock::new();
    DIRECTORY.get_or_init(|| {
        let directory = project_root().join("target/e2e-logs");
        let _ = fs::remove_dir_all(&directory);
        fs::create_dir_all(&directory).expect("create target/e2e-logs");
        directory
    })
}

/// The file `scripts/check-e2e-logs.sh` reads the configured secrets from.
pub const SECRETS_FILE: &str = "configured-secrets.txt";

/// Adds the secrets among `vars` to the run's list, for the log check.
fn list_secrets(secrets: &[&(String, String)]) {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_dir().join(SECRETS_FILE))
        .expect("open the secrets list");
    for (_, value) in secrets {
        // One write per line: tests run in parallel, and `writeln!` may write
        // the value and the newline apart, interleaving lines into empty ones.
        file.write_all(format!("{value}\n").as_bytes()).expect("write the secrets list");
    }
}

/// wrangler's own setting (read from its environment, not a var of the
/// Worker) for its local trace collector, which stores every invocation's
/// events on the runtime's thread; on unless a test passes "false".
pub const LOCAL_OBSERVABILITY: &str = "X_LOCAL_OBSERVABILITY";

/// Local D1 with every migration applied, made once per test run and copied
/// into each worker's state directory (running migrations per test is slow).
fn migrated_template() -> &'static Path {
    static TEMPLATE: OnceLock<TempDir> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let directory = TempDir::new().expect("template dir");
            for binding in ["DB", "DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_3"] {
                wrangler_d1(&["migrations", "apply", binding], directory.path());
            }
            directory
        })
        .path()
}

/// Deletes every channel object's alarm kept in `state_dir` (the Worker must
/// be stopped): local workerd keeps each object's alarm twice, in the
/// object's own database (`_cf_METADATA`, key 1) and in its namespace's
/// scheduler (`metadata.sqlite`, `_cf_ALARM`).
pub fn drop_alarms(state_dir: &Path) {
    for path in channel_files(state_dir) {
        match is_metadata(&path) {
            true => sqlite(&path, "DELETE FROM _cf_ALARM;"),
            false => sqlite(&path, "DELETE FROM _cf_METADATA WHERE key = 1;"),
        };
    }
}

/// The channel namespace's SQLite files: each object's and the namespace's `metadata.sqlite`.
fn channel_files(state_dir: &Path) -> Vec<PathBuf> {
    let directory = state_dir.join("v3/do/edgebot-ChannelObject");
    std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("the channel objects' state in {}: {error}", directory.display()))
        .flatten()
        .map(|file| file.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "sqlite"))
        .collect()
}

fn is_metadata(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "metadata.sqlite")
}

/// Runs `sql` with sqlite3 on `file`; returns its rows (`-json`; none is `[]`).
pub fn sqlite(file: &Path, sql: &str) -> Vec<serde_json::Value> {
    let output = Command::new("sqlite3")
        .args(["-bail", "-json"])
        .arg(file)
        .arg(sql)
        .output()
        .expect("sqlite3 (make test installs it)");
    assert!(output.status.success(), "{sql}: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    match text.trim() {
        "" => Vec::new(),
        rows => serde_json::from_str(rows).unwrap_or_else(|error| panic!("{error}: {rows}")),
    }
}

/// The SQLite file of the channel object holding `conversation_key`'s history.
pub fn channel_object_file(state_dir: &Path, conversation_key: &str) -> PathBuf {
    channel_object_where(state_dir, &format!("history WHERE conversation_key = '{conversation_key}'"))
}

/// The SQLite file of the one channel object with rows in `rows` (a table
/// and its condition: `inbox WHERE ...`).
pub fn channel_object_where(state_dir: &Path, rows: &str) -> PathBuf {
    let holds = format!("SELECT count(*) AS rows FROM {rows}");
    let found: Vec<PathBuf> = channel_files(state_dir)
        .into_iter()
        .filter(|path| !is_metadata(path))
        .filter(|path| sqlite(path, "SELECT name FROM sqlite_master WHERE name = 'history'").len() == 1)
        .filter(|path| sqlite(path, &holds)[0]["rows"].as_i64() > Some(0))
        .collect();
    assert_eq!(found.len(), 1, "one object holds {rows}: {found:?}");
    found[0].clone()
}

/// Runs SQL on the local D1 in `state_dir` (no Worker may be running on it) and
/// returns each statement's rows, as `wrangler d1 execute --json` gives them.
pub fn d1_execute(state_dir: &Path, sql: &str) -> serde_json::Value {
    d1_execute_on(state_dir, "DB", sql)
}

/// [`d1_execute`] on the D1 database bound as `binding` (a shard: `DB_SHARD_<i>`).
pub fn d1_execute_on(state_dir: &Path, binding: &str, sql: &str) -> serde_json::Value {
    let stdout = wrangler_d1(&["execute", binding, "--json", "--yes", "--command", sql], state_dir);
    serde_json::from_slice(&stdout).expect("d1 execute --json output")
}

/// Runs `wrangler d1 <arguments> --local` on the D1 in `state_dir`; returns its output.
fn wrangler_d1(arguments: &[&str], state_dir: &Path) -> Vec<u8> {
    let output = Command::new(wrangler())
        .arg("d1")
        .args(arguments)
        .args(["--local", "--persist-to"])
        .arg(state_dir)
        .current_dir(project_root())
        .env("CI", "true")
        .stdin(Stdio::null())
        .output()
        .expect("run wrangler d1 (is this running under `make test`?)");
    assert!(
        output.status.success(),
        "wrangler d1 {arguments:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// An object of the local R2 bucket `bucket` in `state_dir` (`wrangler r2
/// object get --local`), or None when there is none.
pub fn r2_object(state_dir: &Path, bucket: &str, key: &str) -> Option<Vec<u8>> {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    let output = Command::new(wrangler())
        .args(["r2", "object", "get", &format!("{bucket}/{key}"), "--local", "--persist-to"])
        .arg(state_dir)
        .arg("--file")
        .arg(file.path())
        .current_dir(project_root())
        .env("CI", "true")
        .stdin(Stdio::null())
        .output()
        .expect("run wrangler r2 (is this running under `make test`?)");
    output.status.success().then(|| fs::read(file.path()).expect("read the object's copy"))
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create state dir");
    for entry in fs::read_dir(from).expect("read template") {
        let entry = entry.expect("template entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy template file");
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).expect("free port").port()
}

impl Worker {
    /// Starts a worker with these vars on the state in `state_dir` (seeded with
    /// the migrated template the first time), so a later worker can resume it.
    pub async fn start(vars: &[(String, String)], state_dir: &Path) -> Worker {
        if !state_dir.join("v3").exists() {
            copy_tree(migrated_template(), state_dir);
        }
        Self::start_project(project_root(), vars, state_dir).await
    }

    /// `wrangler dev` of the Worker in `project` (its `wrangler.toml`), state
    /// kept in `state_dir`: edgebot's own, or a bench's other Worker.
    pub async fn start_project(project: &Path, vars: &[(String, String)], state_dir: &Path) -> Worker {
        // A free port can be taken by a parallel test between our probe and
        // wrangler's bind: then start again on other ports.
        for _ in 0..3 {
            let mut worker = Self::launch(project, vars, state_dir);
            match worker.wait_until_ready().await {
                Ok(()) => return worker,
                Err(_) if worker.log().contains("Address already in use") => {
                    worker.kill();
                    continue;
                }
                Err(exited) => panic!("wrangler dev did not come up (exited: {exited}); log:\n{}", worker.log()),
            }
        }
        panic!("wrangler dev found no free port in three tries");
    }

    fn launch(project: &Path, vars: &[(String, String)], state_dir: &Path) -> Worker {
        static LAUNCHED: AtomicUsize = AtomicUsize::new(0);
        let port = free_port();
        let inspector_port = free_port();
        let number = LAUNCHED.fetch_add(1, Ordering::Relaxed);
        let log_path = log_dir().join(format!("worker-{}-{number:03}-{port}.log", std::process::id()));
        let log = fs::File::create(&log_path).expect("log file");
        let (settings, vars): (Vec<_>, Vec<_>) = vars.iter().partition(|(name, _)| name == LOCAL_OBSERVABILITY);
        let (secrets, plain): (Vec<_>, Vec<_>) =
            vars.into_iter().partition(|(name, _)| edgebot::config::SECRET_VARIABLES.contains(&name.as_str()));
        list_secrets(&secrets);
        // Quoted, so no character of a value starts a comment.
        let env_file = state_dir.join(format!("secrets-{port}.env"));
        let lines: String = secrets.iter().map(|(name, value)| format!("{name}='{value}'\n")).collect();
        fs::write(&env_file, lines).expect("write the secrets env file");
        let mut command = Command::new(wrangler());
        command
            .args(["dev", "--ip", "127.0.0.1", "--port", &port.to_string()])
            .args(["--inspector-port", &inspector_port.to_string()])
            .arg("--persist-to")
            .arg(state_dir)
            .args(["--test-scheduled", "--show-interactive-dev-session=false", "--log-level", "log"])
            .arg("--env-file")
            .arg(&env_file);
        for (name, value) in plain {
            command.arg("--var").arg(format!("{name}:{value}"));
        }
        let child = command
            .envs(settings.iter().map(|(name, value)| (name, value)))
            .current_dir(project)
            .env("CI", "true")
            .env("WRANGLER_SEND_METRICS", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("spawn wrangler dev");
        Worker {
            base_url: format!("http://127.0.0.1:{port}"),
            inspector_port,
            first_health: Duration::ZERO,
            child: Some(child),
            log_path,
        }
    }

    /// Waits for `/health` to answer 200 (or 503 naming a refused
    /// configuration); on failure says whether wrangler exited.
    ///
    /// The answer counts only once wrangler has said it listens on our port:
    /// when a parallel test's workerd took the port first, that one answers
    /// `/health` while ours fails to bind.
    async fn wait_until_ready(&mut self) -> Result<(), bool> {
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
        let ready_line = format!("Ready on {}", self.base_url);
        loop {
            let sent = std::time::Instant::now();
            let log = self.log();
            if log.contains("Address already in use") {
                return Err(true);
            }
            if !log.contains(&ready_line) {
                // Not listening yet: fall through to the exit check.
            } else if let Ok(response) = client.get(format!("{}/health", self.base_url)).send().await {
                self.first_health = sent.elapsed();
                let status = response.status();
                // Up, or up and refusing its configuration (tests of that refusal look at why).
                let refusing =
                    status == 503 && response.text().await.is_ok_and(|body| body.contains("refuses to start"));
                if status.is_success() || refusing {
                    return Ok(());
                }
            }
            let exited = self.child.as_mut().and_then(|child| child.try_wait().ok().flatten()).is_some();
            if exited || tokio::time::Instant::now() > deadline {
                return Err(exited);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// CPU time (user + system) used so far by this worker's workerd processes.
    #[allow(dead_code)] // used by `make bench`
    pub fn workerd_cpu(&self) -> Duration {
        self.workerd_pids().iter().map(|pid| cpu_time(&format!("/proc/{pid}/stat"))).sum()
    }

    /// CPU time used so far by the thread that runs the Worker's isolate: the
    /// main thread of the workerd with the inspector (the other one is wrangler's
    /// proxy). It runs local workerd's other isolates and its I/O too.
    #[allow(dead_code)] // used by `make bench`
    pub fn runtime_thread_cpu(&self) -> Duration {
        self.runtime_thread_schedule().0
    }

    /// That thread's time on a core, and its time ready to run but waiting
    /// for one, so far (the kernel's `schedstat`, in nanoseconds).
    #[allow(dead_code)] // used by `make bench`
    pub fn runtime_thread_schedule(&self) -> (Duration, Duration) {
        let mut on_core = Duration::ZERO;
        let mut waiting = Duration::ZERO;
        for pid in self.workerd_pids() {
            let command_line = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if !String::from_utf8_lossy(&command_line).contains("--inspector-addr") {
                continue;
            }
            let schedstat = fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).unwrap_or_default();
            let mut fields = schedstat.split_whitespace().map(|field| field.parse::<u64>().unwrap_or(0));
            on_core += Duration::from_nanos(fields.next().unwrap_or(0));
            waiting += Duration::from_nanos(fields.next().unwrap_or(0));
        }
        (on_core, waiting)
    }

    /// The workerd processes in this worker's process group.
    fn workerd_pids(&self) -> Vec<String> {
        let Some(group) = self.child.as_ref().map(|child| child.id().to_string()) else {
            return Vec::new();
        };
        let mut pids = Vec::new();
        for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
            // Fields after the parenthesised command name: state ppid pgrp ...
            let Some((head, rest)) = stat.rsplit_once(')') else { continue };
            if head.contains("workerd") && rest.split_whitespace().nth(2) == Some(group.as_str()) {
                pids.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        pids
    }

    /// What wrangler and the Worker printed so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Stops the worker at once, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The negative pid addresses the whole group: wrangler and workerd.
            // `--` matters: without it, procps kill reads `-PID` as a signal and
            // may signal every process (kill(-1)).
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-s", "KILL", "--", &group]).status();
            let _ = child.wait();
        }
    }
}

/// User + system time from a `/proc` stat file (utime and stime, fields 14 and 15).
fn cpu_time(stat_path: &str) -> Duration {
    let ticks_per_second = 100; // USER_HZ on Linux
    let stat = fs::read_to_string(stat_path).unwrap_or_default();
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks: u64 = [11, 12].iter().filter_map(|index| fields.get(*index)?.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 1000 / ticks_per_second)
}

impl Drop for Worker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- wrangler log ({}) ---\n{}", self.log_path.display(), self.log());
        }
        self.kill();
    }
}
