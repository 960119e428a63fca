"""Tier 3: graph metrics over a trace's tool calls and agent-to-agent messages (networkx).

Two graphs are built from the trace's steps, in step order:

* the **tool graph**: a directed graph whose nodes are tool names and whose edges are the
  transitions the agent made, one edge ``a → b`` for each tool call ``b`` that directly follows
  a call of ``a`` (self-loops for repeated calls);
* the **interaction graph**: an undirected graph whose nodes are the trace's agents (every
  ``Step.agent``, and the ``recipient`` of every message) and whose edges join the sender and
  the recipient of every message.

Only what the agents produced is measured (the DESIGN ruling): steps of the environment — an
``agent`` in ``environment_agents``, by default "user", "environment", "system" and "tool",
as in the behaviour metrics — are not an agent's work, are not nodes of the interaction graph,
and their messages are not the team's communication. A single agent answering a user is a
single agent.

A **message** is a step that carries a ``message_type`` or whose kind is ``message`` or
``handoff``; a ``handoff`` step without a ``message_type`` counts as a ``handoff`` message.
A **coordination message** has type ``coordination``, ``status_update`` or ``handoff`` (the
spec's list); ``task_request``, ``result_delivery`` and ``data_transfer`` are productive.

Unlike the anchor system, nothing here is a function of the graph's shape alone: path
convergence measures detours and repeats in the actual call sequence, tool selection is checked
against the task's own references, and a trace with nothing to measure gives ``None`` with a
reason, never a placeholder. ``tool_efficiency`` and ``coordination_quality`` are the two
composite inputs of the ``review`` suite built from these metrics; while the engine scores a
batch, a part they share with a metric of the same suite (path convergence, the balance, ...)
is worked out once per trace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Literal

import numpy as np

from agentgauge.metrics.base import MetricResult, metric, shared_per_trace
from agentgauge.metrics.behavior import DEFAULT_ENVIRONMENT_AGENTS
from agentgauge.model import MessageType, Step, StepKind, Trace

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "COORDINATION_TYPES",
    "CoordinationCentrality",
    "CoordinationQuality",
    "TaskDistributionBalance",
    "ToolEfficiency",
    "communication_overhead",
    "interaction_graph",
    "path_convergence",
    "tool_graph",
    "tool_selection_accuracy",
]

COORDINATION_TYPES = frozenset(
    {MessageType.coordination, MessageType.status_update, MessageType.handoff}
)
"""Message types that organise the work rather than carry it (lower share is better)."""

_UNNAMED_AGENT = "(unnamed agent)"


def _tool_steps(trace: Trace) -> list[Step]:
    return [s for s in trace.steps if s.tool_call is not None]


def _message_type(step: Step) -> MessageType | None:
    if step.message_type is not None:
        return step.message_type
    if step.kind is StepKind.handoff:
        return MessageType.handoff
    return None


def _is_message(step: Step) -> bool:
    return step.message_type is not None or step.kind in (StepKind.message, StepKind.handoff)


def _environment(names: Collection[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise ValueError(f"environment_agents: expected a list of names, got {names!r}")
    return frozenset(str(n).lower() for n in names)


def _is_environment(agent: str | None, environment: frozenset[str]) -> bool:
    return agent is not None and agent.lower() in environment


def tool_graph(trace: Trace) -> nx.DiGraph:
    """The directed graph of tool-to-tool transitions in the trace's call order.

    Args:
        trace: the trace whose tool calls are read.

    Returns:
        Nodes are tool names (attribute ``calls``: how often each was called); an edge
        ``a → b`` (attribute ``count``) for every call of ``b`` directly after a call of ``a``.
    """
    import networkx as nx  # on first use: a fifth of a second of every command's start

    names = [s.tool_call.name for s in _tool_steps(trace) if s.tool_call is not None]
    graph = nx.DiGraph()
    for name, calls in Counter(names).items():
        graph.add_node(name, calls=calls)
    for a, b in pairwise(names):
        count = graph.edges[a, b]["count"] + 1 if graph.has_edge(a, b) else 1
        graph.add_edge(a, b, count=count)
    return graph


def interaction_graph(
    trace: Trace, environment_agents: Collection[str] = DEFAULT_ENVIRONMENT_AGENTS
) -> nx.Graph:
    """The undirected graph of who exchanged messages with whom.

    Args:
        trace: the trace whose steps are read.
        environment_agents: names (any case) that are the environment, not agents.

    Returns:
        Nodes are every named agent of the trace (senders of any step, recipients of
        messages) except the environment; an edge (attribute ``messages``: how many) joins the
        two ends of every message between two different named agents.
    """
    import networkx as nx

    environment = _environment(environment_agents)
    graph = nx.Graph()
    for step in trace.steps:
        if _is_environment(step.agent, environment):
            continue
        if step.agent is not None:
            graph.add_node(step.agent)
        if (
            not _is_message(step)
            or step.recipient is None
            or _is_environment(step.recipient, environment)
        ):
            continue
        graph.add_node(step.recipient)
        if step.agent is None or step.agent == step.recipient:
            continue
        if graph.has_edge(step.agent, step.recipient):
            graph.edges[step.agent, step.recipient]["messages"] += 1
        else:
            graph.add_edge(step.agent, step.recipient, messages=1)
    return graph


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (order-preserving, gaps allowed)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


@metric("path_convergence", description="minimum required transitions / transitions taken")
def path_convergence(trace: Trace) -> MetricResult:
    """Minimum required tool-to-tool transitions over the transitions actually taken (1.0 = no
    detour).

    Without a reference, the tool graph of the transitions the agent itself made
    (:func:`tool_graph`) gives the minimum: the length, in transitions, of the shortest path
    from the first tool called to the last one, so
    ``value = (len(nx.shortest_path(G, first, last)) − 1) / (calls − 1)``; loops, retries and
    detours lower it. A single call is both start and goal: 1.0. A run that ends on the tool it
    started with needs no transition, so every transition it took was a detour: 0.0.

    With ``Task.reference_trajectory`` (the tools of a minimal solution, in order),
    ``value = LCS(reference, actual) / max(len(reference), len(actual))`` where LCS is the
    longest common subsequence of the tool names: an actual path that contains the reference in
    order scores ``len(reference) / len(actual)``, and reference calls it never made lower it
    further (``0.0`` when it made none of them).

    Args:
        trace: the trace to score. ``None`` when it has no tool call and no reference
            trajectory expects one.
    """
    return shared_per_trace(trace, _path_convergence)


def _path_convergence(trace: Trace) -> MetricResult:
    actual = [s.tool_call.name for s in _tool_steps(trace) if s.tool_call is not None]
    reference = trace.task.reference_tool_names()
    if reference is not None:
        if not reference and not actual:
            return MetricResult(
                value=1.0,
                details={"mode": "reference", "reference": [], "actual": []},
                reason="no tool call expected and none made",
            )
        matched = _lcs_length(reference, actual)
        return MetricResult(
            value=matched / max(len(reference), len(actual)),
            details={
                "mode": "reference",
                "reference": reference,
                "actual": actual,
                "matched_in_order": matched,
            },
        )
    if not actual:
        return MetricResult.missing("the trace has no tool call and the task no reference")
    import networkx as nx

    graph = tool_graph(trace)
    shortest = nx.shortest_path(graph, actual[0], actual[-1])
    details = {
        "mode": "tool_graph",
        "actual": actual,
        "shortest_path": list(shortest),
        "minimum_transitions": len(shortest) - 1,
        "transitions": len(actual) - 1,
    }
    if len(actual) == 1:
        return MetricResult(value=1.0, details=details, reason="a single call")
    return MetricResult(value=(len(shortest) - 1) / (len(actual) - 1), details=details)


def _call_context(step: Step, optimal_tools: dict[str, str]) -> str | None:
    for candidate in (step.content, step.agent):
        if candidate is not None and candidate in optimal_tools:
            return candidate
    return None


@metric("tool_selection_accuracy", description="correct tool selections / tool selections")
def tool_selection_accuracy(trace: Trace) -> MetricResult:
    """Correct tool selections over tool selections made.

    ``value = correct selections / tool calls`` (the spec's formula, over every call made).
    With ``Task.optimal_tools`` (context → optimal tool), a call's context is its step's
    ``content`` when that is a key of the mapping, else its step's ``agent``; the call is
    correct when its tool is the context's optimal tool, and a call whose context the mapping
    does not list has no optimal tool, so it is not a correct selection (``context: None`` in
    ``details["calls"]``). Otherwise, with ``Task.reference_trajectory``, the calls are matched
    as multisets: ``correct = Σ_tool min(actual count, reference count)``, so redundant or
    foreign calls count as wrong selections. No call made: ``0.0`` when the reference expects
    calls (as the spec returns 0.0 for no calls), ``1.0`` when it expects none.

    Args:
        trace: the trace to score. ``None`` without ``optimal_tools`` or
            ``reference_trajectory``.
    """
    return shared_per_trace(trace, _tool_selection_accuracy)


def _tool_selection_accuracy(trace: Trace) -> MetricResult:
    steps = _tool_steps(trace)
    optimal = trace.task.optimal_tools
    if optimal is not None:
        if not steps:
            return MetricResult(
                value=0.0 if optimal else 1.0,
                details={"mode": "optimal_tools", "correct": 0, "judged": 0, "calls": []},
                reason="no tool call made",
            )
        calls = []
        for step in steps:
            assert step.tool_call is not None
            context = _call_context(step, optimal)
            expected = optimal[context] if context is not None else None
            calls.append(
                {
                    "step": step.index,
                    "tool": step.tool_call.name,
                    "context": context,
                    "expected": expected,
                    "correct": step.tool_call.name == expected,
                }
            )
        correct = sum(1 for c in calls if c["correct"])
        return MetricResult(
            value=correct / len(calls),
            details={
                "mode": "optimal_tools",
                "correct": correct,
                "judged": len(calls),
                "unlisted_context": sum(1 for c in calls if c["context"] is None),
                "calls": calls,
            },
        )
    reference = trace.task.reference_tool_names()
    if reference is None:
        return MetricResult.missing("the task has neither optimal_tools nor reference_trajectory")
    actual = Counter(s.tool_call.name for s in steps if s.tool_call is not None)
    expected_counts = Counter(reference)
    total = sum(actual.values())
    if total == 0:
        value = 1.0 if not reference else 0.0
        return MetricResult(
            value=value,
            details={"mode": "reference", "correct": 0, "judged": 0, "reference": reference},
            reason="no tool call made",
        )
    correct = sum(min(n, expected_counts[name]) for name, n in actual.items())
    return MetricResult(
        value=correct / total,
        details={
            "mode": "reference",
            "correct": correct,
            "judged": total,
            "actual_counts": dict(actual),
            "reference_counts": dict(expected_counts),
        },
    )


@metric(
    "communication_overhead",
    description="coordination messages / all messages between agents (lower is better)",
    higher_is_better=False,
)
def communication_overhead(
    trace: Trace, *, environment_agents: Sequence[str] = DEFAULT_ENVIRONMENT_AGENTS
) -> MetricResult:
    """Coordination messages over all messages the agents sent; lower is better.

    ``value = #coordination / #messages`` where coordination types are ``coordination``,
    ``status_update`` and ``handoff`` (a ``handoff`` step without a type counts as one), and the
    denominator counts every message, typed or not: an untyped message is not coordination.
    Messages sent by the environment are not counted.

    Args:
        trace: the trace to score. ``None`` when no message carries a type (nothing says which
            messages are coordination).
        environment_agents: senders (any case) that are the environment, not agents.
    """
    return shared_per_trace(trace, _communication_overhead, _environment(environment_agents))


def _communication_overhead(trace: Trace, environment: frozenset[str]) -> MetricResult:
    messages = [
        s for s in trace.steps if _is_message(s) and not _is_environment(s.agent, environment)
    ]
    types = [_message_type(s) for s in messages]
    typed = [t for t in types if t is not None]
    unclassified = len(types) - len(typed)
    if not typed:
        return MetricResult.missing(
            "the trace has no message with a message_type", unclassified=unclassified
        )
    coordination = sum(1 for t in typed if t in COORDINATION_TYPES)
    return MetricResult(
        value=coordination / len(messages),
        details={
            "coordination": coordination,
            "messages": len(messages),
            "unclassified": unclassified,
            "by_type": dict(Counter(str(t) for t in typed)),
        },
    )


@metric("coordination_centrality", description="(betweenness + closeness + degree) / 3")
class CoordinationCentrality:
    """Per-agent ``(betweenness + closeness + degree) / 3`` over the interaction graph.

    The three are networkx's normalised centralities of the undirected interaction graph
    (:func:`interaction_graph`), each in [0, 1]; closeness uses networkx's Wasserman–Faust
    scaling so that agents cut off from the others lower it. Every agent's figure is in
    ``details["agents"]``. The value is the ``aggregate`` over agents: ``max`` (default, the
    centrality of the most central agent: 1.0 when one hub joins every other agent, as in a
    manager–workers star) or ``mean``.

    Args:
        aggregate: ``"max"`` or ``"mean"``.
        environment_agents: names (any case) that are the environment, not agents.
    """

    name = "coordination_centrality"

    def __init__(
        self,
        *,
        aggregate: Literal["max", "mean"] = "max",
        environment_agents: Sequence[str] = DEFAULT_ENVIRONMENT_AGENTS,
    ) -> None:
        if aggregate not in ("max", "mean"):
            raise ValueError(f"aggregate must be 'max' or 'mean', not {aggregate!r}")
        self.aggregate = aggregate
        self.environment_agents = _environment(environment_agents)

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` when no two agents exchanged a message."""
        return shared_per_trace(
            trace, _coordination_centrality, self.aggregate, self.environment_agents
        )


def _coordination_centrality(
    trace: Trace, aggregate: Literal["max", "mean"], environment: frozenset[str]
) -> MetricResult:
    import networkx as nx

    graph = interaction_graph(trace, environment)
    if graph.number_of_edges() == 0:
        return MetricResult.missing(
            "no message between two named agents", agents=sorted(graph.nodes)
        )
    betweenness = nx.betweenness_centrality(graph, normalized=True)
    closeness = nx.closeness_centrality(graph)
    degree = nx.degree_centrality(graph)
    agents = {
        node: {
            "betweenness": betweenness[node],
            "closeness": closeness[node],
            "degree": degree[node],
            "centrality": (betweenness[node] + closeness[node] + degree[node]) / 3,
        }
        for node in sorted(graph.nodes)
    }
    values = [a["centrality"] for a in agents.values()]
    value = max(values) if aggregate == "max" else float(np.mean(values))
    return MetricResult(value=min(1.0, value), details={"aggregate": aggregate, "agents": agents})


@metric("task_distribution_balance", description="1 − stdev/mean of per-agent step counts")
class TaskDistributionBalance:
    """``max(0, 1 − stdev / mean)`` of the number of steps each agent performed.

    An agent's steps are the steps whose ``agent`` it is, tool results and the environment's
    steps excepted (they are the environment's reply or request); steps without an agent belong
    to ``Trace.agent`` (or to one unnamed agent). The standard deviation is the sample one
    (``ddof=1``, as the spec's ``statistics.stdev``). A single agent scores 1.0.

    Args:
        ddof: delta degrees of freedom of the standard deviation (1 sample, 0 population).
        environment_agents: names (any case) that are the environment, not agents.
    """

    name = "task_distribution_balance"

    def __init__(
        self, *, ddof: int = 1, environment_agents: Sequence[str] = DEFAULT_ENVIRONMENT_AGENTS
    ) -> None:
        if ddof not in (0, 1):
            raise ValueError(f"ddof must be 0 or 1, not {ddof!r}")
        self.ddof = ddof
        self.environment_agents = _environment(environment_agents)

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` when no agent performed a step."""
        return shared_per_trace(
            trace, _task_distribution_balance, self.ddof, self.environment_agents
        )


def _task_distribution_balance(
    trace: Trace, ddof: int, environment: frozenset[str]
) -> MetricResult:
    counts = Counter(
        s.agent or trace.agent or _UNNAMED_AGENT
        for s in trace.steps
        if s.kind is not StepKind.tool_result and not _is_environment(s.agent, environment)
    )
    if not counts:
        return MetricResult.missing("no agent performed a step")
    if len(counts) == 1:
        return MetricResult(value=1.0, details={"steps": dict(counts)}, reason="single agent")
    values = np.array(list(counts.values()), dtype=float)
    mean = float(values.mean())
    stdev = float(values.std(ddof=ddof))
    return MetricResult(
        value=max(0.0, 1.0 - stdev / mean),
        details={"steps": dict(counts), "mean": mean, "stdev": stdev},
    )


def _weighted(
    parts: dict[str, tuple[float, MetricResult]], transform: dict[str, Callable[[float], float]]
) -> MetricResult:
    """Renormalised weighted mean of the parts that have a value (the composite's rule)."""
    used = {}
    num = 0.0
    den = 0.0
    for name, (weight, result) in parts.items():
        if weight <= 0 or result.value is None:
            continue
        value = transform.get(name, float)(result.value)
        used[name] = {"value": value, "weight": weight}
        num += weight * value
        den += weight
    missing = {
        name: result.reason
        for name, (weight, result) in parts.items()
        if weight > 0 and result.value is None
    }
    if den == 0.0:
        reasons = "; ".join(f"{n}: {r}" for n, r in missing.items())
        return MetricResult.missing(f"none of its parts could be measured ({reasons})")
    return MetricResult(value=num / den, details={"parts": used, "missing": missing})


def _check_weights(**weights: float) -> None:
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {weights}")


@metric("tool_efficiency", description="weighted mean of path_convergence and tool selection")
class ToolEfficiency:
    """``(w_p·path_convergence + w_s·tool_selection_accuracy) / (w_p + w_s)``.

    The mean is renormalised over the parts that could be measured (tool selection needs the
    task's ``optimal_tools`` or ``reference_trajectory``), so a trace without references is
    scored on path convergence alone; the parts used are in ``details``.

    Args:
        path_weight: weight ``w_p`` of :func:`path_convergence` (default 0.5).
        selection_weight: weight ``w_s`` of :func:`tool_selection_accuracy` (default 0.5).
    """

    name = "tool_efficiency"

    def __init__(self, *, path_weight: float = 0.5, selection_weight: float = 0.5) -> None:
        _check_weights(path_weight=path_weight, selection_weight=selection_weight)
        self.path_weight = path_weight
        self.selection_weight = selection_weight

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` when neither part can be measured."""
        return _weighted(
            {
                "path_convergence": (self.path_weight, path_convergence(trace)),
                "tool_selection_accuracy": (
                    self.selection_weight,
                    tool_selection_accuracy(trace),
                ),
            },
            {},
        )


@metric("coordination_quality", description="weighted mean of 1 − overhead and balance")
class CoordinationQuality:
    """``(w_o·(1 − communication_overhead) + w_b·task_distribution_balance
    + w_c·coordination_centrality) / (w_o + w_b + w_c)``.

    Defaults ``w_o = w_b = 0.5``, ``w_c = 0``: communication overhead is lower-is-better and
    enters as ``1 − overhead``; centrality describes the team's structure (a hub or not) rather
    than its quality, so it is reported by its own metric and weighs nothing here unless a suite
    says so. The mean is renormalised over the parts that could be measured: a single-agent
    trace without typed messages scores its balance alone (1.0, the spec's single-agent value).

    Args:
        overhead_weight: weight ``w_o`` of ``1 − communication_overhead``.
        balance_weight: weight ``w_b`` of ``task_distribution_balance`` (sample stdev).
        centrality_weight: weight ``w_c`` of ``coordination_centrality`` (max over agents).
        environment_agents: names (any case) that are the environment, not agents.
    """

    name = "coordination_quality"

    def __init__(
        self,
        *,
        overhead_weight: float = 0.5,
        balance_weight: float = 0.5,
        centrality_weight: float = 0.0,
        environment_agents: Sequence[str] = DEFAULT_ENVIRONMENT_AGENTS,
    ) -> None:
        _check_weights(
            overhead_weight=overhead_weight,
            balance_weight=balance_weight,
            centrality_weight=centrality_weight,
        )
        self.overhead_weight = overhead_weight
        self.balance_weight = balance_weight
        self.centrality_weight = centrality_weight
        self.environment_agents = tuple(_environment(environment_agents))
        self._balance = TaskDistributionBalance(environment_agents=self.environment_agents)
        self._centrality = CoordinationCentrality(environment_agents=self.environment_agents)

    def score(self, trace: Trace) -> MetricResult:
        """Score one trace; ``None`` when no part can be measured."""
        parts = {
            "communication_overhead": (
                self.overhead_weight,
                communication_overhead(trace, environment_agents=self.environment_agents),
            ),
            "task_distribution_balance": (self.balance_weight, self._balance.score(trace)),
        }
        if self.centrality_weight > 0:
            parts["coordination_centrality"] = (
                self.centrality_weight,
                self._centrality.score(trace),
            )
        return _weighted(parts, {"communication_overhead": lambda v: 1.0 - v})
