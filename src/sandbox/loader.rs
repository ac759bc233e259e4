//! The Worker Loader binding (`LOADER`), reached through JS interop: workers-rs
//! has no binding for it. Each run loads a fresh isolate (`LOADER.load`, never
//! `LOADER.get` with a cached id, so nothing a run leaves in its globals reaches
//! the next, another conversation's included) from our wrapper, its prelude and
//! the model's module (loops guarded), with no env and `globalOutbound: null`
//! (or, when the run may fetch, this Worker through the `SELF` binding), and
//! POSTs it the workspace's files. The host races the call against the
//! wall time and abandons the isolate when the time runs out.

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use worker::Env;

use crate::ops::Op;
use crate::runtime::http::{now_ms, within};
use crate::runtime::settled::settled;
use crate::sandbox::loop_guard::guard_loops;
use crate::sandbox::network::sign;
use crate::sandbox::rules::{host_error, parse_report, request_body, timed_out, Limits, Report, SandboxFile};

/// The binding's name in wrangler.toml.
pub const LOADER_BINDING: &str = crate::bindings::LOADER.name;
/// This Worker itself: a run's `globalOutbound` when it may fetch.
const SELF_BINDING: &str = crate::bindings::SELF_SERVICE.name;
/// The isolate's main module: calls the model's module and reports.
const WRAPPER: &str = include_str!("wrapper.js");
/// Imported first: console capture and the loop counter.
const PRELUDE: &str = include_str!("prelude.js");
/// The loaded isolate's compatibility date.
const COMPATIBILITY_DATE: &str = "2026-11-01";

/// Runs `code` over `files`; the report, or the `error: …` text the model reads.
/// `egress_key`: the run may fetch, through this Worker and its fetch guard
/// (`src/sandbox/network.rs`); none, no network at all.
pub async fn run(
    env: &Env,
    code: &str,
    files: &[SandboxFile],
    limits: &Limits,
    egress_key: Option<[u8; 32]>,
) -> Result<Report, String> {
    crate::ops::count(Op::SandboxRun);
    let loader = Reflect::get(env, &JsValue::from_str(LOADER_BINDING))
        .ok()
        .filter(|loader| !loader.is_undefined())
        .ok_or_else(|| format!("error: run_code needs the `{LOADER_BINDING}` Worker Loader binding"))?;
    // A name the model cannot know, so its module cannot shadow the counter.
    let tick = format!("__edgebot_tick_{}", uuid::Uuid::new_v4().simple());
    // On the module's first line, so the model's line numbers stay as written.
    let module = format!("import {{ tick as {tick} }} from \"./prelude.js\"; {}", guard_loops(code, &tick));
    let outbound = match egress_key {
        None => JsValue::NULL,
        Some(_) => Reflect::get(env, &JsValue::from_str(SELF_BINDING))
            .ok()
            .filter(|binding| !binding.is_undefined())
            .ok_or_else(|| format!("error: the network needs the `{SELF_BINDING}` service binding"))?,
    };
    // The run's token outlives its wall time by a little: its last fetch may still be going.
    let expires_ms = now_ms() + limits.wall_ms as i64 + 5_000;
    let token = egress_key.map(|key| sign(&key, &uuid::Uuid::new_v4().simple().to_string(), expires_ms));
    let body = request_body(files, token.as_deref());
    let scripts = skill_modules(files, &tick);
    match within(limits.wall_ms, call(&loader, &module, &scripts, &body, limits, &outbound)).await {
        None => Err(timed_out(limits)),
        Some(Err(error)) => Err(host_error(&describe(&error))),
        Some(Ok(text)) => parse_report(&text).map_err(|error| format!("error: {error}")),
    }
}

/// Loads the isolate and POSTs it the body; the report's text.
async fn call(
    loader: &JsValue,
    module: &str,
    scripts: &[(String, String)],
    body: &str,
    limits: &Limits,
    outbound: &JsValue,
) -> Result<String, JsValue> {
    let modules = Object::new();
    Reflect::set(&modules, &"wrapper.js".into(), &WRAPPER.into())?;
    Reflect::set(&modules, &"prelude.js".into(), &PRELUDE.into())?;
    Reflect::set(&modules, &"code.js".into(), &module.into())?;
    for (path, source) in scripts {
        Reflect::set(&modules, &path.as_str().into(), &source.as_str().into())?;
    }
    let cpu = Object::new();
    Reflect::set(&cpu, &"cpuMs".into(), &JsValue::from_f64(limits.cpu_ms as f64))?;
    let options = Object::new();
    Reflect::set(&options, &"compatibilityDate".into(), &COMPATIBILITY_DATE.into())?;
    Reflect::set(&options, &"mainModule".into(), &"wrapper.js".into())?;
    Reflect::set(&options, &"modules".into(), &modules)?;
    Reflect::set(&options, &"env".into(), &Object::new())?;
    Reflect::set(&options, &"limits".into(), &cpu)?;
    Reflect::set(&options, &"globalOutbound".into(), outbound)?;
    let stub = method(loader, "load")?.call1(loader, &options)?;
    let entrypoint = method(&stub, "getEntrypoint")?.call0(&stub)?;
    let init = Object::new();
    Reflect::set(&init, &"method".into(), &"POST".into())?;
    Reflect::set(&init, &"body".into(), &body.into())?;
    let fetched = method(&entrypoint, "fetch")?.call2(&entrypoint, &"http://sandbox/run".into(), &init)?;
    let response = settled(&fetched.dyn_into::<Promise>()?).await?;
    let text = method(&response, "text")?.call0(&response)?;
    let text = settled(&text.dyn_into::<Promise>()?).await?;
    text.as_string().ok_or_else(|| JsValue::from_str("the sandbox answered no text"))
}

/// The mounted skills' scripts (`.js` and `.mjs` files under `skills/`), as
/// modules named by their paths, so the model's module can import them
/// (`import { sum } from "./skills/csv-sum/scripts/sum.js"`): the isolate has no
/// `eval`. Each is loop-guarded like the model's own module, importing the
/// counter from the prelude at the root.
fn skill_modules(files: &[SandboxFile], tick: &str) -> Vec<(String, String)> {
    let is_script = |path: &str| path.ends_with(".js") || path.ends_with(".mjs");
    files
        .iter()
        .filter(|file| file.read_only && crate::skills::rules::is_mounted(&file.path) && is_script(&file.path))
        .filter_map(|file| {
            let source = std::str::from_utf8(&file.bytes).ok()?;
            let up = "../".repeat(file.path.matches('/').count());
            let guarded = guard_loops(source, tick);
            Some((file.path.clone(), format!("import {{ tick as {tick} }} from \"{up}prelude.js\"; {guarded}")))
        })
        .collect()
}

fn method(target: &JsValue, name: &str) -> Result<Function, JsValue> {
    Reflect::get(target, &JsValue::from_str(name))?
        .dyn_into::<Function>()
        .map_err(|_| JsValue::from_str(&format!("the loader has no `{name}`")))
}

/// A thrown JS value as text.
fn describe(error: &JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    error.as_string().unwrap_or_else(|| format!("{error:?}"))
}
