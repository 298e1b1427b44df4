// A stdio MCP server with one tool, `decide`, for Claude Code's --permission-prompt-tool:
// it appends each call's arguments to $DECIDER_LOG and answers as $DECIDER_ANSWER says
// ("allow": the input unchanged; anything else: deny with a message).
const fs = require("fs");
const readline = require("readline");

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.method === "initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: {
      protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "decider", version: "1.0.0" },
    } });
  } else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [{
      name: "decide",
      description: "Decides whether a tool call may run.",
      inputSchema: { type: "object", properties: {
        tool_name: { type: "string" }, input: { type: "object" }, tool_use_id: { type: "string" },
      } },
    }] } });
  } else if (m.method === "tools/call") {
    const args = m.params.arguments || {};
    fs.appendFileSync(process.env.DECIDER_LOG, JSON.stringify(args) + "\n");
    const answer = process.env.DECIDER_ANSWER === "allow"
      ? { behavior: "allow", updatedInput: args.input }
      : { behavior: "deny", message: "a person said no" };
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: JSON.stringify(answer) }] } });
  } else if (m.id !== undefined) {
    send({ jsonrpc: "2.0", id: m.id, result: {} });
  }
});
