//! The check an attempt's script makes before its CLI starts: each stdio MCP server's
//! program is in the sandbox. Without it a CLI starts all the same and silently has none
//! of the server's tools (Claude Code does), so the model is paid for work done without
//! them; with it the attempt fails at once, naming the server, the program and where it
//! was looked for. `gatehouse doctor` runs the same lines in a role's sandbox.
//!
//! The program and the server's variables come from configuration and are data to the
//! shell: every one is a single-quoted word, and the message is printed with `printf '%s'`.

use crate::invocation::quote;
use crate::tools::{McpServer, McpTransport};

/// The exit status of a script whose check found a program missing: `EX_CONFIG` of
/// sysexits(3), apart from 127 (the CLI itself not found) and the CLIs' own statuses.
pub const MCP_PROGRAM_MISSING: i32 = 78;

/// Where an attempt's CLI runs, as the message about a missing program names it and says
/// where to install the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxPlace<'a> {
    /// A Docker sandbox running this image.
    Image(&'a str),
    /// A process sandbox on the runner's host.
    Host,
}

/// The message an attempt fails with when `server`'s program `program` is not in the
/// sandbox at `place`: one line, whatever the program's text holds.
pub fn missing_mcp_program(server: &str, program: &str, place: SandboxPlace<'_>) -> String {
    let (sandbox, install) = match place {
        SandboxPlace::Image(image) => (
            format!("image {}", one_line(image)),
            "install it in the image",
        ),
        SandboxPlace::Host => (
            "a process on the runner's host".to_owned(),
            "install it on the runner's host",
        ),
    };
    format!(
        "MCP server `{server}` runs `{}`, which this sandbox ({sandbox}) does not have; \
         {install} or remove `{server}` from the role's or project's mcp",
        one_line(program)
    )
}

/// `text` with its control characters (a newline, say) written as escapes.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The shell lines (for `sh -c`, each ending in `;`) that stop the script with
/// [`MCP_PROGRAM_MISSING`] and [`missing_mcp_program`]'s message on stderr when a stdio
/// server's program is missing; empty when `servers` has no stdio server. A program
/// with a `/` must be an executable file (relative to the CLI's directory, where the CLI
/// starts it); any other is looked up with `command -v` on the `PATH` the server gets
/// (its own `env`'s, else the script's).
pub fn mcp_preflight(servers: &[McpServer], place: SandboxPlace<'_>) -> String {
    let mut lines = String::new();
    for server in servers {
        let McpTransport::Stdio { command, env } = &server.transport else {
            continue;
        };
        let Some(program) = command.first().filter(|p| !p.is_empty()) else {
            continue;
        };
        let found = if program.contains('/') {
            let program = quote(program);
            format!("[ -f {program} ] && [ -x {program} ]")
        } else {
            let lookup = format!("command -v -- {} >/dev/null 2>&1", quote(program));
            match env.get("PATH") {
                Some(path) => format!("(PATH={}; {lookup})", quote(path)),
                None => lookup,
            }
        };
        let message = quote(&missing_mcp_program(&server.name, program, place));
        lines.push_str(&format!(
            "if ! {{ {found}; }}; then printf '%s\\n' {message} >&2; exit {MCP_PROGRAM_MISSING}; fi; "
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::process::Command;

    use super::*;

    fn stdio(name: &str, command: &[&str], env: &[(&str, &str)]) -> McpServer {
        McpServer {
            name: name.to_owned(),
            transport: McpTransport::Stdio {
                command: command.iter().map(|w| (*w).to_owned()).collect(),
                env: env
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            },
        }
    }

    /// `script` run by `sh -c` in `dir`: its exit code, stdout and stderr.
    fn run(script: &str, dir: &std::path::Path) -> (i32, String, String) {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("sh runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn no_stdio_server_adds_nothing() {
        let remote = McpServer {
            name: "wiki".to_owned(),
            transport: McpTransport::Http {
                url: "${GATEHOUSE_TOOLS_URL}/mcp/wiki".to_owned(),
                token_env: None,
            },
        };
        assert_eq!(mcp_preflight(&[], SandboxPlace::Host), "");
        assert_eq!(mcp_preflight(&[remote], SandboxPlace::Host), "");
    }

    #[test]
    fn a_present_program_lets_the_cli_start_and_a_missing_one_stops_it() {
        let dir = tempfile::tempdir().expect("dir");
        let servers = [
            stdio("shell", &["sh", "-c", "true"], &[]),
            stdio("docs", &["docs-mcp-3c9e", "--stdio"], &[]),
        ];
        let checks = mcp_preflight(&servers, SandboxPlace::Image("gatehouse-sandbox:agents"));
        assert_eq!(
            run(&format!("{checks}echo started"), dir.path()),
            (
                MCP_PROGRAM_MISSING,
                String::new(),
                "MCP server `docs` runs `docs-mcp-3c9e`, which this sandbox (image \
                 gatehouse-sandbox:agents) does not have; install it in the image or remove \
                 `docs` from the role's or project's mcp\n"
                    .to_owned()
            )
        );
        let present = mcp_preflight(&servers[..1], SandboxPlace::Host);
        assert_eq!(
            run(&format!("{present}echo started"), dir.path()),
            (0, "started\n".to_owned(), String::new())
        );
    }

    #[test]
    fn a_path_must_be_an_executable_file_and_the_servers_own_path_is_searched() {
        let dir = tempfile::tempdir().expect("dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        std::fs::write(bin.join("own-mcp"), "#!/bin/sh\n").expect("file");
        std::fs::write(bin.join("plain"), "not a program").expect("file");
        let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(bin.join("own-mcp"), executable).expect("mode");
        let bin = bin.display().to_string();
        let check = |server: McpServer| {
            run(
                &format!(
                    "{}echo started",
                    mcp_preflight(&[server], SandboxPlace::Host)
                ),
                dir.path(),
            )
            .0
        };
        assert_eq!(check(stdio("a", &["./bin/own-mcp"], &[])), 0);
        assert_eq!(check(stdio("a", &[&format!("{bin}/own-mcp")], &[])), 0);
        assert_eq!(
            check(stdio("a", &["./bin/plain"], &[])),
            MCP_PROGRAM_MISSING
        );
        assert_eq!(check(stdio("a", &["./bin"], &[])), MCP_PROGRAM_MISSING);
        assert_eq!(check(stdio("a", &["own-mcp"], &[])), MCP_PROGRAM_MISSING);
        assert_eq!(check(stdio("a", &["own-mcp"], &[("PATH", &bin)])), 0);
        // The server's PATH is its own: the script's stays as it was.
        let checks = mcp_preflight(
            &[stdio("a", &["own-mcp"], &[("PATH", &bin)])],
            SandboxPlace::Host,
        );
        assert_eq!(
            run(&format!("{checks}echo \"$PATH\""), dir.path()).1,
            "/usr/bin:/bin\n"
        );
    }

    #[test]
    fn a_hostile_program_is_data_and_the_message_one_line() {
        let dir = tempfile::tempdir().expect("dir");
        let program = "x'; touch pwned; echo '$(touch pwned2)`touch pwned3`\nnext";
        let servers = [stdio("evil", &[program], &[("PATH", "'; touch pwned4; '")])];
        let (code, stdout, stderr) = run(
            &format!(
                "{}echo started",
                mcp_preflight(&servers, SandboxPlace::Image("i'm"))
            ),
            dir.path(),
        );
        assert_eq!(code, MCP_PROGRAM_MISSING);
        assert_eq!(stdout, "");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(r"MCP server `evil` runs `x'; touch pwned; echo '$(touch pwned2)`touch pwned3`\nnext`"),
            "{stderr}"
        );
        assert!(stderr.contains("(image i'm)"), "{stderr}");
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            0,
            "nothing ran"
        );
        let path = stdio("evil", &["a/b'; touch pwned; '"], &[]);
        assert_eq!(
            run(&mcp_preflight(&[path], SandboxPlace::Host), dir.path()).0,
            MCP_PROGRAM_MISSING
        );
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
