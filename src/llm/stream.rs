//! Streamed model answers. Providers send an answer as server-sent events; each
//! event's data is one chunk ([`Assembler::take`]). The assembler keeps what
//! the chunks built so far: the text, each tool call's name and its arguments
//! as the raw JSON that has arrived. [`Assembler::partial_argument`] reads one
//! string argument of a call whose JSON is still incomplete (a `reply` tool's
//! text, while the model writes it), and [`Assembler::finish`] gives the same
//! [`Completion`] the whole answer would have.
//!
//! Incomplete JSON is read by `jiter` in its partial mode, which returns a
//! trailing string cut where the data stops, never inside an escape or a
//! surrogate pair, so what it shows only ever grows.

use jiter::{JsonValue, PartialMode};
use serde_json::Value;

use super::{Completion, LlmError, ToolCall, Usage};

/// The shape of the chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI-compatible chat completions with `stream: true` (and usage in the last chunk).
    OpenAi,
    /// The Anthropic Messages API with `stream: true`.
    Anthropic,
    /// The Workers AI binding with `stream: true`: its own chunks (`response`
    /// text, top-level `tool_calls` pieces, `usage`), or OpenAI's shape from
    /// the models that answer in it.
    WorkersAi,
}

/// One tool call as far as it has arrived.
#[derive(Debug, Clone, Default, PartialEq)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

/// What the chunks of one answer have built so far.
#[derive(Debug, Clone)]
pub struct Assembler {
    wire: Wire,
    text: String,
    /// By the provider's index of the call (OpenAI) or content block (Anthropic).
    calls: Vec<(u64, Call)>,
    usage: Usage,
    finished: bool,
}

impl Assembler {
    pub fn new(wire: Wire) -> Self {
        Assembler { wire, text: String::new(), calls: Vec::new(), usage: Usage::default(), finished: false }
    }

    /// Takes one event's data (the JSON of one chunk, or OpenAI's closing `[DONE]`).
    pub fn take(&mut self, data: &str) -> Result<(), LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.finished = true;
            return Ok(());
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|error| LlmError::Malformed(format!("stream chunk: {error}")))?;
        match self.wire {
            Wire::OpenAi => self.take_openai(&chunk),
            Wire::Anthropic => self.take_anthropic(&chunk),
            Wire::WorkersAi if chunk.get("choices").is_some() => self.take_openai(&chunk),
            Wire::WorkersAi => self.take_workers_ai(&chunk),
        }
    }

    fn call(&mut self, index: u64) -> &mut Call {
        let at = match self.calls.iter().position(|(known, _)| *known == index) {
            Some(at) => at,
            None => {
                self.calls.push((index, Call::default()));
                self.calls.len() - 1
            }
        };
        &mut self.calls[at].1
    }

    fn take_openai(&mut self, chunk: &Value) -> Result<(), LlmError> {
        if let Some(error) = chunk.get("error") {
            return Err(LlmError::Malformed(format!("stream error: {error}")));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            };
        }
        if chunk.pointer("/choices/0/finish_reason").is_some_and(|reason| !reason.is_null()) {
            self.finished = true;
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.text.push_str(text);
        }
        self.take_call_pieces(delta.get("tool_calls"));
        Ok(())
    }

    /// Pieces of tool calls by index: the first names the call, the rest add
    /// to its arguments. Workers AI may put the name and arguments beside
    /// `function` rather than in it, send the arguments as an object, and end
    /// with a piece that holds nothing.
    fn take_call_pieces(&mut self, pieces: Option<&Value>) {
        for piece in pieces.and_then(Value::as_array).into_iter().flatten() {
            let field = |name: &str| piece.get("function").and_then(|function| function.get(name)).or(piece.get(name));
            let index = piece["index"].as_u64().unwrap_or(0);
            let (name, arguments) = (field("name").and_then(Value::as_str), field("arguments"));
            let id = piece["id"].as_str();
            let arguments = match arguments {
                Some(Value::String(text)) => Some(text.clone()),
                Some(object @ Value::Object(_)) => Some(object.to_string()),
                _ => None,
            };
            if id.is_none() && name.is_none() && arguments.as_deref().is_none_or(str::is_empty) {
                continue;
            }
            let call = self.call(index);
            if let Some(id) = id {
                call.id = id.to_string();
            }
            if let Some(name) = name {
                call.name.push_str(name);
            }
            if let Some(arguments) = arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    fn take_workers_ai(&mut self, chunk: &Value) -> Result<(), LlmError> {
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            };
        }
        if let Some(text) = chunk.get("response").and_then(Value::as_str) {
            self.text.push_str(text);
        }
        self.take_call_pieces(chunk.get("tool_calls"));
        Ok(())
    }

    fn take_anthropic(&mut self, chunk: &Value) -> Result<(), LlmError> {
        let index = chunk["index"].as_u64().unwrap_or(0);
        match chunk["type"].as_str() {
            Some("message_start") => {
                self.usage.input_tokens =
                    chunk.pointer("/message/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0);
            }
            Some("content_block_start") if chunk.pointer("/content_block/type") == Some(&"tool_use".into()) => {
                let block = &chunk["content_block"];
                let call = self.call(index);
                call.id = block["id"].as_str().unwrap_or_default().to_string();
                call.name = block["name"].as_str().unwrap_or_default().to_string();
            }
            Some("content_block_delta") => match chunk.pointer("/delta/type").and_then(Value::as_str) {
                Some("text_delta") => {
                    self.text.push_str(chunk.pointer("/delta/text").and_then(Value::as_str).unwrap_or(""))
                }
                Some("input_json_delta") => {
                    let json = chunk.pointer("/delta/partial_json").and_then(Value::as_str).unwrap_or("");
                    self.call(index).arguments.push_str(json);
                }
                _ => {}
            },
            Some("message_delta") => {
                if let Some(output) = chunk.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = output;
                }
            }
            Some("message_stop") => self.finished = true,
            Some("error") => return Err(LlmError::Malformed(format!("stream error: {}", chunk["error"]))),
            _ => {}
        }
        Ok(())
    }

    /// Whether the provider said the answer is complete.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The string argument `field` of the first call to `tool`, as far as it has
    /// arrived (None until the field has begun). Later calls may only extend it.
    pub fn partial_argument(&self, tool: &str, field: &str) -> Option<String> {
        let call = self.calls.iter().map(|(_, call)| call).find(|call| call.name == tool)?;
        let parsed =
            JsonValue::parse_with_config(call.arguments.as_bytes(), false, PartialMode::TrailingStrings).ok()?;
        let JsonValue::Object(object) = parsed else {
            return None;
        };
        match object.iter().find(|(key, _)| key == field)? {
            (_, JsonValue::Str(text)) => Some(text.to_string()),
            _ => None,
        }
    }

    /// The whole answer, as [`super::openai::parse_response`] or
    /// [`super::anthropic::parse_response`] would give it. A stream that
    /// stopped before the provider said the answer was complete (a dropped
    /// connection, a cut body) is no answer: what arrived may be half a sentence.
    pub fn finish(self) -> Result<Completion, LlmError> {
        if !self.finished {
            return Err(LlmError::Malformed("the stream ended before the answer did".into()));
        }
        let mut tool_calls = Vec::new();
        for (position, (_, call)) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(LlmError::Malformed("streamed tool call without a name".into()));
            }
            let arguments = match call.arguments.trim() {
                "" => Value::Object(Default::default()),
                raw => serde_json::from_str(raw)
                    .map_err(|error| LlmError::Malformed(format!("arguments of {}: {error}", call.name)))?,
            };
            let id = if call.id.is_empty() { format!("call_{position}") } else { call.id };
            tool_calls.push(ToolCall { id, name: call.name, arguments });
        }
        let content = Some(self.text).filter(|text| !text.trim().is_empty());
        Ok(Completion { content, tool_calls, usage: self.usage })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A reply's arguments cut into pieces at every byte, as a provider might send them.
    fn openai_chunks(arguments: &str, step: usize) -> Vec<String> {
        let mut chunks = vec![json!({"choices": [{"delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_9", "type": "function", "function": {"name": "reply", "arguments": ""}}
        ]}}]})
        .to_string()];
        let bytes = arguments.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let mut end = (at + step).min(bytes.len());
            while !arguments.is_char_boundary(end) {
                end += 1;
            }
            let piece = &arguments[at..end];
            chunks.push(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]})
                    .to_string(),
            );
            at = end;
        }
        chunks.push(json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}).to_string());
        chunks.push(json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7}}).to_string());
        chunks.push("[DONE]".into());
        chunks
    }

    #[test]
    fn workers_ai_chunks_stream_text_and_a_reply_and_end_as_the_whole_answer() {
        let text = "Hi \"Dana\", here it is";
        let arguments = json!({"content": text}).to_string();
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        let chunks = [
            json!({"response": "", "tool_calls": [{"index": 0, "id": "chatcmpl-tool-1", "type": "function",
                                                     "function": {"name": "reply"}}]}),
            json!({"response": "", "tool_calls": [{"index": 0, "function": {"arguments": head}}]}),
            json!({"response": "", "tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
            json!({"response": "", "tool_calls": [{"id": null, "type": null, "function": {"name": null}}]}),
            json!({"response": "", "usage": {"prompt_tokens": 30, "completion_tokens": 9}}),
        ];
        let mut assembler = Assembler::new(Wire::WorkersAi);
        let mut seen = Vec::new();
        for chunk in &chunks {
            assembler.take(&chunk.to_string()).unwrap();
            seen.extend(assembler.partial_argument("reply", "content"));
        }
        assembler.take("[DONE]").unwrap();
        assert!(seen.first().is_some_and(|first| first.len() < text.len()), "part of it first: {seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some(text));
        let completion = assembler.finish().unwrap();
        assert_eq!(completion.tool_calls.len(), 1, "the empty closing piece adds no call");
        assert_eq!(
            (completion.tool_calls[0].id.as_str(), &completion.tool_calls[0].arguments["content"]),
            ("chatcmpl-tool-1", &json!(text))
        );
        assert_eq!(completion.usage, Usage { input_tokens: 30, output_tokens: 9 });

        // Text in `response`, and a whole call with object arguments in one chunk.
        let mut assembler = Assembler::new(Wire::WorkersAi);
        for chunk in [
            json!({"response": "Hel"}),
            json!({"response": "lo"}),
            json!({"tool_calls": [{"name": "react", "arguments": {"emoji": "👍"}}]}),
        ] {
            assembler.take(&chunk.to_string()).unwrap();
        }
        assembler.take("[DONE]").unwrap();
        let completion = assembler.finish().unwrap();
        assert_eq!(completion.content.as_deref(), Some("Hello"));
        assert_eq!(completion.tool_calls[0].arguments, json!({"emoji": "👍"}));

        // Models that answer in OpenAI's shape stream as OpenAI's.
        let mut assembler = Assembler::new(Wire::WorkersAi);
        assembler.take(&json!({"choices": [{"delta": {"content": "Hi"}}]}).to_string()).unwrap();
        assembler.take("[DONE]").unwrap();
        assert_eq!(assembler.finish().unwrap().content.as_deref(), Some("Hi"));
    }

    #[test]
    fn the_reply_text_only_grows_and_ends_as_the_whole_text() {
        let text = "Hi \"Dana\" \\ é 😀 line\nnext\ttab \u{2028} end";
        let arguments = json!({"reply_to": "42", "content": text}).to_string();
        for step in [1, 2, 3, 7] {
            let mut assembler = Assembler::new(Wire::OpenAi);
            let mut shown = String::new();
            for chunk in openai_chunks(&arguments, step) {
                assembler.take(&chunk).unwrap();
                if let Some(now) = assembler.partial_argument("reply", "content") {
                    assert!(now.starts_with(&shown), "step {step}: {shown:?} then {now:?}");
                    assert!(text.starts_with(&now), "step {step}: {now:?} is a prefix of the text");
                    shown = now;
                }
            }
            assert_eq!(shown, text, "step {step}");
            assert!(assembler.is_finished());
            let completion = assembler.finish().unwrap();
            assert_eq!(completion.tool_calls[0].arguments["content"], text);
            assert_eq!(completion.tool_calls[0].id, "call_9");
            assert_eq!(completion.usage, Usage { input_tokens: 12, output_tokens: 7 });
        }
    }

    #[test]
    fn escaped_surrogate_pairs_never_show_half_a_character() {
        // The model may escape non-ASCII: 😀 as \ud83d\ude00.
        let arguments = r#"{"content":"a \ud83d\ude00 b \u00e9"}"#;
        let mut assembler = Assembler::new(Wire::OpenAi);
        let mut seen = Vec::new();
        for chunk in openai_chunks(arguments, 1) {
            assembler.take(&chunk).unwrap();
            seen.extend(assembler.partial_argument("reply", "content"));
        }
        assert_eq!(seen.last().map(String::as_str), Some("a 😀 b é"));
        assert!(seen.iter().all(|text| "a 😀 b é".starts_with(text.as_str())), "{seen:?}");
    }

    #[test]
    fn a_skip_shows_nothing_and_a_field_not_yet_begun_is_none() {
        let mut assembler = Assembler::new(Wire::OpenAi);
        for chunk in openai_chunks(r#"{"reason":"not for me"}"#, 4) {
            assembler.take(&chunk).unwrap();
        }
        assert!(assembler.is_finished());
        assert_eq!(assembler.partial_argument("reply", "content"), None);
        let mut skipping = assembler.clone();
        skipping.calls[0].1.name = "skip".into();
        assert_eq!(skipping.partial_argument("reply", "content"), None);
        assert_eq!(skipping.finish().unwrap().tool_calls[0].name, "skip");
    }

    #[test]
    fn anthropic_chunks_build_text_tool_calls_and_usage() {
        let chunks = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 30}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Thinking"}}),
            json!({"type": "content_block_start", "index": 1, "content_block":
                {"type": "tool_use", "id": "toolu_1", "name": "reply", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"cont"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "ent\": \"Hel"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "lo\"}"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ];
        let mut assembler = Assembler::new(Wire::Anthropic);
        let mut shown = Vec::new();
        for chunk in chunks {
            assembler.take(&chunk.to_string()).unwrap();
            shown.extend(assembler.partial_argument("reply", "content"));
        }
        assert_eq!(shown, ["Hel", "Hello", "Hello", "Hello"]);
        assert!(assembler.is_finished());
        let completion = assembler.finish().unwrap();
        assert_eq!(completion.content.as_deref(), Some("Thinking"));
        assert_eq!(
            completion.tool_calls,
            [ToolCall { id: "toolu_1".into(), name: "reply".into(), arguments: json!({"content": "Hello"}) }]
        );
        assert_eq!(completion.usage, Usage { input_tokens: 30, output_tokens: 9 });
    }

    #[test]
    fn a_stream_cut_before_the_provider_finished_is_no_answer() {
        let arguments = json!({"content": "Volcanoes form where magma rises"}).to_string();
        let chunks = openai_chunks(&arguments, 6);
        // Everything but the finish reason, the usage and [DONE]: the text was
        // whole as far as it went, but nobody said the answer was over.
        let cut = &chunks[..chunks.len() - 3];
        let mut assembler = Assembler::new(Wire::OpenAi);
        for chunk in cut {
            assembler.take(chunk).unwrap();
        }
        assert!(!assembler.is_finished());
        assert!(matches!(assembler.clone().finish(), Err(LlmError::Malformed(_))));
        // A finish reason alone ends it (some servers send no [DONE]).
        assembler.take(&chunks[chunks.len() - 3]).unwrap();
        assert!(assembler.is_finished());
        assert_eq!(assembler.finish().unwrap().tool_calls[0].arguments["content"], "Volcanoes form where magma rises");

        let mut anthropic = Assembler::new(Wire::Anthropic);
        anthropic
            .take(&json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}}).to_string())
            .unwrap();
        assert!(matches!(anthropic.finish(), Err(LlmError::Malformed(_))), "no message_stop, no answer");
    }

    #[test]
    fn an_answer_that_says_nothing_is_garbled() {
        assert!(matches!(Completion::default().checked(), Err(LlmError::Malformed(_))));
        let text = Completion { content: Some("hi".into()), ..Completion::default() };
        assert_eq!(text.clone().checked(), Ok(text));
        let call = Completion {
            tool_calls: vec![ToolCall { id: "c".into(), name: "skip".into(), arguments: json!({}) }],
            ..Completion::default()
        };
        assert!(call.checked().is_ok());
    }

    #[test]
    fn broken_chunks_and_arguments_are_malformed_answers() {
        let mut assembler = Assembler::new(Wire::OpenAi);
        assert!(matches!(assembler.take("{not json"), Err(LlmError::Malformed(_))));
        assert!(matches!(assembler.take(r#"{"error":{"message":"overloaded"}}"#), Err(LlmError::Malformed(_))));
        for chunk in openai_chunks(r#"{"content": "cut off"#, 5) {
            assembler.take(&chunk).unwrap();
        }
        assert_eq!(assembler.partial_argument("reply", "content").as_deref(), Some("cut off"));
        assert!(matches!(assembler.finish(), Err(LlmError::Malformed(_))), "an unfinished call is not a completion");
    }
}
