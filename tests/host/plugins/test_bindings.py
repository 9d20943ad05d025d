"""IdBindings: the rules that decide which folder owns a plugin id, without processes."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from plughost.events import EventBus, EventKind
from plughost.plugins.bindings import BINDINGS_FILE, IdBindings

ID = "author.weather"


def _folders(root: Path, *names: str) -> list[Path]:
    made = []
    for name in names:
        folder = root / "plugins" / name
        folder.mkdir(parents=True)
        made.append(folder)
    return made


def _fresh(data: Path, holders: dict[str, list[str]] | None = None) -> IdBindings:
    """Bindings as a host that starts again over ``data`` reads them."""
    return IdBindings(data, lambda plugin_id: (holders or {}).get(plugin_id, []))


def _rebound(bindings: IdBindings) -> list[str]:
    events = EventBus()
    bindings.announce(events)
    return [e.message for e in events.history() if e.kind is EventKind.PLUGIN_REBOUND]


def test_the_first_folder_to_load_an_id_owns_it_and_the_file_says_so(tmp_path: Path) -> None:
    (installed,) = _folders(tmp_path, "weather")

    refused = _fresh(tmp_path / "data").settle([(ID, installed)])

    assert refused == {}
    saved = json.loads((tmp_path / "data" / BINDINGS_FILE).read_text())
    assert saved["ids"] == {ID: {"id": ID, "folder": str(installed)}}
    assert [p.name for p in (tmp_path / "data").iterdir()] == [BINDINGS_FILE]  # no partial file


def test_a_newcomer_that_sorts_first_is_refused_and_the_owner_keeps_its_id(
    tmp_path: Path,
) -> None:
    installed, newcomer = _folders(tmp_path, "weather", "aaa-weather")
    _fresh(tmp_path / "data").settle([(ID, installed)])

    refused = _fresh(tmp_path / "data").settle([(ID, newcomer), (ID, installed)])

    assert list(refused) == [newcomer]
    reason = refused[newcomer]
    assert f"plugin id {ID!r} belongs to {installed}" in reason
    assert f"{newcomer} claims it too and is not loaded" in reason
    assert f"give {newcomer} another id in its _manifest.json" in reason
    assert str(tmp_path / "data" / ID) in reason  # whose data it would have read


def test_two_claimants_of_an_unbound_id_are_both_refused_and_nothing_is_bound(
    tmp_path: Path,
) -> None:
    first, second = _folders(tmp_path, "a", "b")
    bindings = _fresh(tmp_path / "data")

    refused = bindings.settle([(ID, first), (ID, second)])

    assert set(refused) == {first, second}
    assert refused[first] == refused[second]
    assert f"claimed by 2 folders and none owns it yet: {first}, {second}" in refused[first]
    assert bindings.owner(ID) is None


def test_ids_that_differ_only_in_case_are_one_claim(tmp_path: Path) -> None:
    installed, newcomer = _folders(tmp_path, "weather", "aaa")
    _fresh(tmp_path / "data").settle([(ID, installed)])

    refused = _fresh(tmp_path / "data").settle([("Author.Weather", newcomer), (ID, installed)])

    assert list(refused) == [newcomer]
    assert f"belongs to {installed}" in refused[newcomer]


def test_a_moved_folder_keeps_its_id_with_a_warning(tmp_path: Path) -> None:
    (old,) = _folders(tmp_path, "weather")
    _fresh(tmp_path / "data").settle([(ID, old)])
    moved = tmp_path / "plugins" / "weather-2"
    old.rename(moved)

    bindings = _fresh(tmp_path / "data")
    refused = bindings.settle([(ID, moved)])

    assert refused == {}
    owner = bindings.owner(ID)
    assert owner is not None and owner.folder == moved
    (warning,) = _rebound(bindings)
    assert f"its folder {old} is gone" in warning and f"{moved}, the only folder" in warning
    assert _fresh(tmp_path / "data").settle([(ID, moved)]) == {}  # saved


def test_a_gone_owner_with_two_claimants_hands_its_id_to_neither(tmp_path: Path) -> None:
    (old,) = _folders(tmp_path, "weather")
    _fresh(tmp_path / "data").settle([(ID, old)])
    shutil.rmtree(old)
    first, second = _folders(tmp_path, "a", "b")

    bindings = _fresh(tmp_path / "data")
    refused = bindings.settle([(ID, first), (ID, second)])

    assert set(refused) == {first, second}
    assert _rebound(bindings) == []


def test_an_owner_whose_manifest_is_broken_still_keeps_its_id(tmp_path: Path) -> None:
    installed, newcomer = _folders(tmp_path, "weather", "aaa")
    _fresh(tmp_path / "data").settle([(ID, installed)])

    refused = _fresh(tmp_path / "data").settle([(ID, newcomer)])  # installed: not valid now

    assert "which is still there" in refused[newcomer]


def test_an_owner_that_took_another_id_gives_the_old_one_up_with_a_warning(
    tmp_path: Path,
) -> None:
    installed, newcomer = _folders(tmp_path, "weather", "aaa")
    _fresh(tmp_path / "data").settle([(ID, installed)])

    bindings = _fresh(tmp_path / "data")
    refused = bindings.settle([(ID, newcomer), ("author.climate", installed)])

    assert refused == {}
    assert [b.folder if b else None for b in map(bindings.owner, (ID, "author.climate"))] == [
        newcomer,
        installed,
    ]
    (warning,) = _rebound(bindings)
    assert f"its folder {installed} now claims another id" in warning


def test_an_owner_refused_the_id_it_now_claims_keeps_its_old_one(tmp_path: Path) -> None:
    installed, neighbour, newcomer = _folders(tmp_path, "weather", "climate", "aaa")
    _fresh(tmp_path / "data").settle([(ID, installed), ("author.climate", neighbour)])

    refused = _fresh(tmp_path / "data").settle(
        [(ID, newcomer), ("author.climate", installed), ("author.climate", neighbour)]
    )

    assert set(refused) == {installed, newcomer}
    assert f"belongs to {neighbour}" in refused[installed]
    assert f"belongs to {installed}" in refused[newcomer]


def test_while_serving_a_taken_id_is_refused_and_a_free_one_moves_the_binding(
    tmp_path: Path,
) -> None:
    weather, climate = _folders(tmp_path, "weather", "climate")
    bindings = _fresh(tmp_path / "data")
    bindings.settle([(ID, weather), ("author.climate", climate)])

    taken = bindings.claim("author.climate", weather)
    renamed = bindings.claim("author.sky", weather)
    freed = bindings.claim(ID, climate)

    assert taken is not None and f"belongs to {climate}" in taken
    assert renamed is None
    assert freed is None  # weather gave author.weather up when it became author.sky
    (warning,) = _rebound(bindings)
    assert f"its folder {weather} now claims another id" in warning


def test_a_new_folder_while_serving_gets_no_id_a_refused_folder_still_claims(
    tmp_path: Path,
) -> None:
    first, second, third = _folders(tmp_path, "a", "b", "c")
    bindings = _fresh(tmp_path / "data")
    bindings.settle([(ID, first), (ID, second)])

    refused = bindings.claim(ID, third)
    left_after_one = bindings.forget_folder(first)
    left_after_two = bindings.forget_folder(third)

    assert refused is not None and "claimed by 3 folders" in refused
    assert left_after_one is None  # two remain: still nobody's
    assert left_after_two == second


def test_remote_runners_get_no_id_a_local_folder_owns_and_keep_one_they_served_first(
    tmp_path: Path,
) -> None:
    weather, newcomer = _folders(tmp_path, "weather", "aaa")
    holders = {"author.remote": ["gpu-box"]}
    bindings = _fresh(tmp_path / "data", holders)
    bindings.settle([(ID, weather)])

    local = bindings.remote_refusal("Author.Weather")
    bound = bindings.bind_remote("author.remote", "gpu-box")
    bindings.save()
    later = _fresh(tmp_path / "data", holders)
    refused = later.settle([(ID, weather), ("author.remote", newcomer)])

    assert local is not None and f"belongs to this host's own plugin folder {weather}" in local
    assert bound and bindings.remote_refusal("author.remote") is None
    assert "served by remote runners (first by credential gpu-box" in refused[newcomer]


def test_an_id_no_credential_allows_any_more_passes_to_a_local_folder(tmp_path: Path) -> None:
    (folder,) = _folders(tmp_path, "remote")
    bindings = _fresh(tmp_path / "data", {"author.remote": ["gpu-box"]})
    bindings.settle([])
    bindings.bind_remote("author.remote", "gpu-box")
    bindings.save()

    revoked = _fresh(tmp_path / "data")
    refused = revoked.settle([("author.remote", folder)])

    assert refused == {}
    (warning,) = _rebound(revoked)
    assert "no remote runner credential allows it any more" in warning


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"format": 1, "ids": {"x": {"id": "../escape", "folder": "/tmp"}}}',
        '{"format": 1, "ids": {"x": {"id": "a.b", "folder": "relative/path"}}}',
        '{"format": 99, "ids": {}}',
    ],
)
def test_a_broken_bindings_file_is_set_aside_with_a_warning_and_written_anew(
    tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = _folders(tmp_path, "a", "b")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / BINDINGS_FILE).write_text(text)

    with caplog.at_level(logging.WARNING):
        refused = _fresh(tmp_path / "data").settle([(ID, first), (ID, second)])

    assert set(refused) == {first, second}  # nothing is picked by name meanwhile
    assert any(BINDINGS_FILE in r.getMessage() for r in caplog.records)
    assert json.loads((tmp_path / "data" / BINDINGS_FILE).read_text())["format"] == 1


def test_without_a_data_dir_duplicates_are_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    first, second, alone = _folders(tmp_path, "a", "b", "c")

    refused = IdBindings().settle([(ID, first), (ID, second), ("author.alone", alone)])

    assert set(refused) == {first, second}
    assert not (tmp_path / "data").exists()


def test_runners_of_another_credential_may_serve_an_id_remote_runners_hold(
    tmp_path: Path,
) -> None:
    bindings = _fresh(tmp_path / "data", {"author.remote": ["gpu-box", "gpu-box-2"]})
    bindings.settle([])

    first = bindings.bind_remote("author.remote", "gpu-box")
    second = bindings.bind_remote("author.remote", "gpu-box-2")

    assert (first, second) == (True, False)
    assert bindings.remote_refusal("author.remote") is None  # the allow-lists decide
    owner = bindings.owner("author.remote")
    assert owner is not None and owner.remote == "gpu-box"
