"""The options every span importer takes (OTLP, Jaeger, Tempo, protobuf): how spans are grouped
into runs and where a run's task id comes from."""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_TASK_ID_ATTRIBUTE", "GroupBy"]

GroupBy = Literal["trace", "conversation"]
"""``trace``: one run per trace id (bare model calls joined into runs); ``conversation``: one
run per conversation id."""

DEFAULT_TASK_ID_ATTRIBUTE = "gen_ai.conversation.id"
"""The span attribute a run's task id is read from by default."""
