//! `[mcp.NAME]` names, definitions and their resolution for an attempt: a role's servers
//! then its project's, remote ones through the runner's tools endpoint, and each mistake a
//! message saying what to change.

use std::collections::BTreeMap;

use gatehouse_agent::{
    Executor, McpDefinition, McpError, McpServer, McpTransport, Role, RoleError, check_mcp_name,
    mcp_servers,
};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| (*n).to_owned()).collect()
}

fn stdio(program: &str) -> McpDefinition {
    McpDefinition::Stdio {
        command: vec![program.to_owned()],
        env: BTreeMap::new(),
    }
}

#[test]
fn names_are_lowercase_words_and_gatehouse_is_taken() {
    for good in ["docs", "github-read", "a_1"] {
        assert_eq!(check_mcp_name(good), Ok(()), "{good}");
    }
    for bad in ["", "Docs", "a.b", "a b", "über", &"x".repeat(33)] {
        assert!(
            matches!(check_mcp_name(bad), Err(McpError::BadName { .. })),
            "{bad}"
        );
    }
    assert_eq!(check_mcp_name("gatehouse"), Err(McpError::Reserved));
    assert_eq!(
        McpError::Reserved.to_string(),
        "the MCP server name \"gatehouse\" is Gatehouse's own server, attached to every agent \
         already; pick another name"
    );
}

#[test]
fn a_role_and_its_project_give_their_servers_once_each_remote_through_the_runner() {
    let defined = BTreeMap::from([
        ("docs".to_owned(), stdio("docs-mcp")),
        ("wiki".to_owned(), McpDefinition::Remote),
        ("lint".to_owned(), stdio("lint-mcp")),
    ]);
    let servers = mcp_servers(
        &names(&["wiki", "docs"]),
        &names(&["docs", "lint"]),
        &defined,
    )
    .expect("all defined");
    assert_eq!(
        servers,
        [
            McpServer {
                name: "wiki".to_owned(),
                transport: McpTransport::Http {
                    url: "${GATEHOUSE_TOOLS_URL}/mcp/wiki".to_owned(),
                    token_env: Some("GATEHOUSE_TOOLS_TOKEN".to_owned()),
                },
            },
            McpServer {
                name: "docs".to_owned(),
                transport: McpTransport::Stdio {
                    command: names(&["docs-mcp"]),
                    env: BTreeMap::new(),
                },
            },
            McpServer {
                name: "lint".to_owned(),
                transport: McpTransport::Stdio {
                    command: names(&["lint-mcp"]),
                    env: BTreeMap::new(),
                },
            },
        ]
    );
    assert_eq!(mcp_servers(&[], &[], &defined), Ok(Vec::new()));
}

#[test]
fn an_unknown_server_is_named_with_those_that_exist() {
    let defined = BTreeMap::from([("docs".to_owned(), stdio("docs-mcp"))]);
    let error = mcp_servers(&names(&["docs"]), &names(&["gone"]), &defined).unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `gone` is not configured (add [mcp.gone]); the MCP servers are docs"
    );
    let error = mcp_servers(&names(&["x"]), &[], &BTreeMap::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `x` is not configured (add [mcp.x]); no [mcp.NAME] is configured"
    );
}

#[test]
fn too_many_servers_are_refused() {
    let many: Vec<String> = (0..17).map(|i| format!("s{i}")).collect();
    let defined: BTreeMap<String, McpDefinition> =
        many.iter().map(|n| (n.clone(), stdio("x"))).collect();
    assert_eq!(
        mcp_servers(&many[..10], &many[10..], &defined),
        Err(McpError::TooMany { count: 17 })
    );
}

#[test]
fn a_definition_needs_a_program_and_plain_variable_names() {
    let empty = McpDefinition::Stdio {
        command: vec![" ".to_owned()],
        env: BTreeMap::new(),
    };
    assert_eq!(empty.check(), Err(McpError::ProgramEmpty));
    let env = McpDefinition::Stdio {
        command: names(&["x"]),
        env: BTreeMap::from([("1X".to_owned(), "v".to_owned())]),
    };
    assert!(matches!(env.check(), Err(McpError::BadEnvName { .. })));
    let nul = McpDefinition::Stdio {
        command: names(&["x", "a\0b"]),
        env: BTreeMap::new(),
    };
    assert_eq!(nul.check(), Err(McpError::Nul { field: "command" }));
    assert_eq!(McpDefinition::Remote.check(), Ok(()));
    assert_eq!(stdio("docs-mcp").check(), Ok(()));
}

#[test]
fn a_role_names_servers_only_on_a_cli_that_takes_them() {
    let role = |executor: Executor, mcp: &[&str]| Role {
        mcp: names(mcp),
        command: if matches!(executor, Executor::Acp | Executor::Command) {
            names(&["agent"])
        } else {
            Vec::new()
        },
        ..Role::new(executor)
    };
    for executor in [
        Executor::ClaudeCode,
        Executor::Codex,
        Executor::Gemini,
        Executor::Copilot,
        Executor::Opencode,
        Executor::Kilo,
        Executor::Acp,
    ] {
        assert_eq!(role(executor, &["docs"]).check(), Ok(()), "{executor}");
        assert!(executor.takes_mcp());
    }
    for executor in [Executor::Pi, Executor::Aider, Executor::Command] {
        assert_eq!(role(executor, &[]).check(), Ok(()), "{executor}");
        assert_eq!(
            role(executor, &["docs"]).check(),
            Err(RoleError::McpNotSupported { executor })
        );
    }
    assert_eq!(
        RoleError::McpNotSupported {
            executor: Executor::Pi
        }
        .to_string(),
        "`mcp` names servers, but executor \"pi\" cannot be handed MCP servers; remove `mcp`, \
         or use an executor that can (claude-code, codex, gemini, copilot, opencode, kilo, acp)"
    );
    assert_eq!(
        role(Executor::ClaudeCode, &["docs", "docs"])
            .check()
            .map_err(|e| e.to_string()),
        Err("`mcp`: MCP server `docs` is listed twice; list it once".to_owned())
    );
    assert_eq!(
        role(Executor::ClaudeCode, &["gatehouse"]).check(),
        Err(RoleError::Mcp(McpError::Reserved))
    );
}

#[test]
fn a_role_with_servers_round_trips_through_toml_and_json() {
    let role: Role = toml_like(r#"{"executor": "claude-code", "mcp": ["docs", "wiki"]}"#);
    assert_eq!(role.mcp, names(&["docs", "wiki"]));
    let json = serde_json::to_string(&role).expect("json");
    assert_eq!(json, r#"{"executor":"claude-code","mcp":["docs","wiki"]}"#);
    let bare = serde_json::to_string(&Role::new(Executor::Codex)).expect("json");
    assert_eq!(bare, r#"{"executor":"codex"}"#);
    let definition: McpDefinition = toml_like(r#"{"transport": "stdio", "command": ["docs-mcp"]}"#);
    assert_eq!(definition, stdio("docs-mcp"));
}

fn toml_like<T: serde::de::DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).expect("parses")
}
