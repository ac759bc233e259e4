use std::io::Write;

use super::*;

const GOOD: &str = "---\nname: weekly-report\ndescription: Writes the weekly report from a CSV.\nlicense: MIT\n---\n\n# Steps\n\n1. Run report.js.\n";

fn files(entries: &[(&str, &str)]) -> Files {
    entries.iter().map(|(path, text)| (path.to_string(), text.to_string())).collect()
}

fn no_secrets(_: &str) -> Vec<&'static str> {
    Vec::new()
}

/// A stand-in for the redactor: "sk-" then 20 letters is a key shape.
fn key_shapes(text: &str) -> Vec<&'static str> {
    match text.contains("sk-aaaaaaaaaaaaaaaaaaaa") {
        true => vec!["a key shape"],
        false => Vec::new(),
    }
}

#[test]
fn names_and_agents_are_checked() {
    for good in ["a", "weekly-report", "x9", &"a".repeat(64)] {
        assert_eq!(check_name(good), Ok(good));
    }
    for bad in ["", "Weekly", "a_b", "a b", "../x", "ä", &"a".repeat(65)] {
        assert!(matches!(check_name(bad), Err(SkillError::BadName(_))), "{bad:?}");
    }
    for good in ["default", "ops-2", &format!("a{}", "b".repeat(31))] {
        assert_eq!(check_agent(good), Ok(good));
    }
    for bad in ["", "2ops", "Ops", "a_b", &format!("a{}", "b".repeat(32))] {
        assert!(check_agent(bad).is_err(), "{bad:?}");
    }
    assert_eq!(parse_version("3"), Ok(3));
    assert!(parse_version("0").is_err() && parse_version("-1").is_err() && parse_version("x").is_err());
}

#[test]
fn paths_are_relative_plain_and_never_hidden() {
    for good in ["SKILL.md", "scripts/report.js", "data/a_b-c.v2.csv"] {
        assert_eq!(check_path(good), Ok(good));
    }
    let long = "a".repeat(MAX_PATH_CHARS + 1);
    for bad in [
        "",
        "/etc/passwd",
        "../up",
        "a/../b",
        "a/./b",
        "a//b",
        ".env",
        "scripts/.hidden",
        "a\\b",
        "a b",
        "C:x",
        "a/",
        &long,
    ] {
        assert!(matches!(check_path(bad), Err(SkillError::BadPath(_))), "{bad:?}");
    }
}

#[test]
fn skill_md_front_matter_is_read() {
    let skill = parse_skill_file(GOOD).unwrap();
    assert_eq!(skill.name, "weekly-report");
    assert_eq!(skill.description, "Writes the weekly report from a CSV.");
    assert_eq!(skill.instructions, "# Steps\n\n1. Run report.js.");
    let quoted = parse_skill_file("---\r\nname: 'x'\r\ndescription: \"Says: hi\"\r\n---\r\nDo it.").unwrap();
    assert_eq!(
        (quoted.name.as_str(), quoted.description.as_str(), quoted.instructions.as_str()),
        ("x", "Says: hi", "Do it.")
    );
}

#[test]
fn bad_front_matter_says_what_is_wrong() {
    assert_eq!(parse_skill_file("# no front matter"), Err(SkillError::NoFrontMatter));
    assert_eq!(parse_skill_file("---\nname: a\ndescription: b\n"), Err(SkillError::NoFrontMatter));
    assert_eq!(parse_skill_file("---\ndescription: b\n---\n"), Err(SkillError::MissingField("name")));
    assert_eq!(parse_skill_file("---\nname: a\n---\n"), Err(SkillError::MissingField("description")));
    assert_eq!(parse_skill_file("---\nname: A B\ndescription: b\n---\n"), Err(SkillError::BadName("A B".into())));
    assert_eq!(parse_skill_file("---\nname: a\ndescription: >\n  folded\n---\n"), Err(SkillError::BadDescription));
    let long = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(MAX_DESCRIPTION_CHARS + 1));
    assert_eq!(parse_skill_file(&long), Err(SkillError::BadDescription));
    // An indented `name:` belongs to another key's block (metadata), not the skill's name.
    let nested = parse_skill_file("---\nname: a\nmetadata:\n  name: other\ndescription: b\n---\n").unwrap();
    assert_eq!(nested.name, "a");
}

#[test]
fn a_bundle_is_held_to_its_caps_and_names() {
    let bundle =
        check_bundle(files(&[("SKILL.md", GOOD), ("report.js", "export default 1")]), None, no_secrets).unwrap();
    assert_eq!(bundle.skill.name, "weekly-report");
    assert_eq!(bundle.bytes, GOOD.len() + "export default 1".len());
    assert_eq!(check_bundle(files(&[("README.md", "x")]), None, no_secrets), Err(SkillError::NoSkillFile));
    let mismatch = check_bundle(files(&[("SKILL.md", GOOD)]), Some("other"), no_secrets).unwrap_err();
    assert_eq!(mismatch, SkillError::NameMismatch { expected: "other".into(), found: "weekly-report".into() });
    let big = "x".repeat(MAX_FILE_BYTES + 1);
    let refused = check_bundle(files(&[("SKILL.md", GOOD), ("big.txt", &big)]), None, no_secrets).unwrap_err();
    assert!(refused.is_too_large() && refused.to_string().contains("big.txt"), "{refused}");
    let many: Files = (0..=MAX_FILES).map(|index| (format!("f{index}.txt"), String::new())).collect();
    assert_eq!(check_bundle(many, None, no_secrets), Err(SkillError::TooManyFiles(MAX_FILES + 1)));
    let part = "x".repeat(MAX_FILE_BYTES);
    let total: Files = (0..5).map(|index| (format!("f{index}.txt"), part.clone())).collect();
    assert_eq!(check_bundle(total, None, no_secrets), Err(SkillError::TotalTooLarge(5 * MAX_FILE_BYTES)));
    let hidden = check_bundle(files(&[("SKILL.md", GOOD), (".env", "x")]), None, no_secrets).unwrap_err();
    assert_eq!(hidden, SkillError::BadPath(".env".into()));
}

#[test]
fn a_secret_in_any_file_refuses_the_skill_naming_the_file_not_the_secret() {
    let key = "const KEY = 'sk-aaaaaaaaaaaaaaaaaaaa';";
    let refused = check_bundle(files(&[("SKILL.md", GOOD), ("scripts/call.js", key)]), None, key_shapes).unwrap_err();
    assert_eq!(refused, SkillError::Secret { path: "scripts/call.js".into(), found: "a key shape".into() });
    assert!(!refused.to_string().contains("sk-a") && !refused.is_too_large());
    assert!(check_bundle(files(&[("SKILL.md", GOOD), ("call.js", "const KEY = env.KEY;")]), None, key_shapes).is_ok());
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (path, bytes) in entries {
        match path.ends_with('/') {
            true => writer.add_directory(*path, options).unwrap(),
            false => {
                writer.start_file(*path, options).unwrap();
                writer.write_all(bytes).unwrap();
            }
        }
    }
    writer.finish().unwrap().into_inner()
}

#[test]
fn a_zip_is_read_with_its_folder_taken_off_and_held_to_the_caps() {
    let zip =
        zip_of(&[("weekly-report/", b""), ("weekly-report/SKILL.md", GOOD.as_bytes()), ("weekly-report/run.js", b"1")]);
    let entries = read_zip(&zip).unwrap();
    assert_eq!(
        entries,
        vec![("SKILL.md".to_string(), GOOD.as_bytes().to_vec()), ("run.js".to_string(), b"1".to_vec())]
    );
    let flat = read_zip(&zip_of(&[("SKILL.md", GOOD.as_bytes()), ("lib/run.js", b"1")])).unwrap();
    assert_eq!(flat[1].0, "lib/run.js", "no common folder: paths as they are");
    // Zeros compress to almost nothing: the cap holds while inflating.
    let bomb = zip_of(&[("SKILL.md", GOOD.as_bytes()), ("zeros.bin", &vec![0u8; MAX_FILE_BYTES * 8])]);
    assert!(bomb.len() < MAX_FILE_BYTES);
    assert!(matches!(read_zip(&bomb), Err(SkillError::FileTooLarge { path, .. }) if path == "zeros.bin"));
    assert!(matches!(read_zip(b"not a zip"), Err(SkillError::BadZip(_))));
    // A zip made by macOS: its litter is left out, so the common folder is taken off too.
    let mac =
        zip_of(&[("haiku/SKILL.md", GOOD.as_bytes()), ("__MACOSX/haiku/._SKILL.md", b"x"), ("haiku/.DS_Store", b"x")]);
    assert_eq!(read_zip(&mac).unwrap(), vec![("SKILL.md".to_string(), GOOD.as_bytes().to_vec())]);
    let hidden = read_zip(&zip_of(&[("SKILL.md", GOOD.as_bytes()), (".env", b"A=1")])).unwrap();
    assert_eq!(check_bundle(text_files(hidden).unwrap(), None, no_secrets), Err(SkillError::BadPath(".env".into())));
    let binary = text_files(vec![("img.png".into(), vec![0xff, 0xfe, 0x00])]).unwrap_err();
    assert_eq!(binary, SkillError::NotText { path: "img.png".into() });
}

#[test]
fn opening_a_skill_gives_its_instructions_and_where_its_files_are() {
    let text = opened("weekly-report", &files(&[("SKILL.md", GOOD), ("scripts/report.js", "12345")])).unwrap();
    assert!(text.starts_with("# Skill: weekly-report\n\n# Steps\n\n1. Run report.js."), "{text}");
    assert!(text.contains("`skills/weekly-report/<path>`") && text.contains("- scripts/report.js (5 bytes)"));
    assert!(!text.contains("license"), "the front matter is not repeated");
    let alone = opened("weekly-report", &files(&[("SKILL.md", GOOD)])).unwrap();
    assert!(!alone.contains("## Files"));
    assert_eq!(mount_path("a", "b/c.js"), "skills/a/b/c.js");
    assert!(
        is_mounted("skills/a/x") && !is_mounted("skills") && !is_mounted("skillsx/a") && !is_mounted("out/skills/a")
    );
}
