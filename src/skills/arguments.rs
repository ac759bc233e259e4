//! `open_skill` as a type, with its documented argument (its call: `tools.rs`).

crate::tool! {
    /// `open_skill`: read one of the agent's enabled skills.
    pub OpenSkill = "open_skill",
    /// `open_skill`'s arguments.
    struct OpenSkillArguments {
        /// The skill's name, as the prompt's list of skills gives it.
        pub name: String,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;

    #[test]
    fn the_name_is_required() {
        assert_eq!(OpenSkill::parse(&json!({ "name": "weekly-report" })).unwrap().name, "weekly-report");
        assert!(OpenSkill::parse(&json!({})).unwrap_err().contains("missing field `name`"));
        assert_eq!(OpenSkill::spec().name, "open_skill");
    }
}
