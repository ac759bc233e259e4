//! The Anthropic Messages API wire format.

use serde_json::{json, Value};

use super::{ChatMessage, ChatRequest, Completion, LlmError, Role, ToolCall, Usage};

/// The API version header value this format follows.
pub const API_VERSION: &str = "2023-06-01";
/// Replies are short; this caps one answer.
const MAX_TOKENS: u32 = 4096;

pub fn endpoint(base_url: &str) -> String {
    format!("{}/v1/messages", base_url.trim_end_matches('/'))
}

/// The JSON body: system text apart, tool calls and results as content blocks.
pub fn request_body(request: &ChatRequest) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|message| message.role == Role::System)
        .map(|message| message.content.as_str())
        .collect();
    let mut messages: Vec<Value> = Vec::new();
    for message in request.messages.iter().filter(|message| message.role != Role::System) {
        let (role, blocks) = blocks_of(message);
        // The API wants user and assistant turns to alternate: merge neighbours.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({ "role": role, "content": blocks })),
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": MAX_TOKENS,
        "system": system.join("\n\n"),
        "messages": messages,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({ "name": tool.name, "description": tool.description, "input_schema": tool.parameters }))
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn blocks_of(message: &ChatMessage) -> (&'static str, Vec<Value>) {
    match message.role {
        Role::Tool => (
            "user",
            vec![json!({
                "type": "tool_result",
                "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content,
            })],
        ),
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !message.content.is_empty() {
                blocks.push(json!({ "type": "text", "text": message.content }));
            }
            for call in &message.tool_calls {
                blocks.push(json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments }));
            }
            ("assistant", blocks)
        }
        Role::User | Role::System => {
            let images = message.images.iter().map(|image| {
                json!({ "type": "image", "source": { "type": "base64", "media_type": image.media_type, "data": image.base64 } })
            });
            ("user", images.chain([json!({ "type": "text", "text": message.content })]).collect())
        }
    }
}

pub fn parse_response(body: &[u8]) -> Result<Completion, LlmError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| LlmError::Malformed(error.to_string()))?;
    let blocks = value["content"].as_array().ok_or_else(|| LlmError::Malformed("no content blocks".into()))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block["id"].as_str().unwrap_or_default().to_string(),
                name: block["name"]
                    .as_str()
                    .ok_or_else(|| LlmError::Malformed("tool_use without a name".into()))?
                    .to_string(),
                arguments: block["input"].clone(),
            }),
            _ => {}
        }
    }
    Ok(Completion {
        content: Some(text).filter(|text| !text.trim().is_empty()),
        tool_calls,
        usage: Usage {
            input_tokens: value.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: value.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    #[test]
    fn a_message_with_images_puts_each_image_block_before_its_text() {
        let mut message = ChatMessage::new(Role::User, "what is this?");
        message.images.push(crate::llm::Image { media_type: "image/jpeg".into(), base64: "/9j/".into() });
        let request =
            ChatRequest { model: "claude-3-5-haiku-latest".into(), messages: vec![message], tools: Vec::new() };
        let content = &request_body(&request)["messages"][0]["content"];
        let image =
            json!({ "type": "image", "source": { "type": "base64", "media_type": "image/jpeg", "data": "/9j/" } });
        assert_eq!(content[0], image);
        assert_eq!(content[1], json!({ "type": "text", "text": "what is this?" }));
    }

    #[test]
    fn requests_put_system_apart_and_tools_as_blocks() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls.push(ToolCall {
            id: "t1".into(),
            name: "reply".into(),
            arguments: json!({"content": "hi"}),
        });
        let request = ChatRequest {
            model: "claude-test".into(),
            messages: vec![
                ChatMessage::new(Role::System, "be kind"),
                ChatMessage::new(Role::User, "hello"),
                assistant,
                ChatMessage::tool_result("t1", "sent"),
                ChatMessage::new(Role::User, "thanks"),
            ],
            tools: vec![ToolSpec {
                name: "reply".into(),
                description: "Reply.".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let body = request_body(&request);
        assert_eq!(body["system"], "be kind");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "the tool result and the next user text share one user turn");
        assert_eq!(messages[1]["content"][0]["type"], "tool_use");
        assert_eq!(messages[2]["content"][0]["type"], "tool_result");
        assert_eq!(messages[2]["content"][0]["tool_use_id"], "t1");
        assert_eq!(messages[2]["content"][1]["text"], "thanks");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }

    #[test]
    fn responses_yield_text_tool_calls_and_usage() {
        // Shaped like the documented Messages API response.
        let body = json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "text", "text": "Replying now."},
                {"type": "tool_use", "id": "toolu_01", "name": "reply", "input": {"content": "Hi!"}}
            ],
            "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 7}
        });
        let completion = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(completion.content.as_deref(), Some("Replying now."));
        assert_eq!(completion.tool_calls[0].arguments["content"], "Hi!");
        assert_eq!(completion.usage, Usage { input_tokens: 20, output_tokens: 7 });
        assert!(matches!(parse_response(b"{}"), Err(LlmError::Malformed(_))));
    }
}
