"""Bounded work on hostile input: the call parser reads an adversarial 10 MB answer a bounded
number of times (counted, not timed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgauge.toolcall import parsers
from agentgauge.toolcall.parsers import SCAN_LIMIT, parse_tool_calls

SIZE = 10 * 1024 * 1024


class _CountingDecoder(json.JSONDecoder):
    """The parser's JSON decoder, counting the characters each try reads."""

    read = 0

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            value, end = super().raw_decode(s, idx)
        except json.JSONDecodeError as exc:
            _CountingDecoder.read += exc.pos - idx + 1
            raise
        except RecursionError:
            _CountingDecoder.read += len(s) - idx
            raise
        _CountingDecoder.read += end - idx
        return value, end


def _fill(unit: str) -> str:
    """10 MB of ``unit`` after a word: not one JSON document, so every bracket is a candidate."""
    return "Here: " + unit * (SIZE // len(unit))


ADVERSARIAL = {
    "unclosed arrays": _fill('["a", "b", "c", '),
    "unclosed call objects": _fill('{"name": "f", "arguments": {"x": '),
    "deep nesting": _fill("["),
    "brackets in prose": _fill("x ["),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_a_10mb_adversarial_answer_is_read_a_bounded_number_of_times(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = ADVERSARIAL[name]
    monkeypatch.setattr(parsers, "_DECODER", _CountingDecoder())
    _CountingDecoder.read = 0
    result = parse_tool_calls(text)
    assert result.calls == []
    # linear: the whole text once more for each try the limit allows, not once per bracket
    assert _CountingDecoder.read <= (SCAN_LIMIT + 1) * len(text) + 4096


def test_calls_in_prose_are_still_found() -> None:
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    text = f"noise [1, 2 {{ more ]] then {json.dumps(call)} and {json.dumps(call)} done"
    result = parse_tool_calls(text)
    assert [c.name for c in result.calls] == ["get_weather", "get_weather"]
    assert result.error is None
