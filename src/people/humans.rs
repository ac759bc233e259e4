//! Many people set at once, the way the specification's `[[humans]]` reads:
//! `[{"id": "telegram:42", "display_name", "role", "bio", "time_zone",
//! "language"}]` (`PUT /api/people`). Pure: the body checked whole before
//! anything is written, so one bad entry changes nothing.

use serde_json::Value;

use super::rules::{self, Refusal};
use crate::schedules::zone::ZoneRules;

/// People one request sets at most (a 64 KiB body holds this many full bios).
pub const MAX_HUMANS: usize = 100;

/// The fields an entry may have; any other is refused (a typo is an error).
const FIELDS: [&str; 6] = ["id", "display_name", "role", "bio", "time_zone", "language"];

/// One entry, checked. A field left out stays as it is (`None`); an empty
/// one clears it (`Some(None)`); a new person's name is their platform id
/// until one is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Human {
    /// The platform id the record is found (or made) by, within the agent
    /// asked for (`agent:{id}:telegram:42` for a non-default agent).
    pub key: String,
    pub display_name: Option<String>,
    pub role: Option<Option<String>>,
    pub bio: Option<Option<String>>,
    pub time_zone: Option<Option<String>>,
    pub language: Option<Option<String>>,
}

/// The entries of a bulk request for `agent`'s people, each checked, or why
/// not (with the entry's number, counting from 1).
pub fn parse(body: &Value, agent: &str, zones: &(impl ZoneRules + ?Sized)) -> Result<Vec<Human>, String> {
    let items = body.as_array().ok_or("expected a JSON list of people: [{\"id\": \"telegram:42\", …}]")?;
    if items.is_empty() || items.len() > MAX_HUMANS {
        return Err(format!("give 1 to {MAX_HUMANS} people (this has {})", items.len()));
    }
    let mut humans: Vec<Human> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let human = entry(item, agent, zones).map_err(|why| format!("person {}: {why}", index + 1))?;
        if humans.iter().any(|other| other.key == human.key) {
            return Err(format!("person {}: `{}` is given twice", index + 1, human.key));
        }
        humans.push(human);
    }
    Ok(humans)
}

fn entry(item: &Value, agent: &str, zones: &(impl ZoneRules + ?Sized)) -> Result<Human, String> {
    let object = item.as_object().ok_or("expected an object")?;
    if let Some(unknown) = object.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        return Err(format!("unknown field `{unknown}` (known: {})", FIELDS.join(", ")));
    }
    let text = |key: &str| match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("`{key}` must be text")),
    };
    let id = text("id")?.unwrap_or_default();
    if !rules::is_platform_key(id.trim()) {
        return Err("`id` must be a platform id such as telegram:42 or slack:U123".into());
    }
    let refused = |refusal: Refusal| refusal.to_string();
    let display_name = text("display_name")?.map(|name| rules::display_name(&name)).transpose().map_err(refused)?;
    Ok(Human {
        key: crate::agents::within(agent, id.trim()),
        display_name,
        role: text("role")?.map(|role| rules::role(&role)).transpose().map_err(refused)?,
        bio: text("bio")?.map(|bio| rules::bio(&bio)).transpose().map_err(refused)?,
        time_zone: text("time_zone")?.map(|zone| rules::time_zone(zones, &zone)).transpose().map_err(refused)?,
        language: text("language")?.map(|language| rules::language(&language)).transpose().map_err(refused)?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::people::rules::MAX_BIO_CHARS;

    struct Berlin;
    impl ZoneRules for Berlin {
        fn offset_minutes(&self, zone: &str, _utc_ms: i64) -> Option<i32> {
            (zone == "Europe/Berlin").then_some(60)
        }
    }

    #[test]
    fn a_humans_list_is_read_whole_with_left_out_fields_kept_and_empty_ones_cleared() {
        let body = json!([
            { "id": "telegram:42", "display_name": " Dana ", "role": "CTO", "bio": "Runs\nthe platform team" },
            { "id": "slack:U1", "role": "", "time_zone": "Europe/Berlin" },
        ]);
        let humans = parse(&body, "default", &Berlin).unwrap();
        assert_eq!(
            humans[0],
            Human {
                key: "telegram:42".into(),
                display_name: Some("Dana".into()),
                role: Some(Some("CTO".into())),
                bio: Some(Some("Runs the platform team".into())),
                time_zone: None,
                language: None,
            }
        );
        assert_eq!((humans[1].role.clone(), humans[1].bio.clone()), (Some(None), None), "empty clears, absent keeps");
        assert_eq!(humans[1].time_zone, Some(Some("Europe/Berlin".into())));
        let beta = parse(&json!([{ "id": "telegram:42", "role": "guest" }]), "beta", &Berlin).unwrap();
        assert_eq!(beta[0].key, "agent:beta:telegram:42", "another agent's record of the person");
    }

    #[test]
    fn one_bad_entry_refuses_the_whole_list() {
        let long_bio = "b".repeat(MAX_BIO_CHARS + 1);
        let many: Vec<Value> = (0..=MAX_HUMANS).map(|n| json!({ "id": format!("telegram:{n}") })).collect();
        let cases = [
            (json!({ "id": "telegram:42" }), "expected a JSON list"),
            (json!([]), "give 1 to 100 people"),
            (Value::Array(many), "give 1 to 100 people (this has 101)"),
            (json!([{ "id": "telegram:1" }, { "id": "irc:nick" }]), "person 2: `id` must be a platform id"),
            (json!([{ "role": "CTO" }]), "person 1: `id` must be a platform id"),
            (
                json!([{ "id": "telegram:1", "bio": long_bio }]),
                "person 1: a bio is at most 500 characters (this one has 501)",
            ),
            (json!([{ "id": "telegram:1", "role": "r".repeat(81) }]), "person 1: a role is at most 80"),
            (json!([{ "id": "telegram:1", "role": 7 }]), "person 1: `role` must be text"),
            (json!([{ "id": "telegram:1", "notes": [] }]), "person 1: unknown field `notes`"),
            (json!([{ "id": "telegram:1", "time_zone": "Mars/Base" }]), "person 1: unknown time zone"),
            (json!([{ "id": "telegram:1", "display_name": " " }]), "person 1: a display name is 1 to"),
            (json!([{ "id": "telegram:1" }, { "id": "telegram:1" }]), "person 2: `telegram:1` is given twice"),
            (json!(["telegram:1"]), "person 1: expected an object"),
        ];
        for (body, expected) in cases {
            let error = parse(&body, "default", &Berlin).unwrap_err();
            assert!(error.starts_with(expected), "{body}: {error}");
        }
    }
}
