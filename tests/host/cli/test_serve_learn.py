"""What ``plughost serve --learn`` prints when it stops: tables to paste into plughost.toml."""

from __future__ import annotations

import json
import tomllib

import pytest

from plughost.cli.serve import _print_learned


def test_learned_grants_print_as_toml_that_serve_reads_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    network = {"community.weather": ["api.example.com", "cdn.example.org:8443"]}
    writes = {"community.gallery": ["/srv/media"]}

    _print_learned(network, writes, "text")
    printed = capsys.readouterr().err
    table = printed[printed.index("[host.network_grants]") :]

    assert tomllib.loads(table)["host"] == {"network_grants": network, "write_grants": writes}


def test_learned_grants_in_json_logs_are_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    _print_learned({"a.b": ["*"]}, {}, "json")

    [line] = capsys.readouterr().err.splitlines()
    assert json.loads(line) == {
        "event": "serve.learned",
        "network_grants": {"a.b": ["*"]},
        "write_grants": {},
    }
