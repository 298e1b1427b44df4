//! `--mcp JSON`: the MCP servers the agent gets in `session/new` and `session/load`
//! (`mcpServers`), in ACP's own shape, as Gatehouse's `acp` executor writes them: stdio
//! servers `{name, command, args, env: [{name, value}]}`, remote ones `{type: "http",
//! name, url, headers: [{name, value}]}`. Checked before the agent starts, bounded, and
//! a remote one refused with a clear line when the agent does not offer
//! `mcpCapabilities.http`.

use serde_json::Value;

/// The largest `--mcp` accepted.
const MAX_JSON: usize = 64 * 1024;

/// The most servers accepted.
const MAX_SERVERS: usize = 32;

/// The servers in `json`, or what is wrong with them.
pub fn servers(json: &str) -> Result<Vec<Value>, String> {
    if json.len() > MAX_JSON {
        return Err(format!("{} bytes; at most {MAX_JSON}", json.len()));
    }
    let value: Value = serde_json::from_str(json).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Array(servers) = value else {
        return Err("not a JSON array of servers".to_owned());
    };
    if servers.len() > MAX_SERVERS {
        return Err(format!("{} servers; at most {MAX_SERVERS}", servers.len()));
    }
    for (at, server) in servers.iter().enumerate() {
        let name = server.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            return Err(format!("server {at} has no `name`"));
        }
        let fine = match server.get("type").and_then(Value::as_str) {
            None | Some("stdio") => server.get("command").is_some_and(Value::is_string),
            Some("http") | Some("sse") => server.get("url").is_some_and(Value::is_string),
            Some(_) => false,
        };
        if !fine {
            return Err(format!(
                "server `{name}` is neither a stdio server (with `command`) nor an http one \
                 (with `url`)"
            ));
        }
    }
    Ok(servers)
}

/// The first remote server the agent cannot reach: one of type `http` (or `sse`) when
/// its `initialize` answer does not offer `mcpCapabilities.http` (`.sse`).
pub fn unsupported<'a>(servers: &'a [Value], initialized: &Value) -> Option<(&'a str, &'a str)> {
    servers.iter().find_map(|server| {
        let kind = server.get("type").and_then(Value::as_str)?;
        if kind == "stdio" {
            return None;
        }
        let offered = initialized
            .pointer(&format!("/agentCapabilities/mcpCapabilities/{kind}"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let name = server.get("name").and_then(Value::as_str).unwrap_or("");
        (!offered).then_some((name, kind))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn servers_are_checked_and_remote_ones_need_the_agents_capability() {
        let list = servers(
            r#"[{"name":"docs","command":"docs-mcp","args":[],"env":[]},
                {"type":"http","name":"wiki","url":"http://127.0.0.1:1/mcp/wiki","headers":[]}]"#,
        )
        .expect("valid");
        assert_eq!(list.len(), 2);
        let plain = json!({"agentCapabilities": {}});
        assert_eq!(unsupported(&list, &plain), Some(("wiki", "http")));
        let http = json!({"agentCapabilities": {"mcpCapabilities": {"http": true}}});
        assert_eq!(unsupported(&list, &http), None);
        assert_eq!(unsupported(&list[..1], &plain), None);

        assert!(servers("{}").unwrap_err().contains("array"));
        assert!(
            servers("[{\"command\":\"x\"}]")
                .unwrap_err()
                .contains("no `name`")
        );
        assert!(
            servers("[{\"name\":\"x\"}]")
                .unwrap_err()
                .contains("neither")
        );
        assert!(servers("nope").unwrap_err().starts_with("not JSON"));
        assert!(
            servers(&" ".repeat(MAX_JSON + 1))
                .unwrap_err()
                .contains("at most")
        );
    }
}
