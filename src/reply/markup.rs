//! The model's Markdown, parsed into a tree (pulldown-cmark) and rendered in
//! each platform's own format, with everything that is not our own markup
//! escaped: a reply can format text, but it cannot hide where a link goes,
//! ping a crowd, or smuggle raw platform markup through.
//!
//! A rendered reply is a list of [`Token`]s: markup (the platform's
//! formatting, which a reader does not see as text) and text (which a reader
//! sees, escaped for the platform). The text tokens joined are what a reader
//! sees, so redaction works on that and the cuts are made token by token.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::redact::REDACTED;

/// The format a platform reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Telegram's `parse_mode: HTML`.
    TelegramHtml,
    /// Slack's `mrkdwn`.
    SlackMrkdwn,
    /// Discord's Markdown.
    DiscordMarkdown,
    /// No formatting at all (the web chat shows text as text).
    Plain,
    /// Teams' Markdown (`textFormat: markdown`): read as Discord's is, with
    /// the same backslash escapes (CommonMark's), so it shares its rules.
    TeamsMarkdown,
    /// WhatsApp's formatting (`*bold*`, `_italic_`, `~strike~`, backticks).
    WhatsApp,
    /// Common Markdown, written and escaped as for Discord (the plain
    /// webhook's receivers read Markdown).
    Markdown,
}

impl Flavor {
    /// Markup written in the text itself (Slack's, Discord's, Teams', WhatsApp's,
    /// Markdown), not in tags: quotes are `> ` line by line, and inline code
    /// has no escape for a backtick.
    const fn is_plain_text_markup(self) -> bool {
        matches!(
            self,
            Flavor::SlackMrkdwn | Flavor::DiscordMarkdown | Flavor::TeamsMarkdown | Flavor::WhatsApp | Flavor::Markdown
        )
    }
}

/// One piece of a rendered reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// The platform's own formatting, written by us.
    Markup(&'static str),
    /// Text a reader sees; `code` text is escaped as code is.
    Text { text: String, code: bool },
}

/// A zero-width space: breaks a mass mention or a run of backticks without
/// changing what a reader sees.
const BREAK: char = '\u{200B}';

/// Markup that wraps a span: (open, close) per flavor.
fn wrap(flavor: Flavor, style: Style) -> (&'static str, &'static str) {
    use Flavor::*;
    match (flavor, style) {
        (Plain, _) => ("", ""),
        (TelegramHtml, Style::Bold) => ("<b>", "</b>"),
        (TelegramHtml, Style::Italic) => ("<i>", "</i>"),
        (TelegramHtml, Style::Strike) => ("<s>", "</s>"),
        (TelegramHtml, Style::Code) => ("<code>", "</code>"),
        (TelegramHtml, Style::Block) => ("<pre>", "</pre>"),
        (TelegramHtml, Style::Quote) => ("<blockquote>", "</blockquote>"),
        (SlackMrkdwn, Style::Bold) => ("*", "*"),
        (SlackMrkdwn, Style::Italic) => ("_", "_"),
        (SlackMrkdwn, Style::Strike) => ("~", "~"),
        (SlackMrkdwn, Style::Code) => ("`", "`"),
        (SlackMrkdwn, Style::Block) => ("```\n", "\n```"),
        (DiscordMarkdown | TeamsMarkdown | Markdown, Style::Bold) => ("**", "**"),
        (DiscordMarkdown | TeamsMarkdown | Markdown, Style::Italic) => ("*", "*"),
        (DiscordMarkdown | TeamsMarkdown | Markdown, Style::Strike) => ("~~", "~~"),
        (DiscordMarkdown | TeamsMarkdown | Markdown, Style::Code) => ("`", "`"),
        (DiscordMarkdown | TeamsMarkdown | Markdown, Style::Block) => ("```\n", "\n```"),
        (WhatsApp, Style::Bold) => ("*", "*"),
        (WhatsApp, Style::Italic) => ("_", "_"),
        (WhatsApp, Style::Strike) => ("~", "~"),
        (WhatsApp, Style::Code) => ("`", "`"),
        (WhatsApp, Style::Block) => ("```\n", "\n```"),
        // Slack, Discord, Teams and WhatsApp quote line by line (see `Renderer::line_start`).
        (SlackMrkdwn | DiscordMarkdown | TeamsMarkdown | WhatsApp | Markdown, Style::Quote) => ("", ""),
    }
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Bold,
    Italic,
    Strike,
    Code,
    Block,
    Quote,
}

/// Parses `markdown` and renders it as tokens for `flavor`.
pub fn parse(markdown: &str, flavor: Flavor) -> Vec<Token> {
    let mut renderer = Renderer {
        flavor,
        tokens: Vec::new(),
        pending: None,
        quotes: 0,
        lists: Vec::new(),
        links: Vec::new(),
        in_code_block: false,
    };
    for event in Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH) {
        renderer.event(event);
    }
    renderer.tokens
}

struct Renderer {
    flavor: Flavor,
    tokens: Vec<Token>,
    /// A break owed before the next block's content.
    pending: Option<&'static str>,
    quotes: usize,
    /// Open lists: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// Open links: their target and the text shown for them so far.
    links: Vec<(String, String)>,
    in_code_block: bool,
}

impl Renderer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => self.text(&text, false),
            Event::Code(code) => self.code(&code),
            Event::SoftBreak | Event::HardBreak => self.newline(),
            Event::Rule => {
                self.text("———", false);
                self.pending = Some("\n\n");
            }
            // Extensions that are not enabled; shown as text if they ever come.
            Event::InlineMath(text) | Event::DisplayMath(text) | Event::FootnoteReference(text) => {
                self.text(&text, false)
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }, false),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { .. } | Tag::Strong => self.open(Style::Bold),
            Tag::Emphasis => self.open(Style::Italic),
            Tag::Strikethrough => self.open(Style::Strike),
            // The language tag is not shown; Telegram and Slack would show it as text.
            Tag::CodeBlock(_) => {
                self.open(Style::Block);
                self.in_code_block = true;
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quotes += 1;
                self.open(Style::Quote);
                self.line_start();
            }
            Tag::List(first) => {
                if !self.lists.is_empty() {
                    self.pending = Some("\n");
                }
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        *number += 1;
                        format!("{}{}. ", "  ".repeat(depth), *number - 1)
                    }
                    _ => format!("{}• ", "  ".repeat(depth)),
                };
                self.text(&marker, false);
            }
            Tag::Link { dest_url, link_type, .. } | Tag::Image { dest_url, link_type, .. } => {
                let target = match link_type {
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.to_string(),
                };
                self.links.push((target, String::new()));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.close(Style::Bold);
                self.pending = Some("\n\n");
            }
            TagEnd::Strong => self.close(Style::Bold),
            TagEnd::Emphasis => self.close(Style::Italic),
            TagEnd::Strikethrough => self.close(Style::Strike),
            TagEnd::CodeBlock => {
                self.close(Style::Block);
                self.in_code_block = false;
                self.pending = Some("\n\n");
            }
            TagEnd::BlockQuote(_) => {
                self.close(Style::Quote);
                self.quotes = self.quotes.saturating_sub(1);
                self.pending = Some("\n\n");
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.pending = Some(if self.lists.is_empty() { "\n\n" } else { "\n" });
            }
            TagEnd::Item => self.pending = Some("\n"),
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.pending = Some(if self.lists.is_empty() { "\n\n" } else { "\n" })
            }
            TagEnd::Link | TagEnd::Image => self.end_link(),
            _ => {}
        }
    }

    /// Every link's real target is shown: `text (target)`, or the target
    /// alone when the text is the target or there is none.
    fn end_link(&mut self) {
        let Some((target, shown)) = self.links.pop() else {
            return;
        };
        let shown = shown.trim();
        let same = shown == target || format!("mailto:{shown}") == target || target.is_empty();
        if shown.is_empty() {
            self.text(&target, false);
        } else if !same {
            self.text(" (", false);
            self.text(&target, false);
            self.text(")", false);
        }
    }

    fn code(&mut self, code: &str) {
        // A backtick in inline code would end the span early where the
        // markup has no escape there: such code is shown as text.
        if code.contains('`') && self.flavor.is_plain_text_markup() {
            return self.text(code, false);
        }
        self.open(Style::Code);
        self.text(code, true);
        self.close(Style::Code);
    }

    fn newline(&mut self) {
        self.tokens.push(Token::Text { text: "\n".into(), code: false });
        self.line_start();
    }

    /// Markup in the text quotes each line with `> `.
    fn line_start(&mut self) {
        if self.quotes > 0 && self.flavor.is_plain_text_markup() {
            self.tokens.push(Token::Markup("> "));
        }
    }

    fn flush(&mut self) {
        if let Some(separator) = self.pending.take() {
            if !self.tokens.is_empty() {
                self.tokens.push(Token::Text { text: separator.into(), code: false });
                self.line_start();
            }
        }
    }

    fn open(&mut self, style: Style) {
        self.flush();
        let (open, _) = wrap(self.flavor, style);
        if !open.is_empty() {
            self.tokens.push(Token::Markup(open));
        }
    }

    fn close(&mut self, style: Style) {
        let (_, close) = wrap(self.flavor, style);
        if !close.is_empty() {
            self.tokens.push(Token::Markup(close));
        }
    }

    fn text(&mut self, text: &str, code: bool) {
        self.flush();
        let code = code || self.in_code_block;
        for (_, shown) in &mut self.links {
            shown.push_str(text);
        }
        match self.tokens.last_mut() {
            Some(Token::Text { text: last, code: last_code }) if *last_code == code => last.push_str(text),
            _ => self.tokens.push(Token::Text { text: text.to_string(), code }),
        }
    }
}

/// What a reader sees of the tokens: their text, joined.
pub fn visible(tokens: &[Token]) -> String {
    tokens
        .iter()
        .filter_map(|token| match token {
            Token::Text { text, .. } => Some(text.as_str()),
            Token::Markup(_) => None,
        })
        .collect()
}

/// The tokens written out for `flavor`, with each range of the visible text
/// in `cuts` (sorted, apart, on character boundaries) replaced by [`REDACTED`].
pub fn emit(tokens: &[Token], flavor: Flavor, cuts: &[Range<usize>]) -> String {
    let mut out = String::new();
    let mut offset = 0;
    for token in tokens {
        let (text, code) = match token {
            Token::Markup(markup) => {
                out.push_str(markup);
                continue;
            }
            Token::Text { text, code } => (text, *code),
        };
        let span = offset..offset + text.len();
        let mut kept = String::new();
        let mut at = span.start;
        for cut in cuts.iter().filter(|cut| cut.start < span.end && cut.end > span.start) {
            let start = cut.start.max(span.start);
            kept.push_str(&text[at - span.start..start - span.start]);
            // Once per cut: a cut that began in an earlier token is already marked.
            if cut.start >= span.start {
                kept.push_str(REDACTED);
            }
            at = cut.end.min(span.end);
        }
        kept.push_str(&text[at - span.start..]);
        out.push_str(&escape(flavor, &kept, code));
        offset = span.end;
    }
    out
}

/// Text escaped for `flavor`, so that it shows as written: no markup, no
/// link or mention syntax, no mass mention.
pub fn escape(flavor: Flavor, text: &str, code: bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut characters = text.char_indices().peekable();
    while let Some((at, character)) = characters.next() {
        match flavor {
            Flavor::Plain => out.push(character),
            Flavor::TelegramHtml => match character {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                _ => out.push(character),
            },
            Flavor::SlackMrkdwn => match character {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                // Slack has no escape inside code: a backtick run is broken instead.
                '`' if code => {
                    out.push('`');
                    out.push(BREAK);
                }
                _ => out.push(character),
            },
            // WhatsApp has no escapes, and no link or mention syntax a text
            // could smuggle in: a stray `*` may at most make a word bold.
            // In code, a backtick run is broken as on Slack.
            Flavor::WhatsApp => {
                out.push(character);
                if code && character == '`' {
                    out.push(BREAK);
                }
            }
            Flavor::DiscordMarkdown | Flavor::TeamsMarkdown | Flavor::Markdown if code => {
                out.push(character);
                if character == '`' {
                    out.push(BREAK);
                }
            }
            Flavor::DiscordMarkdown | Flavor::TeamsMarkdown | Flavor::Markdown => {
                // A bare link stays as written (an escape would become part of
                // it); Discord links it, showing where it goes.
                if starts_link(&text[at..]) {
                    let length =
                        text[at..].find(|c: char| c.is_whitespace() || "<>`|\"".contains(c)).unwrap_or(text.len() - at);
                    out.push_str(&text[at..at + length]);
                    while characters.peek().is_some_and(|(next, _)| *next < at + length) {
                        characters.next();
                    }
                    continue;
                }
                if "\\*_~`|[]<>#".contains(character) {
                    out.push('\\');
                }
                out.push(character);
            }
        }
        if character == '@' && flavor != Flavor::Plain && is_mass_mention(&text[at + 1..]) {
            out.push(BREAK);
        }
    }
    out
}

/// Whether `text` starts with an `http://` or `https://` address.
fn starts_link(text: &str) -> bool {
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Whether the text after an `@` names everyone (Discord's `@everyone` and
/// `@here`, Slack's `@channel`, `@here`, `@everyone` and `@group`).
fn is_mass_mention(after: &str) -> bool {
    ["everyone", "here", "channel", "group"]
        .iter()
        .any(|word| after.get(..word.len()).is_some_and(|head| head.eq_ignore_ascii_case(word)))
}

/// What a reader sees of text rendered for `flavor` (for history and for
/// Telegram's plain-text fallback): markup taken off, escapes undone.
pub fn shown(flavor: Flavor, rendered: &str) -> String {
    match flavor {
        Flavor::Plain | Flavor::WhatsApp => rendered.to_string(),
        Flavor::TelegramHtml => {
            let mut out = String::with_capacity(rendered.len());
            let mut in_tag = false;
            for character in rendered.chars() {
                match character {
                    '<' => in_tag = true,
                    '>' if in_tag => in_tag = false,
                    _ if !in_tag => out.push(character),
                    _ => {}
                }
            }
            unescape_entities(&out)
        }
        Flavor::SlackMrkdwn => unescape_entities(rendered),
        Flavor::DiscordMarkdown | Flavor::TeamsMarkdown | Flavor::Markdown => {
            let mut out = String::with_capacity(rendered.len());
            let mut characters = rendered.chars().peekable();
            while let Some(character) = characters.next() {
                if character == '\\' && characters.peek().is_some_and(char::is_ascii_punctuation) {
                    continue;
                }
                out.push(character);
            }
            out
        }
    }
}

fn unescape_entities(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(markdown: &str, flavor: Flavor) -> String {
        emit(&parse(markdown, flavor), flavor, &[])
    }

    #[test]
    fn markdown_becomes_each_platforms_formatting() {
        let markdown = "**bold** and *italic*, ~~gone~~ and `code`";
        let cases = [
            (Flavor::TelegramHtml, "<b>bold</b> and <i>italic</i>, <s>gone</s> and <code>code</code>"),
            (Flavor::SlackMrkdwn, "*bold* and _italic_, ~gone~ and `code`"),
            (Flavor::DiscordMarkdown, "**bold** and *italic*, ~~gone~~ and `code`"),
            (Flavor::Plain, "bold and italic, gone and code"),
            (Flavor::WhatsApp, "*bold* and _italic_, ~gone~ and `code`"),
        ];
        for (flavor, expected) in cases {
            assert_eq!(render(markdown, flavor), expected, "{flavor:?}");
        }
        assert_eq!(render("# Title\n\none\ntwo", Flavor::TelegramHtml), "<b>Title</b>\n\none\ntwo");
        assert_eq!(render("- a\n- b\n\n1. x\n2. y", Flavor::Plain), "• a\n• b\n\n1. x\n2. y");
        assert_eq!(render("```rust\nlet a = 1 < 2;\n```", Flavor::TelegramHtml), "<pre>let a = 1 &lt; 2;\n</pre>");
        assert_eq!(render("> quoted\n> more", Flavor::SlackMrkdwn), "> quoted\n> more");
        assert_eq!(render("> quoted", Flavor::TelegramHtml), "<blockquote>quoted</blockquote>");
    }

    #[test]
    fn every_link_shows_its_real_target() {
        // (markdown, flavor, what must be sent)
        let attacks = [
            (
                "[https://good.example](https://evil.example)",
                Flavor::TelegramHtml,
                "https://good.example (https://evil.example)",
            ),
            ("[my bank](https://evil.example/login)", Flavor::SlackMrkdwn, "my bank (https://evil.example/login)"),
            ("[good](https://evil.example)", Flavor::DiscordMarkdown, "good (https://evil.example)"),
            ("[good](https://evil.example)", Flavor::Plain, "good (https://evil.example)"),
            ("![logo](https://evil.example/x.png)", Flavor::Plain, "logo (https://evil.example/x.png)"),
            ("[](https://evil.example)", Flavor::Plain, "https://evil.example"),
            ("<https://same.example>", Flavor::TelegramHtml, "https://same.example"),
            ("[https://same.example](https://same.example)", Flavor::SlackMrkdwn, "https://same.example"),
            ("<a@b.example>", Flavor::Plain, "a@b.example"),
        ];
        for (markdown, flavor, expected) in attacks {
            assert_eq!(render(markdown, flavor), expected, "{markdown} on {flavor:?}");
        }
    }

    #[test]
    fn raw_platform_markup_from_the_model_is_shown_as_text() {
        let attacks = [
            // Telegram: a hidden link, and a tag that would vanish inside a secret.
            (
                r#"<a href="https://evil.example">https://good.example</a>"#,
                Flavor::TelegramHtml,
                "&lt;a href=&quot;https://evil.example&quot;&gt;https://good.example&lt;/a&gt;",
            ),
            ("sk-abc<b></b>def", Flavor::TelegramHtml, "sk-abc&lt;b&gt;&lt;/b&gt;def"),
            // Slack: a disguised link and mass mentions.
            // (Markdown reads it as one autolink: its whole text, the real target, is shown.)
            (
                "<https://evil.example|https://good.example>",
                Flavor::SlackMrkdwn,
                "https://evil.example|https://good.example",
            ),
            ("&lt;https://evil.example|good&gt;", Flavor::SlackMrkdwn, "&lt;https://evil.example|good&gt;"),
            (
                "<!channel> <!here> <!everyone> <@U123>",
                Flavor::SlackMrkdwn,
                "&lt;!channel&gt; &lt;!here&gt; &lt;!everyone&gt; &lt;@U123&gt;",
            ),
            ("@channel and @Here", Flavor::SlackMrkdwn, "@\u{200B}channel and @\u{200B}Here"),
            // Discord: mass mentions, masked links, mentions by id.
            ("@everyone @here", Flavor::DiscordMarkdown, "@\u{200B}everyone @\u{200B}here"),
            (r"\[good\](https://evil.example)", Flavor::DiscordMarkdown, r"\[good\](https://evil.example)"),
            ("<@123> <@&456>", Flavor::DiscordMarkdown, r"\<@123\> \<@&456\>"),
            ("`@everyone`", Flavor::DiscordMarkdown, "`@\u{200B}everyone`"),
            ("``a`b``", Flavor::DiscordMarkdown, "a\\`b"),
            (
                "```\nx ``` @here\n```",
                Flavor::DiscordMarkdown,
                "```\nx `\u{200B}`\u{200B}`\u{200B} @\u{200B}here\n\n```",
            ),
        ];
        for (markdown, flavor, expected) in attacks {
            assert_eq!(render(markdown, flavor), expected, "{markdown} on {flavor:?}");
        }
    }

    #[test]
    fn bare_links_stay_whole_on_discord() {
        assert_eq!(
            render("see https://example.com/a_b*c and x_y", Flavor::DiscordMarkdown),
            r"see https://example.com/a_b*c and x\_y"
        );
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // one cut, as a slice of cuts
    fn cuts_remove_visible_text_across_markup() {
        let tokens = parse("key sec**ret** end", Flavor::TelegramHtml);
        let seen = visible(&tokens);
        assert_eq!(seen, "key secret end");
        let at = seen.find("secret").unwrap();
        assert_eq!(emit(&tokens, Flavor::TelegramHtml, &[at..at + 6]), "key [redacted]<b></b> end");
        let tokens = parse("a sec**ret** b", Flavor::DiscordMarkdown);
        assert_eq!(emit(&tokens, Flavor::DiscordMarkdown, &[2..8]), r"a \[redacted\]**** b");
    }

    #[test]
    fn shown_undoes_the_rendering() {
        let markdown = "**a** <b> & [x](https://e.example) *y_z*";
        for flavor in [Flavor::TelegramHtml, Flavor::DiscordMarkdown, Flavor::Plain] {
            let tokens = parse(markdown, flavor);
            let shown = shown(flavor, &emit(&tokens, flavor, &[]));
            let expected = match flavor {
                Flavor::DiscordMarkdown => "**a** <b> & x (https://e.example) *y_z*".to_string(),
                _ => visible(&tokens),
            };
            assert_eq!(shown, expected, "{flavor:?}");
        }
    }
}
