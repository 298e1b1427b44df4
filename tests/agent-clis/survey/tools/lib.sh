# Source me. fake_start NAME: starts the stand-in on a free port for workspace
# /work/wt/clis/work/NAME, logging to logs/NAME-requests.jsonl; sets FAKE_URL, FAKE_PID, WS.
fake_start() {
    local name=$1
    WS=/work/wt/clis/work/$name
    mkdir -p "$WS"; : > /work/wt/clis/logs/$name-requests.jsonl
    local pf; pf=$(mktemp)
    python3 /work/wt/clis/fake/server.py --workdir "$WS" --log /work/wt/clis/logs/$name-requests.jsonl \
        --port-file "$pf" 2>> /work/wt/clis/logs/$name-fake.err &
    FAKE_PID=$!
    for _ in $(seq 50); do [ -s "$pf" ] && break; sleep 0.1; done
    FAKE_URL=http://127.0.0.1:$(cat "$pf")
    rm -f "$pf"
    echo "fake $FAKE_PID at $FAKE_URL ws $WS" >&2
}
fake_stop() { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; }

# capture NAME LABEL CMD...: runs CMD (via env, in $WS, stdin from /dev/null unless
# STDIN_FILE is set) with a 180 s limit; stdout -> fixtures/NAME/LABEL.out, stderr ->
# LABEL.err; appends the command, exit code and whether hello.txt was written to
# fixtures/NAME/runs.txt.
capture() {
    local name=$1 label=$2; shift 2
    local fx=/work/wt/clis/fixtures/$name; mkdir -p "$fx"
    rm -f "$WS/hello.txt"
    local start; start=$(date +%s.%N)
    ( cd "$WS" && timeout 180 "$@" < "${STDIN_FILE:-/dev/null}" > "$fx/$label.out" 2> "$fx/$label.err" )
    local rc=$?
    local secs; secs=$(python3 -c "import time;print(round(time.time()-$start,1))")
    {
        echo "## $label ($(date -u +%FT%TZ), ${secs}s, exit $rc)"
        echo "cd $WS && $(printf '%q ' "$@" | sed "s#$FAKE_URL#\$FAKE_URL#g")${STDIN_FILE:+ < $STDIN_FILE}"
        echo "hello.txt: $(cat "$WS/hello.txt" 2>/dev/null | head -c 100 || echo MISSING)"
        echo
    } >> "$fx/runs.txt"
    echo "$label exit=$rc secs=$secs hello=$( [ -f "$WS/hello.txt" ] && echo yes || echo no)" >&2
}
# summarize LOG: one line per provider request: path, api, model, tools, reply kind.
summarize() {
    python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    b = e.get("body") or {}
    h = {k.lower(): v for k, v in (e.get("headers") or {}).items()}
    auth = [k for k in ("authorization", "x-api-key", "x-goog-api-key", "api-key") if k in h]
    tools = []
    for t in b.get("tools") or []:
        if isinstance(t, dict):
            tools.append(t.get("name") or (t.get("function") or {}).get("name") or
                         ",".join(d.get("name", "") for d in t.get("functionDeclarations") or []) or t.get("type"))
    print(json.dumps({"n": e.get("n"), "method": e.get("method"), "path": e.get("path"), "api": e.get("api"),
                      "model": b.get("model"), "stream": b.get("stream"), "auth_header": auth,
                      "user_agent": h.get("user-agent"), "tools": tools,
                      "reply": (e.get("reply") or [None])[0] if isinstance(e.get("reply"), list) else e.get("reply"),
                      "tool_called": e["reply"][1] if isinstance(e.get("reply"), list) and e["reply"][0] == "tool" else None}))
PY
}
