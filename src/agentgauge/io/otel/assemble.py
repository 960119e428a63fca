"""The observations of one run become one Trace: records of one call merged, the agents told
from what only stands around them, the steps built in start order, the run's task, output,
usage and parameters read.

Nothing here reads a span's attributes: what a span means comes from its observation (see
:mod:`agentgauge.io.otel.conventions`), except the task id, whose attribute the user names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentgauge.io.otel.conventions import tool_error
from agentgauge.io.otel.merge import assistant_text, merge_layers, span_depths
from agentgauge.io.otel.observation import OPERATION_KINDS, Kind, Observation
from agentgauge.io.otel.toolcalls import handoff_target, normalised, resolve_arguments
from agentgauge.io.otel.wire.span import to_datetime
from agentgauge.model import MessageType, Step, StepKind, Task, ToolCall, ToolSpec, Trace, Usage

__all__ = ["build_trace"]


@dataclass
class _Draft:
    """A step before ordering: sorted by (time, depth, rank, creation order); ``asked`` is,
    for a tool call the model asked for, the end of that model call and the call's place
    among those it asked for."""

    time_ns: int
    depth: int
    rank: int
    fields: dict[str, Any]
    asked: tuple[int, int] | None = None


def _in_asked_order(drafts: list[_Draft]) -> None:
    """Tool calls the model asked for together, in the order the model asked for them, in
    place: started side by side (parallel tools: no result between them), or run one after
    the other, each followed by its own results (threads that each ran a call to its end),
    whichever ran first."""
    start = 0
    while start < len(drafts):
        first = drafts[start].asked
        if first is None:
            start += 1
            continue
        blocks: list[list[_Draft]] = []
        end = start
        while end < len(drafts):
            draft = drafts[end]
            if draft.asked is not None and draft.asked[0] == first[0]:
                blocks.append([draft])
            elif (
                draft.fields.get("kind") is StepKind.tool_result
                and blocks
                and (draft.fields.get("parent_id") == blocks[-1][0].fields.get("id"))
            ):
                blocks[-1].append(draft)
            else:
                break
            end += 1
        if len(blocks) > 1:
            blocks.sort(key=lambda b: b[0].asked or (0, 0))
            drafts[start:end] = [d for block in blocks for d in block]
        start = max(end, start + 1)


@dataclass
class _Group:
    """The observations of one run and the relations between them."""

    observations: list[Observation]
    by_id: dict[str, Observation] = field(default_factory=dict)
    order: list[Observation] = field(default_factory=list)
    duplicates: int = 0
    merged: int = 0
    ops: dict[str, str | None] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    _depth: dict[str, int] = field(default_factory=dict)
    _agent_parent: dict[str, Observation | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for obs in self.observations:
            if obs.span.span_id in self.by_id:
                self.duplicates += 1
            else:
                self.by_id[obs.span.span_id] = obs
                self.ops[obs.span.span_id] = obs.operation
        self.merged = merge_layers(self.by_id, self.ops)
        for span_id, obs in self.by_id.items():
            if self.kind(obs) is Kind.model_call and not obs.responded:
                self.ops[span_id] = None  # it prepared a call (no answer, no usage): no call
        self._depth = span_depths(self.by_id, self.by_id)
        self._not_agents()
        self.order = sorted(
            self.by_id.values(),
            key=lambda o: (o.span.start_ns or 0, self.depth(o), o.span.line),
        )
        for obs in self.order:
            for spec in obs.tool_specs:
                self.tools.setdefault(spec.name, spec)

    def kind(self, obs: Observation) -> Kind | None:
        return OPERATION_KINDS.get(self.ops[obs.span.span_id] or "")

    def _not_agents(self) -> None:
        """Agent spans that only stand around agents are no agents: one that did nothing of
        its own (no model call, tool or handoff outside the agents below it: a workflow, a
        runner, OpenInference's ``Agent workflow``), and the ``invoke_agent`` span of another
        service (a controller) around an agent of the same name. Nor is one inside the run
        under which nothing ran and which answered nothing (an agent taking in a message it
        was only told: AutoGen's group chat broadcasts)."""
        children: dict[str, list[Observation]] = {}
        for obs in self.by_id.values():
            if obs.span.parent_id:
                children.setdefault(obs.span.parent_id, []).append(obs)
        wrappers = []
        for obs in self.by_id.values():
            if self.kind(obs) is not Kind.agent:
                continue
            below, own_work = self._below(obs, children)
            wraps = any(
                normalised(a.agent) == normalised(obs.agent)
                and (a.span.scope, a.span.resource.get("service.name"))
                != (obs.span.scope, obs.span.resource.get("service.name"))
                for a in below
            )
            idle = (
                not below
                and not own_work
                and not obs.output_messages
                and self.parent(obs) is not None
            )
            if (below and not own_work) or wraps or idle:
                wrappers.append(obs)
        for obs in wrappers:
            self.ops[obs.span.span_id] = None

    def _below(
        self, obs: Observation, children: dict[str, list[Observation]]
    ) -> tuple[list[Observation], bool]:
        """The nearest agent observations below one (none of them below another), and
        whether it did work of its own (a model call, tool or handoff not under them)."""
        found, todo = [], list(children.get(obs.span.span_id, []))
        seen = {obs.span.span_id}
        own_work = False
        while todo:
            node = todo.pop()
            if node.span.span_id in seen:
                continue  # a cycle in the parent links
            seen.add(node.span.span_id)
            kind = self.kind(node)
            if kind is Kind.agent:
                found.append(node)
                continue
            own_work = own_work or kind in (Kind.model_call, Kind.tool, Kind.handoff, Kind.plan)
            todo += children.get(node.span.span_id, [])
        return found, own_work

    def parent(self, obs: Observation) -> Observation | None:
        parent_id = obs.span.parent_id
        return self.by_id.get(parent_id) if parent_id else None

    def ancestors(self, obs: Observation) -> Iterator[Observation]:
        seen = {obs.span.span_id}
        node = self.parent(obs)
        while node is not None and node.span.span_id not in seen:  # a cycle ends the walk
            seen.add(node.span.span_id)
            yield node
            node = self.parent(node)

    def depth(self, obs: Observation) -> int:
        return self._depth[obs.span.span_id]

    def agent_span(self, obs: Observation) -> Observation | None:
        """The nearest enclosing agent (or workflow) observation, excluding itself."""
        known = self._agent_parent
        span_id = obs.span.span_id
        if span_id in known:
            return known[span_id]
        # up to the nearest agent or a span already answered, then the answer for every span
        # on the way: a long chain is walked once
        path, seen, found = [span_id], {span_id}, None
        node = self.parent(obs)
        while node is not None:
            node_id = node.span.span_id
            if node_id in known:
                found = known[node_id] if self.kind(node) is not Kind.agent else node
                break
            if node_id in seen:  # a cycle in the parent links
                break
            if self.kind(node) is Kind.agent:
                found = node
                break
            seen.add(node_id)
            path.append(node_id)
            node = self.parent(node)
        for walked in path:
            known[walked] = found
        return found

    def agent_of(self, obs: Observation) -> str | None:
        owner = self.agent_span(obs)
        return owner.agent if owner is not None else None

    def is_agent(self, obs: Observation) -> bool:
        return self.kind(obs) is Kind.agent

    def has_agent_below(self, obs: Observation) -> bool:
        return any(
            self.is_agent(o) and any(a is obs for a in self.ancestors(o)) for o in self.order
        )


class _StepBuilder:
    """The steps of one group, in one pass over its observations by start time.

    Each observation becomes steps by its kind (agent, tool, model call, handoff or plan).
    What one means can depend on those before it, and that state lives here: the last agent
    of each scope (to see a handoff), a transfer tool's handoff (not to record it twice) and
    the tool calls requested in messages (for the results answering them later).

    Args:
        group: the observations.
        unmapped: counts the spans of operations that make no step.
        notes: counts and values that go in the Trace's metadata.
    """

    def __init__(self, group: _Group, unmapped: Counter[str], notes: dict[str, Any]) -> None:
        self._group = group
        self._unmapped = unmapped
        self._notes = notes
        self._drafts: list[_Draft] = []
        # without tool spans, the calls the model asked for are the only record of the trajectory
        self._calls_from_messages = not any(
            OPERATION_KINDS.get(op or "") is Kind.tool for op in group.ops.values()
        )
        self._open_calls: dict[str, tuple[str | None, str]] = {}  # call id -> (agent, step id)
        self._last_in_scope: dict[str | None, str] = {}  # enclosing agent span id -> last agent
        self._transferred: tuple[str | None, str] | None = None
        # the calls each agent's last model call asked for, every call asked for and not yet
        # answered, and every call by its id: a tool span's missing id and arguments
        self._requested: dict[str | None, list[ToolCall]] = {}
        self._unanswered: list[ToolCall] = []
        self._by_id = {
            c.id: c
            for o in group.order
            if group.kind(o) is Kind.model_call
            for m in o.output_messages
            for c in m.tool_calls
            if c.id is not None
        }
        self._tools = group.tools
        self._asked_at: dict[int, tuple[int, int]] = {}  # id(call) -> (model call's end, place)

    def steps(self) -> list[Step]:
        """The group's steps ordered by start time; the span tree kept in ``id``/``parent_id``."""
        for obs in self._group.order:
            self._observation(obs)
        self._drafts.sort(key=lambda d: (d.time_ns, d.depth, d.rank))  # stable: creation order last
        _in_asked_order(self._drafts)
        return [Step(index=i, **d.fields) for i, d in enumerate(self._drafts)]

    def _add(
        self,
        obs: Observation,
        time_ns: int | None,
        *,
        rank: int = 0,
        asked: tuple[int, int] | None = None,
        **fields: Any,
    ) -> None:
        depth = self._group.depth(obs)
        draft = _Draft(time_ns if time_ns is not None else 0, depth, rank, fields, asked)
        self._drafts.append(draft)

    def _count(self, note: str, n: int) -> None:
        self._notes[note] = self._notes.get(note, 0) + n

    def _observation(self, obs: Observation) -> None:
        """The steps of one observation, by its kind."""
        kind = self._group.kind(obs)
        agent = self._group.agent_of(obs)
        span = obs.span
        common: dict[str, Any] = {
            "agent": agent,
            "parent_id": span.parent_id,
            "started_at": to_datetime(span.start_ns),
        }
        if kind is Kind.agent:
            self._handoff_to(obs, agent, common)
        elif kind is Kind.handoff:
            self._handoff_span(obs, agent, common)
        elif kind is Kind.tool:
            self._tool_steps(obs, agent, common)
        elif kind is Kind.model_call:
            self._llm_steps(obs, agent, common)
        elif kind is Kind.plan:
            self._add(
                obs,
                span.start_ns,
                **common,
                kind=StepKind.reasoning,
                id=span.span_id,
                content=assistant_text(obs.output_messages),
                duration_s=span.duration_s,
                error=obs.error,
            )
        elif kind not in (Kind.wrapper, Kind.definition):
            self._unmapped[self._group.ops[span.span_id] or span.name] += 1

    def _handoff_to(self, obs: Observation, agent: str | None, common: dict[str, Any]) -> None:
        """An agent observation: a handoff step when control passes to it from another
        agent."""
        # control passes from the previous agent of the same scope, else from the enclosing
        # agent (a workflow orchestrates: it hands nothing off itself)
        name = obs.agent
        enclosing = self._group.agent_span(obs)
        scope = enclosing.span.span_id if enclosing is not None else None
        giver = self._last_in_scope.get(scope)
        if (
            giver is None
            and enclosing is not None
            and self._group.ops[enclosing.span.span_id] == "invoke_agent"
        ):
            giver = agent
        self._last_in_scope[scope] = name
        if giver is None or giver == name:
            return
        if self._transferred == (giver, normalised(name)):
            self._transferred = None  # the transfer tool already recorded this handoff
            return
        # what the receiving agent was asked: its own input, else its first model call's
        first_calls = [
            o
            for o in self._group.order
            if self._group.kind(o) is Kind.model_call and self._group.agent_span(o) is obs
        ]
        first_user = [
            m.text
            for o in [obs, *first_calls[:1]]
            for m in o.input_messages
            if m.role == "user" and m.text
        ]
        content = first_user[0] if first_user else None
        self._handoff(obs, {**common, "agent": giver}, obs.span.span_id, name, content)

    def _handoff(
        self,
        obs: Observation,
        common: dict[str, Any],
        step_id: str,
        recipient: str,
        content: str | None = None,
    ) -> None:
        """Add a handoff step from ``common["agent"]`` to ``recipient`` at the span's start;
        none when either agent is unknown (a handoff passes control between two agents)."""
        if not common.get("agent") or not recipient:
            return
        self._add(
            obs,
            obs.span.start_ns,
            **common,
            kind=StepKind.handoff,
            id=step_id,
            recipient=recipient,
            message_type=MessageType.handoff,
            content=content,
        )

    def _handoff_span(self, obs: Observation, agent: str | None, common: dict[str, Any]) -> None:
        """An observation of the handoff itself (from the agent it names, else the enclosing
        one): a handoff step, which the receiving agent's span then does not record again."""
        giver = obs.handoff_source or agent
        recipient = obs.handoff_target or ""
        self._handoff(obs, {**common, "agent": giver}, obs.span.span_id, recipient)
        self._transferred = (giver, normalised(recipient))

    def _tool_steps(self, obs: Observation, agent: str | None, common: dict[str, Any]) -> None:
        """A tool observation: its call and its result or error; a coordination tool
        (``transfer_to_X``, ``transfer_to_agent``, ...) is a handoff, not a call of a tool."""
        call, asked = self._tool_call(obs, agent)
        coordination, target = handoff_target(call.name, call.arguments)
        if coordination:
            self._transfer_handoff(obs, target, agent, common)
            return
        span = obs.span
        self._add(
            obs,
            span.start_ns,
            asked=asked,
            **common,
            kind=StepKind.tool_call,
            id=span.span_id,
            tool_call=call,
            duration_s=span.duration_s,
        )
        result, error = obs.result, obs.error
        if result is not None or error is not None:
            self._add(
                obs,
                span.end_ns if span.end_ns is not None else span.start_ns,
                **{**common, "parent_id": span.span_id, "started_at": to_datetime(span.end_ns)},
                kind=StepKind.tool_result,
                id=f"{span.span_id}:result",
                result=result,
                error=error,
            )

    def _tool_call(
        self, obs: Observation, agent: str | None
    ) -> tuple[ToolCall, tuple[int, int] | None]:
        """The call a tool observation made (see :mod:`agentgauge.io.otel.toolcalls`).

        Its id is the span's, else the id of the call the model asked for with the same name
        (of its agent's model first, and with the same arguments when several match); its
        arguments the span's, else that call's. Arguments no rule could read go in the
        notes. Also: when the model asked for it, the end of that model call and the call's
        place among those it asked for."""
        name = obs.tool
        recorded = obs.recorded_arguments
        call_id = obs.tool_call_id
        match = self._take_request(call_id, name, recorded, agent)
        if call_id is None and match is not None:
            call_id = match.id
        arguments, unread = resolve_arguments(recorded, self._tools.get(name), match)
        if unread is not None:
            self._notes.setdefault("unparsed_tool_arguments", []).append(
                {"span_id": obs.span.span_id, "value": unread}
            )
        asked = self._asked_at.get(id(match)) if match is not None else None
        return ToolCall(id=call_id, name=name, arguments=arguments), asked

    def _take_request(
        self, call_id: str | None, name: str, recorded: Any, agent: str | None
    ) -> ToolCall | None:
        """The model's call that a tool execution answers, taken out of the open requests:
        by id; else by name among the requests of the agent's last model call (the one
        with the same arguments first), else among all requests not yet answered."""
        if call_id is not None:
            match = self._by_id.get(call_id)
        else:
            own = [c for c in self._requested.get(agent, []) if c.name == name]
            anyone = [c for c in self._unanswered if c.name == name]
            candidates = own or anyone
            # compared as the call's arguments, once a framework's wrapper is taken off
            wanted, _ = resolve_arguments(recorded, self._tools.get(name), None)
            match = next((c for c in candidates if wanted and c.arguments == wanted), None)
            match = match or (candidates[0] if candidates else None)
        if match is not None:
            for pool in (self._requested.get(agent, []), self._unanswered):
                if match in pool:
                    pool.remove(match)
        return match

    def _transfer_handoff(
        self, obs: Observation, target: str | None, agent: str | None, common: dict[str, Any]
    ) -> None:
        """The handoff a coordination tool makes, to the agent it names (else the next agent
        that runs), unless an agent span below it records the handoff itself."""
        if self._group.has_agent_below(obs):
            return
        start = obs.span.start_ns or 0
        later = [
            o
            for o in self._group.order
            if self._group.is_agent(o) and (o.span.start_ns or 0) >= start and o.agent != agent
        ]
        if target is not None:
            named = [o for o in later if normalised(o.agent) == normalised(target)]
            recipient = named[0].agent if named else target
        elif later:
            recipient = later[0].agent
        else:
            return
        step_id = f"{obs.span.span_id}:handoff"
        self._handoff(obs, {**common, "parent_id": obs.span.span_id}, step_id, recipient)
        self._transferred = (agent, normalised(recipient))

    def _llm_steps(self, obs: Observation, agent: str | None, common: dict[str, Any]) -> None:
        """A model call: its step with usage, and the tool calls its messages carry."""
        outputs = obs.output_messages
        span = obs.span
        self._add(
            obs,
            span.start_ns,
            **common,
            kind=StepKind.llm,
            id=span.span_id,
            content=assistant_text(outputs),
            duration_s=span.duration_s,
            usage=obs.usage,
            error=obs.error,
        )
        requested = [c for m in outputs for c in m.tool_calls]
        self._requested[agent] = [c for c in requested if c.id is not None]
        self._unanswered += requested
        asked_at = span.end_ns if span.end_ns is not None else span.start_ns
        if asked_at is not None:
            self._asked_at.update({id(c): (asked_at, k) for k, c in enumerate(requested)})
        if self._calls_from_messages:
            self._message_tool_steps(obs, requested, agent, common)
        elif requested:
            self._count("tool_calls_in_messages", len(requested))

    def _message_tool_steps(
        self, obs: Observation, requested: list[ToolCall], agent: str | None, common: dict[str, Any]
    ) -> None:
        """Tool steps read from a model call's messages (for a run without tool spans): the
        results its input answers to calls requested earlier, and the calls it requests."""
        span = obs.span
        for call_id, result in [r for m in obs.input_messages for r in m.responses]:
            if call_id not in self._open_calls:
                continue
            caller, call_step = self._open_calls.pop(call_id)
            self._add(
                obs,
                span.start_ns,
                rank=-1,  # known before this call started
                **{**common, "agent": caller, "parent_id": call_step},
                kind=StepKind.tool_result,
                id=f"{call_step}:result",
                result=result,
                error=tool_error(result),
            )
        for k, call in enumerate(requested):
            coordination, target = handoff_target(call.name, call.arguments)
            if coordination:  # a coordination tool the model called: a handoff
                self._transfer_handoff(obs, target, agent, common)
                continue
            step_id = f"{span.span_id}:call{k}"
            self._add(
                obs,
                span.end_ns,
                rank=1,
                **{**common, "parent_id": span.span_id, "started_at": to_datetime(span.end_ns)},
                kind=StepKind.tool_call,
                id=step_id,
                tool_call=call,
            )
            if call.id is not None:
                self._open_calls[call.id] = (agent, step_id)
        if requested:
            self._count("tool_calls_from_messages", len(requested))


def _root(group: _Group) -> tuple[Observation, list[Observation]]:
    """The run's root and its top-level agents (those with no agent above them)."""
    top_agents = [o for o in group.order if group.is_agent(o) and group.agent_span(o) is None]
    if len(top_agents) == 1:
        return top_agents[0], top_agents
    parentless = [o for o in group.order if group.parent(o) is None]
    return (parentless or group.order)[0], top_agents


def _agent_of_run(group: _Group, top_agents: list[Observation]) -> str | None:
    """The name the run goes by: a named workflow (team, graph) around it, else its first
    top-level agent's."""
    for obs in group.order:
        if group.parent(obs) is None and group.kind(obs) is Kind.wrapper and obs.agent_name:
            return obs.agent_name
    return top_agents[0].agent if top_agents else None


_REPR = re.compile(r"^[A-Za-z_][\w.]*\((.*\w=|.*<.* at 0x)|^<[\w.]+ object at 0x", re.S)


def _is_repr(text: str) -> bool:
    """Whether a text is a language's rendering of an object (``StopEvent(result=...)``,
    ``<Context object at 0x...>``) rather than something said to the user."""
    return bool(_REPR.match(text.strip()))


def _output(group: _Group, top_agents: list[Observation], steps: list[Step]) -> Any:
    """The last top-level agent's own output (the last turn's, in a conversation), else the
    run's roots', else the last assistant text of a top-level agent's model calls, else of
    any model call; never an object's repr."""
    roots = [o for o in group.order if group.parent(o) is None]
    for obs in [*reversed(top_agents), *reversed(roots)]:
        own = assistant_text(obs.output_messages)
        if own is not None and not _is_repr(own):
            return own
    top_names = {o.agent for o in top_agents}
    for candidates in (
        [s for s in steps if s.kind is StepKind.llm and s.agent in top_names],
        [s for s in steps if s.kind is StepKind.llm],
    ):
        texts = [s.content for s in candidates if s.content]
        if texts:
            return texts[-1]
    return None


def _params(group: _Group) -> dict[str, Any]:
    """The request parameters of the first model call (model, temperature, ...)."""
    for obs in group.order:
        if group.kind(obs) is Kind.model_call:
            params = dict(obs.request_params)
            if obs.model is not None:
                params["model"] = obs.model
            return params
    return {}


def _missing(
    group: _Group, steps: list[Step], output: Any, notes: dict[str, Any]
) -> dict[str, int]:
    """What the run's record lacks, for the import report (keys of
    :data:`agentgauge.io.otel.report.MISSING`): tool calls without arguments (the tool takes
    some, or its schema is unknown), arguments no rule could read, no output, no model call,
    and spans no convention knows that recorded a model's usage or response or a tool call."""
    without_arguments = 0
    for step in steps:
        if step.kind is StepKind.tool_call and step.tool_call and not step.tool_call.arguments:
            spec = group.tools.get(step.tool_call.name)
            properties = spec.parameters.get("properties") if spec is not None else None
            without_arguments += spec is None or bool(properties)
    unknown = sum(
        1
        for o in group.order
        if o.operation is None
        and (o.usage is not None or o.response_id is not None or o.tool_call_id is not None)
    )
    missing = {
        "tool_arguments": without_arguments,
        "unread_arguments": len(notes.get("unparsed_tool_arguments", [])),
        "output": int(output is None),
        "model_call": int(not any(s.kind is StepKind.llm for s in steps)),
        "unknown_spans": unknown,
    }
    return {key: n for key, n in missing.items() if n}


def build_trace(
    observations: list[Observation], trace_id: str, task_id_attribute: str, notes: dict[str, Any]
) -> Trace:
    """The Trace of one run.

    Args:
        observations: the run's observations, one per span.
        trace_id: the Trace's id.
        task_id_attribute: the span attribute that holds the task id.
        notes: counts gathered while reading, for the Trace's metadata.

    Raises:
        ValidationError: when the Trace is not valid.
    """
    group = _Group(observations)
    spans = [o.span for o in observations]
    unmapped: Counter[str] = Counter()
    steps = _StepBuilder(group, unmapped, notes).steps()
    root, top_agents = _root(group)

    first_input = next(
        (m.text for o in group.order for m in o.input_messages if m.role == "user" and m.text),
        None,
    )
    task_id = next(
        (
            str(o.span.attributes[key])
            for key in (task_id_attribute, "session.id")
            for o in [root, *group.order]
            if o.span.attributes.get(key) not in (None, "")
        ),
        trace_id,
    )
    llm_usage = [s.usage for s in steps if s.kind is StepKind.llm and s.usage is not None]
    usage = (
        Usage(
            input_tokens=sum(u.input_tokens or 0 for u in llm_usage),
            output_tokens=sum(u.output_tokens or 0 for u in llm_usage),
        )
        if llm_usage
        else root.usage
    )
    starts = [o.span.start_ns for o in group.order if o.span.start_ns is not None]
    ends = [o.span.end_ns for o in group.order if o.span.end_ns is not None]
    models = Counter(m for o in group.order if group.kind(o) is Kind.model_call and (m := o.model))
    metadata: dict[str, Any] = {
        "source_format": Counter(s.source_format for s in spans).most_common(1)[0][0],
        "trace_ids": sorted({o.span.trace_id for o in group.order}),
        "root_span": root.span.name,
        "root_span_id": root.span.span_id,
        "root_trace_id": root.span.trace_id,
        "span_count": len(group.order) + group.merged,
        "scopes": sorted({s.scope for s in spans if s.scope}),
    }
    service = root.span.resource.get("service.name")
    if service is not None:
        metadata["service_name"] = service
    if models:
        metadata["models"] = dict(models)
    if unmapped:
        metadata["unmapped_spans"] = dict(unmapped)
    if group.duplicates:
        metadata["duplicate_spans"] = group.duplicates
    if group.merged:
        metadata["merged_spans"] = group.merged
    if not any(group.parent(o) is None and o.span.parent_id is None for o in group.order):
        metadata["root_span_missing"] = True
    if any(o.span.status_error for o in group.order):
        metadata["error_spans"] = sum(1 for o in group.order if o.span.status_error)
    metadata.update(notes)
    output = _output(group, top_agents, steps)
    if missing := _missing(group, steps, output, notes):
        metadata["missing"] = missing
    return Trace(
        id=trace_id,
        task=Task(id=task_id, input=first_input, tools=list(group.tools.values())),
        output=output,
        steps=steps,
        agent=_agent_of_run(group, top_agents),
        params=_params(group),
        started_at=to_datetime(min(starts)) if starts else None,
        ended_at=to_datetime(max(ends)) if ends else None,
        duration_s=(max(ends) - min(starts)) / 1e9 if starts and ends else None,
        usage=usage,
        metadata=metadata,
    )
