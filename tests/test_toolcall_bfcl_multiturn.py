"""BFCL multi-turn: reading the questions, and our checker beside BFCL's own
``multi_turn_checker`` on the ground truth and on perturbed answers, on BFCL's real data."""

from __future__ import annotations

import ast
import copy
import json
import random
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import load_suite
from agentgauge.engine import score_traces
from agentgauge.io.jsonl import ReadError
from agentgauge.model import StepKind, Task
from agentgauge.toolcall import bfcl_multiturn
from agentgauge.toolcall.bfcl_multiturn import (
    INSTALL_HINT,
    MultiTurnQuestion,
    check_multi_turn,
    parse_call,
)
from agentgauge.toolcall.datasets import prediction_to_trace
from agentgauge.toolcall.formats.bfcl import read_bfcl
from toolcall_samples import write_jsonl

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
Result = list[list[list[Any]]]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _category(shared_data: Path, category: str) -> list[tuple[dict[str, Any], list[list[str]]]]:
    bfcl = shared_data / "bfcl"
    name = f"BFCL_v4_multi_turn_{category}.json"
    truth = {r["id"]: r["ground_truth"] for r in _rows(bfcl / "possible_answer" / name)}
    return [(q, truth[q["id"]]) for q in _rows(bfcl / name)]


def _as_answer(ground_truth: list[list[str]]) -> Result:
    """The ground truth as a model's answer: each turn one step with all of its calls."""
    return [[turn] if turn else [] for turn in ground_truth]


def _ours(question: dict[str, Any], ground_truth: list[list[str]], result: Any) -> tuple[Any, ...]:
    verdict = check_multi_turn(
        MultiTurnQuestion(
            question["id"], question["initial_config"], question["involved_classes"], ground_truth
        ),
        result,
    )
    return verdict.valid, verdict.error_type, verdict.error


@pytest.fixture(scope="module")
def bfcl_checker(bfcl_eval: None) -> Callable[..., tuple[Any, ...]]:
    """BFCL's own verdict: its runner's turn-count check, then ``multi_turn_checker`` (which
    evaluates the calls) on fresh instances (a new model name each time, as BFCL keeps the
    instances of a name for the whole process)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    def verdict(
        question: dict[str, Any], ground_truth: list[list[str]], result: Result
    ) -> tuple[Any, ...]:
        if len(result) != len(ground_truth):
            return False, "multi_turn:force_terminated"
        # BFCL's runner drops the steps that decode to no call before checking
        decoded = [[step for step in turn if step] for turn in result]
        category = question["id"].rsplit("_", 1)[0]
        out = multi_turn_checker(
            decoded, ground_truth, copy.deepcopy(question), category, f"m{uuid.uuid4().hex}"
        )
        return out["valid"], out.get("error_type"), out.get("error_message")

    return verdict


def test_ground_truth_is_valid_for_us_and_for_bfcl(
    shared_data: Path, bfcl_checker: Callable[..., tuple[Any, ...]]
) -> None:
    invalid: dict[str, set[str]] = {"ours": set(), "bfcl": set()}
    n = 0
    for category in CATEGORIES:
        for question, truth in _category(shared_data, category):
            ours = _ours(question, truth, _as_answer(truth))
            theirs = bfcl_checker(question, truth, _as_answer(truth))
            assert ours == theirs, question["id"]
            if not ours[0]:
                invalid["ours"].add(question["id"])
            if not theirs[0]:
                invalid["bfcl"].add(question["id"])
            n += 1
    assert n == 800
    # every ground-truth answer passes BFCL's own checker, hence ours
    assert invalid == {"ours": set(), "bfcl": set()}


def _call_text(name: str, args: list[Any], kwargs: dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + "_x" if value else "x"
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return "x"


def _wrong_argument(call: str, rng: random.Random) -> str | None:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    slots = len(args) + len(kwargs)
    if not slots:
        return None
    pick = rng.randrange(slots)
    if pick < len(args):
        args[pick] = _changed(args[pick])
    else:
        key = list(kwargs)[pick - len(args)]
        kwargs[key] = _changed(kwargs[key])
    return _call_text(node.func.id, args, kwargs)


def _perturbations(truth: list[list[str]], rng: random.Random) -> dict[str, Result]:
    """Answers around the ground truth, each as BFCL's result layout of call strings."""
    out: dict[str, Result] = {"split_steps": [[[c] for c in turn] for turn in truth]}
    busy = [t for t, turn in enumerate(truth) if turn]
    turns = copy.deepcopy(truth)
    t = rng.choice(busy)
    del turns[t][rng.randrange(len(turns[t]))]
    out["dropped_call"] = _as_answer(turns)
    candidates = [(t, j) for t in busy for j in range(len(truth[t]))]
    rng.shuffle(candidates)
    for t, j in candidates:
        wrong = _wrong_argument(truth[t][j], rng)
        if wrong is not None:
            turns = copy.deepcopy(truth)
            turns[t][j] = wrong
            out["wrong_argument"] = _as_answer(turns)
            break
    turns = copy.deepcopy(truth)
    t = rng.randrange(len(turns))
    turns[t].insert(rng.randrange(len(turns[t]) + 1), rng.choice(truth[rng.choice(busy)]))
    out["extra_call"] = _as_answer(turns)
    turns = copy.deepcopy(truth)
    turns[t].append("lookup_weather(city='Paris')")  # no such function: BFCL records an error
    out["extra_unknown_call"] = _as_answer(turns)
    if len(truth) > 1:
        turns = copy.deepcopy(truth)
        t = rng.randrange(len(turns) - 1)
        turns[t], turns[t + 1] = turns[t + 1], turns[t]
        out["swapped_turns"] = _as_answer(turns)
    out["fewer_turns"] = _as_answer(truth[:-1])
    return out


def test_perturbed_answers_get_bfcls_verdicts(
    shared_data: Path, bfcl_checker: Callable[..., tuple[Any, ...]]
) -> None:
    rng = random.Random(13)
    outcomes: Counter[tuple[str, bool]] = Counter()
    labels: Counter[str | None] = Counter()
    for category in CATEGORIES:
        for question, truth in _category(shared_data, category)[:30]:
            for kind, result in _perturbations(truth, rng).items():
                ours = _ours(question, truth, copy.deepcopy(result))
                theirs = bfcl_checker(question, truth, copy.deepcopy(result))
                if ours[1] == "multi_turn:force_terminated":
                    assert ours[:2] == theirs, (question["id"], kind)
                else:
                    assert ours == theirs, (question["id"], kind)
                outcomes[kind, ours[0]] += 1
                labels[ours[1]] += 1
    # the perturbations reach every verdict BFCL gives, and an unknown call can leave a turn valid
    assert set(labels) == {
        None,
        "multi_turn:force_terminated",
        "multi_turn:empty_turn_model_response",
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
    }
    assert outcomes["split_steps", True] == 120
    assert outcomes["fewer_turns", False] == 120
    for kind in ("dropped_call", "wrong_argument", "extra_call", "swapped_turns"):
        assert outcomes[kind, False] > 0, kind
    assert outcomes["extra_unknown_call", True] > 0


def test_decoded_dicts_and_text_steps_are_read_as_bfcl_reads_them(
    shared_data: Path, bfcl_eval: None
) -> None:
    question, truth = _category(shared_data, "base")[0]
    assert truth[0] == [
        "cd(folder='document')",
        "mkdir(dir_name='temp')",
        "mv(source='final_report.pdf', destination='temp')",
    ]
    answer: Result = _as_answer(truth)
    answer[0] = [
        [{"cd": {"folder": "document"}}, {"mkdir": '{"dir_name": "temp"}'}],  # BFCL's FC form
        "I made the folder; now the move.",  # text: a message without calls
        [{"name": "mv", "arguments": {"source": "final_report.pdf", "destination": "temp"}}],
        "Done.",
    ]
    answer[2] = ["```\n[sort('final_report.pdf')]\n```"]  # a prompting model's text
    assert _ours(question, truth, answer) == (True, None, None)
    answer[2] = ["[sort('previous_report.pdf')]"]
    assert _ours(question, truth, answer)[1] == "multi_turn:execution_response_mismatch"


@pytest.mark.parametrize(
    ("call", "error_type"),
    [
        ("os.system('rm -rf /')", "bad_call:attribute_chain"),
        ("__import__('os').system('touch pwned')", "bad_call:attribute_chain"),
        ("__import__('os')", "bad_call:dunder_name"),
        ({"__class__": {}}, "bad_call:dunder_name"),
        ({"GorillaFileSystem.cd": {"folder": "x"}}, "bad_call:attribute_chain"),
        ("cd(folder=document)", "bad_call:non_literal"),
        ("cd(folder=open('x').read())", "bad_call:non_literal"),
        ("cd(*['x'])", "bad_call:non_literal"),
        ("cd(**{'folder': 'x'})", "bad_call:non_literal"),
        ("cd(folder='x'", "bad_call:syntax"),
        ("cd(folder='x', folder='y')", "bad_call:syntax"),
        ({"cd": "{not json"}, "bad_call:syntax"),
        ({"cd": {"not a name": 1}}, "bad_call:syntax"),
        ("just words", "bad_call:syntax"),
        (7, "bad_result:shape"),
    ],
)
def test_bad_calls_are_rejected_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, call: Any, error_type: str
) -> None:
    def no_session(*_: Any) -> None:
        raise AssertionError("a simulated API was built")

    monkeypatch.setattr(bfcl_multiturn, "_Session", no_session)
    question = MultiTurnQuestion("multi_turn_base_0", {}, ["GorillaFileSystem"], [["pwd()"], []])
    result = [[["pwd()"]], [[call]]]  # a good first turn: nothing of it runs either
    verdict = check_multi_turn(question, result)
    assert (verdict.valid, verdict.input_error, verdict.error_type) == (False, True, error_type)
    assert verdict.error is not None and verdict.error.startswith("result[1][0][0]")
    assert "Traceback" not in verdict.error
    assert not Path("pwned").exists()


@pytest.mark.parametrize(
    ("result", "where"),
    [
        ('[["pwd()"]]', "result must be a list of turns, not str"),
        ({"turns": []}, "result must be a list of turns, not dict"),
        ([["pwd()"], "pwd()"], "result[1]: a turn must be a list of steps, not str"),
        ([["pwd()"], [{"pwd": {}}]], "result[1][0]: a step must be a list of calls"),
        ([["pwd()"], ["[pwd("]], "result[1][0]: not Python-call syntax"),
    ],
)
def test_results_of_the_wrong_shape_are_rejected(
    monkeypatch: pytest.MonkeyPatch, result: Any, where: str
) -> None:
    monkeypatch.setattr(bfcl_multiturn, "_Session", None)  # building one would fail loudly
    question = MultiTurnQuestion("multi_turn_base_0", {}, ["GorillaFileSystem"], [["pwd()"], []])
    verdict = check_multi_turn(question, result)
    assert verdict.input_error and verdict.error is not None and where in verdict.error


def test_fewer_turns_is_force_terminated_and_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bfcl_multiturn, "_Session", None)
    question = MultiTurnQuestion("multi_turn_base_0", {}, ["GorillaFileSystem"], [["pwd()"], []])
    verdict = check_multi_turn(question, [[["pwd()"]]])
    assert (verdict.valid, verdict.input_error) == (False, False)
    assert verdict.error_type == "multi_turn:force_terminated"
    assert verdict.error is not None and "(1) does not match" in verdict.error


def test_calls_are_applied_as_written_and_unknown_names_are_not_run(bfcl_eval: None) -> None:
    config = {
        "GorillaFileSystem": {
            "root": {
                "alex": {
                    "type": "directory",
                    "contents": {"a.txt": {"type": "file", "content": "hi"}},
                }
            }
        }
    }
    truth = [["cat(file_name='a.txt')", "touch('b.txt')"]]
    question = MultiTurnQuestion("multi_turn_base_99", config, ["GorillaFileSystem"], truth)
    positional = check_multi_turn(question, [[["cat('a.txt')", "touch(file_name='b.txt')"]]])
    assert positional.valid
    refused = check_multi_turn(
        question, [[["exit()", "evil_helper(x=1)", "cat('a.txt')", "touch('b.txt')"]]]
    )
    assert refused.valid  # results of calls that are not run do not spoil the turn
    wrong = check_multi_turn(question, [[["cat('a.txt')", "touch('c.txt')"]]])
    assert wrong.error_type == "multi_turn:instance_state_mismatch" and wrong.turn == 0
    results = wrong.details["execution_results"][0]["model"][0]
    assert results[0] == '{"file_content": "hi"}'
    missing = check_multi_turn(question, [[["exit()", "evil_helper(x=1)", "touch('b.txt')"]]])
    assert missing.error_type == "multi_turn:execution_response_mismatch"
    assert missing.details["missing_items"] == ['{"file_content": "hi"}']
    assert missing.details["execution_results"][0]["model"][0][:2] == [
        "Error during execution: Function call exit is not allowed.",
        "Error during execution: name 'evil_helper' is not defined",
    ]


def test_missing_package_gives_one_line_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bfcl_multiturn, "_BACKEND_CONFIG", "bfcl_eval_absent.config")
    bfcl_multiturn._api_class.cache_clear()
    question = MultiTurnQuestion("multi_turn_base_0", {}, ["GorillaFileSystem"], [["pwd()"]])
    with pytest.raises(bfcl_multiturn.SimulatorError) as raised:
        check_multi_turn(question, [[["pwd()"]]])
    assert str(raised.value) == INSTALL_HINT and "\n" not in INSTALL_HINT
    bfcl_multiturn._api_class.cache_clear()


def test_questions_are_read_with_their_function_docs(shared_data: Path) -> None:
    bfcl = shared_data / "bfcl"
    name = "BFCL_v4_multi_turn_miss_func.json"
    tasks = [t for t in read_bfcl(bfcl / name, bfcl / "possible_answer" / name)]
    assert len(tasks) == 200 and all(isinstance(t, Task) for t in tasks)
    task = tasks[0]
    assert isinstance(task, Task) and task.id == "multi_turn_miss_func_0"
    assert task.category == "multi_turn_miss_func"
    docs = {
        c: [json.loads(line)["name"] for line in (bfcl / "multi_turn_func_doc" / f).open()]
        for c, f in (
            ("GorillaFileSystem", "gorilla_file_system.json"),
            ("TwitterAPI", "posting_api.json"),
        )
    }
    question = _rows(bfcl / name)[0]
    assert [t.name for t in task.tools] == [
        n for c in question["involved_classes"] for n in docs[c]
    ]
    data = task.metadata["bfcl_multi_turn"]
    assert isinstance(data, dict)
    assert data["missed_function"] == {"3": ["sort"]} and data["path"] == question["path"]
    assert data["initial_config"] == question["initial_config"]
    truth = data["ground_truth"]
    assert isinstance(truth, list) and truth[0][0] == "cd(folder='document')"
    # the expected calls are the ground truth's, positional arguments named by the docs
    sort = next(c for c in task.expected_calls or [] if c.name == "sort")
    assert sort.arguments == {"file_name": ["final_report.pdf"]}
    assert len(task.expected_calls or []) == sum(len(turn) for turn in truth)
    assert task.input == question["question"] and task.input[3] == []  # the holdout turn


def test_bad_multi_turn_lines_are_read_errors(shared_data: Path, tmp_path: Path) -> None:
    bfcl = shared_data / "bfcl"
    name = "BFCL_v4_multi_turn_base.json"
    questions = _rows(bfcl / name)[:3]
    answers = _rows(bfcl / "possible_answer" / name)[:3]
    answers[1]["ground_truth"][2] = ["sort(os.path)"]
    questions[2]["involved_classes"] = ["NoSuchAPI"]
    folder = tmp_path / "data"
    folder.mkdir()
    q = write_jsonl(folder / name, questions)
    a = write_jsonl(tmp_path / "answers.json", answers)
    items = list(read_bfcl(q, a))
    errors = [(e.source, e.line, e.field) for e in items if isinstance(e, ReadError)]
    assert errors == [
        (str(a), 2, "ground_truth[2][0]"),
        (str(q), 1, "involved_classes"),  # no multi_turn_func_doc folder beside the file
        (str(q), 2, "id"),  # its answer was unreadable
        (str(q), 3, "involved_classes"),
    ]
    messages = [e.message for e in items if isinstance(e, ReadError)]
    assert "'os.path' is not a literal" in messages[0]
    docs = folder / "multi_turn_func_doc" / "posting_api.json"
    assert messages[1] == f"the function docs of TwitterAPI are missing: {docs}"
    assert messages[3] == "unknown BFCL class 'NoSuchAPI'"


def test_an_answer_becomes_a_trace_of_its_calls(shared_data: Path) -> None:
    bfcl = shared_data / "bfcl"
    name = "BFCL_v4_multi_turn_base.json"
    task = next(iter(read_bfcl(bfcl / name, bfcl / "possible_answer" / name)))
    assert isinstance(task, Task)
    result = [
        [[{"cd": {"folder": "document"}}, "mkdir('temp')"], "Made it."],
        [],
        [["sort('final_report.pdf')"]],
        [],
    ]
    trace = prediction_to_trace(task, result)
    assert [s.kind for s in trace.steps] == [
        StepKind.tool_call,
        StepKind.tool_call,
        StepKind.llm,
        StepKind.tool_call,
    ]
    assert [(c.name, c.arguments) for c in trace.tool_calls] == [
        ("cd", {"folder": "document"}),
        ("mkdir", {"dir_name": "temp"}),
        ("sort", {"file_name": "final_report.pdf"}),
    ]
    assert trace.output == "Made it." and trace.metadata["parse_error"] is None
    bad = prediction_to_trace(task, [[["cd(folder=x)"]], [], [], []])
    assert bad.tool_calls == [] and bad.metadata["parse_error_type"] == "bad_call:non_literal"
    [sample] = score_traces([bad], load_suite("toolcall"))
    assert sample.values["tool_selection"] == 0.0
    assert sample.details["tool_selection"]["error_type"] == "parse_error"


def test_score_multi_turn_base_from_the_command_line(
    shared_data: Path, tmp_path: Path, bfcl_eval: None
) -> None:
    bfcl = shared_data / "bfcl"
    name = "BFCL_v4_multi_turn_base.json"
    truth = {r["id"]: r["ground_truth"] for r in _rows(bfcl / "possible_answer" / name)}
    answers = {key: _as_answer(turns) for key, turns in truth.items()}
    answers["multi_turn_base_1"] = answers["multi_turn_base_1"][:2]
    answers["multi_turn_base_2"][0] = [["touch(file_name='Other.txt')"]]
    answers["multi_turn_base_3"][0] = [["os.remove('x')"]]
    answers["multi_turn_base_4"] = "not a list"  # type: ignore[assignment]
    del answers["multi_turn_base_5"]
    preds = write_jsonl(
        tmp_path / "preds.jsonl", [{"id": key, "result": r} for key, r in answers.items()]
    )
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app,
        [
            "toolcall", "score", "--format", "bfcl", "--dataset", str(bfcl / name),
            "--answers", str(bfcl / "possible_answer" / name), "--predictions", str(preds),
            "--mode", "bfcl", "--json", str(out), "--db", str(tmp_path / "ag.db"),
            "--jobs", "1", "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    samples = {s["id"]: s for s in doc["samples"]}
    assert len(samples) == 200 and doc["errors"] == []
    values = {k: s["metrics"]["value_accuracy"] for k, s in samples.items()}
    wrong = {k for k, v in values.items() if v != 1.0}
    assert wrong == {f"multi_turn_base_{i}" for i in range(1, 6)}
    assert all(values[k] == 0.0 for k in wrong)
    types = {k: samples[k]["details"]["value_accuracy"]["error_type"] for k in sorted(wrong)}
    assert types == {
        "multi_turn_base_1": "multi_turn:force_terminated",
        "multi_turn_base_2": "multi_turn:instance_state_mismatch",
        "multi_turn_base_3": "bad_call:attribute_chain",
        "multi_turn_base_4": "bad_result:shape",
        "multi_turn_base_5": "run_error",
    }
    assert {samples[k]["error_type"] for k in wrong} == set(types.values())
    state = samples["multi_turn_base_2"]["details"]["value_accuracy"]
    assert state["bfcl_error_type"] == "multi_turn:instance_state_mismatch" and state["turn"] == 0
    bad = samples["multi_turn_base_3"]["details"]["value_accuracy"]
    assert bad["bfcl_error_type"] is None and "attribute chain" in bad["input_error"]
    assert all(s["error"] is None for s in samples.values())


def test_score_without_bfcl_eval_exits_2_with_the_install_line(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bfcl_multiturn, "_BACKEND_CONFIG", "bfcl_eval_absent.config")
    bfcl = shared_data / "bfcl"
    name = "BFCL_v4_multi_turn_base.json"
    preds = write_jsonl(tmp_path / "p.jsonl", [])
    result = CliRunner().invoke(
        app,
        [
            "toolcall", "score", "--format", "bfcl", "--dataset", str(bfcl / name),
            "--answers", str(bfcl / "possible_answer" / name), "--predictions", str(preds),
            "--db", str(tmp_path / "ag.db"), "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "pip install --no-deps bfcl-eval==2026.3.23" in result.output
    assert not (tmp_path / "ag.db").exists()


def test_run_refuses_multi_turn_questions(shared_data: Path, tmp_path: Path) -> None:
    bfcl = shared_data / "bfcl"
    name = "BFCL_v4_multi_turn_base.json"
    result = CliRunner().invoke(
        app,
        [
            "toolcall", "run", "--endpoint", "http://127.0.0.1:9", "--model", "m",
            "--format", "bfcl", "--dataset", str(bfcl / name),
            "--answers", str(bfcl / "possible_answer" / name),
            "--out", str(tmp_path / "p.jsonl"),
        ],
    )  # fmt: skip
    assert result.exit_code == 2 and "executed turn by turn" in result.output


def test_parse_call_keeps_positional_arguments() -> None:
    [call] = parse_call("diff('a.txt', file_name2=\"b.txt\")")
    assert (call.name, call.args, dict(call.kwargs)) == (
        "diff",
        ("a.txt",),
        {"file_name2": "b.txt"},
    )
    calls = parse_call({"cd": {"folder": "x"}, "ls": "{}"})
    assert [(c.name, dict(c.kwargs)) for c in calls] == [("cd", {"folder": "x"}), ("ls", {})]
