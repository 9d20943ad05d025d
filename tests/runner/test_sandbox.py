"""The runner's sandbox layers, each applied in a fresh child process and then probed.

Every check runs ``python -c`` in a child: a Landlock domain or a seccomp
filter cannot be taken back, so they must never touch the test process.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from plughost_runner.sandbox import (
    SandboxPolicy,
    interpreter_candidates,
    interpreter_paths,
    landlock,
    namespaces,
    seccomp,
)
from plughost_runner.sandbox.probe import probe

OFFERED = probe()


def needs(protection: str) -> None:
    if protection not in OFFERED["offered"]:  # type: ignore[operator]
        reason = OFFERED["reasons"].get(protection, "")  # type: ignore[attr-defined]
        pytest.skip(f"this kernel does not grant {protection}: {reason}")


def run_confined(code: str) -> dict[str, Any]:
    """Run ``code`` (which prints one JSON line) in a child; return what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_seccomp_filter_checks_the_architecture_first_and_allows_by_default() -> None:
    code = seccomp.program("x86_64")

    assert code[0] == (0x20, 0, 0, 4)  # load seccomp_data.arch
    assert code[1][3] == 0xC000003E and code[2][3] == 0x80000000  # else kill the process
    assert code[-1][3] == 0x7FFF0000
    assert all(jt + jf < len(code) for _, jt, jf, _ in code)


def test_the_seccomp_filter_refuses_namespaces_ptrace_and_mount_but_not_threads() -> None:
    needs("seccomp")
    result = run_confined(
        """
        import ctypes, errno, json, os, threading
        from plughost_runner.sandbox import set_no_new_privs, seccomp
        libc = ctypes.CDLL(None, use_errno=True)
        set_no_new_privs()
        seccomp.install()
        def errno_of(value):
            return 0 if value == 0 else ctypes.get_errno()
        out = {
            "unshare": errno_of(libc.unshare(0x10000000)),
            "ptrace": errno_of(libc.ptrace(16, os.getppid(), 0, 0)),
            "mount": errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        }
        thread = threading.Thread(target=lambda: None)
        thread.start()
        thread.join()
        child = os.fork()
        if child == 0:
            os._exit(7)
        out["fork"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        print(json.dumps(out))
        """
    )

    assert result == {"unshare": 1, "ptrace": 1, "mount": 1, "fork": 7}


def test_landlock_allows_reading_and_writing_only_what_the_rules_name(tmp_path: Path) -> None:
    needs("landlock")
    readable, writable, other = (tmp_path / n for n in ("readable", "writable", "other"))
    for folder in (readable, writable, other):
        folder.mkdir()
        (folder / "file").write_text(folder.name)
    result = run_confined(
        f"""
        import json, sys
        from plughost_runner.sandbox import set_no_new_privs, landlock
        set_no_new_privs()
        landlock.restrict([sys.prefix, sys.base_prefix, {str(readable)!r}], [{str(writable)!r}])
        def can(path, mode):
            try:
                open(path, mode).close()
                return True
            except OSError:
                return False
        print(json.dumps({{
            "read readable": can({str(readable / "file")!r}, "r"),
            "write readable": can({str(readable / "file")!r}, "a"),
            "write writable": can({str(writable / "new")!r}, "w"),
            "read other": can({str(other / "file")!r}, "r"),
        }}))
        """
    )

    assert result == {
        "read readable": True,
        "write readable": False,
        "write writable": True,
        "read other": False,
    }


def test_landlock_reports_the_abi_this_kernel_has() -> None:
    assert landlock.abi_version() == OFFERED["landlock_abi"]


def test_interpreter_paths_leave_out_folders_holding_plugins_and_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, libs = tmp_path / "project", tmp_path / "libs"
    plugin = project / "plugins" / "weather"
    plugin.mkdir(parents=True)
    libs.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path, str(project), str(tmp_path), str(libs), ""])
    interpreter_candidates.cache_clear()
    try:
        paths = interpreter_paths(SandboxPolicy(read=[str(plugin)]))
    finally:
        interpreter_candidates.cache_clear()

    assert str(project) not in paths and str(tmp_path) not in paths
    assert str(libs) in paths
    assert any(p.endswith("site-packages") for p in paths)


def test_interpreter_paths_are_found_in_a_working_directory_that_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # serve started from a directory deleted since: nothing relative resolves
    monkeypatch.setattr(sys, "path", [*sys.path, "relative/libs"])
    interpreter_candidates.cache_clear()
    try:
        paths = interpreter_paths(SandboxPolicy())
    finally:
        interpreter_candidates.cache_clear()

    assert any(p.endswith("site-packages") for p in paths)
    assert all(os.path.isabs(p) for p in paths)


def test_a_policy_survives_its_json_form() -> None:
    policy = SandboxPolicy(user_namespace=True, read=["/a"], connect_ports=[443])

    assert SandboxPolicy.from_json(policy.to_json()) == policy
    with pytest.raises(TypeError):
        SandboxPolicy.from_json('{"unknown": 1}')


class _RefusingLibc:
    """A C library whose ``unshare`` fails with one errno, as the kernel would."""

    def __init__(self, code: int) -> None:
        self.code = code

    def unshare(self, flags: int) -> int:
        ctypes.set_errno(self.code)
        return -1


@pytest.mark.parametrize(("code", "hint"), [(errno.ENOSPC, True), (errno.EPERM, False)])
def test_a_refused_unshare_says_when_the_machines_namespace_limit_is_the_reason(
    monkeypatch: pytest.MonkeyPatch, code: int, hint: bool
) -> None:
    monkeypatch.setattr(namespaces, "_libc", _RefusingLibc(code))
    with pytest.raises(namespaces.NamespaceError) as refused:
        namespaces.enter(network=True, pid=True)
    assert refused.value.errno == code
    assert str(refused.value.strerror).startswith(f"unshare: {os.strerror(code)}")
    assert ("max_user_namespaces" in str(refused.value)) is hint


def test_note_outside_sets_aside_only_paths_resolving_outside_the_shared_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    (shared / "kept").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    (tmp_path / "into_shared").symlink_to(shared / "kept")
    monkeypatch.setattr(namespaces, "SHARED_DIRECTORIES", (str(shared),))
    monkeypatch.setattr(namespaces, "_outside", frozenset())
    paths = [tmp_path / "plain", tmp_path / "into_shared", shared / "kept", tmp_path / "absent"]

    namespaces.note_outside([str(p) for p in paths])

    assert namespaces._outside == {str(tmp_path / "plain"), str(tmp_path / "absent")}


# Enters user and mount namespaces and covers a stand-in shared directory, keeping a link
# that pointed outside it when the fork server looked (argv[2] == "noted") and into it now.
_LINK_REPOINTED = """
import json, os, sys
from plughost_runner.sandbox import namespaces
root = sys.argv[1]
shared, link = os.path.join(root, "shared"), os.path.join(root, "link")
os.makedirs(os.path.join(shared, "kept"))
open(os.path.join(shared, "kept", "marker"), "w").close()
os.makedirs(os.path.join(root, "elsewhere"))
os.symlink(os.path.join(root, "elsewhere"), link)
namespaces.SHARED_DIRECTORIES = (shared,)
if sys.argv[2] == "noted":
    namespaces.note_outside([link])
os.unlink(link)
os.symlink(os.path.join(shared, "kept"), link)
namespaces.enter(network=False, pid=False)
namespaces.hide_shared_directories([link])
print(json.dumps({"seen": os.path.exists(os.path.join(link, "marker"))}))
"""


@pytest.mark.parametrize(("noted", "seen"), [("noted", False), ("not noted", True)])
def test_a_path_set_aside_that_later_links_into_a_shared_directory_is_covered_not_kept(
    tmp_path: Path, noted: str, seen: bool
) -> None:
    # Set aside by the fork server, the path is not looked at again: a runner loses sight
    # of what it now leads to, and never gains any. Not set aside, it is bound back.
    needs("user_namespace")
    done = subprocess.run(
        [sys.executable, "-c", _LINK_REPOINTED, str(tmp_path), noted],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    assert json.loads(done.stdout) == {"seen": seen}
