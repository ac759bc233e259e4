//! The profile tools as types: `person_note` and `person_forget`, with their
//! documented arguments. Their calls (`tools.rs`) touch only the people
//! writing in the turn that started the branch.

use schemars::JsonSchema;
use serde::Deserialize;

use super::rules::{MAX_NOTES_PER_PERSON, MAX_NOTE_CHARS};
use crate::llm::tool::Tool;

/// `person_note`: add or correct a note, or set a time zone or language.
pub struct PersonNote;

impl Tool for PersonNote {
    const NAME: &'static str = "person_note";
    type Arguments = PersonNoteArguments;
}

/// `person_note`'s arguments (the descriptions that name a limit are written
/// from it, so they never disagree).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct PersonNoteArguments {
    /// Who it is about: the name of someone writing now; leave out when only one person is.
    pub person: Option<String>,
    #[schemars(description = format!("One short fact about them, at most {MAX_NOTE_CHARS} characters."))]
    pub note: Option<String>,
    #[schemars(description = format!(
        "Correct note number N instead of adding one (a profile holds at most {MAX_NOTES_PER_PERSON})."
    ))]
    pub replaces: Option<i64>,
    /// Their IANA time zone, e.g. Europe/Berlin (the default for schedules they create).
    pub time_zone: Option<String>,
    /// The language they prefer, e.g. German.
    pub language: Option<String>,
}

/// `person_forget`: forget the profile of someone who asked.
pub struct PersonForget;

impl Tool for PersonForget {
    const NAME: &'static str = "person_forget";
    type Arguments = PersonForgetArguments;
}

/// `person_forget`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct PersonForgetArguments {
    /// Who asked to be forgotten: the name of someone writing now; leave out when only one person is.
    pub person: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_note_reads_its_numbers_and_its_limits_are_in_its_schema() {
        let note = PersonNote::parse(&json!({ "person": "Ada", "note": "likes tea", "replaces": 2 })).unwrap();
        assert_eq!((note.person.as_deref(), note.replaces), (Some("Ada"), Some(2)));
        assert!(PersonNote::parse(&json!({ "replaces": "two" })).is_err());
        assert!(PersonForget::parse(&json!({})).is_ok());
        let schema = crate::llm::tool::parameters::<PersonNoteArguments>();
        let described = |key: &str| schema["properties"][key]["description"].as_str().unwrap_or_default().to_string();
        assert!(described("note").contains(&MAX_NOTE_CHARS.to_string()));
        assert!(described("replaces").contains(&MAX_NOTES_PER_PERSON.to_string()));
        assert_eq!(schema["properties"]["replaces"]["type"], "integer");
    }
}
