#!/usr/bin/env bash
# probe.sh NAME ENV... -- AGENT ARGV: three ACP runs against the stand-in, into fixtures/NAME/:
#   acp-exchange.jsonl       initialize -> session/new -> session/prompt (no fs capability)
#   acp-load.jsonl           a new process: session/load of that session -> session/prompt
#   acp-fs.jsonl             with fs capabilities advertised (file I/O through the client)
# ENV entries are VAR=value; $FAKE_URL in them and in ARGV is replaced by the stand-in's URL.
set -u
name=$1; shift
envs=()
while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
cd /work/wt/clis; source lib.sh
fake_start "$name-acp"
fx=fixtures/$name; mkdir -p $fx
resolved=(); for e in "${envs[@]}"; do resolved+=("${e//\$FAKE_URL/$FAKE_URL}"); done
argv=(); for a in "$@"; do argv+=("${a//\$FAKE_URL/$FAKE_URL}"); done; set -- "${argv[@]}"
run() { env "${resolved[@]}" timeout 200 python3 acp/client.py --cwd "$WS" "$@"; }
rm -f "$WS/hello.txt"
run --out $fx/acp-exchange.jsonl --prompt "Create hello.txt containing a greeting." -- "$@" | tee $fx/acp-exchange.summary.txt
sid=$(tail -1 $fx/acp-exchange.summary.txt)
echo "hello.txt after run 1: $(cat $WS/hello.txt 2>&1)" | tee -a $fx/acp-exchange.summary.txt
rm -f "$WS/hello.txt"
run --out $fx/acp-load.jsonl --load "$sid" --prompt "Do it again." -- "$@" | tee $fx/acp-load.summary.txt
echo "hello.txt after load: $(cat $WS/hello.txt 2>&1)" | tee -a $fx/acp-load.summary.txt
rm -f "$WS/hello.txt"
run --fs --out $fx/acp-fs.jsonl --prompt "Create hello.txt containing a greeting." -- "$@" | tee $fx/acp-fs.summary.txt
echo "hello.txt after fs run: $(cat $WS/hello.txt 2>&1)" | tee -a $fx/acp-fs.summary.txt
fake_stop
cp logs/$name-acp-requests.jsonl $fx/acp-provider-requests.jsonl
