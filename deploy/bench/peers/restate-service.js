// The Restate side of the `peers` benchmark: one service, `bench`, with two handlers.
//   trigger(payload): a ctx.run step that writes `date +%s.%N` to OUT/<issue>.first
//   gated(payload):   an awakeable (the gate); a ctx.run step that writes
//                     "<date +%s.%N> <awakeable id>" to OUT/<issue>.first; waits for the
//                     awakeable; a second ctx.run step that writes OUT/<issue>.second
// <issue> is the GitHub payload's issue.number. Environment: BENCH_OUT (the directory),
// PORT (where the deployment listens). Run with Node 20 from the folder holding
// node_modules/@restatedev/restate-sdk (1.17).

// restate-sdk 1.17 calls Promise.withResolvers, which Node 20 lacks.
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

const { execFile } = require("node:child_process");
const restate = require("@restatedev/restate-sdk");

const OUT = process.env.BENCH_OUT;
if (!OUT) {
  throw new Error("BENCH_OUT must name the directory the steps write to");
}

/** The issue number of a GitHub issues payload; it names the step's file. */
function issueOf(payload) {
  const number = payload && payload.issue && payload.issue.number;
  if (!Number.isSafeInteger(number)) {
    throw new restate.TerminalError("payload.issue.number must be an integer");
  }
  return number;
}

/** Runs `script` with `sh -c`, as the other systems run a step. */
function sh(script) {
  return new Promise((resolve, reject) => {
    execFile("sh", ["-c", script], (error) => (error ? reject(error) : resolve()));
  });
}

const bench = restate.service({
  name: "bench",
  handlers: {
    trigger: async (ctx, payload) => {
      const issue = issueOf(payload);
      await ctx.run("first", () => sh(`date +%s.%N > "${OUT}/${issue}.first"`));
    },
    gated: async (ctx, payload) => {
      const issue = issueOf(payload);
      const gate = ctx.awakeable();
      await ctx.run("first", () =>
        sh(`echo "$(date +%s.%N) ${gate.id}" > "${OUT}/${issue}.first"`),
      );
      await gate.promise;
      await ctx.run("second", () => sh(`date +%s.%N > "${OUT}/${issue}.second"`));
    },
  },
});

restate.serve({ services: [bench], port: Number(process.env.PORT) });
