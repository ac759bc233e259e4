//! `run_code` as a type, with its documented argument (its call: `tools.rs`).

crate::tool! {
    /// `run_code`: run a JavaScript module in a fresh sandbox.
    pub RunCode = "run_code",
    /// `run_code`'s arguments.
    struct RunCodeArguments {
        /// An ES module whose default export is `async function main({ workspace })`;
        /// what it returns is the result.
        pub code: String,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;

    #[test]
    fn the_code_is_required_and_must_be_text() {
        let parsed = RunCode::parse(&json!({ "code": "export default () => 1" })).unwrap();
        assert_eq!(parsed.code, "export default () => 1");
        assert!(RunCode::parse(&json!({})).unwrap_err().contains("missing field `code`"));
        assert!(RunCode::parse(&json!({ "code": 5 })).is_err());
        assert_eq!(RunCode::spec().name, "run_code");
    }
}
