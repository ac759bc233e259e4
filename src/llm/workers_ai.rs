//! The Workers AI binding's text-generation format: the request is the
//! OpenAI-style `messages` and `tools` (without `model`: the binding names
//! it); the answer is `{response, tool_calls: [{name, arguments}], usage}`, or
//! the OpenAI `choices` shape that some models return.

use serde_json::Value;

use super::{openai, ChatRequest, Completion, LlmError};

/// The input object for `env.AI.run(model, input)`.
pub fn request_body(request: &ChatRequest) -> Value {
    let mut body = openai::request_body(request);
    if let Some(object) = body.as_object_mut() {
        object.remove("model");
        object.remove("tool_choice");
    }
    body
}

/// Reads the binding's answer.
pub fn parse_response(value: &Value) -> Result<Completion, LlmError> {
    if value.get("choices").is_some() {
        return openai::parse_response(value.to_string().as_bytes());
    }
    let Some(object) = value.as_object() else {
        return Err(LlmError::Malformed("the Workers AI answer is not an object".into()));
    };
    let content = match object.get("response") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    }
    .filter(|text| !text.trim().is_empty());
    let calls = object.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate();
    let tool_calls = calls
        .map(|(index, call)| openai::tool_call(index, None, call.get("name"), call.get("arguments")))
        .collect::<Result<Vec<_>, _>>()?;
    let usage = openai::usage(value);
    if content.is_none() && tool_calls.is_empty() {
        return Err(LlmError::Malformed("the Workers AI answer has neither text nor tool calls".into()));
    }
    Ok(Completion { content, tool_calls, usage })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::{ChatMessage, Role, ToolSpec};

    #[test]
    fn requests_leave_the_model_to_the_binding() {
        let request = ChatRequest {
            model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast".into(),
            messages: vec![ChatMessage::new(Role::User, "hi")],
            tools: vec![ToolSpec { name: "reply".into(), description: "Say it.".into(), parameters: json!({}) }],
        };
        let body = request_body(&request);
        assert!(body.get("model").is_none());
        assert_eq!(body["messages"][0]["content"], "hi");
        assert_eq!(body["tools"][0]["function"]["name"], "reply");
    }

    #[test]
    fn answers_with_text_or_tool_calls_parse_and_empty_ones_are_malformed() {
        let text = parse_response(&json!({"response": "Hello", "usage": {"prompt_tokens": 7, "completion_tokens": 2}}));
        let text = text.unwrap();
        assert_eq!((text.content.as_deref(), text.usage.input_tokens), (Some("Hello"), 7));
        let calls = parse_response(&json!({"response": null, "tool_calls": [
            {"name": "reply", "arguments": {"content": "hi"}},
            {"name": "skip", "arguments": "{\"reason\": \"x\"}"}
        ]}))
        .unwrap();
        assert_eq!(calls.tool_calls.len(), 2);
        assert_eq!(calls.tool_calls[1].arguments["reason"], "x");
        let openai_shape = json!({"choices": [{"message": {"content": "Hi there"}}]});
        assert_eq!(parse_response(&openai_shape).unwrap().content.as_deref(), Some("Hi there"));
        assert!(matches!(parse_response(&json!({"response": ""})), Err(LlmError::Malformed(_))));
        assert!(matches!(parse_response(&json!([1])), Err(LlmError::Malformed(_))));
    }
}
