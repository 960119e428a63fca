"""The judge cache: verdicts already paid for, in the results store's SQLite file.

A rerun of the same judge (model, prompt version, instructions, prompt and output schema) on
the same inputs is served from the table ``judge_cache`` and makes no call. The table lives
in the same file as the results store (default ``./agentgauge.db``) and is part of the store's
schema; a cache without a store creates it with ``CREATE TABLE IF NOT EXISTS`` and puts the
file in WAL mode, so the store and the cache can be written by different connections. It
holds the structured output (its secrets redacted, as the store redacts a trace) and the token
usage of the call that produced it, never a credential: the key is a hash of what was sent,
and the model is named by its model string or ``name@base_url`` (URL credentials hidden).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentgauge._redact import redact_secrets, redact_url
from agentgauge.store import JUDGE_CACHE_SCHEMA

__all__ = ["JudgeCache", "cache_key"]


def cache_key(*, model: str, prompt_version: str, parts: dict[str, Any]) -> str:
    """SHA-256 of the model, the prompt version and everything else that was sent.

    Args:
        model: the judge model's identity (never a key).
        prompt_version: the judge's prompt version.
        parts: the instructions, the prompt and the output schema.
    """
    payload = json.dumps(
        {"model": model, "prompt_version": prompt_version, **parts},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """Read and write cached verdicts.

    Args:
        path: the SQLite file (created with its parent folder if missing).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(JUDGE_CACHE_SCHEMA)
        self._conn.commit()

    def get(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The cached ``(output, usage)`` for ``key``, or None.

        Args:
            key: a :func:`cache_key`.
        """
        row = self._conn.execute(
            "SELECT output, usage FROM judge_cache WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return json.loads(row[0]), json.loads(row[1] or "{}")

    def put(
        self,
        key: str,
        *,
        model: str,
        prompt_version: str,
        output: dict[str, Any],
        usage: dict[str, Any],
    ) -> None:
        """Store a verdict (replacing an older one with the same key).

        Args:
            key: a :func:`cache_key`.
            model: the model's identity.
            prompt_version: the judge's prompt version.
            output: the structured output.
            usage: tokens, requests and cost of the call.
        """
        self._conn.execute(
            "INSERT OR REPLACE INTO judge_cache"
            " (key, model, prompt_version, output, usage, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                key,
                redact_url(model),
                prompt_version,
                json.dumps(redact_secrets(output, hide_text=True), ensure_ascii=False),
                json.dumps(usage),
                datetime.now(UTC).isoformat(),
            ),
        )
        self._conn.commit()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
