//! The layer table (ARCHITECTURE.md, "Layers"): every module of the crate may
//! import only from layers below its own, and no modules import each other in
//! a circle. Each source file is parsed (`syn`) and every `use`, path and macro
//! path that starts at `crate`, `super` or `self` is resolved to the module it
//! names. Test code (`#[cfg(test)]`) may reach anywhere: it assembles fixtures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

mod shape;

/// The pure layers, bottom first: a pure module imports only from rows above
/// its own (or from its own top-level module). A module's row is that of the
/// longest entry that is a prefix of its path (`files` holds `files::rules`,
/// `files::download_link` is named apart).
const PURE_LAYERS: &[(&str, &[&str])] = &[
    ("agents", &["agents"]),
    ("names", &["named"]),
    (
        "foundation",
        &[
            "api_error",
            "awaits",
            "bindings",
            "inbound",
            "ops",
            "prompt",
            "redact",
            "secret",
            "security",
            "shards",
            "sorting",
            "time",
            "verb",
        ],
    ),
    (
        "parts",
        &[
            "approvals",
            "files",
            "identity",
            "llm",
            "mcp",
            "sandbox",
            "schedules",
            "sessions::limit",
            "tasks",
            "web_tools",
            "workspace",
            "skills",
        ],
    ),
    ("rules", &["budget", "log_line", "reply"]),
    (
        "tool arguments",
        &[
            "files::arguments",
            "memory::arguments",
            "people::arguments",
            "sandbox::arguments",
            "schedules::arguments",
            "tasks::arguments",
            "web_tools::arguments",
            "workspace::arguments",
            "skills::arguments",
        ],
    ),
    ("platforms", &["platforms"]),
    ("memory", &["memory"]),
    ("people", &["people"]),
    ("processes", &["process"]),
    ("channel", &["channel"]),
    ("configuration", &["config"]),
    (
        "views",
        &[
            "files::download_link",
            "platforms::discord::settings",
            "platforms::plain_webhook::settings",
            "platforms::settings",
            "platforms::slack::settings",
            "platforms::telegram::settings",
            "platforms::teams::settings",
            "platforms::whatsapp::settings",
            "routes",
            "sessions",
            "status",
            "platforms::email::settings",
            "mcp_server",
        ],
    ),
    ("links", &["links"]),
];

/// The Workers-facing layers, above every pure one. A file is Workers-facing
/// when it is compiled only for the Worker (`#[cfg(target_arch = "wasm32")]`
/// on its `mod`, or on a parent's). Its row: the plumbing, then every room's
/// Workers-facing parts (`store`, `api`, `tools`, a messenger…, which may use
/// each other without a circle), then the dispatchers, the Durable Objects and
/// the entry points.
const EDGE_LAYERS: &[(&str, &[&str])] = &[
    ("plumbing", &["runtime"]),
    ("rooms", &[]),
    ("dispatch", &["conversations", "cron", "jobs", "router"]),
    ("objects", &["durable_objects"]),
    ("entry", &["entry"]),
];

/// File names that say a file's role: these are always pure…
const PURE_ROLES: &[&str] = &["arguments", "rules", "settings", "wire"];
/// …and these always Workers-facing.
const EDGE_ROLES: &[&str] = &["api", "buttons", "client", "messenger", "store", "tools", "webhook"];
/// Crates only Workers-facing code may name.
const RUNTIME_CRATES: &[&str] = &["worker", "js_sys", "wasm_bindgen", "wasm_bindgen_futures", "web_sys"];

type Module = Vec<String>;

/// One import: from the module whose code holds it to the module it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    from: Module,
    to: Module,
    file: String,
}

/// The module a source file defines: `src/a/b.rs` is `a::b`, and
/// `durable_objects/` is the module `durable_objects` (lib.rs's one `#[path]`).
fn module_of(file: &str) -> Module {
    let (root, rest) = file.split_once('/').expect("a file under src/ or durable_objects/");
    let mut parts: Module = rest.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|last| last == "mod" || last == "lib") {
        parts.pop();
    }
    if root == "durable_objects" {
        parts.insert(0, root.to_string());
    }
    parts
}

fn is_test(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute.parse_args::<syn::Meta>().is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// Collects the paths one file names, each resolved against the module it stands in.
struct Collector {
    file: String,
    /// The file's module, then any inline `mod` it is inside.
    module: Module,
    /// Paths named, as absolute segments (`crate` left off).
    named: Vec<(Module, Vec<String>)>,
    /// Runtime crates named (`worker::Env`), outside test code.
    runtime_crates: BTreeSet<String>,
}

impl Collector {
    fn new(file: &str) -> Self {
        Collector {
            file: file.to_string(),
            module: module_of(file),
            named: Vec::new(),
            runtime_crates: BTreeSet::new(),
        }
    }

    /// `segments` resolved from the current module, if they start at `crate`, `super` or `self`.
    fn name(&mut self, segments: Vec<String>) {
        let mut base = match segments.first().map(String::as_str) {
            Some("crate") => Module::new(),
            Some("super") | Some("self") => self.module.clone(),
            Some(first) if RUNTIME_CRATES.contains(&first) && segments.len() > 1 => {
                self.runtime_crates.insert(first.to_string());
                return;
            }
            _ => return,
        };
        let mut rest = segments.as_slice();
        if rest[0] == "crate" {
            rest = &rest[1..];
        } else {
            while let Some((first, tail)) = rest.split_first() {
                match first.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = tail;
            }
        }
        base.extend(rest.iter().cloned());
        self.named.push((self.module.clone(), base));
    }

    fn use_tree(&mut self, prefix: Vec<String>, tree: &syn::UseTree) {
        let joined = |name: String| prefix.iter().cloned().chain(std::iter::once(name)).collect::<Vec<_>>();
        match tree {
            syn::UseTree::Path(path) => self.use_tree(joined(path.ident.to_string()), &path.tree),
            syn::UseTree::Name(name) => self.name(joined(name.ident.to_string())),
            syn::UseTree::Rename(rename) => self.name(joined(rename.ident.to_string())),
            syn::UseTree::Glob(_) => self.name(prefix),
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix.clone(), tree);
                }
            }
        }
    }

    /// Paths inside macro calls (`format!`, `json!`…), which syn leaves as tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut at = 0;
        while at < tokens.len() {
            match &tokens[at] {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident) if matches!(ident.to_string().as_str(), "crate" | "super" | "self") => {
                    let mut segments = vec![ident.to_string()];
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) =
                        (tokens.get(at + 1), tokens.get(at + 2), tokens.get(at + 3))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        at += 3;
                    }
                    if segments.len() > 1 {
                        self.name(segments);
                    }
                }
                _ => {}
            }
            at += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) {
            return;
        }
        if item.content.is_some() {
            self.module.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.module.pop();
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_impl(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !is_test(&item.attrs) {
            self.use_tree(Vec::new(), &item.tree);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.name(path.segments.iter().map(|segment| segment.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
    }
}

/// Every import between two different modules in `files` (path, source),
/// each target cut to the longest module that exists.
fn imports(files: &[(String, String)]) -> Vec<Import> {
    let mut modules: BTreeSet<Module> = files.iter().map(|(file, _)| module_of(file)).collect();
    let mut found = Vec::new();
    for (file, source) in files {
        let parsed = syn::parse_file(source).unwrap_or_else(|error| panic!("{file}: {error}"));
        let mut collector = Collector::new(file);
        collector.visit_file(&parsed);
        // Inline modules count as modules too.
        modules.extend(collector.named.iter().map(|(from, _)| from.clone()));
        found.push(collector);
    }
    let mut imports = BTreeSet::new();
    for collector in found {
        for (from, path) in collector.named {
            let to = (0..=path.len()).rev().map(|cut| path[..cut].to_vec()).find(|prefix| modules.contains(prefix));
            let Some(to) = to else { continue };
            // A module may use its parents' items and declare its children.
            if to.starts_with(&from) || from.starts_with(&to) {
                continue;
            }
            imports.insert(Import { from, to, file: collector.file.clone() });
        }
    }
    imports.into_iter().collect()
}

/// Whether a `mod` item is compiled only for the Worker.
fn is_wasm_only(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute.meta.require_list().is_ok_and(|list| list.tokens.to_string().contains("wasm32"))
    })
}

/// The modules compiled only for the Worker, read off their `mod` items.
fn wasm_only(files: &[(String, String)]) -> BTreeSet<Module> {
    let mut gated = BTreeSet::new();
    for (file, source) in files {
        let parsed = syn::parse_file(source).unwrap_or_else(|error| panic!("{file}: {error}"));
        for item in &parsed.items {
            if let syn::Item::Mod(item) = item {
                if is_wasm_only(&item.attrs) {
                    let mut module = module_of(file);
                    module.push(item.ident.to_string());
                    gated.insert(module);
                }
            }
        }
    }
    gated
}

fn is_edge(module: &Module, gated: &BTreeSet<Module>) -> bool {
    (1..=module.len()).any(|length| gated.contains(&module[..length].to_vec()))
}

/// A module's row: the pure layers first, then the Workers-facing ones.
fn layer_of(module: &Module, gated: &BTreeSet<Module>) -> Option<(usize, &'static str)> {
    let top = module.first()?;
    if is_edge(module, gated) {
        let row = EDGE_LAYERS.iter().position(|(_, members)| members.contains(&top.as_str())).unwrap_or(1);
        return Some((PURE_LAYERS.len() + row, EDGE_LAYERS[row].0));
    }
    let joined = module.join("::");
    let covers = |member: &str| joined == member || joined.starts_with(&format!("{member}::"));
    let mut rows = PURE_LAYERS.iter().enumerate().flat_map(|(row, (name, members))| {
        members.iter().filter(|member| covers(member)).map(move |member| (member.len(), row, *name))
    });
    rows.by_ref().max().map(|(_, row, name)| (row, name))
}

/// Imports that go to a layer not below the importer's, and modules in no
/// layer. A room's own modules may name each other (the circle test keeps
/// them apart), but a pure one never a Workers-facing one; the Workers-facing
/// rows may name their own row.
fn upward(imports: &[Import], modules: &BTreeSet<Module>, gated: &BTreeSet<Module>) -> Vec<String> {
    let mut wrong = Vec::new();
    for module in modules.iter().filter(|module| !module.is_empty()) {
        if layer_of(module, gated).is_none() {
            wrong.push(format!("`{}` is in no layer of the table", module.join("::")));
        }
    }
    for import in imports {
        let (Some(from), Some(to)) = (layer_of(&import.from, gated), layer_of(&import.to, gated)) else { continue };
        let (from_edge, to_edge) = (from.0 >= PURE_LAYERS.len(), to.0 >= PURE_LAYERS.len());
        let allowed = if to_edge && !from_edge {
            false
        } else if import.from[0] == import.to[0] {
            true
        } else {
            to.0 < from.0 || (to.0 == from.0 && from_edge)
        };
        if !allowed {
            wrong.push(format!(
                "{}: `{}` ({}) imports `{}` ({})",
                import.file,
                import.from.join("::"),
                from.1,
                import.to.join("::"),
                to.1
            ));
        }
    }
    wrong.sort();
    wrong.dedup();
    wrong
}

/// Files whose role their name says, in the wrong place, and pure files that
/// name a runtime crate.
fn misplaced(files: &[(String, String)], gated: &BTreeSet<Module>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (file, source) in files {
        let module = module_of(file);
        let edge = is_edge(&module, gated);
        let role = module.last().map(String::as_str).unwrap_or_default();
        if PURE_ROLES.contains(&role) && edge {
            wrong.push(format!("{file}: a `{role}` file is pure, but it is compiled only for the Worker"));
        }
        if EDGE_ROLES.contains(&role) && !edge {
            wrong.push(format!(
                "{file}: a `{role}` file is Workers-facing: declare it `#[cfg(target_arch = \"wasm32\")]`"
            ));
        }
        if !edge {
            let parsed = syn::parse_file(source).unwrap_or_else(|error| panic!("{file}: {error}"));
            let mut collector = Collector::new(file);
            collector.visit_file(&parsed);
            for name in collector.runtime_crates {
                wrong.push(format!("{file}: pure code names the runtime crate `{name}`"));
            }
        }
    }
    wrong
}

/// Groups of modules that import each other in a circle (Tarjan's strongly connected components).
fn circles(imports: &[Import]) -> Vec<Vec<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for import in imports {
        graph.entry(import.from.join("::")).or_default().insert(import.to.join("::"));
        graph.entry(import.to.join("::")).or_default();
    }
    struct Search<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Search<'g> {
        fn visit(&mut self, node: &'g str) {
            let at = self.index.len();
            self.index.insert(node, at);
            self.low.insert(node, at);
            self.stack.push(node);
            for next in &self.graph[node] {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(member) = self.stack.pop() {
                    group.push(member.to_string());
                    if member == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut search =
        Search { graph: &graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for node in graph.keys() {
        if !search.index.contains_key(node.as_str()) {
            search.visit(node);
        }
    }
    search.found
}

fn sources() -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, into: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, into);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let name = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                into.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(root, &root.join("src"), &mut files);
    walk(root, &root.join("durable_objects"), &mut files);
    files.sort();
    files
}

#[test]
fn no_module_imports_from_its_own_layer_or_above() {
    let files = sources();
    let imports = imports(&files);
    assert!(imports.len() > 100, "the checker sees the imports ({} found)", imports.len());
    let modules = files.iter().map(|(file, _)| module_of(file)).collect();
    let gated = wasm_only(&files);
    assert!(gated.len() > 20, "the checker sees the Workers-facing modules ({} found)", gated.len());
    let wrong = upward(&imports, &modules, &gated);
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
}

#[test]
fn each_file_is_where_its_role_says_and_pure_files_name_no_runtime_crate() {
    let files = sources();
    let wrong = misplaced(&files, &wasm_only(&files));
    assert!(wrong.is_empty(), "misplaced:\n{}", wrong.join("\n"));
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let found = circles(&imports(&sources()));
    assert!(found.is_empty(), "import circles: {found:?}");
}

/// The checker itself: each kind of path it must see, and every failure.
#[test]
fn the_checker_catches_an_upward_import_a_circle_and_a_misplaced_role_however_they_are_spelt() {
    let file = |path: &str, source: &str| (path.to_string(), source.to_string());
    let files = [
        file(
            "src/lib.rs",
            "pub mod redact; pub mod config; pub mod people; pub mod tasks; #[cfg(target_arch = \"wasm32\")] mod runtime;",
        ),
        file("src/config.rs", "pub struct Config;"),
        file("src/redact.rs", "fn f() { let _ = format!(\"{:?}\", crate::config::Config); }"),
        file("src/tasks.rs", "pub mod rules; pub mod store;"),
        file("src/tasks/rules.rs", "fn f(env: &worker::Env) {}"),
        file("src/tasks/store.rs", "pub struct Row;"),
        file("src/people.rs", "pub mod rules; #[cfg(target_arch = \"wasm32\")] pub mod store; mod a; mod b;"),
        file("src/people/rules.rs", "use super::store::Row;"),
        file("src/people/store.rs", "pub struct Row;"),
        file("src/people/a.rs", "use super::{b::Thing, c};"),
        file("src/people/b.rs", "pub struct Thing; fn g() -> super::a::Other { todo!() }"),
        file("src/people/c.rs", "#[cfg(test)] mod tests { use crate::people::a; }"),
        file("src/runtime.rs", "pub mod http;"),
        file("src/runtime/http.rs", "use crate::people::store::Row;"),
    ];
    let imports = imports(&files);
    let modules = files.iter().map(|(path, _)| module_of(path)).collect();
    let gated = wasm_only(&files);
    let wrong = upward(&imports, &modules, &gated);
    let has =
        |wrong: &[String], needle: &str| assert!(wrong.iter().any(|line| line.contains(needle)), "{needle}: {wrong:?}");
    has(&wrong, "`redact` (foundation) imports `config` (configuration)");
    has(&wrong, "`people::rules` (people) imports `people::store` (rooms)");
    has(&wrong, "`runtime::http` (plumbing) imports `people::store` (rooms)");
    assert_eq!(wrong.len(), 3, "{wrong:?}");
    assert_eq!(circles(&imports), [vec!["people::a".to_string(), "people::b".to_string()]]);
    assert!(!imports.iter().any(|import| import.file == "src/people/c.rs"), "test code is exempt");
    let misplaced = misplaced(&files, &gated);
    has(&misplaced, "src/tasks/rules.rs: pure code names the runtime crate `worker`");
    has(&misplaced, "src/tasks/store.rs: a `store` file is Workers-facing");
    assert_eq!(misplaced.len(), 2, "{misplaced:?}");
}
