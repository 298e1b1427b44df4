#!/usr/bin/env bash
# Installs the real agent CLIs the tests drive (tests/tests/agent_clis.rs) at the exact
# versions pinned in deploy/sandbox/agent-clis.env, with npm, into one directory:
#   DIR/node_modules/.bin/claude     @anthropic-ai/claude-code
#   DIR/node_modules/.bin/codex      @openai/codex
#   DIR/node_modules/.bin/gemini     @google/gemini-cli
#   DIR/node_modules/.bin/copilot    @github/copilot
#   DIR/node_modules/.bin/opencode   opencode-ai
#   DIR/node_modules/.bin/kilo       @kilocode/cli
# Usage: install.sh [DIR]   (default: target/agent-clis at the repository's root)
# Skips npm when all are already installed at the pinned versions; prints the binaries'
# directory (DIR/node_modules/.bin) last. The tests find DIR through AGENT_CLIS_DIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../deploy/sandbox/agent-clis.env
source "$root/deploy/sandbox/agent-clis.env"
dir=${1:-$root/target/agent-clis}

command -v npm > /dev/null || { echo "npm is not installed (Node.js 18 or newer is needed)" >&2; exit 1; }

# installed_version PACKAGE: the version of PACKAGE under $dir, or nothing.
installed_version() {
    local manifest="$dir/node_modules/$1/package.json"
    [ -f "$manifest" ] || return 0
    node -p "require(process.argv[1]).version" "$manifest" 2> /dev/null || true
}

# The pinned packages, and the binary each must leave in DIR/node_modules/.bin.
packages=(
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
    "@openai/codex@$CODEX_VERSION"
    "@google/gemini-cli@$GEMINI_CLI_VERSION"
    "@github/copilot@$COPILOT_VERSION"
    "opencode-ai@$OPENCODE_VERSION"
    "@kilocode/cli@$KILO_VERSION"
    "@kilocode/cli-linux-x64@$KILO_VERSION"
)
binaries=(claude codex gemini copilot opencode kilo)

missing=()
for package in "${packages[@]}"; do
    name=${package%@*}
    [ "$(installed_version "$name")" = "${package##*@}" ] || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "agent CLIs already installed: ${packages[*]}" >&2
else
    echo "installing ${missing[*]} into $dir" >&2
    mkdir -p "$dir"
    # A package.json of its own keeps npm from walking up into another project.
    [ -f "$dir/package.json" ] || echo '{"name":"gatehouse-agent-clis","private":true}' > "$dir/package.json"
    npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "${packages[@]}" >&2
fi

bin="$dir/node_modules/.bin"
for cli in "${binaries[@]}"; do
    [ -x "$bin/$cli" ] || { echo "$bin/$cli is missing after the install" >&2; exit 1; }
done
echo "$bin"
