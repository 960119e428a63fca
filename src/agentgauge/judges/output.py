"""How a judge returns its verdict: the output modes, and the strict reading of prompted JSON.

Structured output reaches a model in one of three ways (pydantic-ai's output modes):

- ``tool``: the verdict is the arguments of a function the model must call (the default of
  OpenAI, Anthropic, Gemini... and of servers started with a tool-call parser);
- ``native``: the request's ``response_format`` carries the verdict's JSON Schema and the
  answer is the JSON text (llama.cpp server, Ollama and vLLM honour it without a tool parser);
- ``prompted``: the instructions ask for one JSON object validating against the schema, and
  the text is read strictly by :func:`read_verdict` — the endpoint needs neither.

:func:`read_verdict` accepts an answer that holds the JSON inside Markdown fences or between
sentences of prose (the first JSON object that validates is taken; text after it is ignored),
and refuses anything else: a missing or extra field, a wrong type (``"5"`` for 5), a value off
the scale. A refused answer gets one repair request naming the error (pydantic-ai's output
retry); a second refusal fails the judgment with the reason.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

__all__ = [
    "MODES",
    "PROBE_PROMPT",
    "OutputMode",
    "ProbeVerdict",
    "prompted_instructions",
    "read_verdict",
]

OutputMode = Literal["tool", "native", "prompted"]
MODES: tuple[OutputMode, ...] = ("tool", "native", "prompted")
"""The output modes, in the order ``auto`` tries them."""

PROBE_PROMPT = "This is a connectivity check. Answer with ok set to true."
"""What the probe of an endpoint's output modes asks."""


class ProbeVerdict(BaseModel):
    """The probe's answer."""

    ok: bool


def prompted_instructions(instructions: str, verdict_type: type[BaseModel]) -> str:
    """The instructions of a prompted-JSON judge: the judge's own, then the answer's schema.

    Args:
        instructions: the judge's instructions.
        verdict_type: the verdict model.
    """
    schema = json.dumps(verdict_type.model_json_schema(), ensure_ascii=False)
    return (
        instructions
        + "\n\nAnswer with one JSON object and nothing else: no Markdown, no text before or "
        "after it. It must validate against this JSON Schema (every required field, no other "
        "field, the declared types):\n" + schema
    )


def _candidates(text: str) -> list[Any]:
    """The JSON objects that start at each ``{`` of ``text``, in order (fences and prose
    around them are skipped; what follows an object is ignored)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    start = text.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", start + 1)
    return found


def read_verdict(text: str, verdict_type: type[BaseModel]) -> BaseModel:
    """The verdict in a model's text answer, validated strictly.

    Args:
        text: the answer: JSON, JSON in Markdown fences, or JSON between sentences.
        verdict_type: the verdict model (its validation is strict: no coercion).

    Raises:
        ValueError: no JSON object in the text, or none that validates (the message names the
            first object's errors: it is sent back to the model in the repair request).
    """
    objects = _candidates(text)
    if not objects:
        raise ValueError(
            "the answer holds no JSON object: answer with one JSON object that validates "
            "against the schema, and nothing else"
        )
    first_error: ValidationError | None = None
    for value in objects:
        try:
            return verdict_type.model_validate(value)
        except ValidationError as exc:
            first_error = first_error or exc
    assert first_error is not None
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(object)'}: {err['msg']}"
        for err in first_error.errors()
    )
    raise ValueError(f"the JSON object does not validate against the schema: {problems}")
