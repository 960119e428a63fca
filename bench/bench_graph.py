"""Tier 3 graph metrics: throughput through the engine, side by side with networkx alone.

Generated multi-agent traces (seeded): a manager and two to five workers exchange typed messages
(task requests, coordination, status updates, hand-offs, result deliveries, and plain messages
without a type), the workers call tools (with retries and detours), and the user and the tools
answer as the environment. A third of the tasks give a reference trajectory, a third the optimal
tool per context, a third neither (path convergence then reads the tool graph). Each metric is
scored alone through ``engine.score_traces``, then the seven together as one suite.

Side by side, in alternation so that both see the same load: networkx's own betweenness,
closeness and degree centralities on the interaction graph built straight from the steps,
against ``coordination_centrality``; and networkx's shortest path on the tool graph against
``path_convergence`` on the traces without a reference. Every agent's three centralities and
every path convergence are compared with the reference's; they must agree to 1e-12.

    PYTHONPATH=src python bench/bench_graph.py [--n 5000] [--runs 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
from itertools import pairwise
from typing import Any

import networkx as nx
from rich.console import Console
from rich.table import Table

from _timing import alternating_rates, items_per_second
from agentgauge.config import Suite
from agentgauge.engine import SampleScore, score_traces
from agentgauge.model import Step, Task, ToolCall, Trace

TIER3 = (
    "path_convergence",
    "tool_selection_accuracy",
    "communication_overhead",
    "coordination_centrality",
    "task_distribution_balance",
    "tool_efficiency",
    "coordination_quality",
)
CONTEXTS = {
    "find sources": "search",
    "read a page": "fetch",
    "extract figures": "parse",
    "compute totals": "calculate",
    "draft the answer": "write",
}
ENVIRONMENT = frozenset({"user", "environment", "system", "tool"})
TOLERANCE = 1e-12
"""The largest difference allowed between our figures and networkx's."""


def _trace(i: int, rng: random.Random) -> Trace:
    """One run of a manager and its workers on a task, with detours, retries and wrong tools."""
    workers = [f"worker-{k}" for k in range(1, rng.randint(2, 5) + 1)]
    steps: list[Step] = []

    def add(kind: str, agent: str, **fields: Any) -> None:
        steps.append(Step(index=len(steps), kind=kind, agent=agent, **fields))  # type: ignore[arg-type]

    def message(sender: str, recipient: str, message_type: str | None, text: str) -> None:
        add("message", sender, recipient=recipient, message_type=message_type, content=text)

    add("message", "user", recipient="manager", content=f"Question {i}: what changed?")
    add("llm", "manager", content="Plan: split the work between the team.")
    planned = rng.sample(list(CONTEXTS), rng.randint(2, 5))
    for context in planned:
        worker = rng.choice(workers)
        message("manager", worker, "task_request", f"Please {context}.")
        if rng.random() < 0.3:
            message(worker, "manager", "coordination", "Which sources count?")
            message("manager", worker, None, "Peer-reviewed ones.")
        tools = [CONTEXTS[context]]
        if rng.random() < 0.25:
            tools.append(rng.choice(list(CONTEXTS.values())))  # a detour
        if rng.random() < 0.25:
            tools.append(tools[0])  # a retry
        for tool in tools:
            add("tool_call", worker, content=context, tool_call=ToolCall(name=tool))
            add("tool_result", rng.choice([worker, "tool"]), result={"ok": True})
        if rng.random() < 0.3:
            other = rng.choice(workers)
            if rng.random() < 0.5:
                add("handoff", worker, recipient=other, content="Over to you.")
            else:
                message(worker, other, "handoff", "Taking over the figures.")
            message(other, "manager", "status_update", "Picked it up.")
        message(worker, "manager", "result_delivery", f"Done: {context}.")
    if rng.random() < 0.4:
        message("manager", rng.choice(workers), "status_update", "Wrapping up.")
    add("message", "manager", recipient="user", content="Here is the answer.")
    kind = i % 3
    task = Task(
        id=f"task-{i}",
        reference_trajectory=[CONTEXTS[c] for c in planned] if kind == 0 else None,
        optimal_tools=CONTEXTS if kind == 1 else None,
    )
    return Trace(id=f"run-{i}", task=task, steps=steps, agent="manager")


def _is_message(step: Step) -> bool:
    return step.message_type is not None or step.kind in ("message", "handoff")


def reference_centralities(trace: Trace) -> dict[str, tuple[float, float, float]]:
    """Each agent's betweenness, closeness and degree centrality, by networkx alone.

    Args:
        trace: the trace whose messages between named, non-environment agents are the edges.
    """
    graph = nx.Graph()
    for step in trace.steps:
        agent = step.agent
        if agent is None or agent.lower() in ENVIRONMENT:
            continue
        graph.add_node(agent)
        recipient = step.recipient
        if _is_message(step) and recipient is not None and recipient.lower() not in ENVIRONMENT:
            graph.add_node(recipient)
            if recipient != agent:
                graph.add_edge(agent, recipient)
    betweenness = nx.betweenness_centrality(graph, normalized=True)
    closeness = nx.closeness_centrality(graph)
    degree = nx.degree_centrality(graph)
    return {n: (betweenness[n], closeness[n], degree[n]) for n in graph}


def reference_convergence(trace: Trace) -> float:
    """Shortest first-to-last path over the calls' transitions, by networkx alone.

    Args:
        trace: a trace with at least one tool call.
    """
    names = [s.tool_call.name for s in trace.steps if s.tool_call is not None]
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_edges_from(pairwise(names))
    if len(names) == 1:
        return 1.0
    return nx.shortest_path_length(graph, names[0], names[-1]) / (len(names) - 1)


def _check(delta: float, what: str) -> None:
    if not delta <= TOLERANCE:
        raise SystemExit(f"{what} differ from networkx's by {delta:.1e} (> {TOLERANCE:.0e})")


def _centrality_delta(
    scored: list[SampleScore], reference: list[dict[str, tuple[float, float, float]]]
) -> tuple[float, int]:
    """The largest difference between our agents' centralities and networkx's, and the number
    of agents compared (their names must be the same)."""
    delta, agents = 0.0, 0
    for sample, expected in zip(scored, reference, strict=True):
        found = sample.details["coordination_centrality"].get("agents", {})
        if found.keys() != expected.keys():
            raise SystemExit(f"{sample.trace_id}: agents {sorted(found)} != {sorted(expected)}")
        for agent, values in expected.items():
            mine = found[agent]
            got = (mine["betweenness"], mine["closeness"], mine["degree"])
            delta = max(delta, *(abs(a - b) for a, b in zip(got, values, strict=True)))
            agents += 1
    _check(delta, "centralities")
    return delta, agents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="traces generated")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.n < 3 or args.runs < 1:
        parser.error("--n must be >= 3 and --runs >= 1")

    rng = random.Random(args.seed)
    traces = [_trace(i, rng) for i in range(args.n)]
    n = len(traces)
    load_before = os.getloadavg()[0]
    rows: list[tuple[str, str, str, str]] = []
    for name in TIER3:
        suite = Suite(name=name, metrics=[name])
        metrics = suite.build_metrics()
        rate, samples = items_per_second(
            n, args.runs, lambda s=suite, m=metrics: score_traces(traces, s, m)
        )
        measured = sum(s.values[name] is not None for s in samples)
        rows.append((name, f"{rate:,.0f}", "", f"{measured:,}/{n:,} measured"))

    centrality = Suite(name="centrality", metrics=["coordination_centrality"])
    built = centrality.build_metrics()
    (ours, scored), (theirs, reference) = alternating_rates(
        n,
        args.runs,
        lambda: score_traces(traces, centrality, built),
        lambda: [reference_centralities(t) for t in traces],
    )
    delta, agents = _centrality_delta(scored, reference)
    rows.append(
        (
            "coordination_centrality vs networkx's three centralities",
            f"{ours:,.0f} vs {theirs:,.0f}",
            f"{ours / theirs:.2f}×",
            f"max |Δ| {delta:.1e} over {agents:,} agents' three centralities",
        )
    )

    free = [t for t in traces if t.task.reference_trajectory is None]
    path = Suite(name="path", metrics=["path_convergence"])
    built = path.build_metrics()
    (ours, scored), (theirs, reference) = alternating_rates(
        len(free),
        args.runs,
        lambda: score_traces(free, path, built),
        lambda: [reference_convergence(t) for t in free],
    )
    delta = max(
        abs(s.values["path_convergence"] - r)  # type: ignore[operator]
        for s, r in zip(scored, reference, strict=True)
    )
    _check(delta, "path convergences")
    rows.append(
        (
            f"path_convergence vs networkx's shortest path ({len(free):,} traces without a "
            "reference)",
            f"{ours:,.0f} vs {theirs:,.0f}",
            f"{ours / theirs:.2f}×",
            f"max |Δ| {delta:.1e}",
        )
    )

    whole = Suite(
        name="tier3",
        metrics=list(TIER3),
        weights={"tool_efficiency": 0.5, "coordination_quality": 0.5},
    )
    metrics = whole.build_metrics()
    (ours, scored), (theirs, reference) = alternating_rates(
        n,
        args.runs,
        lambda: score_traces(traces, whole, metrics),
        lambda: [(reference_centralities(t), reference_convergence(t)) for t in traces],
    )
    delta, _ = _centrality_delta(scored, [c for c, _ in reference])
    composites = [s.composite for s in scored if s.composite is not None]
    rows.append(
        (
            "all seven, one suite, vs networkx's graph work alone (the three centralities and "
            "the shortest path)",
            f"{ours:,.0f} vs {theirs:,.0f}",
            f"{ours / theirs:.2f}×",
            f"mean composite {sum(composites) / len(composites):.4f}; centralities' max |Δ| "
            f"{delta:.1e}",
        )
    )

    steps = sum(len(t.steps) for t in traces) / n
    table = Table(
        title=f"Tier 3 graph metrics on {n} generated team runs ({steps:.1f} steps each), "
        f"median of {args.runs}"
    )
    table.add_column("what", min_width=len(max(TIER3, key=len)))
    table.add_column("traces/s", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("result")
    for row in rows:
        table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(
        f"networkx {nx.__version__}; load average {load_before:.1f} -> "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
