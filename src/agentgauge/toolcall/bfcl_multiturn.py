"""BFCL's multi-turn checker, reproduced verdict for verdict on BFCL's own simulated APIs.

A multi-turn question (``multi_turn_base``, ``multi_turn_miss_func``, ``multi_turn_miss_param``,
``multi_turn_long_context``) gives the initial state of some of BFCL's simulated APIs
(``initial_config`` for the ``involved_classes``: a file system, a trading bot, a travel
booker...) and, per user turn, the ground-truth calls. A model's answer is BFCL's result layout:
a list of turns, each a list of steps (one model response each), each a list of calls. A call is
a string in Python-call syntax (``cd(folder='document')``) or a decoded dict
(``{"cd": {"folder": "document"}}``, the arguments also as a JSON string, or
``{"name": "cd", "arguments": {...}}``); a step may also be the model's text, which is read as a
Python call list when it starts like one (``[cd(folder='document')]``) and is otherwise a message
without calls.

The check follows ``bfcl_eval/eval_checker/multi_turn_eval/multi_turn_checker.py``
(bfcl-eval 2026.3.23) turn by turn:

- a result whose number of turns differs from the ground truth's is ``multi_turn:force_terminated``;
- the model's calls and the ground truth's run on two separate sets of instances of the involved
  classes, built as BFCL builds them and kept across turns; each call's result is recorded as BFCL
  records it (a string as it is, a dict as JSON, anything else with ``str``, an exception as
  ``Error during execution: <message>``);
- a turn whose ground truth is empty is executed and not checked; otherwise a turn without a call
  is ``multi_turn:empty_turn_model_response``, the instances' public attributes must then be
  equal (``multi_turn:instance_state_mismatch``), and every result of the turn's ground-truth calls
  must be among the results of the model's calls so far, counted with multiplicity
  (``multi_turn:execution_response_mismatch``).

Unlike BFCL, nothing is ever evaluated: each call is parsed with ``ast`` (argument values must be
literals) and applied with ``getattr`` to a public method of the involved classes, its arguments
as written, positional ones included. A name that is not such a method is not run and gets the
result BFCL records for an undefined name (``Error during execution: name 'f' is not defined``);
the names BFCL refuses (``exit``, ``kill``...) get BFCL's refusal. Input that is not a list of
turns of steps of calls, text that starts like a call and does not parse, an attribute chain
(``os.system(...)``), a dunder name or an argument that is not a literal is rejected before
anything runs (:class:`CallInputError`).

BFCL's simulated APIs come from the ``bfcl-eval`` package, installed without its dependencies
(``pip install --no-deps bfcl-eval==2026.3.23``; its math API also needs ``mpmath``).
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from agentgauge.model import JSON, Task, ToolSpec
from agentgauge.toolcall.schema import find_tool, parameter_names

__all__ = [
    "BFCL_EVAL_VERSION",
    "INSTALL_HINT",
    "MULTI_TURN_KEY",
    "CallInputError",
    "MultiTurnQuestion",
    "MultiTurnVerdict",
    "ParsedCall",
    "SimulatorError",
    "check_multi_turn",
    "is_multi_turn",
    "named_arguments",
    "parse_call",
    "parse_result",
    "require_simulators",
]

BFCL_EVAL_VERSION = "2026.3.23"
INSTALL_HINT = (
    "checking BFCL multi-turn answers needs BFCL's simulated APIs: "
    f"pip install --no-deps bfcl-eval=={BFCL_EVAL_VERSION} mpmath"
)
MULTI_TURN_KEY = "bfcl_multi_turn"
"""The key of ``Task.metadata`` that holds a multi-turn question's initial state and ground
truth."""

# BFCL refuses these names before evaluating a call (multi_turn_utils.execute_multi_turn_func_call).
_REFUSED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
_BACKEND_CONFIG = "bfcl_eval.constants.executable_backend_config"
_CALL_START = re.compile(r"^\[?\s*[A-Za-z_][\w.]*\s*\(")
_EMPTY_LIST = re.compile(r"^\[\s*\]$")
_SHOWN = 300


class CallInputError(ValueError):
    """A model answer that is not checked: nothing of it is executed.

    Args:
        error_type: ``bad_result:shape``, ``bad_call:syntax``, ``bad_call:attribute_chain``,
            ``bad_call:dunder_name`` or ``bad_call:non_literal``.
        message: what is wrong and where.
    """

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


class SimulatorError(RuntimeError):
    """BFCL's simulated APIs cannot be loaded (package missing, unknown class)."""


@dataclass(frozen=True)
class ParsedCall:
    """One call as written: its function name, positional and keyword arguments.

    Args:
        name: the function name (an identifier).
        args: the positional arguments.
        kwargs: the keyword arguments.
    """

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- parsing


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise CallInputError("bad_call:syntax", f"{where}: a function name must be a string")
    if "." in name:
        raise CallInputError(
            "bad_call:attribute_chain", f"{where}: {name!r} is an attribute chain, not a function"
        )
    if not name.isidentifier():
        raise CallInputError("bad_call:syntax", f"{where}: {name!r} is not a function name")
    if name.startswith("__"):
        raise CallInputError("bad_call:dunder_name", f"{where}: {name!r} is a dunder name")
    return name


def _literal(node: ast.expr, where: str) -> Any:
    if isinstance(node, ast.Starred):
        raise CallInputError("bad_call:non_literal", f"{where}: '*' arguments are not literals")
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise CallInputError(
            "bad_call:non_literal", f"{where}: {ast.unparse(node)!r} is not a literal"
        ) from None


def _call_from_node(node: ast.expr, where: str) -> ParsedCall:
    if not isinstance(node, ast.Call):
        raise CallInputError("bad_call:syntax", f"{where}: {ast.unparse(node)!r} is not a call")
    if isinstance(node.func, ast.Attribute):
        raise CallInputError(
            "bad_call:attribute_chain",
            f"{where}: {ast.unparse(node.func)!r} is an attribute chain, not a function",
        )
    if not isinstance(node.func, ast.Name):
        raise CallInputError(
            "bad_call:syntax", f"{where}: {ast.unparse(node.func)!r} is not a function name"
        )
    name = _check_name(node.func.id, where)
    args = tuple(_literal(a, f"{where}: {name} argument {i + 1}") for i, a in enumerate(node.args))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise CallInputError(
                "bad_call:non_literal", f"{where}: '**' arguments are not literals"
            )
        if kw.arg in kwargs:
            raise CallInputError("bad_call:syntax", f"{where}: {kw.arg!r} is given twice")
        kwargs[kw.arg] = _literal(kw.value, f"{where}: {name}({kw.arg}=...)")
    return ParsedCall(name, args, kwargs)


def _calls_in_text(text: str, where: str) -> list[ParsedCall]:
    """The calls of ``f(a=1)`` or ``[f(a=1), g()]`` (BFCL's Python call list)."""
    body = text.strip("`\n ")
    if _EMPTY_LIST.match(body):
        return []
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError as exc:
        raise CallInputError(
            "bad_call:syntax", f"{where}: not Python-call syntax ({exc.msg}): {body[:80]!r}"
        ) from None
    except (ValueError, MemoryError, RecursionError):
        raise CallInputError("bad_call:syntax", f"{where}: cannot be read: {body[:80]!r}") from None
    nodes = tree.body.elts if isinstance(tree.body, ast.List | ast.Tuple) else [tree.body]
    return [_call_from_node(n, where) for n in nodes]


def _keyword_arguments(raw: Any, name: str, where: str) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise CallInputError(
                "bad_call:syntax", f"{where}: arguments of {name!r} are not JSON: {exc.msg}"
            ) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CallInputError("bad_call:syntax", f"{where}: arguments of {name!r} must be an object")
    for key in raw:
        if not isinstance(key, str) or not key.isidentifier():
            raise CallInputError(
                "bad_call:syntax", f"{where}: {key!r} is not an argument name of {name!r}"
            )
    return dict(raw)


def parse_call(call: Any, where: str = "call") -> list[ParsedCall]:
    """Read one call of a step: Python-call text or a decoded dict; never evaluates anything.

    A dict in BFCL's decoded form may hold several calls (one per key), as BFCL reads it.

    Args:
        call: ``"cd(folder='x')"``, ``{"cd": {"folder": "x"}}``, ``{"cd": '{"folder": "x"}'}``
            or ``{"name": "cd", "arguments": {...}}``.
        where: names the call in error messages.

    Raises:
        CallInputError: for anything that is not a readable call of a plain function name with
            literal arguments.
    """
    if isinstance(call, str):
        return _calls_in_text(call, where)
    if isinstance(call, dict):
        if isinstance(call.get("name"), str) and "arguments" in call:
            name = _check_name(call["name"], where)
            return [ParsedCall(name, (), _keyword_arguments(call["arguments"], name, where))]
        if not call:
            raise CallInputError("bad_call:syntax", f"{where}: an empty object is not a call")
        return [
            ParsedCall(_check_name(name, where), (), _keyword_arguments(args, str(name), where))
            for name, args in call.items()
        ]
    raise CallInputError(
        "bad_result:shape",
        f"{where}: a call must be Python-call text or an object, not {type(call).__name__}",
    )


def _step_calls(step: Any, where: str) -> list[ParsedCall] | str:
    """A step's calls, or its text when it is a message without calls."""
    if isinstance(step, str):
        if _EMPTY_LIST.match(step.strip("`\n ")) or _CALL_START.match(step.strip("`\n ")):
            return _calls_in_text(step, where)
        return step
    if not isinstance(step, list):
        raise CallInputError(
            "bad_result:shape",
            f"{where}: a step must be a list of calls (or the model's text), "
            f"not {type(step).__name__}",
        )
    return [c for j, call in enumerate(step) for c in parse_call(call, f"{where}[{j}]")]


def parse_result(result: Any) -> list[list[list[ParsedCall] | str]]:
    """Read a whole answer (turns of steps of calls) before anything of it runs.

    Args:
        result: BFCL's result layout: a list of turns, each a list of steps, each a list of
            calls or the model's text.

    Returns:
        Per turn, per step, the step's calls, or its text when it holds no call.

    Raises:
        CallInputError: naming the first turn, step and call at fault.
    """
    if not isinstance(result, list):
        raise CallInputError(
            "bad_result:shape", f"result must be a list of turns, not {type(result).__name__}"
        )
    turns: list[list[list[ParsedCall] | str]] = []
    for t, turn in enumerate(result):
        if not isinstance(turn, list):
            raise CallInputError(
                "bad_result:shape",
                f"result[{t}]: a turn must be a list of steps, not {type(turn).__name__}",
            )
        turns.append([_step_calls(step, f"result[{t}][{s}]") for s, step in enumerate(turn)])
    return turns


def named_arguments(call: ParsedCall, tools: Sequence[ToolSpec]) -> dict[str, JSON]:
    """A call's arguments by name, for reports and the call-level metrics: positional ones named
    by the function's parameter order (``*1``, ``*2``... past its last parameter), tuples and
    sets as lists, other non-JSON literals as their ``repr``.

    Args:
        call: a parsed call.
        tools: the functions offered.
    """
    tool = find_tool(tools, call.name)
    names = parameter_names(tool) if tool is not None else []
    named: dict[str, JSON] = {
        (names[i] if i < len(names) else f"*{i + 1}"): _as_json(v) for i, v in enumerate(call.args)
    }
    named.update({k: _as_json(v) for k, v in call.kwargs.items()})
    return named


def _as_json(value: Any) -> JSON:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    if isinstance(value, set | frozenset):
        return [_as_json(v) for v in sorted(value, key=repr)]
    if isinstance(value, dict):
        return {str(k): _as_json(v) for k, v in value.items()}
    return repr(value)


# --------------------------------------------------------------------------- the question


@dataclass(frozen=True)
class MultiTurnQuestion:
    """What the checker needs of a multi-turn question.

    Args:
        id: the question id (``multi_turn_base_0``); its category decides, as in BFCL, whether
            the APIs load their long-context state.
        initial_config: the initial state of each involved class.
        involved_classes: BFCL's class names, in the question's order.
        ground_truth: per turn, the ground-truth calls as Python-call text.
    """

    id: str
    initial_config: Mapping[str, Any]
    involved_classes: Sequence[str]
    ground_truth: Sequence[Sequence[str]]

    @property
    def long_context(self) -> bool:
        """Whether BFCL loads the long-context state (``long_context`` and ``composite``
        categories, read from the id as BFCL does)."""
        category = self.id.rsplit("_", 1)[0]
        return "long_context" in category or "composite" in category

    @classmethod
    def from_task(cls, task: Task) -> MultiTurnQuestion:
        """The question of a task read from a BFCL multi-turn file.

        Args:
            task: a task with ``metadata["bfcl_multi_turn"]``.

        Raises:
            ValueError: for a task that is not a BFCL multi-turn question.
        """
        data = task.metadata.get(MULTI_TURN_KEY)
        if not isinstance(data, dict):
            raise ValueError(f"task {task.id!r} is not a BFCL multi-turn question")
        return cls(
            id=task.id,
            initial_config=data["initial_config"],  # type: ignore[arg-type]
            involved_classes=data["involved_classes"],  # type: ignore[arg-type]
            ground_truth=data["ground_truth"],  # type: ignore[arg-type]
        )


def is_multi_turn(task: Task) -> bool:
    """Whether the task is a BFCL multi-turn question.

    Args:
        task: any task.
    """
    return MULTI_TURN_KEY in task.metadata


# --------------------------------------------------------------------------- BFCL's APIs


def _backend_config() -> Any:
    try:
        return importlib.import_module(_BACKEND_CONFIG)
    except ImportError:
        raise SimulatorError(INSTALL_HINT) from None


def require_simulators() -> None:
    """Check that BFCL's simulated APIs can be loaded.

    Raises:
        SimulatorError: with a one-line message saying how to install them.
    """
    _backend_config()


@cache
def _api_class(name: str) -> tuple[type, bool, tuple[str, ...]]:
    """BFCL's class ``name``: the class, whether it is stateless, its public method names."""
    config = _backend_config()
    module_name = config.CLASS_FILE_PATH_MAPPING.get(name)
    if module_name is None:
        raise SimulatorError(f"BFCL has no simulated API class {name!r}")
    try:
        cls = getattr(importlib.import_module(module_name), name)
    except ImportError as exc:
        raise SimulatorError(f"BFCL's {name} cannot be loaded ({exc}): {INSTALL_HINT}") from None
    # BFCL lists an instance's public methods with inspect.getmembers(..., ismethod).
    methods = tuple(
        n for n, _ in inspect.getmembers(cls(), predicate=inspect.ismethod) if not n.startswith("_")
    )
    return cls, name in config.STATELESS_CLASSES, methods


class _Session:
    """One side's instances of the involved classes, kept across turns."""

    def __init__(self, question: MultiTurnQuestion) -> None:
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for name in question.involved_classes:
            cls, stateless, methods = _api_class(name)
            instance = cls()
            if not stateless:
                config = question.initial_config.get(name, {})
                instance._load_scenario(copy.deepcopy(config), long_context=question.long_context)
            self.instances[name] = instance
            # as in BFCL, a later class's method hides an earlier one's of the same name
            self.methods.update(dict.fromkeys(methods, instance))

    def run(self, call: ParsedCall) -> str:
        """The call's result as BFCL records it."""
        if call.name in _REFUSED:
            return f"Error during execution: Function call {call.name} is not allowed."
        instance = self.methods.get(call.name)
        if instance is None:
            return f"Error during execution: name {call.name!r} is not defined"
        try:
            value = getattr(instance, call.name)(*call.args, **call.kwargs)
        except Exception as exc:  # BFCL records every failure of a call as its result
            return f"Error during execution: {exc}"
        if type(value) is str:
            return value
        if type(value) is dict:
            try:
                return json.dumps(value)
            except Exception:  # BFCL falls back to str() for a dict json cannot write
                return str(value)
        return str(value)


# --------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class MultiTurnVerdict:
    """BFCL's verdict on one multi-turn answer, or why the answer was not checked.

    Args:
        valid: whether BFCL counts the answer correct.
        error_type: BFCL's label (``multi_turn:instance_state_mismatch``...), or for an answer
            that was not checked the :class:`CallInputError` type.
        error: BFCL's message, or what is wrong with the input.
        input_error: the answer was rejected before anything ran.
        turn: the turn at fault, when one is.
        details: what differed: ``differences`` (attribute -> model and ground-truth values),
            ``missing_items`` (ground-truth results the model's calls did not give),
            ``execution_results`` (per turn so far, the model's results per step and the ground
            truth's), each shortened to a few hundred characters.
    """

    valid: bool
    error_type: str | None = None
    error: str | None = None
    input_error: bool = False
    turn: int | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _short(value: Any) -> JSON:
    if isinstance(value, bool | int | float) or value is None:
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _differences(model: Any, truth: Any) -> dict[str, Any]:
    """BFCL's ``_compare_instances``: the public attributes of the ground truth's instance
    whose value differs on the model's."""
    diffs: dict[str, Any] = {}
    for attr, expected in vars(truth).items():
        if attr.startswith("_"):
            continue
        actual = getattr(model, attr)
        if actual != expected:
            diffs[attr] = {"model": _short(actual), "ground_truth": _short(expected)}
    return diffs


def _missing(expected: Sequence[str], given: Sequence[str]) -> list[str]:
    """BFCL's unordered containment: the expected results not among the given ones, each given
    result used once."""
    pool = list(given)
    missing = []
    for item in expected:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing


def _executions(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "model": [[_short(r) for r in step] for step in turn["model"]],
            "ground_truth": [_short(r) for r in turn["ground_truth"]],
        }
        for turn in log
    ]


def check_multi_turn(question: MultiTurnQuestion, result: Any) -> MultiTurnVerdict:
    """BFCL's multi-turn verdict on one answer.

    Args:
        question: the question (initial state and ground truth).
        result: the model's answer in BFCL's result layout (see the module docstring).

    Raises:
        SimulatorError: when BFCL's simulated APIs cannot be loaded.
    """
    if not isinstance(result, list):
        return _rejected(
            CallInputError(
                "bad_result:shape", f"result must be a list of turns, not {type(result).__name__}"
            )
        )
    expected_turns = [
        [c for j, text in enumerate(turn) for c in parse_call(text, f"ground_truth[{t}][{j}]")]
        for t, turn in enumerate(question.ground_truth)
    ]
    if len(result) != len(expected_turns):
        return MultiTurnVerdict(
            False,
            "multi_turn:force_terminated",
            "Model was force-terminated during inference phase. The length of the model result "
            f"turns ({len(result)}) does not match the length of the ground truth turns "
            f"({len(expected_turns)}).",
        )
    try:
        turns = parse_result(result)
    except CallInputError as exc:
        return _rejected(exc)
    model, truth = _Session(question), _Session(question)
    so_far: list[str] = []
    log: list[dict[str, Any]] = []
    for t, (steps, expected) in enumerate(zip(turns, expected_turns, strict=True)):
        # BFCL drops the steps without a call (text, an empty list) before checking.
        calls = [step for step in steps if isinstance(step, list) and step]
        model_results = [[model.run(c) for c in step] for step in calls]
        truth_results = [truth.run(c) for c in expected]
        so_far.extend(r for step in model_results for r in step)
        log.append({"model": model_results, "ground_truth": truth_results})
        if not expected:
            continue
        if not calls:
            return MultiTurnVerdict(
                False,
                "multi_turn:empty_turn_model_response",
                f"Model response list is empty for turn {t}",
                turn=t,
                details={"execution_results": _executions(log)},
            )
        for name, instance in truth.instances.items():
            diffs = _differences(model.instances[name], instance)
            if diffs:
                return MultiTurnVerdict(
                    False,
                    "multi_turn:instance_state_mismatch",
                    f"Model instance for {name} does not match the state with ground truth "
                    "instance.",
                    turn=t,
                    details={"differences": diffs, "execution_results": _executions(log)},
                )
        missing = _missing(truth_results, so_far)
        if missing:
            return MultiTurnVerdict(
                False,
                "multi_turn:execution_response_mismatch",
                "Model response execution results so far does not contain all the ground truth "
                f"response execution results for turn {t}.",
                turn=t,
                details={
                    "missing_items": [_short(m) for m in missing],
                    "execution_results": _executions(log),
                },
            )
    return MultiTurnVerdict(True)


def _rejected(exc: CallInputError) -> MultiTurnVerdict:
    return MultiTurnVerdict(False, exc.error_type, exc.message, input_error=True)
