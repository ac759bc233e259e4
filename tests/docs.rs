//! The documentation holds together (`cargo test --test docs`, in `make test`):
//!
//! - every relative link in README.md, ARCHITECTURE.md and docs/*.md reaches a file or folder of
//!   the repository, and every `#anchor` (in the same page or another Markdown
//!   page) names a heading there, slugged as GitHub does. External links are not
//!   fetched.
//! - every setting the code reads is in docs/configuration.md's tables, and every
//!   setting those tables name is read. The code's settings are found by pattern,
//!   not listed here: the names `Config::from_lookup` (src/config.rs) hands to its
//!   reading closures, and any `env.var(..)` / `env.secret(..)` in src/ and
//!   durable_objects/.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use syn::visit::Visit;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The checked pages: README.md, ARCHITECTURE.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("a readable docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

// ---------------------------------------------------------------------------
// Markdown: fences, code spans, headings, links.

/// The page with fenced code blocks blanked (their lines kept, so line numbers
/// hold): nothing in a fence is a heading or a link.
fn without_fences(text: &str) -> Vec<String> {
    let mut fence: Option<(char, usize)> = None;
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
            let run = marker.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
            match (fence, marker) {
                (None, Some(c)) if run >= 3 => {
                    fence = Some((c, run));
                    String::new()
                }
                (Some((c, open)), Some(m)) if m == c && run >= open && trimmed[run..].trim().is_empty() => {
                    fence = None;
                    String::new()
                }
                (Some(_), _) => String::new(),
                (None, _) => line.to_string(),
            }
        })
        .collect()
}

/// Text with its inline code spans removed (a run of n backticks up to the next
/// run of exactly n; an unmatched run is literal). Code spans do not cross a
/// blank line, so this is applied per paragraph.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let open = run_at(i);
        let mut j = i + open;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let run = run_at(j);
                if run == open {
                    close = Some(j + run);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                // Keep the line count: a span may hold a line break.
                out.extend(chars[i..end].iter().filter(|c| **c == '\n'));
                i = end;
            }
            None => {
                out.extend(&chars[i..i + open]);
                i += open;
            }
        }
    }
    out
}

/// The page's prose: fences blanked, code spans removed, one string per line.
fn prose(text: &str) -> Vec<String> {
    let lines = without_fences(text);
    let mut out = Vec::with_capacity(lines.len());
    for paragraph in lines.split(|line| line.trim().is_empty()) {
        if !paragraph.is_empty() {
            out.extend(without_code_spans(&paragraph.join("\n")).split('\n').map(str::to_string));
        }
        out.push(String::new());
    }
    out.truncate(lines.len());
    out
}

/// An ATX heading's text (`## Text ##` is `Text`), if the line is one.
fn heading(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let hashes = rest.chars().take_while(|c| *c == '#').count();
    if indent > 3 || hashes == 0 || hashes > 6 {
        return None;
    }
    let text = &rest[hashes..];
    if !(text.is_empty() || text.starts_with(' ') || text.starts_with('\t')) {
        return None;
    }
    let text = text.trim();
    let closed = text.trim_end_matches('#');
    Some(match closed.is_empty() || closed.ends_with(' ') {
        true => closed.trim(),
        false => text,
    })
}

/// `[text](target)` becomes `text`: a heading's slug is made from what it shows.
fn link_texts(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(link) = links(&out).first().cloned() {
        out.replace_range(link.start..link.end, &link.text);
    }
    out
}

/// GitHub's heading anchor: lower case; letters, digits, `-` and `_` kept, a
/// space becomes `-`, everything else (punctuation, backticks, emoji) dropped.
fn slug(heading: &str) -> String {
    link_texts(heading)
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a page's headings make, as github-slugger numbers repeats:
/// `limits`, `limits-1`, `limits-2`…
fn anchors(text: &str) -> BTreeSet<String> {
    let mut occurrences: BTreeMap<String, usize> = BTreeMap::new();
    for line in without_fences(text) {
        let Some(title) = heading(&line) else { continue };
        let base = slug(title);
        let mut anchor = base.clone();
        while occurrences.contains_key(&anchor) {
            let count = occurrences.get_mut(&base).expect("the base was taken first");
            *count += 1;
            anchor = format!("{base}-{count}");
        }
        occurrences.insert(anchor, 0);
    }
    occurrences.into_keys().collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    text: String,
    target: String,
    /// Byte range of the whole `[text](target)` in the searched string.
    start: usize,
    end: usize,
}

/// The inline links and images of one string: `[text](target "title")`.
fn links(text: &str) -> Vec<Link> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(offset) = text[i..].find("](") {
        let close = i + offset;
        // The `[` that opens this text, brackets balanced.
        let mut depth = 0usize;
        let mut open = None;
        for j in (i..close).rev() {
            match bytes[j] {
                b']' => depth += 1,
                b'[' if depth == 0 => {
                    open = Some(j);
                    break;
                }
                b'[' => depth -= 1,
                _ => {}
            }
        }
        // The `)` that closes the target, parentheses balanced.
        let mut depth = 0usize;
        let mut end = None;
        for (j, byte) in bytes.iter().enumerate().skip(close + 2) {
            match byte {
                b'(' => depth += 1,
                b')' if depth == 0 => {
                    end = Some(j);
                    break;
                }
                b')' => depth -= 1,
                _ => {}
            }
        }
        let (Some(open), Some(end)) = (open, end) else {
            i = close + 2;
            continue;
        };
        let inner = text[close + 2..end].trim();
        let target = match inner.strip_prefix('<') {
            Some(rest) => rest.split('>').next().unwrap_or_default(),
            None => inner.split_whitespace().next().unwrap_or_default(),
        };
        let start = if open > 0 && bytes[open - 1] == b'!' { open - 1 } else { open };
        found.push(Link { text: text[open + 1..close].to_string(), target: target.to_string(), start, end: end + 1 });
        i = end + 1;
    }
    found
}

/// Reference definitions: `[label]: target` on a line of its own.
fn reference_targets(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (label, after) = rest.split_once("]:")?;
    (!label.is_empty()).then(|| after.split_whitespace().next().unwrap_or_default().to_string())
}

/// A link that leaves the repository: `https:`, `mailto:` and any other scheme.
fn is_external(target: &str) -> bool {
    match target.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with one link of `page`, if anything.
fn check_link(
    root: &Path,
    page: &Path,
    target: &str,
    anchors_of: &mut impl FnMut(&Path) -> BTreeSet<String>,
) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".into());
    }
    if is_external(target) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = match path {
        "" => page.to_path_buf(),
        path if path.starts_with('/') => return Some(format!("`{target}`: links are relative to the page")),
        path => normalize(&page.parent().expect("a page is in a folder").join(path)),
    };
    if !file.starts_with(root) {
        return Some(format!("`{target}` leaves the repository"));
    }
    if !file.exists() {
        return Some(format!("`{target}`: there is no {}", relative(&file)));
    }
    let anchor = anchor?;
    if file.extension().is_none_or(|ext| ext != "md") {
        return Some(format!("`{target}`: an anchor into {}, which is not Markdown", relative(&file)));
    }
    match anchors_of(&file).contains(anchor) {
        true => None,
        false => Some(format!("`{target}`: {} has no heading with the anchor #{anchor}", relative(&file))),
    }
}

/// Every broken link of `page`: `file:line: what`.
fn broken_links(root: &Path, page: &Path, anchors_of: &mut impl FnMut(&Path) -> BTreeSet<String>) -> Vec<String> {
    let text = fs::read_to_string(page).unwrap_or_else(|error| panic!("{}: {error}", page.display()));
    let mut broken = Vec::new();
    for (number, line) in prose(&text).iter().enumerate() {
        let targets = links(line).into_iter().map(|link| link.target).chain(reference_targets(line));
        for target in targets {
            if let Some(problem) = check_link(root, page, &target, anchors_of) {
                broken.push(format!("{}:{}: {problem}", relative(page), number + 1));
            }
        }
    }
    broken
}

#[test]
fn every_link_and_anchor_in_the_readme_and_docs_resolves() {
    let mut cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut anchors_of = |file: &Path| {
        cache
            .entry(file.to_path_buf())
            .or_insert_with(|| anchors(&fs::read_to_string(file).unwrap_or_default()))
            .clone()
    };
    let pages = pages();
    assert!(pages.len() > 10, "README.md and the docs/ pages: {pages:?}");
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let text = fs::read_to_string(page).unwrap();
        checked += prose(&text).iter().map(|line| links(line).len()).sum::<usize>();
        broken.extend(broken_links(&root(), page, &mut anchors_of));
    }
    assert!(checked > 100, "only {checked} links found: is the link reader broken?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn slugs_and_links_are_read_as_github_reads_them() {
    assert_eq!(slug("Identity: SOUL, IDENTITY and USER"), "identity-soul-identity-and-user");
    assert_eq!(slug("Files, images and voice"), "files-images-and-voice");
    assert_eq!(slug("Remote tools (MCP) and approvals"), "remote-tools-mcp-and-approvals");
    assert_eq!(slug("`make dev` & `make test`"), "make-dev--make-test");
    assert_eq!(slug("See [the docs](docs/x.md) now"), "see-the-docs-now");
    assert_eq!(slug("Snake_case and dashes-too"), "snake_case-and-dashes-too");
    let page = "# A\n\n## Limits\n\n```sh\n# Limits\n```\n\n### Limits ###\n\n## A\n";
    let expected: BTreeSet<String> = ["a", "limits", "limits-1", "a-1"].map(String::from).into();
    assert_eq!(anchors(page), expected, "fenced lines are not headings; repeats are numbered");

    let line = "see [Deploy](docs/deploy.md#first-time) and ![x](a.png \"title\"), not `[code](x.md)`";
    let targets: Vec<String> =
        prose(line).iter().flat_map(|line| links(line.as_str())).map(|link| link.target).collect();
    assert_eq!(targets, ["docs/deploy.md#first-time", "a.png"]);
    let spans = "a `code that\ncontinues [x](nowhere.md)` b [y](y.md)";
    let targets: Vec<String> =
        prose(spans).iter().flat_map(|line| links(line.as_str())).map(|link| link.target).collect();
    assert_eq!(targets, ["y.md"], "a code span may cross a line break");
    assert!(is_external("https://example.com") && is_external("mailto:a@b.c") && !is_external("docs/a.md#b:c"));

    // A made-up repository whose page has one good link and four bad ones.
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    fs::create_dir_all(&docs).unwrap();
    fs::write(dir.path().join("code.rs"), "").unwrap();
    let page = docs.join("page.md");
    fs::write(
        &page,
        "# Page\n\n## Two words\n\n[ok](#two-words) [no anchor](#three-words) [no file](missing.md)\n\
         [not Markdown](../code.rs#L1) [outside](../../elsewhere.md) [fine](../code.rs)\n",
    )
    .unwrap();
    let mut anchors_of = |file: &Path| anchors(&fs::read_to_string(file).unwrap_or_default());
    let broken = broken_links(dir.path(), &page, &mut anchors_of);
    assert_eq!(broken.len(), 4, "{broken:#?}");
    for (problem, expected) in broken.iter().zip(["#three-words", "missing.md", "not Markdown", "leaves the"]) {
        assert!(problem.contains(expected), "{problem} should say {expected}");
    }
}

// ---------------------------------------------------------------------------
// Settings: what the code reads, what docs/configuration.md documents.

/// Settings read under a name the code builds at run time. Each entry is a
/// file whose `env.var(name)` / `env.secret(name)` takes a computed name, and
/// the pattern of the names it reads (`None`: the names are found elsewhere).
const COMPUTED_NAMES: &[(&str, Option<&str>)] = &[
    // `runtime::config::load` hands `env` to `Config::from_lookup`, whose names are
    // read from src/config.rs below.
    ("src/runtime/config.rs", None),
    // An MCP server's credentials: Worker secrets named in its settings, which
    // must start with `MCP_` (`mcp::check_secret_name`).
    ("src/mcp/client.rs", Some("MCP_*")),
];

/// A setting's name: upper-case letters, digits and `_`, starting with a letter
/// (a trailing `*` makes it a pattern).
fn is_setting_name(name: &str) -> bool {
    let stem = name.strip_suffix('*').unwrap_or(name);
    stem.starts_with(|c: char| c.is_ascii_uppercase())
        && stem.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn string_literal(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }) => Some(text.value()),
        syn::Expr::Reference(reference) => string_literal(&reference.expr),
        syn::Expr::Paren(inner) => string_literal(&inner.expr),
        _ => None,
    }
}

fn ident_of(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Path(path) => path.path.get_ident().map(ToString::to_string),
        syn::Expr::Reference(reference) => ident_of(&reference.expr),
        _ => None,
    }
}

/// The `format!` templates in an expression: `format!("BUDGET_{scope}_USD")`.
fn format_templates(expr: &syn::Expr) -> Vec<String> {
    #[derive(Default)]
    struct Templates(Vec<String>);
    impl<'ast> Visit<'ast> for Templates {
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            if mac.path.is_ident("format") {
                let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
                if let Some(template) =
                    mac.parse_body_with(parser).ok().and_then(|args| args.first().and_then(string_literal))
                {
                    self.0.push(template);
                }
            }
        }
    }
    let mut templates = Templates::default();
    templates.visit_expr(expr);
    templates.0
}

/// Calls of the named functions in an expression: (callee, first argument).
fn calls_of<'a>(expr: &'a syn::Expr, names: &BTreeSet<String>) -> Vec<(String, &'a syn::Expr)> {
    struct Calls<'n, 'a> {
        names: &'n BTreeSet<String>,
        found: Vec<(String, &'a syn::Expr)>,
    }
    impl<'a> Visit<'a> for Calls<'_, 'a> {
        fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
            if let Some(callee) = ident_of(&call.func).filter(|callee| self.names.contains(callee)) {
                if let Some(first) = call.args.first() {
                    self.found.push((callee, first));
                }
            }
            syn::visit::visit_expr_call(self, call);
        }
        // A closure's own calls are judged with its own parameter (below).
        fn visit_expr_closure(&mut self, _closure: &'a syn::ExprClosure) {}
    }
    let mut calls = Calls { names, found: Vec::new() };
    calls.visit_expr(expr);
    calls.found
}

/// Every closure inside an expression, at any depth.
fn closures_in(expr: &syn::Expr) -> Vec<&syn::ExprClosure> {
    struct Nested<'a>(Vec<&'a syn::ExprClosure>);
    impl<'a> Visit<'a> for Nested<'a> {
        fn visit_expr_closure(&mut self, closure: &'a syn::ExprClosure) {
            self.0.push(closure);
            syn::visit::visit_expr_closure(self, closure);
        }
    }
    let mut nested = Nested(Vec::new());
    nested.visit_expr(expr);
    nested.0
}

/// A closure's first parameter's name.
fn first_parameter(closure: &syn::ExprClosure) -> Option<String> {
    let mut pattern = closure.inputs.first()?;
    if let syn::Pat::Type(typed) = pattern {
        pattern = &typed.pat;
    }
    match pattern {
        syn::Pat::Ident(ident) => Some(ident.ident.to_string()),
        _ => None,
    }
}

/// The names `Config::from_lookup` reads. Its parameter (`lookup`) reads a
/// setting; so does every closure of its body that calls a reader (`text`,
/// `secret`, `number`, …). A reader called with a string literal reads that
/// name; a closure that builds names with `format!("…{param}…")` reads each
/// template with the literal it was given in place of `{param}`.
fn names_read_by_from_lookup(source: &str) -> BTreeSet<String> {
    let file = syn::parse_file(source).expect("src/config.rs parses");
    let function = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Impl(block) => Some(block.items.iter()),
            _ => None,
        })
        .flatten()
        .find_map(|item| match item {
            syn::ImplItem::Fn(function) if function.sig.ident == "from_lookup" => Some(function),
            _ => None,
        })
        .expect("src/config.rs has Config::from_lookup");
    let lookup = match function.sig.inputs.first() {
        Some(syn::FnArg::Typed(typed)) => match &*typed.pat {
            syn::Pat::Ident(ident) => ident.ident.to_string(),
            _ => panic!("from_lookup's parameter is not a plain name"),
        },
        _ => panic!("from_lookup takes the lookup as its first parameter"),
    };
    // The closures bound by `let` in the body, by name.
    let closures: BTreeMap<String, &syn::ExprClosure> = function
        .block
        .stmts
        .iter()
        .filter_map(|statement| match statement {
            syn::Stmt::Local(syn::Local {
                pat: syn::Pat::Ident(name),
                init: Some(syn::LocalInit { expr, .. }),
                ..
            }) => match &**expr {
                syn::Expr::Closure(closure) => Some((name.ident.to_string(), closure)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    // The readers: the lookup, then every closure that calls one (to a fixed point).
    let mut readers: BTreeSet<String> = [lookup].into();
    loop {
        let before = readers.len();
        for (name, closure) in &closures {
            if !calls_of(&closure.body, &readers).is_empty() {
                readers.insert(name.clone());
            }
        }
        if readers.len() == before {
            break;
        }
    }
    let templates: BTreeMap<&String, Vec<String>> = closures
        .iter()
        .filter(|(name, _)| readers.contains(*name))
        .map(|(name, closure)| {
            let parameter = first_parameter(closure).unwrap_or_default();
            let placeholder = format!("{{{parameter}}}");
            let made = format_templates(&closure.body).into_iter().filter(|t| t.contains(&placeholder));
            (name, made.map(|template| template.replace(&placeholder, "{}")).collect())
        })
        .collect();

    let mut names = BTreeSet::new();
    let mut unread = Vec::new();
    let mut judge = |callee: &String, argument: &syn::Expr, parameter: Option<&str>| {
        if let Some(literal) = string_literal(argument) {
            match templates.get(callee).filter(|made| !made.is_empty()) {
                Some(made) => names.extend(made.iter().map(|template| template.replace("{}", &literal))),
                None => {
                    names.insert(literal);
                }
            }
            return;
        }
        // Inside a reading closure: its own parameter passed on, or a name built
        // from it (both counted where the closure is called).
        let passes_parameter = parameter.is_some_and(|parameter| {
            ident_of(argument).as_deref() == Some(parameter)
                || format_templates(argument).iter().any(|t| t.contains(&format!("{{{parameter}}}")))
        });
        if !passes_parameter {
            unread.push(format!("{callee}(…)"));
        }
    };
    for statement in &function.block.stmts {
        let expr = match statement {
            syn::Stmt::Local(syn::Local { init: Some(init), .. }) => &init.expr,
            syn::Stmt::Expr(expr, _) => expr,
            _ => continue,
        };
        let closure = match expr {
            syn::Expr::Closure(closure) => Some(closure),
            _ => None,
        };
        let body = closure.map_or(expr, |closure| &closure.body);
        let parameter = closure.and_then(first_parameter);
        for (callee, argument) in calls_of(body, &readers) {
            judge(&callee, argument, parameter.as_deref());
        }
        // Closures nested deeper (in a field's value) read with literals too.
        for inner in closures_in(body) {
            for (callee, argument) in calls_of(&inner.body, &readers) {
                judge(&callee, argument, first_parameter(inner).as_deref());
            }
        }
    }
    assert!(
        unread.is_empty(),
        "from_lookup reads settings whose names this test cannot tell (give them as literals): {unread:?}"
    );
    names
}

fn is_test(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute.parse_args::<syn::Meta>().is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// `env.var(..)` and `env.secret(..)` (the receiver named `env`, or a field
/// `env`) in one file, outside test code: the literal names, and how many
/// reads take a computed name.
fn env_reads(source: &str) -> (BTreeSet<String>, usize) {
    #[derive(Default)]
    struct Reads {
        names: BTreeSet<String>,
        computed: usize,
    }
    impl<'ast> Visit<'ast> for Reads {
        fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
            if !is_test(&module.attrs) {
                syn::visit::visit_item_mod(self, module);
            }
        }
        fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
            if !is_test(&function.attrs) {
                syn::visit::visit_item_fn(self, function);
            }
        }
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            let on_env = match &*call.receiver {
                syn::Expr::Path(path) => path.path.is_ident("env"),
                syn::Expr::Field(field) => matches!(&field.member, syn::Member::Named(name) if name == "env"),
                _ => false,
            };
            if on_env && (call.method == "var" || call.method == "secret") {
                match call.args.first().and_then(string_literal) {
                    Some(name) => {
                        self.names.insert(name);
                    }
                    None => self.computed += 1,
                }
            }
            syn::visit::visit_expr_method_call(self, call);
        }
    }
    let file = syn::parse_file(source).unwrap_or_else(|error| panic!("does not parse: {error}"));
    let mut reads = Reads::default();
    reads.visit_file(&file);
    (reads.names, reads.computed)
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// The settings the code reads (patterns such as `MCP_*` included).
fn settings_read() -> BTreeSet<String> {
    let config = fs::read_to_string(root().join("src/config.rs")).unwrap();
    let mut read = names_read_by_from_lookup(&config);
    assert!(read.len() > 40, "from_lookup seems to read only {read:?}: is the reader broken?");

    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("durable_objects"), &mut files);
    let mut computed_in = BTreeSet::new();
    for file in &files {
        let (names, computed) = env_reads(&fs::read_to_string(file).unwrap());
        read.extend(names);
        let name = relative(file);
        if computed > 0 {
            let Some((_, pattern)) = COMPUTED_NAMES.iter().find(|(known, _)| *known == name) else {
                panic!(
                    "{name} reads a setting by a computed name: use a literal, or add the file and the \
                     names' pattern to COMPUTED_NAMES"
                );
            };
            read.extend(pattern.map(str::to_string));
            computed_in.insert(name);
        }
    }
    for (file, _) in COMPUTED_NAMES {
        assert!(computed_in.contains(*file), "COMPUTED_NAMES lists {file}, which reads no computed name now");
    }

    // Every secret the redactor knows (SECRET_VARIABLES) is a setting read.
    let secrets = secret_variables(&config);
    assert!(!secrets.is_empty(), "SECRET_VARIABLES found in src/config.rs");
    let unread: Vec<&String> = secrets.iter().filter(|name| !read.contains(*name)).collect();
    assert!(unread.is_empty(), "SECRET_VARIABLES names settings from_lookup never reads: {unread:?}");
    let odd: Vec<&String> = read.iter().filter(|name| !is_setting_name(name)).collect();
    assert!(odd.is_empty(), "read names that are not setting names: {odd:?}");
    read
}

/// The names in `SECRET_VARIABLES`.
fn secret_variables(config: &str) -> BTreeSet<String> {
    let file = syn::parse_file(config).unwrap();
    let mut names = BTreeSet::new();
    for item in &file.items {
        if let syn::Item::Const(constant) = item {
            if constant.ident == "SECRET_VARIABLES" {
                if let syn::Expr::Array(array) = &*constant.expr {
                    names.extend(array.elems.iter().filter_map(string_literal));
                }
            }
        }
    }
    names
}

/// The settings docs/configuration.md documents: the backticked upper-case
/// names in the first column of its tables, with the text of each row.
fn settings_documented() -> BTreeMap<String, String> {
    let text = fs::read_to_string(root().join("docs/configuration.md")).expect("docs/configuration.md");
    let mut documented = BTreeMap::new();
    for line in without_fences(&text) {
        let Some(row) = line.trim().strip_prefix('|') else { continue };
        let first = row.split('|').next().unwrap_or_default();
        for (index, piece) in first.split('`').enumerate() {
            if index % 2 == 1 && is_setting_name(piece) {
                let earlier = documented.insert(piece.to_string(), line.clone());
                assert!(earlier.is_none(), "docs/configuration.md documents {piece} twice");
            }
        }
    }
    documented
}

#[test]
fn every_setting_the_code_reads_is_documented_and_every_documented_setting_is_read() {
    let read = settings_read();
    let documented = settings_documented();
    let undocumented: Vec<&String> = read.iter().filter(|name| !documented.contains_key(*name)).collect();
    let unread: Vec<&String> = documented.keys().filter(|name| !read.contains(*name)).collect();
    assert!(
        undocumented.is_empty(),
        "settings the code reads that docs/configuration.md's tables do not name: {undocumented:?}"
    );
    assert!(unread.is_empty(), "settings docs/configuration.md documents that no code reads: {unread:?}");
    // A secret's row says so (the redactor treats it as one).
    let config = fs::read_to_string(root().join("src/config.rs")).unwrap();
    for secret in secret_variables(&config) {
        assert!(documented[&secret].contains("(secret)"), "docs/configuration.md: {secret}'s row says (secret)");
    }
}

#[test]
fn the_settings_reader_follows_closures_and_templates() {
    let source = r#"
        impl Config {
            pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
                let text = |name: &str, default: &str| lookup(name).unwrap_or_else(|| default.to_string());
                let number = |name: &str, default: u64| text(name, "").parse().unwrap_or(default);
                let scoped = |scope: &str| lookup(&format!("LIMIT_{scope}_PER_DAY"));
                let unrelated = |name: &str| name.len();
                let direct = lookup("DIRECT");
                Config {
                    a: text("ALPHA", "x"),
                    b: number("BETA", 1),
                    c: scoped("PERSON"),
                    d: unrelated("NOT_A_SETTING"),
                    e: Some(1).map(|_| text("GAMMA", "")),
                }
            }
        }
    "#;
    let names = names_read_by_from_lookup(source);
    let expected: BTreeSet<String> =
        ["ALPHA", "BETA", "DIRECT", "GAMMA", "LIMIT_PERSON_PER_DAY"].map(String::from).into();
    assert_eq!(names, expected);

    let (names, computed) = env_reads(
        "fn f(env: &Env, name: &str) { env.var(\"ONE\"); self.env.secret(\"TWO\"); env.var(name); self.secret(name); }",
    );
    assert_eq!(names, ["ONE", "TWO"].map(String::from).into());
    assert_eq!(computed, 1);
}

#[test]
#[should_panic(expected = "cannot tell")]
fn a_setting_read_under_a_computed_name_fails_the_reader() {
    names_read_by_from_lookup(
        "impl Config { fn from_lookup(lookup: L) -> Self { let text = |name: &str| lookup(name); \
         let which = pick(); Config { a: text(&which) } } }",
    );
}
