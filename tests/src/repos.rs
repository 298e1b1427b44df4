//! Repositories of realistic sizes, made locally with `git fast-import` (no network), for
//! the benchmarks that time what users wait for on a real repository: a small service, a
//! large monorepo with a long history, and one whose pack is mostly binaries.
//!
//! Contents are pseudo-random but fixed (a seeded generator), so every machine makes the
//! same repositories; text files are lines of code-like words, which compress about as
//! source does. Each is made once under `target/bench-repos/` and reused while its
//! [`Shape`] is unchanged (the directory name carries a version).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How a repository is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Its name, and its directory's under `target/bench-repos/`.
    pub name: &'static str,
    /// Text files in the last commit.
    pub files: usize,
    /// Their mean size in bytes.
    pub file_bytes: usize,
    /// Commits, each adding its share of the files and changing one earlier file.
    pub commits: usize,
    /// Binary (incompressible) files in the first commit, and each one's size.
    pub binaries: usize,
    pub binary_bytes: usize,
}

/// A small service: ≈ 5 MB in 5,000 files, 500 commits.
pub const SMALL: Shape = Shape {
    name: "small",
    files: 5_000,
    file_bytes: 1_000,
    commits: 500,
    binaries: 0,
    binary_bytes: 0,
};

/// A large monorepo: ≈ 200 MB in 50,000 files, 20,000 commits of history.
pub const LARGE: Shape = Shape {
    name: "large",
    files: 50_000,
    file_bytes: 4_000,
    commits: 20_000,
    binaries: 0,
    binary_bytes: 0,
};

/// A repository whose pack is ≈ 300 MB of binaries (assets, models, fixtures) beside a
/// little code.
pub const BINARIES: Shape = Shape {
    name: "binaries",
    files: 500,
    file_bytes: 2_000,
    commits: 50,
    binaries: 30,
    binary_bytes: 10 * 1024 * 1024,
};

/// Bumped when the generator changes, so old repositories are made again.
const VERSION: u32 = 1;

/// The bare repository of `shape` under `root`, made when missing (a minute for
/// [`LARGE`]); its path.
pub fn ensure(root: &Path, shape: &Shape) -> PathBuf {
    let bare = root.join(format!("{}-v{VERSION}.git", shape.name));
    if bare.join("gatehouse-made").exists() {
        return bare;
    }
    let _ = std::fs::remove_dir_all(&bare);
    std::fs::create_dir_all(&bare).expect("making the repository's directory");
    git(
        &bare,
        &["init", "--quiet", "--bare", "--initial-branch=main"],
    );
    let mut import = Command::new("git")
        .args(["fast-import", "--quiet", "--done"])
        .current_dir(&bare)
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import");
    {
        let stdin = import.stdin.take().expect("fast-import's input");
        let mut out = BufWriter::with_capacity(1 << 20, stdin);
        write_history(shape, &mut out).expect("writing to fast-import");
        out.flush().expect("writing to fast-import");
    }
    assert!(
        import.wait().expect("fast-import").success(),
        "fast-import failed"
    );
    git(&bare, &["pack-refs", "--all"]);
    std::fs::write(bare.join("gatehouse-made"), format!("{shape:?}\n")).expect("marking it");
    bare
}

/// The fast-import stream: `shape.commits` commits on `main`.
fn write_history(shape: &Shape, out: &mut impl Write) -> std::io::Result<()> {
    let mut random = Random(0x9e37_79b9_7f4a_7c15 ^ shape.files as u64);
    let mut added = 0;
    for commit in 0..shape.commits {
        writeln!(out, "commit refs/heads/main")?;
        writeln!(
            out,
            "committer Bench <bench@example.com> {} +0000",
            1_600_000_000 + commit * 600
        )?;
        let message = format!("change {commit}\n");
        writeln!(out, "data {}\n{message}", message.len())?;
        if commit == 0 {
            for index in 0..shape.binaries {
                let mut bytes = vec![0u8; shape.binary_bytes];
                random.fill(&mut bytes);
                file(out, &format!("assets/blob-{index:03}.bin"), &bytes)?;
            }
        }
        // The files are spread evenly over the commits; the last takes what is left.
        let until = if commit + 1 == shape.commits {
            shape.files
        } else {
            (shape.files * (commit + 1)) / shape.commits
        };
        while added < until {
            let text = random.source(shape.file_bytes);
            file(out, &path_of(added), text.as_bytes())?;
            added += 1;
        }
        if added > 1 && commit > 0 {
            let changed = (random.next() as usize) % (added - 1);
            let text = random.source(shape.file_bytes);
            file(out, &path_of(changed), text.as_bytes())?;
        }
        writeln!(out)?;
    }
    writeln!(out, "done")
}

/// Twenty files to a directory, fifty directories to a parent.
fn path_of(index: usize) -> String {
    format!(
        "src/m{:03}/d{:03}/f{index:06}.rs",
        index / 1000,
        (index / 20) % 50
    )
}

fn file(out: &mut impl Write, path: &str, bytes: &[u8]) -> std::io::Result<()> {
    writeln!(out, "M 100644 inline {path}")?;
    writeln!(out, "data {}", bytes.len())?;
    out.write_all(bytes)?;
    writeln!(out)
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?} failed");
}

/// xorshift64*: fixed, fast, and good enough for file contents.
struct Random(u64);

const WORDS: &[&str] = &[
    "fn", "let", "mut", "self", "return", "match", "impl", "struct", "pub", "use", "crate",
    "value", "result", "error", "config", "request", "response", "handler", "state", "index",
    "count", "name", "path", "buffer", "stream", "token", "=", "+", "->", "=>", "{", "}", "(", ")",
    ";", "&", "0", "1", "42", "Some", "None", "Ok", "Err", "Vec", "String", "u64", "if", "else",
    "for", "in", "while", "loop", "async", "await", "where", "trait", "enum", "const", "static",
    "move", "ref", "as", "type", "mod",
];

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let word = self.next().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// About `bytes` bytes of code-like lines.
    fn source(&mut self, bytes: usize) -> String {
        let target = bytes / 2 + (self.next() as usize) % bytes.max(1);
        let mut text = String::with_capacity(target + 80);
        while text.len() < target {
            let words = 4 + (self.next() % 8) as usize;
            text.push_str("    ");
            for _ in 0..words {
                text.push_str(WORDS[(self.next() as usize) % WORDS.len()]);
                text.push(' ');
            }
            text.push('\n');
        }
        text
    }
}
