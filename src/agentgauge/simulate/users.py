"""Simulated users: a script of turns, or a language model playing the customer.

Both speak after the agent's greeting and end the conversation with a stop signal
(:data:`~agentgauge.conversation.STOP_SIGNALS`, tau2-bench's tokens): ``###STOP###`` once the
goal is reached, ``###TRANSFER###`` when transferred to a human, ``###OUT-OF-SCOPE###`` when
the scenario gives no way to go on.

- :class:`ScriptedUser` sends the scenario's ``user_turns`` one by one, whatever the agent
  says, then ``###STOP###``.
- :class:`LLMUser` asks a model behind any OpenAI-compatible endpoint. Its system prompt is
  :data:`USER_GUIDELINES` followed by the scenario (persona, instructions, known and unknown
  information) in a ``<scenario>`` section; the conversation is sent with the roles flipped (the
  agent's messages as the user's, the simulated user's own as the assistant's), text only:
  the simulated user never sees the agent's tool calls. Requests carry the trial's ``seed`` and
  ``temperature`` (0 by default), go through :mod:`agentgauge.http` (retries, timeouts, the key
  read from an environment variable and never stored) and their tokens are kept apart from the
  agent's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agentgauge.http import (
    ChatEndpoint,
    RequestFailed,
    RetryPolicy,
    assistant_message,
    chat_completions_url,
    with_retries,
)
from agentgauge.model import JSON, Usage
from agentgauge.simulate.environment import SimulationError
from agentgauge.simulate.scenario import Scenario

__all__ = [
    "USER_GUIDELINES",
    "LLMUser",
    "ScriptedUser",
    "UserError",
    "UserReply",
    "UserSession",
    "UserSimulator",
    "Utterance",
    "user_prompt",
]

USER_GUIDELINES = """\
You play a customer who contacts a customer-service agent. You are the customer, not an \
assistant: the agent's messages reach you as the user's messages, and you answer them.

- Write one message at a time, short and natural, as this customer would.
- Follow the scenario below exactly. State only facts the scenario gives you or that the agent \
told you. Anything else you do not know: say so if you are asked for it; never make it up.
- Give information when the agent asks for it, not everything at once, and in your own words: \
do not copy the scenario's sentences.
- Pursue the scenario's goal and nothing else.
- When the goal is reached, reply with ###STOP### alone to end the conversation.
- If you are transferred to another agent, reply with ###TRANSFER###.
- If the agent asks for something the scenario gives you no way to answer and you cannot go on, \
reply with ###OUT-OF-SCOPE###."""
"""The simulated user's guidelines, the first part of its system prompt."""


class UserError(RuntimeError):
    """The simulated user could not answer (its model failed or sent no text)."""


@dataclass(frozen=True)
class Utterance:
    """One message of the conversation as the user sees it.

    Args:
        role: ``user`` (the simulated user's own) or ``agent``.
        text: what was said.
    """

    role: Literal["user", "agent"]
    text: str


@dataclass(frozen=True)
class UserReply:
    """The simulated user's next message.

    Args:
        text: the message (a stop signal ends the conversation).
        usage: the tokens its model spent, when one was asked.
        duration_s: how long the answer took.
    """

    text: str
    usage: Usage | None = None
    duration_s: float | None = None


class UserSession(Protocol):
    """The simulated user of one conversation."""

    async def reply(self, transcript: Sequence[Utterance]) -> UserReply:
        """The next message, given the conversation so far (it ends with the agent's).

        Raises:
            UserError: the user could not answer.
        """
        ...

    async def aclose(self) -> None:
        """Release what the session holds (connections)."""
        ...


class UserSimulator(Protocol):
    """Makes the simulated user of each conversation."""

    def session(self, scenario: Scenario, seed: int) -> UserSession:
        """The user of one conversation of ``scenario``, seeded with ``seed``.

        Raises:
            SimulationError: the scenario cannot be played by this user.
        """
        ...

    def describe(self) -> dict[str, JSON]:
        """Who plays the user (kept with each conversation): ``kind`` and ``model``."""
        ...


def _known(value: str | dict[str, JSON] | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in value.items())


def user_prompt(scenario: Scenario) -> str:
    """The simulated user's system prompt: the guidelines, then the scenario.

    Args:
        scenario: the scenario to play.
    """
    parts = []
    if scenario.persona:
        parts.append(f"Persona:\n{scenario.persona}")
    parts.append(f"Instructions:\n{scenario.instructions}")
    known = _known(scenario.known_info)
    if known:
        parts.append(f"Known info:\n{known}")
    if scenario.unknown_info:
        parts.append(f"Unknown info:\n{scenario.unknown_info}")
    body = "\n\n".join(parts)
    return f"{USER_GUIDELINES}\n\n<scenario>\n{body}\n</scenario>"


class _Script:
    def __init__(self, turns: list[str]) -> None:
        self.turns = turns

    async def reply(self, transcript: Sequence[Utterance]) -> UserReply:
        sent = sum(1 for u in transcript if u.role == "user")
        text = self.turns[sent] if sent < len(self.turns) else "###STOP###"
        return UserReply(text)

    async def aclose(self) -> None:
        return None


class ScriptedUser:
    """Sends each scenario's ``user_turns`` in order, then ``###STOP###``."""

    def session(self, scenario: Scenario, seed: int) -> UserSession:
        """The script of ``scenario`` (the seed changes nothing)."""
        if not scenario.user_turns:
            raise SimulationError(
                f"scenario {scenario.id!r} has no user_turns: the scripted user needs them "
                "(or give --user an endpoint for a model to play the user)"
            )
        return _Script(list(scenario.user_turns))

    def describe(self) -> dict[str, JSON]:
        """``{"kind": "scripted"}``."""
        return {"kind": "scripted"}


class _ModelSession:
    def __init__(self, user: LLMUser, scenario: Scenario, seed: int) -> None:
        self.user = user
        self.system = user_prompt(scenario)
        self.seed = seed
        self.rng = random.Random(seed)
        self.endpoint: ChatEndpoint | None = None

    async def reply(self, transcript: Sequence[Utterance]) -> UserReply:
        user = self.user
        if self.endpoint is None:
            self.endpoint = ChatEndpoint(
                user.base_url, api_key_env=user.api_key_env, concurrency=1, transport=user.transport
            )
        endpoint = self.endpoint
        flipped = [
            {"role": "assistant" if u.role == "user" else "user", "content": u.text}
            for u in transcript
        ]
        body: dict[str, Any] = {
            "model": user.model,
            "messages": [{"role": "system", "content": self.system}, *flipped],
            "temperature": user.temperature,
            "seed": self.seed,
        }
        try:
            done = await with_retries(
                lambda: assistant_message(endpoint, body), user.retry, self.rng
            )
        except RequestFailed as exc:
            raise UserError(endpoint.redact(f"{user.base_url}: {exc}")) from None
        message, usage = done.value
        text = message.get("content")
        if not isinstance(text, str) or not text.strip():
            raise UserError("the user model answered without text")
        return UserReply(text.strip(), usage, done.latency_s)

    async def aclose(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.__aexit__(None, None, None)
            self.endpoint = None


class LLMUser:
    """A model behind an OpenAI-compatible endpoint plays the user (see the module docstring).

    Args:
        base_url: the API root (``http://localhost:8000/v1``).
        model: the model name.
        api_key_env: the environment variable holding the key (none sent when unset).
        temperature: the sampling temperature.
        timeout_s: the deadline of each attempt.
        max_retries: retries of a failed request (429, 5xx, timeouts).
        transport: an httpx2 transport (tests, proxies).

    Raises:
        ValueError: for a base URL that is not http(s).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: float = 0.0,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        transport: Any = None,
    ) -> None:
        chat_completions_url(base_url)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.retry = RetryPolicy(timeout_s=timeout_s, max_retries=max_retries)
        self.transport = transport

    def session(self, scenario: Scenario, seed: int) -> UserSession:
        """A conversation's user, its prompt made from ``scenario``."""
        return _ModelSession(self, scenario, seed)

    def describe(self) -> dict[str, JSON]:
        """``{"kind": "llm", "model": ..., "endpoint": ...}`` (never the key)."""
        return {"kind": "llm", "model": self.model, "endpoint": self.base_url}
