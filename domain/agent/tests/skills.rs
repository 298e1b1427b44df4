//! Skills without I/O: the configuration's sources, the front matter, the checks on a
//! folder's paths and sizes, the bundle (and so the content hash) and how each executor's
//! command line copies the skills to where its CLI reads them.

use gatehouse_agent::{
    Executor, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, Role, SkillConfig, SkillError,
    SkillFiles, SkillSource, Tools, front_matter, invocation, skills_note,
};

const SKILL_MD: &str =
    "---\nname: rust-style\ndescription: How we write Rust here.\n---\n\nUse `cargo fmt`.\n";

fn skill() -> SkillFiles {
    let mut skill = SkillFiles::new("rust-style").expect("a name");
    skill
        .add("SKILL.md", SKILL_MD.as_bytes().to_vec())
        .expect("SKILL.md");
    skill
        .add("scripts/check.sh", b"cargo clippy\n".to_vec())
        .expect("a script");
    skill
}

#[test]
fn a_source_is_a_path_or_a_git_commit_never_both_nor_a_branch() {
    let config = |path: Option<&str>, git: Option<&str>, rev: Option<&str>| SkillConfig {
        path: path.map(str::to_owned),
        git: git.map(str::to_owned),
        rev: rev.map(str::to_owned),
        subdir: None,
    };
    let commit = "0123456789abcdef0123456789abcdef01234567";
    assert_eq!(
        config(Some("/srv/skills/rust-style"), None, None).source("rust-style"),
        Ok(SkillSource::Path {
            path: "/srv/skills/rust-style".into()
        })
    );
    assert_eq!(
        config(None, Some("https://example.com/s.git"), Some(commit)).source("rust-style"),
        Ok(SkillSource::Git {
            url: "https://example.com/s.git".into(),
            rev: commit.into(),
            subdir: None
        })
    );
    let refused = [
        (
            config(Some("/a"), Some("https://x/y"), Some(commit)),
            "not both",
        ),
        (config(None, None, None), "give `path`"),
        (config(None, Some("https://x/y"), None), "needs `rev`"),
        (
            config(None, Some("https://x/y"), Some("main")),
            "is not a commit",
        ),
        (config(None, Some("ssh://x/y"), Some(commit)), "https://"),
        (config(Some("/a"), None, Some(commit)), "belong with `git`"),
    ];
    for (config, says) in refused {
        let err = config
            .source("rust-style")
            .expect_err("refused")
            .to_string();
        assert!(err.contains(says), "{err}");
        assert!(err.starts_with("skill rust-style:"), "{err}");
    }
    let sub = SkillConfig {
        subdir: Some("../x".into()),
        ..config(None, Some("https://x/y"), Some(commit))
    };
    assert!(
        sub.source("s")
            .expect_err("escapes")
            .to_string()
            .contains("`..`")
    );
    for bad in ["", "Rust", "-x", "x-", "a/b", "a b", &"x".repeat(65)] {
        assert!(matches!(
            config(Some("/a"), None, None).source(bad),
            Err(SkillError::BadName { .. })
        ));
    }
}

#[test]
fn front_matter_gives_name_and_description_in_the_forms_yaml_writes_them() {
    let read = |text: &str| front_matter("s", text.as_bytes());
    let plain = read(SKILL_MD).expect("plain");
    assert_eq!(plain.name, "rust-style");
    assert_eq!(plain.description, "How we write Rust here.");
    let quoted = read("---\nname: \"s\"\ndescription: 'it''s: quoted'\nlicense: MIT\nmetadata:\n  name: other\n---\n")
        .expect("quoted");
    assert_eq!(
        (quoted.name.as_str(), quoted.description.as_str()),
        ("s", "it's: quoted")
    );
    let folded = read("---\nname: s\ndescription: >\n  one\n  two\n---\n").expect("folded");
    assert_eq!(folded.description, "one two");
    let literal =
        read("---\r\nname: s\r\ndescription: |\r\n  one\r\n  two\r\n---\r\n").expect("literal");
    assert_eq!(literal.description, "one\ntwo");

    let refused = [
        ("# no front matter\n", "has no front matter"),
        ("---\nname: s\ndescription: d\n", "no closing"),
        ("---\nname: s\n---\n", "both `name:` and `description:`"),
        ("---\nname: s\nname: t\ndescription: d\n---\n", "twice"),
        ("---\nname: s\njust words\n---\n", "not `key: value`"),
        ("---\nname: \"s\ndescription: d\n---\n", "unclosed quote"),
    ];
    for (text, says) in refused {
        let err = read(text).expect_err(text).to_string();
        assert!(err.contains(says), "{text:?}: {err}");
    }
    assert!(front_matter("s", &[0xff, 0xfe]).is_err());
}

#[test]
fn paths_stay_inside_the_folder() {
    let mut skill = SkillFiles::new("s").expect("name");
    for (path, says) in [
        ("../etc/passwd", "`..`"),
        ("a/../../b", "`..`"),
        ("/etc/passwd", "absolute"),
        ("a//b", "empty or `.`"),
        ("./a", "empty or `.`"),
        ("a\\b", "backslash"),
        ("a/b/c/d/e/f/g/h/i/j", "deep"),
    ] {
        let err = skill.add(path, Vec::new()).expect_err(path).to_string();
        assert!(err.contains(says), "{path}: {err}");
        assert!(err.starts_with("skill s: "), "{err}");
    }
}

#[test]
fn sizes_and_counts_are_bounded() {
    let mut skill = SkillFiles::new("s").expect("name");
    let big = usize::try_from(MAX_FILE_BYTES).expect("fits") + 1;
    let err = skill.add("big.bin", vec![0; big]).expect_err("too big");
    assert!(matches!(err, SkillError::FileTooLarge { .. }), "{err}");
    assert!(err.to_string().contains("big.bin"), "{err}");
    let most = usize::try_from(MAX_FILE_BYTES).expect("fits");
    let fit = usize::try_from(MAX_TOTAL_BYTES / MAX_FILE_BYTES).expect("fits");
    for i in 0..fit {
        skill.add(&format!("f{i}"), vec![0; most]).expect("fits");
    }
    let err = skill.add("one-more", vec![0]).expect_err("over the total");
    assert!(matches!(err, SkillError::TooLarge { .. }), "{err}");

    let mut many = SkillFiles::new("s").expect("name");
    for i in 0..MAX_FILES {
        many.add(&format!("f{i}"), Vec::new()).expect("fits");
    }
    let err = many.add("one-more", Vec::new()).expect_err("too many");
    assert!(matches!(err, SkillError::TooManyFiles { .. }), "{err}");
}

#[test]
fn a_skill_needs_its_skill_md_naming_it() {
    let mut none = SkillFiles::new("s").expect("name");
    none.add("README.md", b"hi".to_vec()).expect("a file");
    assert!(matches!(none.check(), Err(SkillError::NoSkillFile { .. })));
    let mut nested = SkillFiles::new("s").expect("name");
    nested
        .add("docs/SKILL.md", SKILL_MD.as_bytes().to_vec())
        .expect("a file");
    assert!(matches!(
        nested.check(),
        Err(SkillError::NoSkillFile { .. })
    ));
    let mut other = SkillFiles::new("other").expect("name");
    other
        .add("SKILL.md", SKILL_MD.as_bytes().to_vec())
        .expect("a file");
    let err = other.check().expect_err("named rust-style").to_string();
    assert!(err.contains("names it \"rust-style\""), "{err}");
    assert_eq!(
        skill().check().expect("fine").description,
        "How we write Rust here."
    );
}

#[test]
fn the_bundle_is_the_sorted_files_and_reads_back_checked() {
    let bundle = skill().encode();
    // Order of adding does not matter: the bundle (and so its hash) is of sorted paths.
    let mut reversed = SkillFiles::new("rust-style").expect("name");
    reversed
        .add("scripts/check.sh", b"cargo clippy\n".to_vec())
        .expect("a");
    reversed
        .add("SKILL.md", SKILL_MD.as_bytes().to_vec())
        .expect("b");
    assert_eq!(reversed.encode(), bundle);
    let back = SkillFiles::decode("rust-style", &bundle).expect("reads back");
    assert_eq!(back, skill());
    // One byte of content changed: a different bundle.
    let mut changed = skill();
    changed
        .add("scripts/check.sh", b"cargo clippy!\n".to_vec())
        .expect("c");
    assert_ne!(changed.encode(), bundle);

    assert!(SkillFiles::decode("rust-style", &bundle[..bundle.len() - 1]).is_err());
    assert!(SkillFiles::decode("rust-style", b"not a bundle").is_err());
    assert!(SkillFiles::decode("other", &bundle).is_err());
    // A hand-made bundle with a path climbing out is refused as a folder would be.
    let mut evil = b"gatehouse-skill-1\n".to_vec();
    for (path, bytes) in [("../x", &b"x"[..]), ("SKILL.md", SKILL_MD.as_bytes())] {
        evil.extend_from_slice(&u32::try_from(path.len()).expect("short").to_be_bytes());
        evil.extend_from_slice(path.as_bytes());
        evil.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        evil.extend_from_slice(bytes);
    }
    let err = SkillFiles::decode("rust-style", &evil)
        .expect_err("escapes")
        .to_string();
    assert!(err.contains("`..`"), "{err}");
}

#[test]
fn the_note_lists_each_skill_where_the_sandbox_has_it() {
    assert_eq!(skills_note("/in/.agent/skills", &[]), None);
    let note = skills_note(
        "/in/.agent/skills",
        &[("rust-style".into(), "How we write\nRust.".into())],
    )
    .expect("a note");
    assert!(
        note.ends_with("\n- /in/.agent/skills/rust-style/SKILL.md — How we write Rust."),
        "{note}"
    );
}

#[test]
fn without_skills_a_command_line_is_as_before_and_with_them_copies_first() {
    let role = Role::new(Executor::ClaudeCode);
    let tools = Tools {
        skills_dir: Some("/in/.agent/skills".into()),
        ..Tools::none()
    };
    let plain = invocation(&role, None, &Tools::none(), "/in/p.md", None);
    assert!(!plain.contains("skills"), "{plain}");
    let with = invocation(&role, None, &tools, "/in/p.md", None);
    assert_eq!(
        with,
        format!(
            "mkdir -p \"${{CLAUDE_CONFIG_DIR:-$HOME/.claude}}/skills\" && cp -R /in/.agent/skills/. \"${{CLAUDE_CONFIG_DIR:-$HOME/.claude}}/skills\"/ && {plain}"
        )
    );
    for executor in [Executor::Aider, Executor::Command] {
        let mut role = Role::new(executor);
        if executor == Executor::Command {
            role.command = vec!["my-agent".into(), "{prompt_file}".into()];
        }
        assert_eq!(
            invocation(&role, None, &tools, "/in/p.md", None),
            invocation(&role, None, &Tools::none(), "/in/p.md", None)
        );
        assert!(!executor.reads_skills());
    }
}

/// Each executor's real command line, run by `sh` with a stand-in for its program: the
/// skills land in every folder the CLI reads them from, before the CLI starts, and a second
/// call (a conversation's next turn, same home) copies over the first.
#[test]
fn each_cli_finds_the_skills_where_it_reads_them() {
    let scratch = tempfile::tempdir().expect("scratch");
    let skills = scratch.path().join("skills");
    std::fs::create_dir_all(skills.join("rust-style/scripts")).expect("dirs");
    std::fs::write(skills.join("rust-style/SKILL.md"), SKILL_MD).expect("SKILL.md");
    std::fs::write(skills.join("rust-style/scripts/check.sh"), "x").expect("script");
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::fs::write(scratch.path().join("prompt.md"), "hi").expect("prompt");
    let tools = Tools {
        skills_dir: Some(skills.to_string_lossy().into_owned()),
        ..Tools::none()
    };
    for executor in [
        Executor::ClaudeCode,
        Executor::Codex,
        Executor::Gemini,
        Executor::Copilot,
        Executor::Opencode,
        Executor::Kilo,
        Executor::Pi,
        Executor::Acp,
    ] {
        let home = tempfile::tempdir().expect("home");
        let mut role = Role::new(executor);
        let program = match executor.program() {
            Some(program) => program.to_owned(),
            None => {
                role.command = vec!["an-agent".into()];
                "an-agent".to_owned()
            }
        };
        // The stand-in proves the copy happened before it ran.
        let stand_in = bin.join(&program);
        std::fs::write(&stand_in, "#!/bin/sh\necho ran >> \"$HOME/ran\"\n").expect("stand-in");
        make_executable(&stand_in);
        let line = invocation(
            &role,
            None,
            &tools,
            &scratch.path().join("prompt.md").to_string_lossy(),
            None,
        );
        for _ in 0..2 {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(line.replace(
                    "\"${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}\"",
                    "true",
                ))
                .env("HOME", home.path())
                .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
                .env_remove("CLAUDE_CONFIG_DIR")
                .env_remove("GEMINI_CLI_HOME")
                .env_remove("COPILOT_HOME")
                .output()
                .expect("sh");
            assert!(
                out.status.success(),
                "{executor}: {line}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for folder in executor.skills_homes() {
            let at = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {folder}"))
                .env("HOME", home.path())
                .output()
                .expect("sh");
            let at = std::path::PathBuf::from(String::from_utf8_lossy(&at.stdout).into_owned());
            assert!(at.starts_with(home.path()), "{executor}: {}", at.display());
            let read = std::fs::read_to_string(at.join("rust-style/SKILL.md"))
                .unwrap_or_else(|e| panic!("{executor}: {}: {e}", at.display()));
            assert_eq!(read, SKILL_MD);
            assert!(
                at.join("rust-style/scripts/check.sh").is_file(),
                "{executor}"
            );
        }
        assert!(!executor.skills_homes().is_empty(), "{executor}");
    }
}

#[cfg(unix)]
fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}
