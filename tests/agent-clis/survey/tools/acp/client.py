#!/usr/bin/env python3
"""A minimal Agent Client Protocol client, to capture real exchanges with ACP agents.

    client.py --cwd DIR --out transcript.jsonl [--prompt TEXT] [--load SESSION_ID]
              [--resume SESSION_ID] [--cancel-after SECONDS] [--timeout S] -- AGENT ARGV...

Runs the agent on stdio (newline-delimited JSON-RPC 2.0), then:
initialize -> session/new (or session/load / session/resume) -> session/prompt, and
answers what the agent asks of the client: session/request_permission (the first
allow option), and with --fs (advertised only then) fs/read_text_file and
fs/write_text_file (inside --cwd only; a missing file is -32002 "Resource not found"). Every
message, both ways, is appended to --out as {"dir": "send"|"recv", "t": seconds, "msg": ...}.
Prints the session id on the last line of stdout.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

T0 = time.time()
PROCS = []


class Client:
    def __init__(self, argv, cwd, out, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(out + ".stderr", "w"), cwd=cwd, env=env)
        PROCS.append(self.proc)
        self.cwd = os.path.realpath(cwd)
        self.out = open(out, "w")
        self.next_id = 0
        self.pending = {}
        self.lock = threading.Lock()
        self.updates = []
        threading.Thread(target=self.reader, daemon=True).start()

    def log(self, direction, msg):
        with self.lock:
            self.out.write(json.dumps({"dir": direction, "t": round(time.time() - T0, 3), "msg": msg}) + "\n")
            self.out.flush()

    def send(self, msg):
        self.log("send", msg)
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, timeout=120):
        self.next_id += 1
        rid = self.next_id
        event = threading.Event()
        self.pending[rid] = [event, None]
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if not event.wait(timeout):
            raise TimeoutError("%s: no answer in %ss" % (method, timeout))
        return self.pending.pop(rid)[1]

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def inside(self, path):
        real = os.path.realpath(path)
        return real == self.cwd or real.startswith(self.cwd + os.sep)

    def answer(self, msg):
        method, params, rid = msg.get("method"), msg.get("params") or {}, msg.get("id")
        try:
            if method == "session/request_permission":
                options = params.get("options") or []
                pick = next((o for o in options if o.get("kind") == "allow_once"), None) or \
                    next((o for o in options if str(o.get("kind", "")).startswith("allow")), None) or \
                    (options[0] if options else None)
                result = {"outcome": {"outcome": "selected", "optionId": pick["optionId"]}} if pick else \
                    {"outcome": {"outcome": "cancelled"}}
            elif method == "fs/read_text_file":
                path = params["path"]
                if not self.inside(path):
                    raise PermissionError("outside the workspace")
                if not os.path.exists(path):
                    self.send({"jsonrpc": "2.0", "id": rid,
                               "error": {"code": -32002, "message": "Resource not found: %s" % path}})
                    return
                with open(path) as f:
                    lines = f.read().splitlines(keepends=True)
                start = max((params.get("line") or 1) - 1, 0)
                limit = params.get("limit")
                result = {"content": "".join(lines[start:start + limit] if limit else lines[start:])}
            elif method == "fs/write_text_file":
                path = params["path"]
                if not self.inside(path):
                    raise PermissionError("outside the workspace")
                with open(path, "w") as f:
                    f.write(params["content"])
                result = None
            else:
                self.send({"jsonrpc": "2.0", "id": rid,
                           "error": {"code": -32601, "message": "method not found: %s" % method}})
                return
            self.send({"jsonrpc": "2.0", "id": rid, "result": result})
        except Exception as e:  # the agent gets a JSON-RPC error, the run goes on
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": str(e)}})

    def reader(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.log("recv-nonjson", line.decode("utf-8", "replace"))
                continue
            self.log("recv", msg)
            if "method" in msg and "id" in msg:
                threading.Thread(target=self.answer, args=(msg,), daemon=True).start()
            elif "method" in msg:
                self.updates.append(msg)
            elif msg.get("id") in self.pending:
                slot = self.pending[msg["id"]]
                slot[1] = msg
                slot[0].set()
        self.log("eof", None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--prompt", action="append", default=[])
    ap.add_argument("--load", default=None)
    ap.add_argument("--resume", default=None)
    ap.add_argument("--cancel-after", type=float, default=None)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--linger", type=float, default=2.0, help="seconds before closing stdin")
    ap.add_argument("--fs", action="store_true", help="advertise fs read/write: file I/O goes through us")
    ap.add_argument("--mode", default=None, help="session/set_mode modeId after session/new")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv and a.argv[0] == "--" else a.argv
    c = Client(argv, a.cwd, a.out, os.environ.copy())
    init = c.request("initialize", {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": a.fs, "writeTextFile": a.fs}, "terminal": False},
        "clientInfo": {"name": "gatehouse-probe", "version": "0.0.1"},
    }, timeout=60)
    print("initialize:", json.dumps(init.get("result") or init.get("error"))[:1500])
    if "error" in init:
        sys.exit(1)
    cwd = os.path.realpath(a.cwd)
    if a.load:
        r = c.request("session/load", {"sessionId": a.load, "cwd": cwd, "mcpServers": []}, timeout=60)
        sid = a.load
        print("session/load:", json.dumps(r.get("result") if "result" in r else r.get("error"))[:800])
    elif a.resume:
        r = c.request("session/resume", {"sessionId": a.resume, "cwd": cwd, "mcpServers": []}, timeout=60)
        sid = a.resume
        print("session/resume:", json.dumps(r.get("result") if "result" in r else r.get("error"))[:800])
    else:
        r = c.request("session/new", {"cwd": cwd, "mcpServers": []}, timeout=60)
        print("session/new:", json.dumps(r.get("result") or r.get("error"))[:800])
        if "error" in r:
            sys.exit(1)
        sid = r["result"]["sessionId"]
    if a.mode:
        r = c.request("session/set_mode", {"sessionId": sid, "modeId": a.mode}, timeout=30)
        print("session/set_mode:", json.dumps(r.get("result") if "result" in r else r.get("error"))[:400])
    for text in a.prompt:
        if a.cancel_after is not None:
            threading.Timer(a.cancel_after, lambda: c.notify("session/cancel", {"sessionId": sid})).start()
        r = c.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
                      timeout=a.timeout)
        print("session/prompt:", json.dumps(r.get("result") if "result" in r else r.get("error"))[:800])
    kinds = {}
    for u in c.updates:
        k = ((u.get("params") or {}).get("update") or {}).get("sessionUpdate", u.get("method"))
        kinds[k] = kinds.get(k, 0) + 1
    print("updates:", json.dumps(kinds))
    time.sleep(a.linger)
    c.proc.stdin.close()
    try:
        c.proc.wait(10)
    except subprocess.TimeoutExpired:
        c.proc.terminate()
        try:
            c.proc.wait(5)
        except subprocess.TimeoutExpired:
            c.proc.kill()
    print("exit:", c.proc.returncode)
    print(sid)


if __name__ == "__main__":
    try:
        main()
    finally:
        # An early exit (an error answer, a timeout) must not leave the agent running.
        for proc in list(PROCS):
            if proc.poll() is None:
                proc.terminate()
