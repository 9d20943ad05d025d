"""The Dockerfiles in docs/deploy/, read without Docker: what they copy, install and run.

Images cannot be built on every machine (``test_docker_build.py`` builds them
where a Docker engine answers), so these check what the docs say of them from
the files themselves: every ``COPY`` source exists and reaches the builder, the
runner image installs only the SDK and the runner distribution, its entrypoint
is that distribution's console script with flags its own parser accepts, and
both images run as a user other than root.
"""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from plughost_runner import remote
from tests.deploy.dockerfiles import Dockerfile, Instruction, ignore_rules, sent_to_builder
from tests.deploy.example import HOST, ROOT, RUNNER, RUNNER_PLUGINS, pip_targets

ALL = [RUNNER, RUNNER_PLUGINS, HOST]


def _copies(dockerfile: Dockerfile) -> list[tuple[Instruction, list[str]]]:
    """Every COPY from the build context, with its sources."""
    return [
        (copy, copy.args[:-1])
        for stage in dockerfile.stages
        for copy in stage.all("COPY")
        if "from" not in copy.flags
    ]


def _tracked(source: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--", source], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return listed.stdout.split()


@pytest.mark.parametrize("dockerfile", ALL, ids=lambda d: d.path.name)
def test_every_copy_source_exists_and_every_file_in_it_reaches_the_builder(
    dockerfile: Dockerfile,
) -> None:
    rules = ignore_rules(ROOT / ".dockerignore")
    copies = _copies(dockerfile)
    assert copies, f"{dockerfile.path.name} copies nothing from the context"
    for copy, sources in copies:
        for source in sources:
            assert (ROOT / source).exists(), f"{dockerfile.path.name}:{copy.line}: no {source}"
            files = _tracked(source)
            assert files, f"{source} holds no tracked file"
            held_back = [f for f in files if not sent_to_builder(f, rules)]
            assert not held_back, f".dockerignore keeps {held_back[:5]} from {source}"


def test_the_dockerignore_keeps_the_virtual_environment_and_caches_out() -> None:
    rules = ignore_rules(ROOT / ".dockerignore")
    for path in [".venv/bin/python", ".git/HEAD", "host/plughost/__pycache__/host.cpython-311.pyc"]:
        assert not sent_to_builder(path, rules), path
    assert sent_to_builder("host/plughost/host.py", rules)


def test_the_runner_image_installs_the_sdk_and_the_runner_but_never_the_host() -> None:
    sources = [s for _, found in _copies(RUNNER) for s in found]
    assert not [s for s in sources if s.strip("./").startswith("host")], sources
    assert pip_targets(RUNNER) == ["./sdk", "./runner"]
    assert pip_targets(RUNNER_PLUGINS) == []
    assert pip_targets(HOST) == ["./sdk", "./runner", "./host"]


@pytest.mark.parametrize("dockerfile", [RUNNER, HOST], ids=lambda d: d.path.name)
def test_installs_follow_the_repository_constraints(dockerfile: Dockerfile) -> None:
    runs = [" ".join(r.args) for stage in dockerfile.stages for r in stage.all("RUN")]
    installs = [run for run in runs if "pip install" in run]
    assert installs and all("--constraint constraints.txt" in run for run in installs), runs


def test_the_runner_entrypoint_is_the_runner_distributions_console_script() -> None:
    scripts = tomllib.loads((ROOT / "runner" / "pyproject.toml").read_text())["project"]["scripts"]
    (entrypoint,) = RUNNER.final.all("ENTRYPOINT")
    assert entrypoint.json_form, "exec form, so the runner is PID 1 and gets SIGTERM"
    assert entrypoint.args[0] in scripts
    assert scripts[entrypoint.args[0]] == "plughost_runner.remote:main"
    flags = dict(zip(entrypoint.args[1::2], entrypoint.args[2::2], strict=True))
    assert flags["--plugins"] == "/plugins"
    assert flags["--credentials"].startswith("/run/secrets/")


def test_the_runner_image_command_line_is_accepted_by_the_runners_own_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (entrypoint,) = RUNNER.final.all("ENTRYPOINT")
    (command,) = RUNNER.final.all("CMD")
    # argparse would raise SystemExit(2) on an unknown or missing flag; past the
    # parser, the runner reports the credential file missing on this machine.
    code = remote.main([*entrypoint.args[1:], *command.args])
    assert code == 2
    assert "/run/secrets/plughost/credentials.json" in capsys.readouterr().err


@pytest.mark.parametrize("dockerfile", ALL, ids=lambda d: d.path.name)
def test_no_image_runs_as_root(dockerfile: Dockerfile) -> None:
    users = dockerfile.final.all("USER")
    if dockerfile is RUNNER_PLUGINS:
        # It inherits the runner image's user; it may switch to root only in between.
        assert not users or users[-1].args[0] != "0"
        assert dockerfile.final.base == "plughost-runner:0.1.0"
        return
    assert users, f"{dockerfile.path.name} never sets USER"
    uid = users[-1].args[0].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


@pytest.mark.parametrize("dockerfile", [RUNNER, HOST], ids=lambda d: d.path.name)
def test_both_stages_share_one_pinned_python_base(dockerfile: Dockerfile) -> None:
    bases = {stage.base for stage in dockerfile.stages}
    assert len(dockerfile.stages) == 2 and len(bases) == 1, bases
    (base,) = bases
    # A patch release and a Debian release, not a floating "3.11" or "latest".
    assert re.fullmatch(r"python:3\.(1[1-9])\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base), base
    assert dockerfile.final.all("COPY")[0].flags == {"from": dockerfile.stages[0].name}


def test_the_plugin_folder_stays_roots_and_the_data_folder_is_the_volume() -> None:
    chowned = [
        word
        for run in RUNNER.final.all("RUN")
        for index, word in enumerate(run.args)
        if index > 0 and run.args[index - 2 : index - 1] == ["chown"]
    ]
    assert chowned == ["/var/lib/plughost"]
    (volume,) = RUNNER.final.all("VOLUME")
    (entrypoint,) = RUNNER.final.all("ENTRYPOINT")
    data_dir = entrypoint.args[entrypoint.args.index("--data-dir") + 1]
    assert volume.args == [data_dir]
    owners = {c.flags.get("chown", "0:0") for c in RUNNER_PLUGINS.final.all("COPY")}
    assert owners <= {"0:0", "root:root"}, owners
