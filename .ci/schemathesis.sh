#!/usr/bin/env bash
# Property-based API check: schemathesis (PyPI) generates requests from the OpenAPI
# document of a running `gatehouse up` and fails on any 5xx, any response that does not
# match the document (status, content type, schema), for a bounded number of examples.
# One worker: with two, Python 3.11's ast module raises "AST constructor recursion depth
# mismatch" when hypothesis parses lambdas on two threads at once, which
# fails the run with nothing wrong in Gatehouse.
# Usage: .ci/schemathesis.sh [GATEHOUSE_BINARY]   (default target/debug/gatehouse)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/gatehouse}
examples=${SCHEMATHESIS_EXAMPLES:-25}

command -v schemathesis >/dev/null || python3 -m pip install -q 'schemathesis>=4,<5'

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" up --data-dir "$dir/data" --listen "127.0.0.1:$port" >"$dir/up.log" 2>&1 &
up=$!
trap 'kill $up 2>/dev/null || true; wait $up 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
  [ -s "$dir/data/admin.token" ] && curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
token=$(cat "$dir/data/admin.token")
# A run to find, so the generated ids are not all unknown.
curl -fsS -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"sop":"platform-check"}' "http://127.0.0.1:$port/api/v1/runs" >/dev/null

schemathesis run "http://127.0.0.1:$port/api/v1/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples "$examples" \
  --generation-deterministic \
  --workers 1 \
  --suppress-health-check all \
  || { echo "--- gatehouse up log"; tail -n 50 "$dir/up.log"; exit 1; }
