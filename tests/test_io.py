import gzip
import json
import re
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from agentgauge.io.jsonl import ReadError, count_lines, read_traces, write_traces
from agentgauge.model import Task, Trace


def test_bad_lines_become_errors_with_line_and_field(tmp_path: Path) -> None:
    good = {"id": "a", "task": {"id": "t"}, "output": 1}
    lines = [
        json.dumps(good),
        "{not json",
        "",
        json.dumps({"id": "b"}),
        json.dumps({"id": "c", "task": {"id": "t"}, "steps": [{"index": 0, "kind": "nope"}]}),
        "[1, 2]",
        json.dumps({**good, "id": "d"}),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    items = list(read_traces(path))
    assert [i.id for i in items if isinstance(i, Trace)] == ["a", "d"]
    errors = [i for i in items if isinstance(i, ReadError)]
    assert [(e.line, e.field) for e in errors] == [
        (2, None),
        (4, "task"),
        (5, "steps[0].kind"),
        (6, None),
    ]
    assert "invalid JSON" in errors[0].message
    assert "Field required" in errors[1].message
    assert str(errors[1]).startswith(f"{path}:4: task:")
    assert count_lines([path]) == 6


def test_gzip_round_trip(tmp_path: Path) -> None:
    traces = [Trace(id=str(i), task=Task(id="t", input={"i": i})) for i in range(5)]
    path = tmp_path / "t.jsonl.gz"
    assert write_traces(traces, path) == 5
    with gzip.open(path, "rt") as fh:
        assert len(fh.readlines()) == 5
    assert list(read_traces(path)) == traces


def test_lines_nested_too_deeply_are_bad_lines_and_reading_goes_on(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "task": {"id": "t"}})
    too_deep = (
        '{"id": "b", "task": {"id": "t"}, "metadata": {"x": ' + "[" * 5000 + "]" * 5000 + "}}"
    )
    # deeper than pydantic's parser reads, within the stdlib's: pydantic's reason, not "got dict"
    deep = '{"id": "c", "task": {"id": "t"}, "metadata": {"x": ' + "[" * 600 + "]" * 600 + "}}"
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([good, too_deep, deep, good]) + "\n")
    items = list(read_traces(path))
    assert [type(i).__name__ for i in items] == ["Trace", "ReadError", "ReadError", "Trace"]
    assert items[1].message == "invalid JSON: nested too deeply to read"  # type: ignore[union-attr]
    assert "recursion limit" in items[2].message  # type: ignore[union-attr]


def test_undecodable_lines_bom_and_broken_gzip_are_read_errors(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "task": {"id": "t"}}).encode()
    latin = b'{"id": "b", "task": {"id": "t"}, "output": "caf\xe9"}'
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"\xef\xbb\xbf" + good + b"\n" + latin + b"\n" + good + b"\n")
    items = list(read_traces(mixed))
    assert [type(i).__name__ for i in items] == ["Trace", "ReadError", "Trace"]
    assert items[1].line == 2 and "not UTF-8" in items[1].message  # type: ignore[union-attr]
    assert count_lines([mixed]) == 3
    fake = tmp_path / "fake.jsonl.gz"
    fake.write_text("not gzip\n")
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(gzip.compress(good + b"\n" + good + b"\n")[:-12])
    for path in (fake, truncated):
        *_, last = read_traces(path)
        assert isinstance(last, ReadError) and "cannot be read on" in last.message


def test_control_characters_from_the_input_never_reach_the_terminal() -> None:
    error = ReadError("t.jsonl", 3, "\x1b[2Jkey", "Extra inputs are not permitted")
    assert str(error) == "t.jsonl:3: \\x1b[2Jkey: Extra inputs are not permitted"


def test_a_bad_line_reports_the_column_an_editor_shows(tmp_path: Path) -> None:
    """Nesting too deep for pydantic's parser (the stdlib reads it) after non-ASCII text: the
    column is counted in characters, as the stdlib's errors and an editor count it, not in
    the parser's bytes of UTF-8 (7 CJK characters are 21 bytes: 14 columns too far)."""
    deep = '{"id": "日本語テキスト", "task": {"id": "t"}, "output": ' + "[" * 300 + "]" * 300 + "}"
    ascii_line = deep.replace("日本語テキスト", "abcdefg")  # as many characters, one byte each
    try:
        TypeAdapter(dict).validate_json(ascii_line)
    except ValidationError as exc:
        where = re.search(r"at line 1 column (\d+)$", exc.errors()[0]["msg"])
    assert where is not None
    path = tmp_path / "t.jsonl"
    path.write_text(deep + "\n" + ascii_line + "\n", encoding="utf-8")
    errors = list(read_traces(path))
    assert [e.message for e in errors] == [  # type: ignore[union-attr]
        f"invalid JSON: recursion limit exceeded at column {where[1]}"
    ] * 2
