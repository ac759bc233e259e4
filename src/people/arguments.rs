//! The profile tools as types: `person_note` and `person_forget`, with their
//! documented arguments. Their calls (`tools.rs`) touch only the people
//! writing in the turn that started the branch.

use super::rules::{self, Change, Edit, Edited, Profile, Refusal, BY_BOT, MAX_NOTES_PER_PERSON, MAX_NOTE_CHARS};
use crate::llm::tool::given;
use crate::redact::Redactor;
use crate::schedules::zone::ZoneRules;

crate::tool! {
    /// `person_note`: add or correct a note, or set a time zone or language.
    pub PersonNote = "person_note",
    /// `person_note`'s arguments (the descriptions that name a limit are written
    /// from it, so they never disagree).
    #[derive(Default)]
    struct PersonNoteArguments {
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
}

impl PersonNoteArguments {
    /// Applies these arguments to `change` (the record of `person`, written by
    /// the bot at `now_ms`); says what it did, in words for the model. A secret
    /// in a note is cut out first (`redactor`); a time zone must be one `zones` knows.
    pub fn apply(
        &self,
        change: &mut Change,
        person: &Profile,
        zones: &(impl ZoneRules + ?Sized),
        redactor: &Redactor,
        now_ms: i64,
    ) -> Result<String, Refusal> {
        let arguments = self;
        let text = |value: &'_ Option<String>| given(value).map(str::to_string);
        let replaces = arguments.replaces.and_then(|number| u64::try_from(number).ok());
        let mut said = Vec::new();
        if let Some(zone) = text(&arguments.time_zone) {
            change.time_zone = rules::time_zone(zones, &zone)?;
            said.push(format!("set {}'s time zone to {zone} (the default for schedules they create)", person.name));
        }
        if let Some(language) = text(&arguments.language) {
            change.language = rules::language(&language)?;
            said.push(format!("set {}'s language to {language}", person.name));
        }
        match (text(&arguments.note), replaces) {
            (None, Some(_)) => return Err(Refusal::Empty),
            (None, None) if said.is_empty() => return Err(Refusal::Nothing),
            (None, None) => {}
            (Some(written), replaces) => {
                // A secret a person pasted never lands in a profile shown elsewhere.
                let written = redactor.redact(&written).into_owned();
                let edit = match replaces {
                    Some(number) => Edit::Correct { number: number as usize, text: written },
                    None => Edit::Add(written),
                };
                let (notes, edited) = rules::apply(&change.notes, edit, now_ms, BY_BOT, &person.name)?;
                let count = notes.len();
                let newest = |index: usize| notes.get(index).map(|note| note.text.clone()).unwrap_or_default();
                said.push(match edited {
                    Edited::Added => format!(
                        "noted about {} ({count} of {} notes): {}",
                        person.name,
                        MAX_NOTES_PER_PERSON,
                        newest(count - 1)
                    ),
                    Edited::AlreadyKnown => format!("{} already has that note: nothing changed", person.name),
                    Edited::Corrected { was } => format!(
                        "corrected {}'s note {}: was \"{was}\", now \"{}\"",
                        person.name,
                        replaces.unwrap_or_default(),
                        newest(replaces.unwrap_or(1) as usize - 1)
                    ),
                });
                change.notes = notes;
            }
        }
        Ok(said.join("; "))
    }
}

crate::tool! {
    /// `person_forget`: forget the profile of someone who asked.
    pub PersonForget = "person_forget",
    /// `person_forget`'s arguments.
    #[derive(Default)]
    struct PersonForgetArguments {
        /// Who asked to be forgotten: the name of someone writing now; leave out when only one person is.
        pub person: Option<String>,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;
    use crate::people::rules::Note;

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

    /// Knows two zones, at UTC+1 and UTC-5 all year.
    struct TwoZones;

    impl ZoneRules for TwoZones {
        fn offset_minutes(&self, zone: &str, _utc_ms: i64) -> Option<i32> {
            match zone {
                "Europe/Berlin" => Some(60),
                "America/New_York" => Some(-300),
                _ => None,
            }
        }
    }

    fn change() -> Change {
        Change {
            display_name: "Dana".into(),
            time_zone: None,
            language: None,
            notes: vec![note("likes tea")],
            role: Some("CTO".into()),
            bio: Some("runs the platform team".into()),
        }
    }

    fn note(text: &str) -> Note {
        Note { text: text.into(), at_ms: 1, by: BY_BOT.into() }
    }

    fn dana() -> Profile {
        Profile {
            key: "telegram:7".into(),
            id: "p7".into(),
            name: "Dana".into(),
            seen_as: None,
            time_zone: None,
            language: None,
            is_bot: false,
            notes: Vec::new(),
            role: None,
            bio: None,
        }
    }

    fn noted(change: &mut Change, arguments: serde_json::Value) -> Result<String, Refusal> {
        let redactor = Redactor::new([("ADMIN_TOKEN", "admin-secret-value", None)]);
        let arguments = PersonNote::parse(&arguments).expect("person_note's arguments");
        arguments.apply(change, &dana(), &TwoZones, &redactor, 99)
    }

    #[test]
    fn a_person_note_sets_the_zone_and_language_and_adds_or_corrects_a_note() {
        let mut dana = change();
        let said = noted(&mut dana, json!({ "time_zone": "Europe/Berlin", "language": "German" })).unwrap();
        assert_eq!(dana.time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(dana.language.as_deref(), Some("German"));
        assert!(said.contains("time zone to Europe/Berlin") && said.contains("language to German"), "{said}");

        let said = noted(&mut dana, json!({ "note": "  plays chess " })).unwrap();
        assert_eq!(said, format!("noted about Dana (2 of {MAX_NOTES_PER_PERSON} notes): plays chess"));
        assert_eq!((dana.notes[1].at_ms, dana.notes[1].by.as_str()), (99, BY_BOT));

        let said = noted(&mut dana, json!({ "note": "plays go", "replaces": 2 })).unwrap();
        assert_eq!(said, "corrected Dana's note 2: was \"plays chess\", now \"plays go\"");
        let said = noted(&mut dana, json!({ "note": "Likes tea" })).unwrap();
        assert_eq!(said, "Dana already has that note: nothing changed");
        assert_eq!(dana.notes.iter().map(|note| note.text.as_str()).collect::<Vec<_>>(), ["likes tea", "plays go"]);
    }

    #[test]
    fn a_person_note_never_sets_the_operators_role_or_bio() {
        let mut dana = change();
        let arguments = json!({ "role": "admin", "bio": "may do anything", "note": "says she is the admin" });
        noted(&mut dana, arguments).unwrap();
        assert_eq!(dana.role.as_deref(), Some("CTO"));
        assert_eq!(dana.bio.as_deref(), Some("runs the platform team"));
        let mut dana = change();
        assert_eq!(noted(&mut dana, json!({ "role": "admin" })), Err(Refusal::Nothing), "nothing it may change");
        assert_eq!(dana.role.as_deref(), Some("CTO"));
        let schema = serde_json::to_string(&PersonNote::spec().parameters).unwrap();
        assert!(!schema.contains("\"role\"") && !schema.contains("\"bio\""), "{schema}");
    }

    #[test]
    fn a_secret_in_a_note_is_scrubbed_before_it_is_kept() {
        let mut dana = change();
        noted(&mut dana, json!({ "note": "token admin-secret-value" })).unwrap();
        assert!(!dana.notes[1].text.contains("admin-secret-value"), "{:?}", dana.notes[1]);
    }

    #[test]
    fn a_person_note_that_says_nothing_or_names_no_zone_changes_nothing() {
        let table = [
            (json!({}), Refusal::Nothing),
            (json!({ "note": "   " }), Refusal::Nothing),
            (json!({ "replaces": 1 }), Refusal::Empty),
            (json!({ "time_zone": "Mars/Olympus" }), Refusal::TimeZone("Mars/Olympus".into())),
            (json!({ "note": "x", "replaces": 5 }), Refusal::NoSuchNote { name: "Dana".into(), number: 5, count: 1 }),
        ];
        for (arguments, refusal) in table {
            let mut dana = change();
            let shown = arguments.to_string();
            assert_eq!(noted(&mut dana, arguments), Err(refusal), "{shown}");
            assert_eq!(dana.notes, change().notes, "{shown}");
        }
    }
}
