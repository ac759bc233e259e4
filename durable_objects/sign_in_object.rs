//! SignInObject: one Durable Object for the whole deployment that counts
//! failed token checks, so every isolate sees the same counts and a restart
//! forgets none. Each check is one request to it, made before the token's
//! result is revealed; the limits' rules are the pure [`decide`].
//!
//! Failures older than the window are deleted by every check, so storage
//! holds at most a window's failures and the trusted clients.

use serde::Deserialize;
use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorageValue, State};

use crate::log_line::LogLine;
use crate::runtime::config;
use crate::runtime::durable::{self, MeteredStorage, Sql};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::sessions::limit::{decide, Held, Outcome, Recorded, Verdict, TRUST_MS};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS failures (client TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS failures_by_client ON failures (client, at);
CREATE INDEX IF NOT EXISTS failures_by_time ON failures (at);
CREATE TABLE IF NOT EXISTS trusted (client TEXT PRIMARY KEY, until INTEGER NOT NULL);
";

/// A trusted client's trust is renewed at most this often.
const TRUST_REFRESH_MS: i64 = 24 * 60 * 60 * 1000;

#[durable_object]
pub struct SignInObject {
    sql: Sql,
    env: Env,
}

/// `POST /attempt`: a token check's client and outcome.
#[derive(Deserialize)]
struct Attempt {
    client: String,
    outcome: String,
}

#[derive(Deserialize)]
struct Window {
    failures: i64,
    oldest: Option<i64>,
}

#[derive(Deserialize)]
struct Trust {
    until: i64,
}

impl DurableObject for SignInObject {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().counted_sql();
        if let Err(error) = sql.exec(SCHEMA, None) {
            LogLine::error("sign_in_schema_failed").reason(&error).emit();
        }
        SignInObject { sql, env }
    }

    async fn fetch(&self, mut request: Request) -> Result<Response> {
        durable::served(async {
            if request.method() != Method::Post || request.path() != "/attempt" {
                return Response::error("not found", 404);
            }
            let attempt: Attempt = request.json().await?;
            let Some(outcome) = Outcome::parse(&attempt.outcome) else {
                return Response::error("unknown outcome", 400);
            };
            Response::from_json(&self.attempt(&attempt.client, outcome)?)
        })
        .await
    }
}

impl SignInObject {
    /// Decides, then records: a refused attempt is not counted (so the window
    /// frees on time), a failure is, and the admin token trusts its client.
    fn attempt(&self, client: &str, outcome: Outcome) -> Result<serde_json::Value> {
        let limits = config::load(&self.env).sign_in;
        let now = now_ms();
        let since = SqlStorageValue::from(now - limits.window_ms);
        self.sql.exec("DELETE FROM failures WHERE at <= ?", vec![since])?;
        self.sql.exec("DELETE FROM trusted WHERE until <= ?", vec![SqlStorageValue::from(now)])?;
        let window = |query: &str, bindings: Vec<SqlStorageValue>| -> Result<Window> {
            let rows: Vec<Window> = self.sql.exec(query, bindings)?.to_array()?;
            Ok(rows.into_iter().next().unwrap_or(Window { failures: 0, oldest: None }))
        };
        let client_window = window(
            "SELECT COUNT(*) AS failures, MIN(at) AS oldest FROM failures WHERE client = ?",
            vec![client.into()],
        )?;
        let overall_window = window("SELECT COUNT(*) AS failures, MIN(at) AS oldest FROM failures", vec![])?;
        let trusted: Vec<Trust> =
            self.sql.exec("SELECT until FROM trusted WHERE client = ?", vec![client.into()])?.to_array()?;
        let recorded = Recorded {
            client_failures: client_window.failures as u32,
            client_oldest_ms: client_window.oldest,
            overall_failures: overall_window.failures as u32,
            overall_oldest_ms: overall_window.oldest,
            client_trusted: trusted.iter().any(|trust| trust.until > now),
        };
        match decide(&limits, &recorded, now) {
            Verdict::Refuse { held, retry_after_secs } => {
                let held = match held {
                    Held::Client => "client",
                    Held::Overall => "overall",
                };
                LogLine::warn("sign_in_limited").field("held", held).emit();
                Ok(serde_json::json!({ "verdict": "refuse", "held": held, "retry_after_secs": retry_after_secs }))
            }
            Verdict::Check => {
                match outcome {
                    Outcome::Failed => {
                        let at = SqlStorageValue::from(now);
                        self.sql.exec("INSERT INTO failures (client, at) VALUES (?, ?)", vec![client.into(), at])?;
                    }
                    Outcome::Guest => {}
                    Outcome::Operator => {
                        // Written only when there is something to change: the admin API's
                        // bearer calls come here each time, and should cost no row writes.
                        if recorded.client_failures > 0 {
                            self.sql.exec("DELETE FROM failures WHERE client = ?", vec![client.into()])?;
                        }
                        let trusted_until = trusted.iter().map(|trust| trust.until).max().unwrap_or(0);
                        if trusted_until < now + TRUST_MS - TRUST_REFRESH_MS {
                            let until = SqlStorageValue::from(now + TRUST_MS);
                            self.sql.exec(
                                "INSERT INTO trusted (client, until) VALUES (?, ?) \
                                 ON CONFLICT (client) DO UPDATE SET until = excluded.until",
                                vec![client.into(), until],
                            )?;
                        }
                    }
                }
                Ok(serde_json::json!({ "verdict": "check" }))
            }
        }
    }
}
