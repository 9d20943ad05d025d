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

# The pid-namespace init of sandboxed runners, a small C program (see its header).
# Its own stamp holds a hash of the source and of the compiler found, so an edit,
# or a compiler installed since, rebuilds it without reinstalling the packages.
build_init() {
    local source="$root/runner/plughost_runner/sandbox/init.c"
    local target="$venv/libexec/plughost-init" init_stamp="$venv/libexec/.plughost-init-stamp"
    local compiler
    compiler="$(command -v "${CC:-cc}" || true)"
    local init_want
    init_want="$( (cat "$source"; echo "$compiler") | sha256sum | cut -d' ' -f1)"
    if [[ -f "$init_stamp" && "$(cat "$init_stamp")" == "$init_want" ]]; then
        return 0
    fi
    mkdir -p "$venv/libexec"
    rm -f "$target"
    if [[ -z "$compiler" ]]; then
        echo "No C compiler (${CC:-cc}) found: sandboxed runners keep a Python process as" \
            "their pid-namespace init, about 3 MiB more memory each. Install one and" \
            "re-run scripts/bootstrap.sh." >&2
    elif ! "$compiler" -O2 -static -o "$target" "$source" 2>/dev/null &&
        ! "$compiler" -O2 -o "$target" "$source"; then  # no static libc here: link dynamically
        echo "$compiler could not build $source: sandboxed runners keep a Python" \
            "pid-namespace init, about 3 MiB more memory each." >&2
        return 0  # no stamp: the next run tries again
    fi
    echo "$init_want" > "$init_stamp"
}

# Byte-compile plughost's own sources (the installed packages were compiled by pip).
# Every runner, fork server and serve process imports them, and none writes a .pyc:
# runners never do (PYTHONDONTWRITEBYTECODE is part of their environment), nor does
# anything where it is set for the user. Without the .pyc files each of those
# processes compiles the sources again: about 0.3 s of CPU more for each fork
# server's start, 1.5 s more for each `plughost serve`. compileall only compiles
# what changed since, so this costs a fraction of a second when nothing did; a
# source that does not compile is left to the import that reports it.
compile_sources() {
    "$venv/bin/python" -m compileall -q -j 0 \
        "$root/sdk/plughost_sdk" "$root/runner/plughost_runner" "$root/host/plughost" \
        >/dev/null 2>&1 || true
}

want="$(inputs_hash)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    build_init
    compile_sources
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
build_init
compile_sources
echo "Environment ready." >&2
