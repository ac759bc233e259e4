//! Where a V8 CPU profile of the Worker's isolate spent its time: each sample
//! goes to one bucket (the Worker's wasm, its JS, the runtime APIs it called,
//! GC, the rest of the runtime) and, for the Worker's part, to one function.
//!
//! In workerd, V8 takes no samples while the isolate sits unused (between
//! requests), so a long `timeDelta` is mostly such a pause, not time in the
//! sample's frame: such a sample counts one sampling interval (the median short delta).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The `Profiler.stop` result's profile (the `.cpuprofile` format).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    nodes: Vec<Node>,
    samples: Vec<u64>,
    time_deltas: Vec<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Node {
    id: u64,
    call_frame: CallFrame,
    #[serde(default)]
    children: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallFrame {
    function_name: String,
    url: String,
    line_number: i64,
}

/// Where a sample's time went, in the order the bench prints them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    WorkerWasm,
    WorkerJs,
    CalledApis,
    DevMiddleware,
    GarbageCollector,
    Runtime,
    Program,
    Idle,
}

impl Bucket {
    pub const ALL: [Bucket; 8] = [
        Bucket::WorkerWasm,
        Bucket::WorkerJs,
        Bucket::CalledApis,
        Bucket::DevMiddleware,
        Bucket::GarbageCollector,
        Bucket::Runtime,
        Bucket::Program,
        Bucket::Idle,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Bucket::WorkerWasm => "Worker wasm",
            Bucket::WorkerJs => "Worker JS (build/ and worker/: shims, glue)",
            Bucket::CalledApis => "runtime APIs it called (with import shims)",
            Bucket::DevMiddleware => "wrangler dev's middleware, esbuild helpers",
            Bucket::GarbageCollector => "garbage collector",
            Bucket::Runtime => "the runtime's own JS and native calls",
            Bucket::Program => "(program): V8 and workerd outside JS",
            Bucket::Idle => "(idle)",
        }
    }
}

/// What a frame is.
#[derive(Clone, Copy, PartialEq)]
enum Frame {
    Wasm,
    WorkerJs,
    /// One of wasm-bindgen's `__wbg_*` imports: a line of JS around one runtime
    /// call, whose native time V8 often books on this frame.
    ImportShim,
    DevMiddleware,
    /// A native function or runtime JS: the bucket is decided by its caller.
    Runtime,
    GarbageCollector,
    Program,
    Idle,
}

/// The Worker's code, for naming and classifying frames: the wasm's function
/// names and, in the bundle wrangler built, which lines are the Worker's own
/// (`build/`, worker-build's output, and `worker/`, the entry around it).
pub struct WorkerCode {
    wasm_names: HashMap<u32, String>,
    bundle_name: String,
    /// (first line, 0-based; whether it is the Worker's own), in line order.
    bundle_sections: Vec<(i64, bool)>,
    /// The import each `__wbg_*` shim's first line defines, by 0-based line.
    import_shims: HashMap<i64, String>,
}

impl WorkerCode {
    /// `named_wasm`: the shipped wasm with its "name" section kept; the bundle:
    /// what the running `wrangler dev` in `project_root` built.
    pub fn load(named_wasm: &Path, project_root: &Path) -> WorkerCode {
        let wasm = std::fs::read(named_wasm).expect("read the named wasm (make build)");
        let bundle = newest_bundle(project_root).expect("wrangler dev's bundle under .wrangler/tmp");
        let source = std::fs::read_to_string(&bundle).expect("read wrangler dev's bundle");
        // The profile names the bundle by its file name alone.
        let bundle_name = bundle.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let mut bundle_sections = Vec::new();
        let mut import_shims = HashMap::new();
        for (line, text) in source.lines().enumerate() {
            // esbuild starts each input file with a `// path` comment line.
            if let Some(path) = text.strip_prefix("// ").filter(|path| !path.contains(' ') && path.contains('/')) {
                let own = path.starts_with("build/") || path.starts_with("worker/");
                bundle_sections.push((line as i64, own));
            }
            // `}, "__wbg_a_<hash>"), __wbg_b_<hash>: __name(function(e) {` starts the shim of b.
            let defined = text.split_whitespace().filter_map(|word| word.strip_suffix(':')).next_back();
            if let Some(import) = defined.filter(|word| word.starts_with("__wbg_")) {
                import_shims.insert(line as i64, shorten(import));
            }
        }
        WorkerCode { wasm_names: wasm_function_names(&wasm), bundle_name, bundle_sections, import_shims }
    }

    fn classify(&self, frame: &CallFrame) -> Frame {
        match (frame.url.as_str(), frame.function_name.as_str()) {
            (url, _) if url.starts_with("wasm://") => Frame::Wasm,
            ("", "wasm-to-js") => Frame::Wasm,
            ("", "(garbage collector)") => Frame::GarbageCollector,
            ("", "(idle)") => Frame::Idle,
            ("", "(program)") => Frame::Program,
            (url, _) if url == self.bundle_name => {
                let section = self.bundle_sections.iter().rev().find(|(start, _)| *start <= frame.line_number);
                match section {
                    Some((_, true)) if self.import_shims.contains_key(&frame.line_number) => Frame::ImportShim,
                    Some((_, true)) => Frame::WorkerJs,
                    _ => Frame::DevMiddleware, // wrangler's templates and esbuild's helpers
                }
            }
            _ => Frame::Runtime,
        }
    }

    fn name(&self, frame: &CallFrame) -> String {
        let function = frame.function_name.as_str();
        let index = function.strip_prefix("wasm-function[").and_then(|rest| rest.strip_suffix(']'));
        if let Some(name) =
            index.and_then(|index| index.parse().ok()).and_then(|index: u32| self.wasm_names.get(&index))
        {
            return shorten(name);
        }
        match self.import_shims.get(&frame.line_number) {
            Some(import) if frame.url == self.bundle_name => format!("{import} (import shim)"),
            _ if function.is_empty() => format!("(anonymous) {}:{}", frame.url, frame.line_number + 1),
            _ => shorten(function),
        }
    }
}

/// Time per bucket and per function of the Worker's part, in microseconds.
#[derive(Default)]
pub struct Summary {
    pub buckets: HashMap<Bucket, f64>,
    /// ("wasm" | "js" | "api", function) → self time, in the Worker's buckets and the APIs it called.
    pub functions: HashMap<(&'static str, String), f64>,
    /// edgebot's own wasm functions → time with them on the stack (the Worker's buckets and the APIs it called).
    pub inclusive: HashMap<String, f64>,
    pub interval_us: f64,
}

impl Summary {
    pub fn total(&self) -> f64 {
        self.buckets.values().sum()
    }

    pub fn get(&self, bucket: Bucket) -> f64 {
        self.buckets.get(&bucket).copied().unwrap_or(0.0)
    }
}

pub fn summarize(profile: &Profile, code: &WorkerCode) -> Summary {
    let nodes: HashMap<u64, &Node> = profile.nodes.iter().map(|node| (node.id, node)).collect();
    let parents: HashMap<u64, u64> =
        profile.nodes.iter().flat_map(|node| node.children.iter().map(move |child| (*child, node.id))).collect();
    let mut short: Vec<i64> = profile.time_deltas.iter().copied().filter(|delta| *delta < 1_000).collect();
    short.sort_unstable();
    let interval = short.get(short.len() / 2).copied().unwrap_or(100) as f64;
    let mut summary = Summary { interval_us: interval, ..Summary::default() };
    for (sample, delta) in profile.samples.iter().zip(&profile.time_deltas) {
        let time = if (*delta as f64) <= 2.0 * interval { *delta as f64 } else { interval };
        let node = nodes[sample];
        let callers: Vec<&CallFrame> =
            std::iter::successors(parents.get(sample), |id| parents.get(*id)).map(|id| &nodes[id].call_frame).collect();
        // A runtime frame counts for whoever called it: the nearest Worker or middleware frame.
        let caller = callers
            .iter()
            .map(|frame| code.classify(frame))
            .find(|frame| matches!(frame, Frame::Wasm | Frame::WorkerJs | Frame::ImportShim | Frame::DevMiddleware));
        let (bucket, kind) = match (code.classify(&node.call_frame), caller) {
            (Frame::Wasm, _) => (Bucket::WorkerWasm, "wasm"),
            (Frame::WorkerJs, _) => (Bucket::WorkerJs, "js"),
            (Frame::ImportShim, _) => (Bucket::CalledApis, "api"),
            (Frame::DevMiddleware, _) | (Frame::Runtime, Some(Frame::DevMiddleware)) => (Bucket::DevMiddleware, ""),
            (Frame::Runtime, Some(_)) => (Bucket::CalledApis, "api"),
            (Frame::Runtime, None) => (Bucket::Runtime, ""),
            (Frame::GarbageCollector, _) => (Bucket::GarbageCollector, ""),
            (Frame::Program, _) => (Bucket::Program, ""),
            (Frame::Idle, _) => (Bucket::Idle, ""),
        };
        *summary.buckets.entry(bucket).or_default() += time;
        if kind.is_empty() {
            continue;
        }
        *summary.functions.entry((kind, code.name(&node.call_frame))).or_default() += time;
        let mut own: Vec<String> = std::iter::once(&node.call_frame)
            .chain(callers)
            .map(|frame| code.name(frame))
            .filter(|name| name.contains("edgebot::") && !name.starts_with("core::ptr::drop_in_place"))
            .collect();
        own.sort();
        own.dedup();
        for name in own {
            *summary.inclusive.entry(name).or_default() += time;
        }
    }
    summary
}

/// The script wrangler dev bundled last: the one `.js` file in the newest `.wrangler/tmp/dev-*`.
fn newest_bundle(project_root: &Path) -> Option<PathBuf> {
    let newest_directory = std::fs::read_dir(project_root.join(".wrangler/tmp"))
        .ok()?
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("dev-"))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .max()?
        .1;
    std::fs::read_dir(newest_directory)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|extension| extension == "js"))
}

/// Drops the hash suffix (`::h<hash>` of a Rust name, `_<hash>` of a wasm-bindgen
/// import) and caps the length.
fn shorten(name: &str) -> String {
    let name = ["::h", "_"]
        .into_iter()
        .find_map(|separator| {
            let (head, hash) = name.rsplit_once(separator)?;
            (hash.len() == 16 && hash.bytes().all(|byte| byte.is_ascii_hexdigit())).then_some(head)
        })
        .unwrap_or(name);
    if name.chars().count() > 110 {
        format!("{}...", name.chars().take(107).collect::<String>())
    } else {
        name.to_string()
    }
}

/// Function index → name, from the wasm's "name" custom section (subsection 1).
fn wasm_function_names(wasm: &[u8]) -> HashMap<u32, String> {
    fn number(bytes: &[u8], at: &mut usize) -> usize {
        let mut result = 0;
        for shift in (0..).step_by(7) {
            let byte = bytes[*at];
            *at += 1;
            result |= usize::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        result
    }
    fn string(bytes: &[u8], at: &mut usize) -> String {
        let length = number(bytes, at);
        *at += length;
        String::from_utf8_lossy(&bytes[*at - length..*at]).into_owned()
    }
    let mut names = HashMap::new();
    let mut at = 8; // magic and version
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let end = number(wasm, &mut at) + at;
        if id == 0 && string(wasm, &mut at) == "name" {
            while at < end {
                let subsection = wasm[at];
                at += 1;
                let subsection_end = number(wasm, &mut at) + at;
                if subsection == 1 {
                    for _ in 0..number(wasm, &mut at) {
                        let index = number(wasm, &mut at) as u32;
                        names.insert(index, string(wasm, &mut at));
                    }
                }
                at = subsection_end;
            }
        }
        at = end;
    }
    names
}
