#!/usr/bin/env bash
# cancel.sh NAME ENV... -- AGENT ARGV: one ACP prompt against a slow stand-in (1 s between
# streamed events), with session/cancel sent 3 s in; into fixtures/NAME/acp-cancel.jsonl.
set -u
name=$1; shift
envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
cd /work/wt/clis; source lib.sh
FAKE_DELAY=1 fake_start "$name-cancel"
resolved=(); for e in "${envs[@]}"; do resolved+=("${e//\$FAKE_URL/$FAKE_URL}"); done
argv=(); for a in "$@"; do argv+=("${a//\$FAKE_URL/$FAKE_URL}"); done
env "${resolved[@]}" timeout 120 python3 acp/client.py --cwd "$WS" --out fixtures/$name/acp-cancel.jsonl \
    --cancel-after 3 --prompt "Create hello.txt containing a greeting." -- "${argv[@]}" | tee fixtures/$name/acp-cancel.summary.txt
fake_stop
