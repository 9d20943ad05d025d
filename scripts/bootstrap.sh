#!/usr/bin/env bash
# Create or refresh the project's virtual environment in .venv.
#
# Idempotent: a stamp records a hash of every file that decides what gets
# installed, so a second run with nothing changed returns in well under a second.
# Sourced by scripts/serve and scripts/test; run it alone to just set up.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
stamp="$venv/.plughost-stamp"
python="${PLUGHOST_PYTHON:-python3}"

inputs_hash() {
    cat "$root/sdk/pyproject.toml" "$root/runner/pyproject.toml" "$root/host/pyproject.toml" \
        "$root/constraints.txt" | sha256sum | cut -d' ' -f1
}

want="$(inputs_hash)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "plughost needs Python 3.11 or newer; set PLUGHOST_PYTHON to one." >&2
    exit 1
fi

echo "Setting up $venv (first run, or dependencies changed)..." >&2
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=24"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --constraint "$root/constraints.txt" \
    -e "$root/sdk" -e "$root/runner" -e "$root/host[dev]"
echo "$want" > "$stamp"
echo "Environment ready." >&2
