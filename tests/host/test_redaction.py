"""The redactor: each secret masked only where it belongs, at a bounded cost."""

from __future__ import annotations

import re
import statistics
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from plughost.redaction import REDACTED, SecretRedactor
from plughost.secret_values import MAX_ENTRIES, MAX_SECRETS

KEY = "sk-live-0123456789abcdef"
OTHER = "tok-Zq81-neighbour-98765"


def _redactor(**configs: dict[str, object]) -> SecretRedactor:
    redactor = SecretRedactor()
    for plugin_id in configs:
        redactor.protect(plugin_id, [f"/srv/plugins/{plugin_id}"])
    for plugin_id, config in configs.items():
        redactor.learn_config(plugin_id, config)
    return redactor


def test_a_plugins_secret_is_masked_in_its_own_text_only() -> None:
    redactor = _redactor(a={"api_key": KEY}, b={"token": OTHER})
    text = f"using {KEY} and {OTHER}"

    assert redactor.redact(text, ["a"]) == f"using {REDACTED} and {OTHER}"
    assert redactor.redact(text, ["b"]) == f"using {KEY} and {REDACTED}"
    assert redactor.redact(text, ["a", "b"]) == f"using {REDACTED} and {REDACTED}"
    assert redactor.redact(text) == text  # the host's own sentence


def test_the_hosts_own_secrets_are_masked_everywhere() -> None:
    redactor = _redactor(a={"api_key": KEY})
    redactor.add_environment({"UPSTREAM_TOKEN": "host-secret-42", "HOME": "/root"})
    redactor.add("console-token-xyz")

    assert redactor.redact("host-secret-42 console-token-xyz") == f"{REDACTED} {REDACTED}"
    assert redactor.redact("host-secret-42", ["a"]) == REDACTED
    assert redactor.redact("/root") == "/root"


def test_values_that_are_host_words_or_plain_words_are_not_learned_with_a_warning() -> None:
    redactor = SecretRedactor()
    redactor.protect("", ["runner.crashed", "plugin.failed"])
    redactor.protect("tests.victim", ["/srv/plugins/victim"])
    config = {
        "api_key": "tests.victim",
        "token": "community",
        "secret": "failed",
        "auth": "runner.crashed",
        "session": "/srv/plugins",
        "password": "123123123",
        "cookie": "abcabcabcabc",
    }

    warnings = redactor.learn_config("tests.attacker", config)
    text = " ".join(str(v) for v in config.values())

    assert redactor.redact(text, ["tests.attacker"]) == text
    assert len(warnings) == 2
    host_words, plain = warnings
    assert host_words.startswith("plugin tests.attacker: the config.toml values under ")
    assert "api_key, secret, auth, session" in host_words and "host's own words" in host_words
    assert "token, password, cookie" in plain and "too plain" in plain
    assert "tests.victim" not in " ".join(warnings)  # keys are named, never values


def test_a_value_that_becomes_a_host_word_later_stops_being_masked() -> None:
    redactor = _redactor(a={"api_key": "weather_lookup_v2"})
    assert redactor.redact("weather_lookup_v2", ["a"]) == REDACTED

    redactor.protect("b", ["weather_lookup_v2"])  # a neighbour's tool registered later

    assert redactor.redact("weather_lookup_v2", ["a"]) == "weather_lookup_v2"


def test_the_number_of_secrets_per_plugin_is_bounded_with_a_warning() -> None:
    config = {f"key_{i}": f"s3cr3t-{i:04d}-Qx" for i in range(700)}
    redactor = SecretRedactor()

    warnings = redactor.learn_config("p", config)
    masked = [v for v in config.values() if redactor.redact(v, ["p"]) == REDACTED]

    assert len(masked) == MAX_SECRETS
    assert len(warnings) == 1
    assert f"({MAX_SECRETS} values" in warnings[0] and "and 567 more are not masked" in warnings[0]


def _learning_and_redacting_seconds(count: int) -> tuple[float, float]:
    """How long learning ``count`` secret values took, and redacting one ordinary line after."""
    config = {f"key_{i}": f"s3cr3t-{i:04d}-Qx" for i in range(count)}
    line = ("an ordinary log line " * 200)[:4000]
    redactor = SecretRedactor()
    started = time.perf_counter()
    redactor.learn_config("p", config)
    learned = time.perf_counter() - started
    redactor.redact(line, ["p"])  # builds the automaton
    started = time.perf_counter()
    for _ in range(200):
        redactor.redact(line, ["p"])
    return learned, (time.perf_counter() - started) / 200


def test_learning_grows_linearly_with_the_values_and_redacting_not_with_the_secrets() -> None:
    few, many = MAX_SECRETS // 10, 700  # many: the 128 kept secrets, from 58 times more values
    runs: dict[int, list[tuple[float, float]]] = {few: [], many: []}
    for _ in range(7):  # interleaved, so a busy spell of the machine slows both alike
        for count in (few, many):
            runs[count].append(_learning_and_redacting_seconds(count))
    learned = {n: statistics.median(r[0] for r in runs[n]) for n in runs}
    # The fastest of the runs: a line costs a few microseconds, so one preempted run
    # shows the machine, not the automaton.
    per_line = {n: min(r[1] for r in runs[n]) for n in runs}

    # Linear learning costs at most about 58 times as much for 58 times the values; the
    # quadratic version cost thousands of times as much (6 s for 700).
    assert learned[many] < 200 * learned[few], learned
    # One automaton reads the line once whatever the number of secrets; a search per
    # secret would cost about 10 times as much for the 10 times as many kept.
    assert per_line[many] < 3 * per_line[few], per_line


def test_secrets_overlapping_everywhere_mask_the_whole_text_at_bounded_cost() -> None:
    unit = "ab3Xk9Q"
    config = {f"key_{n}": unit * n for n in range(1, 60)}
    redactor = SecretRedactor()
    redactor.learn_config("p", config)

    assert redactor.redact(unit * 500, ["p"]) == REDACTED


def test_a_previous_configurations_secrets_stay_masked() -> None:
    redactor = _redactor(a={"api_key": KEY})
    redactor.learn_config("a", {"api_key": OTHER})

    assert redactor.redact(f"{KEY} {OTHER}", ["a"]) == f"{REDACTED} {REDACTED}"


def test_secrets_in_lists_and_arrays_of_tables_are_learned() -> None:
    redactor = _redactor(a={"tokens": ["tok-aaaa-1111-x"], "accounts": [{"cookie": "ck-9z8y-7x"}]})

    assert redactor.redact("tok-aaaa-1111-x ck-9z8y-7x", ["a"]) == f"{REDACTED} {REDACTED}"


def test_redact_data_masks_strings_at_any_depth() -> None:
    redactor = _redactor(a={"api_key": KEY})

    data = redactor.redact_data({"x": [KEY, {"y": KEY}], "n": 3}, ["a"])

    assert data == {"x": [REDACTED, {"y": REDACTED}], "n": 3}


secret_text = st.text(alphabet="ab3X9-", min_size=6, max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    secrets=st.lists(secret_text, min_size=1, max_size=6, unique=True),
    text=st.text(alphabet="ab3X9- ", max_size=80),
)
def test_no_character_of_any_occurrence_of_a_secret_is_left_visible(
    secrets: list[str], text: str
) -> None:
    redactor = SecretRedactor()
    for value in secrets:
        redactor.add(value)
    masked = redactor.redact(text)
    covered = [False] * len(text)
    for value in secrets:
        for found in re.finditer(f"(?={re.escape(value)})", text):
            for i in range(found.start(), found.start() + len(value)):
                covered[i] = True
    visible = "".join(c for c, hidden in zip(text, covered, strict=True) if not hidden)

    assert masked.replace(REDACTED, "") == visible


def test_a_configuration_past_the_entries_looked_at_is_cut_short_with_a_warning() -> None:
    config = {"keywords": [{"word": f"w{i}"} for i in range(MAX_ENTRIES)], "api_key": KEY}
    redactor = SecretRedactor()

    warnings = redactor.learn_config("p", config)

    assert warnings == [
        f"plugin p: config.toml has more than {MAX_ENTRIES:,} entries; values past them are "
        "not looked at for secrets"
    ]
    assert redactor.redact(KEY, ["p"]) == KEY
