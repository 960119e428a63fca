"""Checks of a judge's set-up, made before a run starts and without calling the model.

A judge that cannot work fails every sample it scores; these checks find the usual causes at
once, each in one line that names what to set:

- a model string without a provider (``gpt-4o-mini`` instead of ``openai:gpt-4o-mini``) and
  no ``base_url``;
- a provider pydantic-ai does not know, or whose package is not installed;
- a provider whose API key is not in the environment (the variable named by ``api_key_env``,
  else the provider's own: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``...);
- a ``base_url`` that is not an http(s) URL or where nothing answers (a TCP connection is
  tried; no request is sent).

The judge's library (pydantic-ai, the ``judge`` extra) is checked first of all. No model
object is built and no request is made: a key that is set but wrong is found by the
first call, which then fails with its reason like any other failed call.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from agentgauge._extras import installed
from agentgauge._redact import redact_url
from agentgauge.errors import AgentgaugeError
from agentgauge.judges.settings import JudgeSettings

__all__ = ["PROVIDER_KEYS", "JudgeSetupError", "check_judge"]

PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai-chat": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "cohere": ("CO_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
}
"""The environment variables that hold each provider's API key (any one of them will do), for
the providers that cannot work without one."""

_CONNECT_TIMEOUT_S = 5.0
_KEY_HINT = "or name the variable that holds the key with --judge-api-key-env ([judge] api_key_env)"


class JudgeSetupError(AgentgaugeError, ValueError):
    """A judge that cannot work as configured; the message is one line naming what to set."""


def _check_base_url(settings: JudgeSettings) -> None:
    assert settings.base_url is not None
    shown = redact_url(settings.base_url)
    parts = urlsplit(settings.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeSetupError(
            f"judge base URL {shown!r} is not an http(s) URL: fix --judge-url ([judge] base_url)"
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise JudgeSetupError(
            f"judge base URL {shown!r} has an invalid port: fix --judge-url ([judge] base_url)"
        ) from None
    timeout = min(settings.timeout_s, _CONNECT_TIMEOUT_S)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise JudgeSetupError(
            f"judge base URL {shown} is unreachable ({reason}): start the server or fix "
            "--judge-url ([judge] base_url)"
        ) from None


def _check_provider(model: str, provider: str) -> None:
    from pydantic_ai.providers import infer_provider_class

    try:
        infer_provider_class(provider)
    except ValueError:
        raise JudgeSetupError(
            f"unknown judge provider {provider!r} in model {model!r}: use a pydantic-ai provider "
            "(openai, anthropic, google, groq, mistral, ollama...) in --judge ([judge] model), "
            "or an OpenAI-compatible server with --judge-url"
        ) from None
    except ImportError as exc:
        raise JudgeSetupError(
            f"the judge provider {provider!r} needs a package that is not installed ({exc}): "
            f"pip install 'pydantic-ai-slim[{provider}]'"
        ) from None


def _require_judge_extra() -> None:
    if not installed("pydantic_ai"):
        raise JudgeSetupError(
            "the judge needs pydantic-ai, in the 'judge' extra: pip install 'agentgauge[judge]'"
        )


def check_judge(settings: JudgeSettings) -> None:
    """Check that ``settings`` can reach a judge model, without building it or calling it.

    Args:
        settings: the judge settings; nothing is checked when ``model`` is None (no judge).

    Raises:
        JudgeSetupError: naming the environment variable or option to set.
    """
    model = settings.model
    if model is None:
        return
    _require_judge_extra()
    env = settings.api_key_env
    if env is not None and not os.environ.get(env):
        raise JudgeSetupError(
            f"the judge's API key variable {env} is not set: set {env}, or fix "
            "--judge-api-key-env ([judge] api_key_env)"
        )
    if settings.base_url is not None:
        _check_base_url(settings)
        return
    if model == "test":  # pydantic-ai's offline test model
        return
    provider, sep, _name = model.partition(":")
    if not sep:
        raise JudgeSetupError(
            f"judge model {model!r} names no provider: write provider:model (e.g. "
            f"openai:{model}) in --judge ([judge] model), or give the URL that serves it with "
            "--judge-url"
        )
    keys = PROVIDER_KEYS.get(provider, ())
    served_elsewhere = provider.startswith("openai") and os.environ.get("OPENAI_BASE_URL")
    if env is None and keys and not served_elsewhere and not any(os.environ.get(k) for k in keys):
        raise JudgeSetupError(
            f"the judge model {model} needs an API key: set {' or '.join(keys)}, {_KEY_HINT}"
        )
    _check_provider(model, provider)
