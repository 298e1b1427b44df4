#!/usr/bin/env bash
# Installs the official MCP client, the `mcp` package from PyPI at the pinned version,
# into a virtual environment the tests drive `gatehouse mcp` with
# (services/gatehouse/tests/mcp_cli.rs runs tests/mcp/client.py with its python).
# Usage: install.sh [DIR]   (default: target/mcp-client at the repository's root)
# Skips pip when the pinned version is already there; prints the venv's python last.
# The tests find it through MCP_CLIENT_PYTHON.
set -euo pipefail

MCP_VERSION=2.3.0

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/target/mcp-client}
python=$dir/bin/python

command -v python3 > /dev/null || { echo "python3 is not installed (3.10 or newer is needed)" >&2; exit 1; }

installed() {
    [ -x "$python" ] && "$python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != sys.argv[1])' "$MCP_VERSION" 2> /dev/null
}

if installed; then
    echo "mcp $MCP_VERSION already installed in $dir" >&2
else
    echo "installing mcp==$MCP_VERSION into $dir" >&2
    python3 -m venv "$dir"
    "$python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
    installed || { echo "mcp $MCP_VERSION is missing from $dir after the install" >&2; exit 1; }
fi
echo "$python"
