//! The documentation, checked against the code it describes. README.md, `docs/*.md` and
//! `deploy/README.md` are read as a user reads them:
//!
//! - every link to a file of the repository resolves, and so does its `#anchor`;
//! - every `gatehouse ...` command line in a shell block (```sh, ```console) parses with the
//!   real binary: it is run in an empty directory against a server that is not there, so
//!   nothing happens, and must not end in a usage error (clap's exit code 2). `up`, `serve`
//!   and `migrate` would do something, so they get `--help` appended instead, which still
//!   checks their subcommand, flags and values. The notation of the docs is understood:
//!   `a|b` is one command per alternative, `[--flag V]` is included, `...` dropped;
//! - every `gatehouse ...` in inline code is checked the same way with `--help` (its
//!   placeholders, `<service>`, cut off);
//! - `cargo test|bench -p P --test|--bench T` names a package and target that exist, `bash
//!   FILE` a script that exists, and an inline path (`domain/sop/`, `tests/src/fake_*.rs`)
//!   something in the repository;
//! - every SOP example (a ```yaml block that starts with `name:`) passes `gatehouse sop
//!   validate`, and every ```toml block passes `gatehouse config check`;
//! - a page with `$ ` lines is a session, run as written in one bash session as
//!   `walkthrough.rs` runs README's first run: `$ gatehouse up` starts a fresh server in the
//!   session's directory, a block after "save it as `PATH`:" is written to PATH, and each
//!   output line the page shows must appear in what its command printed (`...` skips lines;
//!   ids, times, sizes, durations and digests may differ; an `error:` line means the
//!   command must fail).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The pages: README.md, docs/*.md and deploy/README.md, as paths relative to the root.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages = vec![
        PathBuf::from("README.md"),
        PathBuf::from("deploy/README.md"),
    ];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(&root).unwrap().to_owned())
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

// ---------------------------------------------------------------------------------------
// Reading Markdown
// ---------------------------------------------------------------------------------------

/// A fenced block.
#[derive(Debug)]
struct Block {
    /// The info string: `sh`, `yaml`, ...
    lang: String,
    /// Its lines, without the fences.
    lines: Vec<String>,
    /// The 1-based line of its opening fence.
    line: usize,
    /// The last non-empty line of text before it.
    intro: String,
}

/// A page split into its fenced blocks and its text outside them (with line numbers).
struct Page {
    blocks: Vec<Block>,
    text: Vec<(usize, String)>,
}

fn read_page(path: &Path) -> Page {
    let source = std::fs::read_to_string(root().join(path)).unwrap();
    let mut blocks = Vec::new();
    let mut text = Vec::new();
    let mut open: Option<Block> = None;
    let mut intro = String::new();
    for (i, line) in source.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_owned(),
                    lines: Vec::new(),
                    line: i + 1,
                    intro: intro.clone(),
                })
            }
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some(block), None) => block.lines.push(line.to_owned()),
            (None, None) => {
                if !line.trim().is_empty() {
                    intro = line.trim().to_owned();
                }
                text.push((i + 1, line.to_owned()));
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a code block is not closed",
        path.display()
    );
    Page { blocks, text }
}

fn is_shell(lang: &str) -> bool {
    matches!(lang, "sh" | "console" | "bash" | "shell")
}

/// The inline code spans of a line of text.
fn code_spans(line: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let fence = "`".repeat(ticks);
        match after.find(&fence) {
            Some(end) => {
                spans.push(after[..end].trim().to_owned());
                rest = &after[end + ticks..];
            }
            None => break,
        }
    }
    spans
}

/// A line with its inline code spans removed (links inside code are not links).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The `[text](target)` links of a line.
fn links(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut found = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                found.push(after[..end].trim().to_owned());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    found
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, numbered as GitHub numbers repeated ones.
fn anchors(page: &Page) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in &page.text {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_default();
        anchors.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    anchors
}

/// `a/b/../c` → `a/c`, without touching the file system; `None` when it leaves `base`'s
/// root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

#[test]
fn every_link_between_the_pages_resolves() {
    let root = root();
    let (mut checked, mut outside, mut web) = (0, 0, 0);
    let mut broken = Vec::new();
    for path in pages() {
        let page = read_page(&path);
        for (n, line) in &page.text {
            for target in links(line) {
                if target.starts_with("http://")
                    || target.starts_with("https://")
                    || target.starts_with("mailto:")
                {
                    web += 1;
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let resolved = if file.is_empty() {
                    Some(path.clone())
                } else {
                    normalize(&path.parent().unwrap().join(file))
                };
                // Links out of the repository (the design, beside it) are not checked here.
                let Some(resolved) = resolved else {
                    outside += 1;
                    continue;
                };
                checked += 1;
                let where_ = format!("{}:{n}: `{target}`", path.display());
                if !root.join(&resolved).exists() {
                    broken.push(format!("{where_}: no such file"));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let is_page = resolved.extension().is_some_and(|e| e == "md");
                    if !is_page || !anchors(&read_page(&resolved)).contains(anchor) {
                        broken.push(format!("{where_}: no heading #{anchor} there"));
                    }
                }
            }
        }
    }
    println!("links: {checked} checked, {outside} out of the repository, {web} to the web");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 50,
        "the pages link to each other ({checked} links)"
    );
}

// ---------------------------------------------------------------------------------------
// Shell command lines
// ---------------------------------------------------------------------------------------

/// A word of a command line, quotes removed.
#[derive(Debug, Clone)]
struct Word {
    text: String,
    quoted: bool,
}

/// The simple commands of a shell line: split at `;`, `&&`, `||`, ` | ` and `&`, with
/// each `$(...)` a command of its own (and the word `$SUBST` where it stood). An `a|b`
/// inside a word is the docs' notation for alternatives, not a pipe.
fn simple_commands(line: &str) -> Vec<Vec<Word>> {
    let mut commands: Vec<Vec<Word>> = Vec::new();
    let mut current: Vec<Word> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let end_word =
        |current: &mut Vec<Word>, word: &mut String, in_word: &mut bool, quoted: &mut bool| {
            if *in_word {
                current.push(Word {
                    text: std::mem::take(word),
                    quoted: *quoted,
                });
            }
            *in_word = false;
            *quoted = false;
        };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                in_word = true;
                quoted = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' if i + 1 < chars.len() => {
                in_word = true;
                word.push(chars[i + 1]);
                i += 1;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                let mut depth = 0;
                let start = i + 2;
                let mut j = i + 1;
                while j < chars.len() {
                    match chars[j] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let inner: String = chars[start..j.min(chars.len())].iter().collect();
                commands.extend(simple_commands(&inner));
                in_word = true;
                word.push_str("$SUBST");
                i = j;
            }
            '#' if !in_word => break,
            ' ' | '\t' => end_word(&mut current, &mut word, &mut in_word, &mut quoted),
            ';' => {
                end_word(&mut current, &mut word, &mut in_word, &mut quoted);
                commands.push(std::mem::take(&mut current));
            }
            '|' | '&' if !in_word => {
                if chars.get(i + 1) == Some(&c) {
                    i += 1;
                }
                commands.push(std::mem::take(&mut current));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    end_word(&mut current, &mut word, &mut in_word, &mut quoted);
    commands.push(current);
    commands.retain(|c| !c.is_empty());
    commands
}

/// The arguments a simple command gives `gatehouse`, if it runs it: directly, as
/// `cargo run ... -- ARGS`, in a container (`... exec SERVICE gatehouse ARGS`, `... --
/// gatehouse ARGS`) or as the image's entry point (`docker run ... gatehouse:TAG ARGS`).
fn gatehouse_args(command: &[Word]) -> Option<Vec<Word>> {
    let words: Vec<&str> = command.iter().map(|w| w.text.as_str()).collect();
    // Leading VAR=value assignments.
    let start = words
        .iter()
        .position(|w| {
            !w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
        .unwrap_or(words.len());
    let words = &words[start..];
    let command = &command[start..];
    let at = match words.first() {
        None => return None,
        Some(&"gatehouse") => 0,
        Some(&"cargo") if words.get(1) == Some(&"run") => {
            return words
                .iter()
                .position(|w| *w == "--")
                .map(|dash| command[dash + 1..].to_vec());
        }
        Some(_) => (1..words.len()).find(|&i| {
            let prev = words[i - 1];
            // Options of `docker run` that take a value, which could be `gatehouse:TAG`.
            let valued = [
                "-t", "--tag", "--name", "-v", "--volume", "-p", "-e", "--env",
            ];
            (words[i] == "gatehouse" && (prev == "--" || (i >= 2 && words[i - 2] == "exec")))
                || (words[i].starts_with("gatehouse:")
                    && !valued.contains(&prev)
                    && words[0] == "docker"
                    && words[1] == "run")
        })?,
    };
    let args = command[at + 1..].to_vec();
    (!args.is_empty() || words[at] == "gatehouse").then_some(args)
}

/// The docs' notation read: `[` `]` around optional parts dropped, `...` dropped, and one
/// argument list per combination of `a|b` alternatives.
fn expand(args: &[Word]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for word in args {
        let text = if word.quoted {
            word.text.clone()
        } else {
            word.text
                .trim_start_matches('[')
                .trim_end_matches("...")
                .trim_end_matches(']')
                .to_owned()
        };
        if text.is_empty() || text == "..." {
            continue;
        }
        let choices: Vec<String> = if !word.quoted && text.contains('|') {
            text.split('|').map(str::to_owned).collect()
        } else {
            vec![text]
        };
        out = out
            .into_iter()
            .flat_map(|prefix| {
                choices.iter().map(move |c| {
                    let mut next = prefix.clone();
                    next.push(c.clone());
                    next
                })
            })
            .collect();
    }
    out
}

/// The shell lines of a block: `$ ` lines when it has them (the rest is output), else
/// every line; `\` continuations joined.
fn shell_lines(block: &Block) -> Vec<String> {
    let prompted = block.lines.iter().any(|l| l.starts_with("$ "));
    let mut lines: Vec<String> = Vec::new();
    let mut continued = false;
    for line in &block.lines {
        let line = if prompted && !continued {
            match line.strip_prefix("$ ") {
                Some(l) => l,
                None => continue,
            }
        } else {
            line.as_str()
        };
        let (body, more) = match line.trim_end().strip_suffix('\\') {
            Some(body) => (body, true),
            None => (line, false),
        };
        if continued {
            lines.last_mut().unwrap().push_str(body);
        } else {
            lines.push(body.to_owned());
        }
        continued = more;
    }
    lines
}

/// Where a command was seen, and how to check it.
#[derive(Debug)]
struct Shown {
    at: String,
    args: Vec<String>,
    /// Inline code: placeholders are likely, so only `--help` is asked.
    inline: bool,
}

/// Every `gatehouse` command the pages show, and every other command line (for the cargo
/// and script checks).
fn shown_commands() -> (Vec<Shown>, Vec<(String, Vec<String>)>) {
    let mut gatehouse = Vec::new();
    let mut others = Vec::new();
    for path in pages() {
        let page = read_page(&path);
        let mut take = |at: String, line: &str, inline: bool| {
            for command in simple_commands(line) {
                match gatehouse_args(&command) {
                    Some(args) => {
                        let mut args = args;
                        if inline
                            && let Some(cut) = args.iter().position(|w| {
                                !w.quoted && (w.text.contains('<') || w.text.contains('…'))
                            })
                        {
                            args.truncate(cut);
                        }
                        for args in expand(&args) {
                            gatehouse.push(Shown {
                                at: at.clone(),
                                args,
                                inline,
                            });
                        }
                    }
                    None => {
                        others.push((at.clone(), command.iter().map(|w| w.text.clone()).collect()))
                    }
                }
            }
        };
        for block in page.blocks.iter().filter(|b| is_shell(&b.lang)) {
            for line in shell_lines(block) {
                take(format!("{}:{}", path.display(), block.line), &line, false);
            }
        }
        for (n, line) in &page.text {
            for span in code_spans(line) {
                if span.starts_with("gatehouse ")
                    || span.starts_with("cargo ")
                    || span.starts_with("bash ")
                {
                    take(format!("{}:{n}", path.display()), &span, true);
                }
            }
        }
    }
    (gatehouse, others)
}

/// The subcommand of an argument list, past the global options.
fn subcommand(args: &[String]) -> Option<&str> {
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--config" | "--log-format" => i += 2,
            a if a.starts_with('-') => i += 1,
            a => return Some(a),
        }
    }
    None
}

/// Runs the binary with `args` in `dir` with no configuration, no token and a server
/// that is not there; returns the exit code and what it printed.
fn run_isolated(args: &[String], dir: &Path, dead_server: &str) -> (Option<i32>, String) {
    let mut command = Command::new(BIN);
    command.args(args).current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("GATEHOUSE_") || key.starts_with("OTEL_") {
            command.env_remove(key);
        }
    }
    let mut child = command
        .env("GATEHOUSE_SERVER", dead_server)
        .env("GATEHOUSE_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return (out.status.code(), printed);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_gatehouse_command_the_pages_show_parses() {
    let (shown, _) = shown_commands();
    let dir = tempfile::tempdir().unwrap();
    let dead = format!(
        "http://127.0.0.1:{}",
        gatehouse_tests::private_nats::free_port()
    );
    let mut failures = Vec::new();
    let (mut run, mut helped) = (0, 0);
    for s in &shown {
        let acts = matches!(subcommand(&s.args), Some("up" | "serve" | "migrate"));
        let mut args = s.args.clone();
        if s.inline || acts {
            args.push("--help".to_owned());
            helped += 1;
        } else {
            run += 1;
        }
        let (code, printed) = run_isolated(&args, dir.path(), &dead);
        // 2 is clap's usage error; a command that ran and failed (no server) exits 1.
        if code == Some(2) || code.is_none() || (s.inline || acts) && code != Some(0) {
            failures.push(format!(
                "{}: `gatehouse {}` (exit {code:?}):\n{printed}",
                s.at,
                args.join(" ")
            ));
        }
    }
    // `DOCS_COMMANDS_LIST=1` (with `--nocapture`) lists what was checked.
    if std::env::var_os("DOCS_COMMANDS_LIST").is_some() {
        for s in &shown {
            println!(
                "{} {}: gatehouse {}",
                if s.inline { "inline" } else { "block " },
                s.at,
                s.args.join(" ")
            );
        }
    }
    let blocks = shown.iter().filter(|s| !s.inline).count();
    println!(
        "gatehouse commands: {} ({blocks} from shell blocks, {} inline); {run} run against no server, {helped} with --help",
        shown.len(),
        shown.len() - blocks
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        blocks > 40,
        "the shell blocks were read ({blocks} commands)"
    );
}

/// The workspace's packages: name → (directory, test targets, bench targets).
fn packages() -> BTreeMap<String, (PathBuf, BTreeSet<String>, BTreeSet<String>)> {
    let root = root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|m| m.split(']').next())
        .expect("the workspace lists its members");
    let mut packages = BTreeMap::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        let dir = root.join(member);
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name_of = |section: &str| -> Vec<String> {
            manifest
                .split(section)
                .skip(1)
                .filter_map(|s| {
                    s.lines()
                        .find_map(|l| l.trim().strip_prefix("name = "))
                        .map(|n| n.trim_matches('"').to_owned())
                })
                .collect()
        };
        let files = |sub: &str| -> BTreeSet<String> {
            std::fs::read_dir(dir.join(sub))
                .map(|entries| {
                    entries
                        .filter_map(|e| {
                            let p = e.ok()?.path();
                            (p.extension()? == "rs")
                                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut tests = files("tests");
        tests.extend(name_of("[[test]]"));
        let mut benches = files("benches");
        benches.extend(name_of("[[bench]]"));
        let name = name_of("[package]").into_iter().next().unwrap();
        packages.insert(name, (dir, tests, benches));
    }
    packages
}

/// Whether `pattern` (with `*` in its last component) names something under the root.
fn exists(pattern: &str) -> bool {
    let root = root();
    let pattern = pattern.trim_end_matches('/');
    let Some((dir, last)) = pattern.rsplit_once('/') else {
        return root.join(pattern).exists();
    };
    if !last.contains('*') {
        return root.join(pattern).exists();
    }
    let (before, after) = last.split_once('*').unwrap();
    std::fs::read_dir(root.join(dir)).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(before) && name.ends_with(after)
        })
    })
}

#[test]
fn the_cargo_targets_scripts_and_paths_the_pages_name_exist() {
    let (_, others) = shown_commands();
    let packages = packages();
    // What the pages tell the reader to make (`cp deploy/.env.example deploy/.env`).
    let made: BTreeSet<&str> = others
        .iter()
        .filter(|(_, words)| words.first().is_some_and(|w| w == "cp"))
        .filter_map(|(_, words)| words.last().map(String::as_str))
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (at, words) in &others {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["cargo", sub, rest @ ..] if matches!(*sub, "test" | "bench" | "build" | "run") => {
                let flag = |name: &str| {
                    rest.iter()
                        .position(|w| *w == name)
                        .and_then(|i| rest.get(i + 1).copied())
                };
                let package = flag("-p").or(flag("--package")).unwrap_or("gatehouse");
                checked += 1;
                let Some((_, tests, benches)) = packages.get(package) else {
                    failures.push(format!("{at}: `{}`: no package {package}", words.join(" ")));
                    continue;
                };
                if let Some(test) = flag("--test")
                    && !tests.contains(test)
                {
                    failures.push(format!("{at}: {package} has no test target {test}"));
                }
                if let Some(bench) = flag("--bench")
                    && !benches.contains(bench)
                {
                    failures.push(format!("{at}: {package} has no bench target {bench}"));
                }
            }
            ["bash", script, ..] if !script.starts_with('-') => {
                checked += 1;
                if !exists(script) {
                    failures.push(format!("{at}: no script {script}"));
                }
            }
            _ => {}
        }
    }
    // Paths in inline code that start at a top-level directory of the repository.
    let tops = [
        "events/",
        "domain/",
        "adapters/",
        "services/",
        "tests/",
        "deploy/",
        "migrations/",
        "docs/",
        ".ci/",
    ];
    for path in pages() {
        let page = read_page(&path);
        for (n, line) in &page.text {
            for span in code_spans(line) {
                if span.contains(' ')
                    || !tops.iter().any(|t| span.starts_with(t))
                    || made.contains(span.as_str())
                {
                    continue;
                }
                checked += 1;
                if !exists(&span) {
                    failures.push(format!(
                        "{}:{n}: no `{span}` in the repository",
                        path.display()
                    ));
                }
            }
        }
    }
    println!("cargo targets, scripts and paths: {checked} checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Examples: SOP files and configuration files
// ---------------------------------------------------------------------------------------

#[test]
fn every_sop_and_configuration_example_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let dead = format!(
        "http://127.0.0.1:{}",
        gatehouse_tests::private_nats::free_port()
    );
    let mut failures = Vec::new();
    let (mut sops, mut configs) = (0, 0);
    for path in pages() {
        let page = read_page(&path);
        for block in &page.blocks {
            let at = format!("{}:{}", path.display(), block.line);
            let text = block.lines.join("\n") + "\n";
            let args: Vec<String> = match block.lang.as_str() {
                "yaml" if text.starts_with("name:") => {
                    sops += 1;
                    let file = dir.path().join(format!("sop-{sops}.yaml"));
                    std::fs::write(&file, &text).unwrap();
                    vec!["sop".into(), "validate".into(), file.display().to_string()]
                }
                "toml" => {
                    configs += 1;
                    let file = dir.path().join(format!("config-{configs}.toml"));
                    std::fs::write(&file, &text).unwrap();
                    vec![
                        "--config".into(),
                        file.display().to_string(),
                        "config".into(),
                        "check".into(),
                    ]
                }
                _ => continue,
            };
            // The secrets it names from the environment are set, as a deployment sets them.
            let names: Vec<String> = text
                .split("env = \"")
                .skip(1)
                .filter_map(|s| s.split('"').next().map(str::to_owned))
                .collect();
            let mut command = Command::new(BIN);
            command.args(&args).current_dir(dir.path());
            for (key, _) in std::env::vars() {
                if key.starts_with("GATEHOUSE_") {
                    command.env_remove(key);
                }
            }
            for name in &names {
                command.env(name, "a-secret-for-the-docs-test");
            }
            let out = command.env("GATEHOUSE_SERVER", &dead).output().unwrap();
            if !out.status.success() {
                failures.push(format!(
                    "{at}: `gatehouse {}` failed:\n{}{}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    println!("examples: {sops} SOP files validated, {configs} configuration files checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(sops >= 2, "the SOP examples were found");
}

// ---------------------------------------------------------------------------------------
// Sessions: pages whose `$ ` lines run as written
// ---------------------------------------------------------------------------------------

/// One step of a session.
#[derive(Debug)]
enum Step {
    /// Save a block as a file.
    Write { path: String, text: String },
    /// A `$ ` command and the output lines shown after it.
    Run {
        command: String,
        expected: Vec<String>,
        line: usize,
    },
}

/// The steps of a page, in order; empty when it has no `$ ` lines.
fn session(page: &Page) -> Vec<Step> {
    let mut steps = Vec::new();
    for block in &page.blocks {
        if is_shell(&block.lang) {
            for (i, line) in block.lines.iter().enumerate() {
                match line.strip_prefix("$ ") {
                    Some(command) => steps.push(Step::Run {
                        command: command.to_owned(),
                        expected: Vec::new(),
                        line: block.line + 1 + i,
                    }),
                    None => match steps.last_mut() {
                        Some(Step::Run { expected, .. })
                            if block.lines.iter().any(|l| l.starts_with("$ ")) =>
                        {
                            expected.push(line.clone())
                        }
                        _ => {}
                    },
                }
            }
        } else if let Some(path) = block
            .intro
            .strip_suffix("`:")
            .and_then(|s| s.rsplit_once(" as `"))
            .map(|(_, path)| path.to_owned())
        {
            steps.push(Step::Write {
                path,
                text: block.lines.join("\n") + "\n",
            });
        }
    }
    if !steps.iter().any(|s| matches!(s, Step::Run { .. })) {
        steps.clear();
    }
    steps
}

/// What a word shown in the docs stands for when it differs from run to run: a number, a
/// duration, a digest or version, a time; `None` for a word that must be as shown.
fn varies(word: &str) -> Option<&'static str> {
    let bare = word.trim_end_matches([')', ',', ';', ':']);
    let number = |s: &str| s.parse::<f64>().is_ok();
    if bare == "…" {
        Some("anything")
    } else if bare.parse::<u64>().is_ok() {
        Some("number")
    } else if ["ms", "s"]
        .iter()
        .any(|unit| bare.strip_suffix(unit).is_some_and(number))
    {
        Some("duration")
    } else if bare.starts_with("sha256:")
        || bare.len() >= 12 && bare.chars().all(|c| c.is_ascii_hexdigit())
    {
        Some("digest")
    } else if bare.len() >= 10
        && bare[..4].chars().all(|c| c.is_ascii_digit())
        && bare.as_bytes()[4] == b'-'
    {
        Some("time")
    } else {
        None
    }
}

/// A run id as the docs write it: `01b7...e2a0`, four characters either side of `...`.
fn placeholder(word: &str) -> Option<(usize, usize)> {
    let at = word.find("...")?;
    let id = |s: &str| s.len() == 4 && s.chars().all(|c| c.is_ascii_hexdigit());
    (at >= 4 && word.len() >= at + 7 && id(&word[at - 4..at]) && id(&word[at + 3..at + 7]))
        .then_some((at - 4, at + 7))
}

/// Whether `expected` shows in one of the lines of `output`, word by word, binding the
/// run-id placeholders it meets for the first time. With `fixed_clock` (the command names
/// its own `--from`) times must be as shown.
fn shows(
    output: &str,
    expected: &str,
    ids: &mut BTreeMap<String, String>,
    fixed_clock: bool,
) -> bool {
    let want: Vec<&str> = expected.split_whitespace().collect();
    for line in output.lines() {
        let got: Vec<&str> = line.split_whitespace().collect();
        if got.len() != want.len() {
            continue;
        }
        let mut bound = ids.clone();
        let all = got.iter().zip(&want).all(|(g, w)| {
            if let Some((from, to)) = placeholder(w) {
                let (before, after) = (&w[..from], &w[to..]);
                let name = &w[from..to];
                let Some(id) = g
                    .strip_prefix(before)
                    .and_then(|g| g.strip_suffix(after))
                    .filter(|id| !id.is_empty())
                else {
                    return false;
                };
                return match bound.get(name) {
                    Some(known) => known == id,
                    None => {
                        bound.insert(name.to_owned(), id.to_owned());
                        true
                    }
                };
            }
            g == w
                || match (varies(w), varies(g)) {
                    (Some("anything"), _) => true,
                    (Some("time"), _) if fixed_clock => false,
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                }
        });
        if all {
            *ids = bound;
            return true;
        }
    }
    false
}

/// The server a session started, stopped when the test ends however it ends.
struct Background {
    pid_file: PathBuf,
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.pid_file) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
    }
}

fn run_session(path: &Path, steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let port = gatehouse_tests::private_nats::free_port();
    let _up = Background {
        pid_file: scratch.path().join("up.pid"),
    };
    let up_log = scratch.path().join("up.log");
    let mut shell = Command::new("bash")
        .args(["--noprofile", "--norc", "-s"])
        .current_dir(dir.path())
        .env("GATEHOUSE_SERVER", format!("http://127.0.0.1:{port}"))
        .env("GATEHOUSE_LOG", "warn")
        .env_remove("GATEHOUSE_TOKEN")
        .env_remove("GATEHOUSE_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = shell.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(shell.stdout.take().unwrap()).lines();
    writeln!(stdin, "exec 2>&1\ngatehouse() {{ '{BIN}' \"$@\"; }}").unwrap();
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        let (script, command, expected, line) = match step {
            Step::Write { path, text } => {
                let script = format!("cat > '{path}' <<'@@EOF'\n{text}@@EOF\n");
                (script, format!("(save {path})"), &[][..], 0)
            }
            Step::Run {
                command,
                expected,
                line,
            } => {
                let mut command = command.clone();
                for (name, id) in &ids {
                    command = command.replace(name, id);
                }
                assert!(
                    command.split_whitespace().all(|w| placeholder(w).is_none()),
                    "{}:{line}: `{command}` names a run no earlier output showed",
                    path.display()
                );
                let script = if command.split('#').next().unwrap().trim() == "gatehouse up" {
                    // A server of the session's own, in the background, in the session's
                    // directory; the step ends once it answers.
                    format!(
                        "'{BIN}' up --listen 127.0.0.1:{port} > '{log}' 2>&1 &\n\
                         echo $! > '{pid}'\n\
                         for _ in $(seq 1 800); do [ -e .gatehouse/admin.token ] && \
                         (: < /dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.025; done\n\
                         [ -e .gatehouse/admin.token ]\n",
                        log = up_log.display(),
                        pid = scratch.path().join("up.pid").display(),
                    )
                } else {
                    format!("{command}\n")
                };
                (script, command, &expected[..], *line)
            }
        };
        writeln!(stdin, "{script}echo \"@@end {i} $?\"").unwrap();
        stdin.flush().unwrap();
        let mut output = String::new();
        let status = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("the shell ended during `{command}`:\n{output}");
            };
            if let Some(rest) = line.strip_prefix(&format!("@@end {i} ")) {
                break rest.to_owned();
            }
            output.push_str(&line);
            output.push('\n');
        };
        let at = format!("{}:{line}", path.display());
        let server_log = || std::fs::read_to_string(&up_log).unwrap_or_default();
        let fails = expected.iter().any(|l| l.starts_with("error:"));
        assert!(
            (status == "0") != fails,
            "{at}: `{command}` exited {status}{}:\n{output}\nserver log:\n{}",
            if fails {
                ", but the page shows it failing"
            } else {
                ""
            },
            server_log()
        );
        for want in expected.iter().filter(|l| l.trim() != "...") {
            let mut want = want.clone();
            for (name, id) in &ids {
                want = want.replace(name, id);
            }
            assert!(
                shows(&output, &want, &mut ids, command.contains("--from")),
                "{at}: `{command}` should show\n  {want}\nbut printed:\n{output}"
            );
        }
    }
    drop(stdin);
    let _ = shell.wait();
}

#[test]
fn the_pages_sessions_work_as_written() {
    let mut ran = Vec::new();
    for path in pages().into_iter().filter(|p| p.starts_with("docs")) {
        let page = read_page(&path);
        let steps = session(&page);
        if steps.is_empty() {
            continue;
        }
        run_session(&path, &steps);
        let commands = steps
            .iter()
            .filter(|s| matches!(s, Step::Run { .. }))
            .count();
        ran.push(format!("{} ({commands} commands)", path.display()));
    }
    println!("sessions: {}", ran.join(", "));
    assert!(
        ran.iter().any(|r| r.starts_with("docs/quickstart.md")),
        "the quickstart is a session: {ran:?}"
    );
}

#[test]
fn the_readers_understand_the_docs_notation() {
    let words = |line: &str| -> Vec<Vec<String>> {
        simple_commands(line)
            .iter()
            .filter_map(|c| gatehouse_args(c))
            .flat_map(|args| expand(&args))
            .collect()
    };
    assert_eq!(
        words("gatehouse run list; gatehouse run cancel|pause ID   # a comment"),
        [
            vec!["run", "list"],
            vec!["run", "cancel", "ID"],
            vec!["run", "pause", "ID"]
        ]
    );
    assert_eq!(
        words("T=$(gatehouse token create ana --json | jq -r .token)"),
        [vec!["token", "create", "ana", "--json"]]
    );
    assert_eq!(
        words("gatehouse serve ingest --nats nats://... [--listen A]"),
        [vec![
            "serve", "ingest", "--nats", "nats://", "--listen", "A"
        ]]
    );
    assert_eq!(
        words("gatehouse schedule preview \"0 3 * * *\" --tz Europe/Berlin"),
        [vec![
            "schedule",
            "preview",
            "0 3 * * *",
            "--tz",
            "Europe/Berlin"
        ]]
    );
    assert_eq!(
        words("docker compose -f deploy/compose.yaml exec ingest gatehouse run start x"),
        [vec!["run", "start", "x"]]
    );
    assert_eq!(
        words("docker build -f deploy/Dockerfile -t gatehouse ."),
        Vec::<Vec<String>>::new()
    );
    assert_eq!(words("cargo run --release -- up"), [vec!["up"]]);
    assert_eq!(
        words("docker run --rm gatehouse:latest config check"),
        [vec!["config", "check"]]
    );
    assert_eq!(
        words("docker run -v gatehouse-data:/var/lib/gatehouse gatehouse:latest"),
        Vec::<Vec<String>>::new()
    );

    let mut ids = BTreeMap::new();
    assert!(shows(
        "started run 01a23256-22e8-72c7-b4df-764398809f4a (hello)\n",
        "started run 01b7...e2a0 (hello)",
        &mut ids,
        false
    ));
    assert_eq!(ids["01b7...e2a0"], "01a23256-22e8-72c7-b4df-764398809f4a");
    assert!(!shows(
        "run 01a23256-0000 succeeded\n",
        "run 01b7...e2a0 succeeded",
        &mut ids,
        false
    ));
    assert!(shows(
        "├─ greet  succeeded  attempt 1  0.3s\n",
        "├─ greet  succeeded  attempt 1  0.0s",
        &mut ids,
        false
    ));
    assert!(shows(
        "created schedule x; next fire 2026-12-02T09:00:00+01:00\n",
        "created schedule x; next fire 2026-01-05T09:00:00+01:00",
        &mut ids,
        false
    ));
    assert!(!shows(
        "2026-03-29T03:00:00+02:00\n",
        "2026-03-29T02:30:00+01:00",
        &mut ids,
        true
    ));
    assert!(!shows(
        "greet #1: failed\n",
        "greet #1: succeeded",
        &mut ids,
        false
    ));
    assert_eq!(
        slug("Distributed against `gatehouse up`"),
        "distributed-against-gatehouse-up"
    );
    assert_eq!(
        slug("First run: the platform-check SOP"),
        "first-run-the-platform-check-sop"
    );
}
