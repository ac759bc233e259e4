//! The OpenAI-compatible chat-completions wire format.

use serde_json::{json, Value};

use super::{ChatMessage, ChatRequest, Completion, LlmError, Role, ToolCall, ToolSpec, Usage};

/// The URL of the chat-completions endpoint under a base such as `https://api.openai.com/v1`.
pub fn endpoint(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// The JSON body for a request.
pub fn request_body(request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = json!({ "model": request.model, "messages": messages });
    if !request.tools.is_empty() {
        body["tools"] = request.tools.iter().map(tool_json).collect();
        body["tool_choice"] = json!("auto");
    }
    body
}

/// A tool the model may call, as a function.
fn tool_json(tool: &ToolSpec) -> Value {
    let function = json!({ "name": tool.name, "description": tool.description, "parameters": tool.parameters });
    json!({ "type": "function", "function": function })
}

/// A call the model made, its arguments as JSON text.
fn call_json(call: &ToolCall) -> Value {
    let function = json!({ "name": call.name, "arguments": call.arguments.to_string() });
    json!({ "id": call.id, "type": "function", "function": function })
}

fn message_json(message: &ChatMessage) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut value = json!({ "role": role, "content": message.content });
    if !message.images.is_empty() {
        let mut parts = vec![json!({ "type": "text", "text": message.content })];
        parts.extend(message.images.iter().map(|image| {
            let url = format!("data:{};base64,{}", image.media_type, image.base64);
            json!({ "type": "image_url", "image_url": { "url": url } })
        }));
        value["content"] = Value::Array(parts);
    }
    if !message.tool_calls.is_empty() {
        value["tool_calls"] = message.tool_calls.iter().map(call_json).collect();
    }
    if let Some(id) = &message.tool_call_id {
        value["tool_call_id"] = json!(id);
    }
    value
}

/// Parses a chat-completions answer. Anything without a first choice, or with
/// tool-call arguments that are not JSON, is `Malformed` (and so retried).
pub fn parse_response(body: &[u8]) -> Result<Completion, LlmError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| LlmError::Malformed(error.to_string()))?;
    let message =
        value.pointer("/choices/0/message").ok_or_else(|| LlmError::Malformed("no choices[0].message".into()))?;
    let content =
        message.get("content").and_then(Value::as_str).map(str::to_string).filter(|text| !text.trim().is_empty());
    let calls = message.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate();
    let tool_calls = calls
        .map(|(index, call)| {
            tool_call(index, call.get("id"), call.pointer("/function/name"), call.pointer("/function/arguments"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let usage = usage(&value);
    Ok(Completion { content, tool_calls, usage })
}

/// One tool call from its parts: a call without a name, or with arguments
/// that are not JSON, is `Malformed`; blank or missing arguments are `{}`; a
/// call without an id is named by its place.
pub fn tool_call(
    index: usize,
    id: Option<&Value>,
    name: Option<&Value>,
    arguments: Option<&Value>,
) -> Result<ToolCall, LlmError> {
    let name = name.and_then(Value::as_str).ok_or_else(|| LlmError::Malformed("tool call without a name".into()))?;
    let arguments = match arguments {
        Some(Value::String(raw)) if raw.trim().is_empty() => json!({}),
        Some(Value::String(raw)) => {
            serde_json::from_str(raw).map_err(|error| LlmError::Malformed(format!("arguments of {name}: {error}")))?
        }
        Some(object @ Value::Object(_)) => object.clone(),
        _ => json!({}),
    };
    let id = id.and_then(Value::as_str).map_or_else(|| format!("call_{index}"), str::to_string);
    Ok(ToolCall { id, name: name.to_string(), arguments })
}

/// The tokens a chat-completions answer counts (0 where it says nothing).
pub fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: value.pointer("/usage/prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: value.pointer("/usage/completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn a_message_with_images_is_its_text_then_each_image_as_a_data_url() {
        let mut message = ChatMessage::new(Role::User, "what is this?");
        message.images.push(crate::llm::Image { media_type: "image/png".into(), base64: "iVBOR".into() });
        let request = ChatRequest { model: "gpt-4o".into(), messages: vec![message], tools: Vec::new() };
        let content = &request_body(&request)["messages"][0]["content"];
        assert_eq!(content[0], json!({ "type": "text", "text": "what is this?" }));
        assert_eq!(content[1], json!({ "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBOR" } }));
        let plain = ChatRequest { messages: vec![ChatMessage::new(Role::User, "hi")], ..request };
        assert_eq!(request_body(&plain)["messages"][0]["content"], "hi", "no images: plain text");
    }

    #[test]
    fn requests_carry_messages_tools_and_tool_results() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "reply".into(),
            arguments: json!({"content": "hi"}),
        });
        let request = ChatRequest {
            model: "gpt-test".into(),
            messages: vec![
                ChatMessage::new(Role::System, "be kind"),
                assistant,
                ChatMessage::tool_result("c1", "sent"),
            ],
            tools: vec![ToolSpec {
                name: "reply".into(),
                description: "Reply.".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let body = request_body(&request);
        assert_eq!(body["model"], "gpt-test");
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], r#"{"content":"hi"}"#);
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "reply");
        assert_eq!(endpoint("http://x/v1/"), "http://x/v1/chat/completions");
    }

    #[test]
    fn answers_yield_tool_calls_content_and_usage() {
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "reply", "arguments": "{\"content\":\"Hello!\"}"}}
            ]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}
        });
        let completion = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(completion.content, None);
        assert_eq!(completion.tool_calls[0].name, "reply");
        assert_eq!(completion.tool_calls[0].arguments["content"], "Hello!");
        assert_eq!(completion.usage, Usage { input_tokens: 12, output_tokens: 3 });
    }

    #[test]
    fn garbled_answers_are_malformed() {
        for body in [
            "not json".to_string(),
            json!({"choices": []}).to_string(),
            json!({"choices": [{"message": {"tool_calls": [{"function": {"name": "reply", "arguments": "{oops"}}]}}]})
                .to_string(),
        ] {
            assert!(matches!(parse_response(body.as_bytes()), Err(LlmError::Malformed(_))), "{body}");
        }
    }
}
