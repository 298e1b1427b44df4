//! The shim's `gatehouse.permission` lines (adapters/acp/src/output.rs) in an attempt's
//! trace: one entry per decision, by rule or by a person, an error unless allowed.

use gatehouse_agent::{Executor, Trace};

#[allow(unused_macros)]
mod support;

use support::trace_of;

const OUTPUT: &str = r#"{"type":"session","sessionId":"s1","agent":null,"protocolVersion":1,"loaded":false,"replayed":0}
{"type":"prompt"}
{"type":"gatehouse.permission","tool":"Bash","input":"git push --force origin main","decision":"deny","rule":"Bash(git push --force*)"}
{"type":"permission","toolCall":{"toolCallId":"c1","title":"git push --force origin main","kind":"execute"},"policy":"rules","decision":"reject_once","optionId":"no"}
{"type":"update","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}}
{"type":"gatehouse.permission","tool":"Bash","input":"git push origin feature","decision":"allow","asked":true,"by":"ana","reason":"ok"}
{"type":"permission","toolCall":{"toolCallId":"c2","title":"git push origin feature","kind":"execute"},"policy":"rules","decision":"allow_once","optionId":"once"}
{"type":"update","update":{"sessionUpdate":"tool_call_update","toolCallId":"c2","status":"completed"}}
{"type":"result","stopReason":"end_turn","usage":null,"meta":null}
"#;

#[test]
fn every_decision_is_an_entry_of_its_own() {
    let trace: Trace = trace_of(Executor::Acp, "m", OUTPUT);
    let entries: Vec<(&str, &str, bool)> = trace
        .tools
        .iter()
        .map(|c| (c.tool.as_str(), c.summary.as_str(), c.error))
        .collect();
    assert_eq!(
        entries,
        [
            (
                "permission",
                "deny Bash git push --force origin main (rule Bash(git push --force*))",
                true
            ),
            ("execute", "git push --force origin main", true),
            (
                "permission",
                "allow Bash git push origin feature (asked: ana)",
                false
            ),
            ("execute", "git push origin feature", false),
        ]
    );
    assert_eq!(trace.failure, None);
}
