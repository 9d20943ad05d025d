"""The floor under a forked runner's own pages: a child that only serves msgpack over pyzmq.

A runner forked from the fork server owns every page it writes to (see
``scripts/copied_pages.py``). To tell what plughost's own work costs from what
any forked CPython process serving requests would cost, this script builds a
parent with the fork server's imports and start (its rehearsal and
``gc.freeze()``), forks children that each run an asyncio loop with a pyzmq
DEALER socket and answer a few msgpack round trips with the parent, and prints
the children's ``Private_Dirty`` in KiB as JSON. Nothing else of a runner runs
in them: no sandbox, no log capture, no heartbeat, no plugin. With
``--plugin FOLDER`` (repeatable; children take them in turn) each child also
imports that plugin's ``plugin.py`` as the runner does, compiled from source,
before its round trips: the least a runner of that plugin could hold.

Used by ``scripts/bench_idle.py``; Linux only.

Usage: .venv/bin/python scripts/runner_floor.py [--children N] [--plugin FOLDER ...]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

import msgpack
import zmq
import zmq.asyncio

import plughost_runner.forkserver  # everything a runner finds imported
import plughost_runner.sandbox
from plughost_runner import rehearsal
from plughost_runner.__main__ import read_command_line
from plughost_runner.maibot import imports as maibot_imports
from plughost_runner.plugins.sources import SourceOnlyLoader, compile_from_source
from plughost_sdk.manifest import Manifest

ROUND_TRIPS = 5


def private_dirty_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="ascii").splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1])
    return 0


def _import_plugin(folder: Path, maibot: bool) -> None:
    """Import ``folder``'s ``plugin.py`` as a runner's loader does, and make its plugin."""
    name = f"floor_plugin_{folder.name}"
    entry = folder / "plugin.py"
    compile_from_source(folder)
    spec = importlib.util.spec_from_file_location(
        name, entry, loader=SourceOnlyLoader(name, str(entry)), submodule_search_locations=[]
    )
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{entry} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if maibot:  # maibot_sdk is mapped for it, as the runner does
        maibot_imports.register_package(name, folder)
    spec.loader.exec_module(module)
    module.create_plugin()


def _serve_as_child(endpoint: str, index: int) -> None:
    async def exchange() -> None:
        context = zmq.asyncio.Context()
        socket = context.socket(zmq.DEALER)
        socket.connect(endpoint)
        for call in range(ROUND_TRIPS):
            await socket.send(msgpack.packb({"op": "call", "child": index, "call": call}))
            msgpack.unpackb(await socket.recv())
        await socket.send(b"done")
        await asyncio.Event().wait()  # at rest until the parent measures and kills it

    asyncio.run(exchange())


def measure(children: int, plugins: list[Path]) -> list[int]:
    """Fork ``children`` floor children, let each finish its round trips, return their pages."""
    # The host reads manifests, not the runner: read here, before any child exists.
    flavors = [
        (folder, Manifest.model_validate_json((folder / "_manifest.json").read_bytes()))
        for folder in plugins
    ]
    plughost_runner.sandbox.prepare()
    rehearsal.rehearse(read_command_line)
    gc.freeze()
    with tempfile.TemporaryDirectory(prefix="plughost-floor-") as tmp:
        endpoint = f"ipc://{tmp}/floor.sock"
        context = zmq.Context()
        router = context.socket(zmq.ROUTER)
        router.bind(endpoint)
        pids = []
        try:
            for index in range(children):
                pid = os.fork()
                if pid == 0:
                    try:
                        if flavors:
                            folder, manifest = flavors[index % len(flavors)]
                            _import_plugin(folder, manifest.targets_maibot)
                        _serve_as_child(endpoint, index)
                    finally:
                        os._exit(0)
                pids.append(pid)
            done = 0
            while done < children:
                identity, message = router.recv_multipart()
                if message == b"done":
                    done += 1
                else:
                    router.send_multipart([identity, message])
            return [private_dirty_kib(pid) for pid in pids]
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            router.close(linger=0)
            context.term()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, default=5, help="children to fork")
    parser.add_argument(
        "--plugin", type=Path, action="append", default=[], help="a plugin folder to import"
    )
    args = parser.parse_args()
    print(json.dumps({"private_kib": measure(args.children, args.plugin)}))


if __name__ == "__main__":
    main()
