// Gatehouse: the role's `permissions` decide every tool call of this agent. Gatehouse
// writes this file before each run; a change to it does not last.
//
// Before each call OpenCode (or Kilo) awaits "tool.execute.before"; a throw refuses the
// call and its message is the tool's result the model reads. The call goes, as JSON on
// stdin, to Gatehouse's hook command (`gatehouse-acp hook NAME`), which asks the runner and
// answers {"decision": "allow"} with exit status 0, or a deny with its reason. Anything
// else — no command, a spawn error, another status, an answer that does not read — is a
// deny. The configuration this file comes with denies every tool; `config` below lifts
// that once this plugin is loaded, so a plugin that fails to load leaves the agent with no
// tools rather than with unchecked ones.
import { spawn } from "node:child_process";

const COMMAND = __GATEHOUSE_COMMAND__;
const MCP_SERVERS = __GATEHOUSE_MCP__;

function refuse(reason) {
  return { allow: false, reason };
}

function decide(event) {
  const stdin = JSON.stringify(event);
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn("/bin/sh", ["-c", COMMAND], { stdio: ["pipe", "pipe", "pipe"] });
    } catch (error) {
      resolve(refuse(`Gatehouse could not run its permission hook: ${error}`));
      return;
    }
    const out = [];
    const err = [];
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    child.on("error", (error) =>
      resolve(refuse(`Gatehouse could not run its permission hook: ${error}`)),
    );
    child.on("close", (status) => {
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8").trim();
      let answer = null;
      try {
        answer = JSON.parse(stdout);
      } catch {
        answer = null;
      }
      if (status === 0 && answer !== null && answer.decision === "allow") {
        resolve({ allow: true });
        return;
      }
      const reason =
        answer !== null && typeof answer.reason === "string" && answer.reason !== ""
          ? answer.reason
          : stderr !== ""
            ? stderr
            : `Gatehouse's permission hook failed (status ${status})`;
      resolve(refuse(reason));
    });
    child.stdin.on("error", () => {});
    child.stdin.end(stdin);
  });
}

export const GatehousePermissions = async () => ({
  config: async (config) => {
    config.permission = { "*": "allow" };
  },
  "tool.execute.before": async (input, output) => {
    let answer;
    try {
      answer = await decide({ tool: input.tool, args: output.args, mcp: MCP_SERVERS });
    } catch (error) {
      answer = refuse(`Gatehouse denies the call: ${error}`);
    }
    if (answer.allow !== true) {
      throw new Error(answer.reason);
    }
  },
});
