//! A model tool is a type: its name, its documented argument struct (whose
//! JSON schema is what the model is sent, the struct's doc comments its field
//! descriptions) and, through the host that runs it, its call. A tool set is a
//! list of these types ([`tool_set!`](crate::tool_set)): the one dispatcher
//! finds the tool the model named, so no tool is found by a hand-written
//! `match` on its name. MCP tools stay dynamic: their schemas come from the server.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolSpec;

/// A tool the model may call.
pub trait Tool {
    /// The name the model calls it by; its description is the template
    /// `prompts/tools/<NAME>.md`.
    const NAME: &'static str;
    /// What a call carries: a struct whose doc comments tell the model what
    /// each argument is.
    type Arguments: DeserializeOwned + JsonSchema;

    /// The tool as the model is offered it.
    fn spec() -> ToolSpec {
        ToolSpec::new(Self::NAME, parameters::<Self::Arguments>())
    }

    /// A call's arguments, or what was wrong with them, in words the model
    /// reads (never a panic). A call without arguments is one with none.
    fn parse(arguments: &Value) -> Result<Self::Arguments, String> {
        let none = Value::Object(Map::new());
        let arguments = if arguments.is_null() { &none } else { arguments };
        <Self::Arguments as serde::Deserialize>::deserialize(arguments)
            .map_err(|error| format!("the arguments of `{}` do not fit its schema: {error}", Self::NAME))
    }
}

/// A host that carries out calls of the tool `T`, each becoming an `Output`
/// (for most, the text the model reads).
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait Run<T: Tool, Output = String> {
    async fn run(&self, arguments: T::Arguments) -> Output;
}

/// The arguments of a tool that takes none.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
pub struct NoArguments {}

/// A call's answer as the model reads it: a refusal or bad arguments are
/// `error: …`.
pub fn answer(result: Result<String, String>) -> String {
    result.unwrap_or_else(|error| format!("error: {error}"))
}

/// An optional text argument, if it says something (trimmed; an empty or
/// blank one is as good as left out).
pub fn given(text: &Option<String>) -> Option<&str> {
    text.as_deref().map(str::trim).filter(|text| !text.is_empty())
}

/// The schema of a string that is one of `words` (for an enum whose variants
/// carry doc comments, which a derived schema would turn into a `oneOf`).
pub fn one_of_words(words: impl IntoIterator<Item = &'static str>) -> schemars::Schema {
    let words: Vec<&str> = words.into_iter().collect();
    schemars::json_schema!({ "type": "string", "enum": words })
}

/// Gives each vocabulary type (a `Copy` enum with `ALL` and `as_str`) the
/// schema of its plain list of words.
#[macro_export]
macro_rules! words_schema {
    ($($kind:ty),* $(,)?) => {$(
        impl schemars::JsonSchema for $kind {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($kind).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::llm::tool::one_of_words(<$kind>::ALL.map(<$kind>::as_str))
            }
        }
    )*};
}

/// The JSON schema of `A` as models are sent it: an object with its
/// properties (each described by its field's doc comment) and the required
/// ones, inline, without the generator's bookkeeping (`$schema`, `title`,
/// `format`) and without the `null` that an optional field's type allows
/// (leaving an argument out is how a model says "none").
pub fn parameters<A: JsonSchema>() -> Value {
    // Everything inline, so no definitions (nor a draft's transforms of them) are needed.
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut value = schema.to_value();
    tidy(&mut value);
    if let Some(object) = value.as_object_mut() {
        // The struct's own doc comment is for readers: the tool's description is its prompt file.
        object.remove("description");
        object.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        object.entry("required").or_insert_with(|| Value::Array(Vec::new()));
    }
    value
}

/// Removes what models do not need from a generated schema, everywhere in it
/// (a `properties` map's keys are argument names, never keywords).
fn tidy(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for key in ["$schema", "title", "format"] {
                object.remove(key);
            }
            // An optional field: `{"anyOf": [schema, {"type": "null"}]}` becomes the schema.
            if let Some(Value::Array(choices)) = object.get("anyOf") {
                let not_null: Vec<&Value> = choices.iter().filter(|choice| choice["type"] != "null").collect();
                if let [Value::Object(only)] = not_null[..] {
                    let only = only.clone();
                    object.remove("anyOf");
                    for (key, value) in only {
                        object.entry(key).or_insert(value);
                    }
                }
            }
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|kind| kind != "null");
                if let [only] = &types[..] {
                    let only = only.clone();
                    object.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(values)) = object.get_mut("enum") {
                values.retain(|value| !value.is_null());
            }
            for (key, value) in object.iter_mut() {
                match (key.as_str(), value) {
                    ("properties", Value::Object(properties)) => properties.values_mut().for_each(tidy),
                    (_, value) => tidy(value),
                }
            }
        }
        Value::Array(values) => values.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Declares a tool: its type (with its doc comment), the name the model calls
/// it by, and its argument struct (declared here, or named when it is
/// declared elsewhere).
#[macro_export]
macro_rules! tool {
    // The argument struct declared here too: it derives `Debug`, `Clone`,
    // `Deserialize` and `JsonSchema` (its doc comments are the schema's).
    (
        $(#[$meta:meta])* $vis:vis $tool:ident = $name:literal,
        $(#[$arguments_meta:meta])* struct $arguments:ident { $($fields:tt)* }
    ) => {
        $crate::tool!($(#[$meta])* $vis $tool = $name, $arguments);

        #[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
        $(#[$arguments_meta])*
        $vis struct $arguments { $($fields)* }
    };
    ($(#[$meta:meta])* $vis:vis $tool:ident = $name:literal, $arguments:ty) => {
        $(#[$meta])*
        $vis struct $tool;

        impl $crate::llm::tool::Tool for $tool {
            const NAME: &'static str = $name;
            type Arguments = $arguments;
        }
    };
}

/// Declares a tool set: a list of tool types, with their specs in order, their
/// names, and the one dispatcher that runs a call with a host that runs each
/// of them ([`Run`]). The dispatcher answers `None` for a name not in the set
/// (another set, an MCP server, or nobody, may have it).
#[macro_export]
macro_rules! tool_set {
    ($(#[$meta:meta])* $visibility:vis $set:ident = [$($tool:ty),* $(,)?]) => {
        $(#[$meta])*
        $visibility struct $set;

        impl $set {
            /// The tools' names, in the order they are offered.
            #[allow(dead_code)]
            pub const NAMES: &'static [&'static str] = &[$(<$tool as $crate::llm::tool::Tool>::NAME),*];

            /// The tools as the model is offered them.
            #[allow(dead_code)]
            pub fn specs() -> Vec<$crate::llm::ToolSpec> {
                vec![$(<$tool as $crate::llm::tool::Tool>::spec()),*]
            }

            /// Runs the call of `name` with `host`: its output, or what was
            /// wrong with its arguments; `None` when no tool of the set has that name.
            #[allow(dead_code)]
            pub async fn call<Host, Output>(
                host: &Host,
                name: &str,
                arguments: &serde_json::Value,
            ) -> Option<Result<Output, String>>
            where
                Host: $($crate::llm::tool::Run<$tool, Output> +)*,
            {
                $(
                    if name == <$tool as $crate::llm::tool::Tool>::NAME {
                        return Some(match <$tool as $crate::llm::tool::Tool>::parse(arguments) {
                            Ok(arguments) => Ok($crate::llm::tool::Run::<$tool, Output>::run(host, arguments).await),
                            Err(error) => Err(error),
                        });
                    }
                )*
                None
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// Say something.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)] // read through its schema
    struct Shout {
        /// What to say.
        words: String,
        /// How loud, 0 to 1.
        volume: Option<f64>,
        /// A heading (an argument named like a schema keyword).
        title: Option<String>,
        mood: Option<Mood>,
        times: Option<i64>,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Mood {
        Glad,
        Cross,
    }

    struct ShoutTool;

    impl Tool for ShoutTool {
        const NAME: &'static str = "reply";
        type Arguments = Shout;
    }

    #[test]
    fn the_schema_is_the_plain_object_models_are_sent() {
        assert_eq!(
            parameters::<Shout>(),
            json!({
                "type": "object",
                "properties": {
                    "words": { "type": "string", "description": "What to say." },
                    "volume": { "type": "number", "description": "How loud, 0 to 1." },
                    "title": { "type": "string", "description": "A heading (an argument named like a schema keyword)." },
                    "mood": { "type": "string", "enum": ["glad", "cross"] },
                    "times": { "type": "integer" }
                },
                "required": ["words"]
            })
        );
        assert_eq!(parameters::<NoArguments>(), json!({ "type": "object", "properties": {}, "required": [] }));
    }

    #[test]
    fn bad_arguments_are_an_error_the_model_reads_never_a_panic() {
        let parsed = ShoutTool::parse(&json!({ "words": "hi", "mood": "glad" })).unwrap();
        assert_eq!((parsed.words.as_str(), parsed.mood), ("hi", Some(Mood::Glad)));
        for (bad, says) in [
            (json!({}), "missing field `words`"),
            (json!({ "words": 3 }), "invalid type"),
            (json!({ "words": "hi", "mood": "sulky" }), "unknown variant `sulky`"),
            (json!("words"), "invalid type"),
        ] {
            let error = ShoutTool::parse(&bad).unwrap_err();
            assert!(error.starts_with("the arguments of `reply` do not fit its schema: "), "{error}");
            assert!(error.contains(says), "{bad}: {error}");
        }
        // No arguments at all reads as an empty object.
        assert!(<NoArgumentsTool as Tool>::parse(&Value::Null).is_ok());
    }

    struct NoArgumentsTool;

    impl Tool for NoArgumentsTool {
        const NAME: &'static str = "skip";
        type Arguments = NoArguments;
    }

    /// Every tool set the models are offered, by who offers it (the channel
    /// offers its turn's tools and its edge's as one list).
    fn sets() -> Vec<(&'static str, Vec<ToolSpec>)> {
        use crate::channel::tool_set::{HostToolSet, TurnToolSet};
        use crate::process::branch::BranchToolSet;
        use crate::process::tool_sets::SetStatus;
        use crate::process::worker_run::WorkerToolSet;
        let channel = [TurnToolSet::specs(), HostToolSet::specs()].concat();
        let worker = [vec![SetStatus::spec()], WorkerToolSet::specs()].concat();
        let links = crate::links::arguments::LinkToolSet::specs();
        vec![("channel", channel), ("branch", BranchToolSet::specs()), ("worker", worker), ("links", links)]
    }

    /// The words a prompt file sets in backticks that look like names (`query`,
    /// `memory_type`), not like examples (`kind: "progress"`, `f…`).
    fn quoted_names(text: &str) -> Vec<&str> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect()
    }

    #[test]
    fn each_set_names_each_tool_once() {
        for (set, specs) in sets() {
            let mut names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "a tool of the {set} set is listed twice: {names:?}");
        }
    }

    #[test]
    fn the_tool_types_and_their_prompt_files_agree() {
        let specs: Vec<ToolSpec> = sets().into_iter().flat_map(|(_, specs)| specs).collect();
        let tool_names: std::collections::BTreeSet<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        let words: std::collections::BTreeSet<&str> = specs
            .iter()
            .flat_map(|spec| spec.parameters["properties"].as_object().into_iter().flat_map(|map| map.values()))
            .flat_map(|property| property["enum"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        for spec in &specs {
            let name = spec.name.as_str();
            assert!(!spec.description.trim().is_empty(), "prompts/tools/{name}.md is missing or empty");
            let schema = &spec.parameters;
            assert_eq!(schema["type"], "object", "{name}");
            let properties = schema["properties"].as_object().unwrap_or_else(|| panic!("{name} has no properties"));
            for required in schema["required"].as_array().into_iter().flatten() {
                let required = required.as_str().unwrap_or_default();
                assert!(properties.contains_key(required), "{name} requires `{required}`, which it does not have");
            }
            // Every argument is explained: by its own description, by the
            // words it may be, or by the prompt file that names it.
            let quoted = quoted_names(&spec.description);
            for (argument, property) in properties {
                let explained = property.get("description").is_some_and(|text| text != "")
                    || property.get("enum").is_some()
                    || quoted.contains(&argument.as_str());
                assert!(explained, "{name}'s `{argument}` is described nowhere");
            }
            // And every name the prompt file quotes is one of its arguments, a
            // word an argument may be (`backlog`, here or in a tool beside it)
            // or a tool: renaming an argument without its prompt fails here.
            for quoted in quoted {
                let known = properties.contains_key(quoted) || words.contains(quoted) || tool_names.contains(quoted);
                assert!(known, "prompts/tools/{name}.md names `{quoted}`, which is no argument, value or tool");
            }
        }
        // And no prompt file is left without its tool.
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts/tools");
        for file in std::fs::read_dir(&folder).expect("prompts/tools") {
            let file = file.expect("a prompt file").file_name().to_string_lossy().into_owned();
            let tool = file.trim_end_matches(".md");
            assert!(tool_names.contains(tool), "prompts/tools/{file} describes no tool of any set");
        }
    }
}
