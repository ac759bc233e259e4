//! The part of Jinja the prompts use, rendered exactly as minijinja renders it
//! (with `trim_blocks` on, lenient undefined values and no auto-escaping):
//! `{{ expression }}`, `{% if %}`/`{% elif %}`/`{% else %}`/`{% endif %}`,
//! `{% for name in expression %}` (with `{% else %}` and `loop.index`, `index0`,
//! `revindex`, `revindex0`, `first`, `last`, `length`), `{% include "name" %}`
//! and `{# comments #}`. Expressions: names, `.attribute`, string, integer and
//! `true`/`false`/`none` literals, `==`, `!=`, `not`, `and`, `or`, parentheses.
//! Anything else is a parse error when the templates load (so `cargo test`
//! fails), never a silent difference. It replaces minijinja in the Worker, which
//! cost about 60 KB of the gzipped bundle; a test renders every template with
//! both and compares.

use std::borrow::Cow;
use std::fmt::{self, Write};

use serde_json::{Map, Value};

/// A template that does not parse or cannot render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}

fn error<T>(message: impl Into<String>) -> Result<T, Error> {
    Err(Error::new(message))
}

/// The attributes of `loop` inside a `for`.
const LOOP_ATTRIBUTES: [&str; 7] = ["index", "index0", "revindex", "revindex0", "first", "last", "length"];
/// How deep includes may nest (a template that includes itself fails, not overflows).
const MAX_INCLUDE_DEPTH: usize = 16;

#[derive(Debug)]
pub enum Node {
    Text(&'static str),
    Print(Expr),
    /// `(condition, body)` for the `if` and each `elif`, then the `else` body.
    If(Vec<(Expr, Vec<Node>)>, Vec<Node>),
    For {
        name: &'static str,
        items: Expr,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Include(String),
}

#[derive(Debug)]
pub enum Expr {
    Literal(Value),
    Name(&'static str),
    Attribute(Box<Expr>, &'static str),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Equal(Box<Expr>, Box<Expr>, bool),
}

// ---------------------------------------------------------------- parsing

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(&'static str),
    Str(String),
    Int(u64),
    Dot,
    Open,
    Close,
    Equal,
    NotEqual,
}

/// What the lexer yields: text, a `{{ }}` or a `{% %}` with its tokens.
enum Piece {
    Text(&'static str),
    Print(Vec<Token>),
    Tag(Vec<Token>),
}

fn lex(source: &'static str) -> Result<Vec<Piece>, Error> {
    // minijinja drops one trailing newline (`keep_trailing_newline` off).
    let mut source = source.strip_suffix('\n').unwrap_or(source);
    source = source.strip_suffix('\r').unwrap_or(source);
    let mut pieces = Vec::new();
    let mut rest = source;
    while let Some(start) = next_marker(rest) {
        if start > 0 {
            pieces.push(Piece::Text(&rest[..start]));
        }
        let kind = rest.as_bytes()[start + 1];
        rest = &rest[start + 2..];
        if rest.starts_with(['-', '+']) {
            return error("whitespace control (`-`, `+`) is not supported");
        }
        match kind {
            b'#' => {
                let Some(end) = rest.find("#}") else { return error("unexpected end of comment") };
                if rest[..end].ends_with(['-', '+']) {
                    return error("whitespace control (`-`, `+`) is not supported");
                }
                rest = skip_newline(&rest[end + 2..]);
            }
            b'{' => {
                let (tokens, after) = tokens(rest, "}}")?;
                pieces.push(Piece::Print(tokens));
                rest = after;
            }
            _ => {
                let (tokens, after) = tokens(rest, "%}")?;
                pieces.push(Piece::Tag(tokens));
                rest = skip_newline(after); // trim_blocks
            }
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

/// Where the first `{{`, `{%` or `{#` starts.
fn next_marker(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(1)).find(|&at| bytes[at] == b'{' && matches!(bytes[at + 1], b'{' | b'%' | b'#'))
}

/// `trim_blocks`: the first newline after a block or comment tag is dropped.
fn skip_newline(text: &'static str) -> &'static str {
    let text = text.strip_prefix('\r').unwrap_or(text);
    text.strip_prefix('\n').unwrap_or(text)
}

/// The tokens of an expression up to `end`, and the text after `end`.
fn tokens(mut text: &'static str, end: &str) -> Result<(Vec<Token>, &'static str), Error> {
    let mut tokens = Vec::new();
    loop {
        text = text.trim_start();
        if let Some(after) = text.strip_prefix(end) {
            return Ok((tokens, after));
        }
        let Some(first) = text.chars().next() else { return error(format!("missing `{end}`")) };
        let (token, length) = match first {
            '.' => (Token::Dot, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            '=' if text.starts_with("==") => (Token::Equal, 2),
            '!' if text.starts_with("!=") => (Token::NotEqual, 2),
            '"' | '\'' => string(text, first)?,
            '0'..='9' => {
                let length = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
                if text[length..].starts_with(['.', '_']) || text[length..].starts_with(char::is_alphabetic) {
                    return error(format!("unsupported number in `{}`", &text[..length + 1]));
                }
                let Ok(number) = text[..length].parse() else { return error("integer too large") };
                (Token::Int(number), length)
            }
            c if c == '_' || c.is_ascii_alphabetic() => {
                let length = text.find(|c: char| c != '_' && !c.is_ascii_alphanumeric()).unwrap_or(text.len());
                (Token::Name(&text[..length]), length)
            }
            other => return error(format!("unsupported syntax at `{other}`")),
        };
        tokens.push(token);
        text = &text[length..];
    }
}

fn string(text: &str, quote: char) -> Result<(Token, usize), Error> {
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((at, c)) = chars.next() {
        match c {
            _ if c == quote => return Ok((Token::Str(value), at + 1)),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some(escaped @ ('\\' | '"' | '\'' | '/')) => value.push(escaped),
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some('r') => value.push('\r'),
                _ => return error("unsupported escape in a string"),
            },
            _ => value.push(c),
        }
    }
    error("unterminated string")
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn keyword(&mut self, word: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Name(name)) if *name == word);
        if found {
            self.at += 1;
        }
        found
    }

    fn end(&self) -> Result<(), Error> {
        match self.peek() {
            None => Ok(()),
            Some(token) => error(format!("unexpected {token:?}")),
        }
    }

    fn or(&mut self) -> Result<Expr, Error> {
        let mut left = self.and()?;
        while self.keyword("or") {
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, Error> {
        let mut left = self.not()?;
        while self.keyword("and") {
            left = Expr::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, Error> {
        if self.keyword("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        let left = self.primary()?;
        let negated = match self.peek() {
            Some(Token::Equal) => false,
            Some(Token::NotEqual) => true,
            _ => return Ok(left),
        };
        self.at += 1;
        let right = self.primary()?;
        if matches!(self.peek(), Some(Token::Equal | Token::NotEqual)) {
            return error("chained comparisons are not supported");
        }
        Ok(Expr::Equal(Box::new(left), Box::new(right), negated))
    }

    fn primary(&mut self) -> Result<Expr, Error> {
        let mut expr = match self.next() {
            Some(Token::Str(text)) => Expr::Literal(Value::String(text)),
            Some(Token::Int(number)) => Expr::Literal(Value::from(number)),
            Some(Token::Name("true" | "True")) => Expr::Literal(Value::Bool(true)),
            Some(Token::Name("false" | "False")) => Expr::Literal(Value::Bool(false)),
            Some(Token::Name("none" | "None")) => Expr::Literal(Value::Null),
            Some(Token::Name(word @ ("and" | "or" | "not" | "in" | "is" | "if" | "else"))) => {
                return error(format!("unexpected `{word}`"))
            }
            Some(Token::Name(name)) => Expr::Name(name),
            Some(Token::Open) => {
                let inner = self.or()?;
                if self.next() != Some(Token::Close) {
                    return error("missing `)`");
                }
                inner
            }
            other => return error(format!("expected an expression, found {other:?}")),
        };
        while self.peek() == Some(&Token::Dot) {
            self.at += 1;
            let Some(Token::Name(attribute)) = self.next() else { return error("expected a name after `.`") };
            if matches!(expr, Expr::Name("loop")) && !LOOP_ATTRIBUTES.contains(&attribute) {
                return error(format!("loop.{attribute} is not supported"));
            }
            expr = Expr::Attribute(Box::new(expr), attribute);
        }
        if matches!(expr, Expr::Name("loop")) {
            return error("`loop` is only supported with an attribute (loop.index, ...)");
        }
        Ok(expr)
    }
}

enum Tag {
    If(Expr),
    Elif(Expr),
    Else,
    EndIf,
    For(&'static str, Expr),
    EndFor,
    Include(String),
}

fn tag(tokens: Vec<Token>) -> Result<Tag, Error> {
    let mut parser = Parser { tokens, at: 0 };
    let tag = match parser.next() {
        Some(Token::Name("if")) => Tag::If(parser.or()?),
        Some(Token::Name("elif")) => Tag::Elif(parser.or()?),
        Some(Token::Name("else")) => Tag::Else,
        Some(Token::Name("endif")) => Tag::EndIf,
        Some(Token::Name("endfor")) => Tag::EndFor,
        Some(Token::Name("for")) => {
            let Some(Token::Name(name)) = parser.next() else { return error("expected a loop variable") };
            if name == "loop" || !parser.keyword("in") {
                return error("expected `for name in ...`");
            }
            let items = parser.or()?;
            if parser.peek().is_some() {
                return error("`for` supports only `for name in expression`");
            }
            Tag::For(name, items)
        }
        Some(Token::Name("include")) => match parser.next() {
            Some(Token::Str(name)) => Tag::Include(name),
            _ => return error("`include` needs a template name in quotes"),
        },
        other => return error(format!("unsupported tag {other:?}")),
    };
    parser.end()?;
    Ok(tag)
}

/// Parses a template.
pub fn parse(source: &'static str) -> Result<Vec<Node>, Error> {
    let mut pieces = lex(source)?.into_iter();
    let (nodes, end) = block(&mut pieces)?;
    match end {
        None => Ok(nodes),
        Some(_) => error("unexpected end tag"),
    }
}

/// Nodes up to the tag that ends the block (None at the end of the template).
fn block(pieces: &mut impl Iterator<Item = Piece>) -> Result<(Vec<Node>, Option<Tag>), Error> {
    let mut nodes = Vec::new();
    while let Some(piece) = pieces.next() {
        match piece {
            Piece::Text(text) => nodes.push(Node::Text(text)),
            Piece::Print(tokens) => {
                let mut parser = Parser { tokens, at: 0 };
                let expr = parser.or()?;
                parser.end()?;
                nodes.push(Node::Print(expr));
            }
            Piece::Tag(tokens) => match tag(tokens)? {
                Tag::If(condition) => {
                    let mut branches = Vec::new();
                    let mut condition = Some(condition);
                    let mut otherwise = Vec::new();
                    loop {
                        let (body, end) = block(pieces)?;
                        match (condition.take(), end) {
                            (Some(test), Some(Tag::Elif(next))) => {
                                branches.push((test, body));
                                condition = Some(next);
                            }
                            (Some(test), Some(Tag::Else)) => branches.push((test, body)),
                            (Some(test), Some(Tag::EndIf)) => {
                                branches.push((test, body));
                                break;
                            }
                            (None, Some(Tag::EndIf)) => {
                                otherwise = body;
                                break;
                            }
                            _ => return error("unclosed or misplaced `if` block"),
                        }
                    }
                    nodes.push(Node::If(branches, otherwise));
                }
                Tag::For(name, items) => {
                    let (body, otherwise) = match block(pieces)? {
                        (body, Some(Tag::EndFor)) => (body, Vec::new()),
                        (body, Some(Tag::Else)) => match block(pieces)? {
                            (otherwise, Some(Tag::EndFor)) => (body, otherwise),
                            _ => return error("unclosed `for` block"),
                        },
                        _ => return error("unclosed `for` block"),
                    };
                    nodes.push(Node::For { name, items, body, otherwise });
                }
                Tag::Include(name) => nodes.push(Node::Include(name)),
                end => return Ok((nodes, Some(end))),
            },
        }
    }
    Ok((nodes, None))
}

// ---------------------------------------------------------------- rendering

/// A value while rendering; `None` is Jinja's `undefined`.
type Val<'a> = Option<Cow<'a, Value>>;

struct Scope<'a> {
    root: &'a Value,
    /// Loop variables, innermost last.
    locals: Vec<(&'static str, Cow<'a, Value>)>,
}

impl<'a> Scope<'a> {
    fn lookup(&self, name: &str) -> Val<'a> {
        if let Some((_, value)) = self.locals.iter().rev().find(|(local, _)| *local == name) {
            return Some(value.clone());
        }
        self.root.get(name).map(Cow::Borrowed)
    }
}

/// Renders `nodes` against `context`; `templates` resolves includes.
pub fn render<'t>(
    nodes: &[Node],
    context: &Value,
    templates: &dyn Fn(&str) -> Option<&'t [Node]>,
) -> Result<String, Error> {
    let mut out = String::new();
    let mut scope = Scope { root: context, locals: Vec::new() };
    render_nodes(nodes, &mut scope, templates, &mut out, 0)?;
    Ok(out)
}

fn render_nodes<'t>(
    nodes: &[Node],
    scope: &mut Scope<'_>,
    templates: &dyn Fn(&str) -> Option<&'t [Node]>,
    out: &mut String,
    depth: usize,
) -> Result<(), Error> {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Print(expr) => {
                if let Some(value) = eval(expr, scope)? {
                    display(&value, out);
                }
            }
            Node::If(branches, otherwise) => {
                let chosen = branches.iter().find_map(|(test, body)| match eval(test, scope) {
                    Ok(value) => truthy(&value).then_some(Ok(body)),
                    Err(error) => Some(Err(error)),
                });
                let body = chosen.transpose()?.unwrap_or(otherwise);
                render_nodes(body, scope, templates, out, depth)?;
            }
            Node::For { name, items, body, otherwise } => {
                let items = iterate(eval(items, scope)?)?;
                if items.is_empty() {
                    render_nodes(otherwise, scope, templates, out, depth)?;
                }
                let length = items.len();
                for (index, item) in items.into_iter().enumerate() {
                    let mut state = Map::new();
                    state.insert("index".into(), (index + 1).into());
                    state.insert("index0".into(), index.into());
                    state.insert("revindex".into(), (length - index).into());
                    state.insert("revindex0".into(), (length - index - 1).into());
                    state.insert("first".into(), (index == 0).into());
                    state.insert("last".into(), (index + 1 == length).into());
                    state.insert("length".into(), length.into());
                    scope.locals.push(("loop", Cow::Owned(Value::Object(state))));
                    scope.locals.push((name, item));
                    let rendered = render_nodes(body, scope, templates, out, depth);
                    scope.locals.truncate(scope.locals.len() - 2);
                    rendered?;
                }
            }
            Node::Include(name) => {
                let Some(included) = templates(name) else { return error(format!("template {name} not found")) };
                if depth >= MAX_INCLUDE_DEPTH {
                    return error("includes nest too deeply");
                }
                render_nodes(included, scope, templates, out, depth + 1)?;
            }
        }
    }
    Ok(())
}

fn eval<'a>(expr: &Expr, scope: &Scope<'a>) -> Result<Val<'a>, Error> {
    Ok(match expr {
        Expr::Literal(value) => Some(Cow::Owned(value.clone())),
        Expr::Name(name) => scope.lookup(name),
        Expr::Attribute(target, attribute) => match eval(target, scope)? {
            None => return error(format!("undefined value has no attribute {attribute}")),
            Some(Cow::Borrowed(value)) => value.as_object().and_then(|map| map.get(*attribute)).map(Cow::Borrowed),
            Some(Cow::Owned(value)) => value.as_object().and_then(|map| map.get(*attribute)).cloned().map(Cow::Owned),
        },
        Expr::Not(inner) => Some(Cow::Owned(Value::Bool(!truthy(&eval(inner, scope)?)))),
        Expr::And(left, right) => {
            let left = eval(left, scope)?;
            if truthy(&left) {
                eval(right, scope)?
            } else {
                left
            }
        }
        Expr::Or(left, right) => {
            let left = eval(left, scope)?;
            if truthy(&left) {
                left
            } else {
                eval(right, scope)?
            }
        }
        Expr::Equal(left, right, negated) => {
            let equal = equal(eval(left, scope)?.as_deref(), eval(right, scope)?.as_deref());
            Some(Cow::Owned(Value::Bool(equal != *negated)))
        }
    })
}

fn truthy(value: &Val<'_>) -> bool {
    match value.as_deref() {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(Value::Number(number)) => number.as_f64().is_some_and(|number| number != 0.0),
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
    }
}

/// minijinja's `==`: numbers and booleans compare as numbers, containers by content.
fn equal(left: Option<&Value>, right: Option<&Value>) -> bool {
    let (Some(left), Some(right)) = (left, right) else { return left.is_none() && right.is_none() };
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| equal(Some(a), Some(b)))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(key, value)| equal(Some(value), b.get(key)))
        }
        _ => match (number(left), number(right)) {
            (Some(Number::Int(a)), Some(Number::Int(b))) => a == b,
            (Some(a), Some(b)) => a.float() == b.float(),
            _ => false,
        },
    }
}

#[derive(Clone, Copy)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn float(self) -> f64 {
        match self {
            Number::Int(int) => int as f64,
            Number::Float(float) => float,
        }
    }
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Bool(flag) => Some(Number::Int(i128::from(*flag))),
        Value::Number(number) => Some(match (number.as_u64(), number.as_i64()) {
            (Some(unsigned), _) => Number::Int(i128::from(unsigned)),
            (_, Some(signed)) => Number::Int(i128::from(signed)),
            _ => Number::Float(number.as_f64().unwrap_or(f64::NAN)),
        }),
        _ => None,
    }
}

/// What a `for` walks: list items, map keys, string characters; nothing for none.
fn iterate(value: Val<'_>) -> Result<Vec<Cow<'_, Value>>, Error> {
    let Some(value) = value else { return Ok(Vec::new()) };
    Ok(match value {
        Cow::Borrowed(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Array(items)) => items.into_iter().map(Cow::Owned).collect(),
        Cow::Borrowed(Value::Null) | Cow::Owned(Value::Null) => Vec::new(),
        other => match other.as_ref() {
            Value::Object(map) => map.keys().map(|key| Cow::Owned(Value::String(key.clone()))).collect(),
            Value::String(text) => text.chars().map(|c| Cow::Owned(Value::String(c.to_string()))).collect(),
            Value::Bool(_) => return error("bool is not iterable"),
            _ => return error("number is not iterable"),
        },
    })
}

/// `{{ value }}` as minijinja prints it.
fn display(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Number(number) if number.is_f64() => {
            let float = number.as_f64().unwrap_or(f64::NAN);
            let start = out.len();
            let _ = write!(out, "{float}");
            if !out[start..].contains('.') {
                out.push_str(".0");
            }
        }
        other => repr(other, out),
    }
}

/// A value inside a printed list or map (Rust's debug forms, Python's `True`/`None`).
fn repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(flag) => out.push_str(if *flag { "True" } else { "False" }),
        Value::Number(number) => {
            let _ = match (number.as_u64(), number.as_i64(), number.as_f64()) {
                (Some(unsigned), _, _) => write!(out, "{unsigned}"),
                (_, Some(signed), _) => write!(out, "{signed}"),
                (_, _, float) => write!(out, "{:?}", float.unwrap_or(f64::NAN)),
            };
        }
        Value::String(text) => {
            let _ = write!(out, "{text:?}");
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{key:?}: ");
                repr(item, out);
            }
            out.push('}');
        }
    }
}
