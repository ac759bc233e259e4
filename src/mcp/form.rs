//! Elicitation (protocol revision 2025-11-25, `elicitation/create`, form
//! mode), the pure part: the form a server asks for (a flat object of
//! strings, numbers, booleans and single-choice enums), the question a
//! person is shown, the person's typed answer read against the form, the
//! defaults applied, the answer checked against the schema (type, enum,
//! minimum/maximum, lengths, required), and the result sent back. URL mode
//! is not supported (the capability declares `form` only).

use serde_json::{json, Map, Value};

/// Fields in one form at most (a person answers in one message).
pub const MAX_FIELDS: usize = 20;
/// The longest text a field takes.
const MAX_TEXT_CHARS: usize = 2_000;

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of these values.
    Choice(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// Its title or description, for the person.
    pub label: String,
    pub kind: FieldKind,
    pub required: bool,
    pub default: Option<Value>,
}

/// A server's question.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub message: String,
    pub fields: Vec<Field>,
}

/// How the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Accept,
    Decline,
    Cancel,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Decline => "decline",
            Action::Cancel => "cancel",
        }
    }
}

/// The elicitation capability this client declares in `initialize`.
pub fn capability() -> Value {
    json!({ "form": {} })
}

/// Reads an `elicitation/create` request's params as a form; an error says
/// why it cannot be asked (URL mode, a nested or unsupported schema).
pub fn form(params: &Value) -> Result<Form, String> {
    match params["mode"].as_str() {
        None | Some("form") => {}
        Some(other) => return Err(format!("elicitation mode `{other}` is not supported (form only)")),
    }
    let message = params["message"].as_str().unwrap_or_default().trim().to_string();
    let schema = &params["requestedSchema"];
    if schema["type"] != "object" {
        return Err("the requested schema is not an object".into());
    }
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let properties = schema["properties"].as_object().cloned().unwrap_or_default();
    if properties.len() > MAX_FIELDS {
        return Err(format!("the form has more than {MAX_FIELDS} fields"));
    }
    let fields = properties
        .iter()
        .map(|(name, property)| field(name, property, required.contains(&name.as_str())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Form { message, fields })
}

fn field(name: &str, property: &Value, required: bool) -> Result<Field, String> {
    let number = |key: &str| property[key].as_f64();
    let length = |key: &str| property[key].as_u64();
    let choices: Option<Vec<String>> = match (property.get("enum"), property.get("oneOf")) {
        (Some(values), _) => {
            Some(values.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect())
        }
        (None, Some(options)) => Some(
            options.as_array().into_iter().flatten().filter_map(|o| o["const"].as_str()).map(str::to_string).collect(),
        ),
        _ => None,
    };
    let kind = match (property["type"].as_str(), choices) {
        (Some("string"), Some(choices)) if !choices.is_empty() => FieldKind::Choice(choices),
        (Some("string"), None) => FieldKind::Text { min_length: length("minLength"), max_length: length("maxLength") },
        (Some(kind @ ("number" | "integer")), None) => {
            FieldKind::Number { integer: kind == "integer", minimum: number("minimum"), maximum: number("maximum") }
        }
        (Some("boolean"), None) => FieldKind::Boolean,
        _ => return Err(format!("the field `{name}` is not a string, number, boolean or single choice")),
    };
    let label = property["title"].as_str().or(property["description"].as_str()).unwrap_or(name).to_string();
    Ok(Field { name: name.to_string(), label, kind, required, default: property.get("default").cloned() })
}

impl Form {
    /// Every field is a boolean or a choice: buttons could answer it (a
    /// string or number needs the person's message).
    pub fn buttons_only(&self) -> bool {
        self.fields.iter().all(|field| matches!(field.kind, FieldKind::Boolean | FieldKind::Choice(_)))
    }

    /// The question as the person reads it: the server's message, then each
    /// field with what it takes and its default, then how to answer.
    pub fn question(&self, server: &str) -> String {
        let mut text = format!("**{server} asks:** {}\n", self.message);
        for field in &self.fields {
            let takes = match &field.kind {
                FieldKind::Text { .. } => "text".to_string(),
                FieldKind::Number { integer: true, .. } => "a whole number".to_string(),
                FieldKind::Number { .. } => "a number".to_string(),
                FieldKind::Boolean => "yes or no".to_string(),
                FieldKind::Choice(choices) => format!("one of {}", choices.join(", ")),
            };
            let default = field.default.as_ref().map(|value| format!(", default {}", shown(value))).unwrap_or_default();
            let required = if field.required { ", required" } else { "" };
            text.push_str(&format!("- `{}` ({}): {takes}{required}{default}\n", field.name, field.label));
        }
        let how = match self.fields.len() {
            1 => "Answer with your next message (the value)",
            _ => "Answer with your next message, one `name: value` per line (a field left out takes its default)",
        };
        text.push_str(&format!(
            "{how}; **Approve** sends the defaults, **Deny** declines. Only the person who asked may answer."
        ));
        text
    }

    /// The content with every default filled in where the person gave nothing.
    pub fn with_defaults(&self, mut content: Map<String, Value>) -> Map<String, Value> {
        for field in &self.fields {
            if let (false, Some(default)) = (content.contains_key(&field.name), &field.default) {
                content.insert(field.name.clone(), default.clone());
            }
        }
        content
    }

    /// Checks content against the form: known fields only, each of its type
    /// and within its bounds, every required one given.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), String> {
        if let Some(unknown) = content.keys().find(|name| !self.fields.iter().any(|field| &field.name == *name)) {
            return Err(format!("there is no field `{unknown}`"));
        }
        for field in &self.fields {
            match content.get(&field.name) {
                None if field.required => return Err(format!("`{}` is required", field.name)),
                None => {}
                Some(value) => check_value(field, value)?,
            }
        }
        Ok(())
    }

    /// Reads a person's typed answer: the value itself for a one-field form,
    /// else `name: value` lines. Each value is read as its field's type.
    pub fn read_reply(&self, text: &str) -> Result<Map<String, Value>, String> {
        let mut content = Map::new();
        let text = text.trim();
        if let [only] = self.fields.as_slice() {
            if !text.is_empty() {
                content.insert(only.name.clone(), typed(only, text)?);
            }
            return Ok(content);
        }
        for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("write `name: value` per line (`{line}` is not)"));
            };
            let name = name.trim().trim_matches('`');
            let field =
                self.fields.iter().find(|field| field.name == name).ok_or(format!("there is no field `{name}`"))?;
            content.insert(field.name.clone(), typed(field, value.trim())?);
        }
        Ok(content)
    }

    /// The answer to send: defaults applied, then checked.
    pub fn accepted(&self, given: Map<String, Value>) -> Result<Map<String, Value>, String> {
        let content = self.with_defaults(given);
        self.check(&content)?;
        Ok(content)
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A typed value read as the field's type.
fn typed(field: &Field, text: &str) -> Result<Value, String> {
    let value = match &field.kind {
        FieldKind::Text { .. } | FieldKind::Choice(_) => Value::String(text.to_string()),
        FieldKind::Number { integer: true, .. } => {
            text.parse::<i64>().map(Value::from).map_err(|_| format!("`{}` takes a whole number", field.name))?
        }
        FieldKind::Number { .. } => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or(format!("`{}` takes a number", field.name))?,
        FieldKind::Boolean => match text.to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" | "on" => Value::Bool(true),
            "no" | "n" | "false" | "off" => Value::Bool(false),
            _ => return Err(format!("`{}` takes yes or no", field.name)),
        },
    };
    check_value(field, &value)?;
    Ok(value)
}

fn check_value(field: &Field, value: &Value) -> Result<(), String> {
    let name = &field.name;
    match (&field.kind, value) {
        (FieldKind::Text { min_length, max_length }, Value::String(text)) => {
            let length = text.chars().count() as u64;
            if min_length.is_some_and(|min| length < min) || max_length.is_some_and(|max| length > max) {
                return Err(format!("`{name}` is too short or too long"));
            }
            if length > MAX_TEXT_CHARS as u64 {
                return Err(format!("`{name}` is longer than {MAX_TEXT_CHARS} characters"));
            }
        }
        (FieldKind::Choice(choices), Value::String(text)) if choices.contains(text) => {}
        (FieldKind::Choice(choices), _) => return Err(format!("`{name}` is one of {}", choices.join(", "))),
        (FieldKind::Number { integer, minimum, maximum }, Value::Number(number)) => {
            let number_value = number.as_f64().unwrap_or(f64::NAN);
            if *integer && !(number.is_i64() || number.is_u64()) {
                return Err(format!("`{name}` takes a whole number"));
            }
            if minimum.is_some_and(|min| number_value < min) || maximum.is_some_and(|max| number_value > max) {
                let range = format!("{} to {}", shown_bound(*minimum), shown_bound(*maximum));
                return Err(format!("`{name}` is out of range ({range})"));
            }
        }
        (FieldKind::Boolean, Value::Bool(_)) => {}
        _ => return Err(format!("`{name}` has the wrong type")),
    }
    Ok(())
}

fn shown_bound(bound: Option<f64>) -> String {
    bound.map(|bound| bound.to_string()).unwrap_or_else(|| "any".into())
}

/// The JSON-RPC answer to the server's request `id`: the action, and for
/// `accept` the content.
pub fn result(id: &Value, action: Action, content: Option<Map<String, Value>>) -> Value {
    let mut result = json!({ "action": action.as_str() });
    if let (Action::Accept, Some(content)) = (action, content) {
        result["content"] = Value::Object(content);
    }
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// The JSON-RPC error for a request that cannot be asked (URL mode, an unsupported schema).
pub fn refused(id: &Value, why: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": why } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults_form() -> Form {
        // The conformance suite's SEP-1034 form.
        form(&json!({ "message": "please accept", "requestedSchema": { "type": "object", "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30, "minimum": 0, "maximum": 150 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "default": true } }, "required": [] } }))
        .unwrap()
    }

    #[test]
    fn a_flat_form_is_read_and_url_mode_or_nested_schemas_are_refused() {
        let asked = defaults_form();
        assert_eq!(asked.fields.len(), 5);
        assert!(!asked.buttons_only());
        let age = asked.fields.iter().find(|field| field.name == "age").unwrap();
        assert_eq!(age.kind, FieldKind::Number { integer: true, minimum: Some(0.0), maximum: Some(150.0) });
        assert!(form(&json!({ "mode": "url", "url": "https://x", "message": "m" })).unwrap_err().contains("url"));
        let nested = json!({ "requestedSchema": { "type": "object", "properties": { "a": { "type": "object" } } } });
        assert!(form(&nested).is_err());
        let titled = json!({ "requestedSchema": { "type": "object", "properties": {
            "size": { "type": "string", "oneOf": [{ "const": "s", "title": "Small" }, { "const": "l" }] } } } });
        assert_eq!(form(&titled).unwrap().fields[0].kind, FieldKind::Choice(vec!["s".into(), "l".into()]));
        assert!(form(&titled).unwrap().buttons_only());
    }

    #[test]
    fn defaults_fill_what_the_person_left_out() {
        let form = defaults_form();
        let content = form.accepted(Map::new()).unwrap();
        assert_eq!(
            Value::Object(content),
            json!({
            "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true })
        );
        let given = form.read_reply("name: Ada\nage: 36").unwrap();
        let content = form.accepted(given).unwrap();
        assert_eq!(content["name"], "Ada");
        assert_eq!(content["age"], 36);
        assert_eq!(content["status"], "active");
    }

    #[test]
    fn an_answer_is_checked_against_the_schema() {
        let form = defaults_form();
        assert!(form.read_reply("age: 200").unwrap_err().contains("out of range"));
        assert!(form.read_reply("age: 3.5").unwrap_err().contains("whole number"));
        assert!(form.read_reply("status: gone").unwrap_err().contains("one of"));
        assert!(form.read_reply("verified: maybe").unwrap_err().contains("yes or no"));
        assert!(form.read_reply("colour: red").unwrap_err().contains("no field"));
        assert!(form.read_reply("just words").unwrap_err().contains("name: value"));
        assert_eq!(form.read_reply("verified: no").unwrap()["verified"], false);
        let required = super::form(&json!({ "message": "m", "requestedSchema": { "type": "object",
            "properties": { "email": { "type": "string", "minLength": 3 } }, "required": ["email"] } }))
        .unwrap();
        assert!(required.accepted(Map::new()).unwrap_err().contains("required"), "no default for a required field");
        assert!(required.read_reply("ab").is_err(), "too short");
        let one = required.read_reply("  ada@example.com ").unwrap();
        assert_eq!(Value::Object(required.accepted(one).unwrap()), json!({ "email": "ada@example.com" }));
        let mut wrong = Map::new();
        wrong.insert("email".into(), json!(5));
        assert!(required.check(&wrong).is_err());
    }

    #[test]
    fn the_question_and_the_result_say_what_they_must() {
        let form = defaults_form();
        let question = form.question("tracker");
        for part in ["tracker asks:", "please accept", "`age`", "a whole number", "default John Doe", "one of active"] {
            assert!(question.contains(part), "{part}: {question}");
        }
        let accepted = result(&json!(7), Action::Accept, Some(form.accepted(Map::new()).unwrap()));
        assert_eq!(accepted["result"]["action"], "accept");
        assert_eq!(accepted["result"]["content"]["verified"], true);
        let declined = result(&json!("e"), Action::Decline, Some(Map::new()));
        assert_eq!(declined, json!({ "jsonrpc": "2.0", "id": "e", "result": { "action": "decline" } }));
        assert_eq!(result(&json!(1), Action::Cancel, None)["result"]["action"], "cancel");
        assert_eq!(refused(&json!(1), "no")["error"]["code"], -32602);
        assert_eq!(capability(), json!({ "form": {} }));
    }
}
