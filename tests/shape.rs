//! The shape of the house (issue 33): no production file over
//! [`MAX_FILE_LINES`] lines and no function over [`MAX_FN_LINES`], so each file
//! holds one idea and each function fits on a screen. Test code is left out:
//! `#[cfg(test)]` modules and items, and files that are only tests.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::{is_test, sources};

/// A production file's most lines, its tests left out.
const MAX_FILE_LINES: usize = 600;
/// A function's most lines, its signature and closing brace included.
const MAX_FN_LINES: usize = 80;
/// Functions allowed to be longer, each with why: flat tables, where splitting
/// would only scatter one list.
const LONG_ALLOWED: &[(&str, &str)] =
    &[("src/config.rs", "from_lookup: the flat table of every setting, one line each")];

fn lines(span: Span) -> usize {
    span.end().line - span.start().line + 1
}

/// Every function in one file with its length: (name, first line, lines).
struct Functions {
    found: Vec<(String, usize, usize)>,
    test_lines: usize,
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test(&item.attrs) {
            self.test_lines += lines(item.span());
        } else {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test(&item.attrs) {
            self.test_lines += lines(item.span());
            return;
        }
        self.found.push((item.sig.ident.to_string(), item.span().start().line, lines(item.span())));
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.found.push((item.sig.ident.to_string(), item.span().start().line, lines(item.span())));
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if item.default.is_some() {
            self.found.push((item.sig.ident.to_string(), item.span().start().line, lines(item.span())));
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

fn is_test_file(path: &str) -> bool {
    path.ends_with("/tests.rs") || path.ends_with("/test_zones.rs")
}

/// Files and functions over the limits, as lines of a report.
fn too_big(files: &[(String, String)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (path, source) in files.iter().filter(|(path, _)| !is_test_file(path)) {
        let parsed = syn::parse_file(source).unwrap_or_else(|error| panic!("{path}: {error}"));
        let mut functions = Functions { found: Vec::new(), test_lines: 0 };
        functions.visit_file(&parsed);
        let production = source.lines().count().saturating_sub(functions.test_lines);
        if production > MAX_FILE_LINES {
            wrong.push(format!("{path}: {production} lines (at most {MAX_FILE_LINES})"));
        }
        for (name, line, length) in functions.found {
            let allowed =
                LONG_ALLOWED.iter().any(|(file, why)| file == path && why.split(':').next() == Some(name.as_str()));
            if length > MAX_FN_LINES && !allowed {
                wrong.push(format!("{path}:{line}: fn {name} is {length} lines (at most {MAX_FN_LINES})"));
            }
        }
    }
    wrong
}

#[test]
fn no_production_file_or_function_is_too_long() {
    let wrong = too_big(&sources());
    assert!(wrong.is_empty(), "too long:\n{}", wrong.join("\n"));
}

/// The measure itself: a long function and a long file are caught, test code is not counted.
#[test]
fn the_measure_catches_a_long_function_and_file_but_not_tests() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let long_fn = format!("fn long() {{\n{body}}}\n");
    let test_fn = format!("#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n");
    let filler = "const A: u8 = 1;\n".repeat(MAX_FILE_LINES);
    let files = [
        ("src/a.rs".to_string(), long_fn),
        ("src/b.rs".to_string(), test_fn.clone()),
        ("src/c.rs".to_string(), format!("{filler}{test_fn}")),
        ("src/d.rs".to_string(), format!("{filler}const B: u8 = 2;\n")),
    ];
    let wrong = too_big(&files);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong[0].starts_with("src/a.rs:1: fn long is 82 lines"), "{wrong:?}");
    assert!(wrong[1].starts_with("src/d.rs: 601 lines"), "{wrong:?}");
}
