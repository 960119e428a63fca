"""The page shell and the shipped front-end assets (``static/``): the viewer's script and
styles, and Chart.js (MIT licence, its licence file beside it).

The server's page loads the assets from the server; the HTML report inlines them with the run's
data, so that one file works offline. Data goes in ``<script type="application/json">``
elements with ``<``, ``>`` and ``&`` escaped, so that no content can close the element; the
report's Content-Security-Policy lets only its own inline scripts run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable
from functools import cache
from importlib.resources import files
from typing import Any

from agentgauge.documents.summary import finite

__all__ = ["ASSETS", "CHART_JS_VERSION", "asset", "embed_json", "report_page", "server_page"]

CHART_JS_VERSION = "4.6.1"
"""The version of Chart.js shipped in ``static/chart.umd.min.js``."""

ASSETS: dict[str, str] = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "chart.umd.min.js": "text/javascript; charset=utf-8",
}
"""The assets the pages load, with their media types."""

SERVER_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
"""The viewer's Content-Security-Policy: only its own scripts run."""


@cache
def asset(name: str) -> str:
    """The text of a shipped asset.

    Args:
        name: one of :data:`ASSETS`.

    Raises:
        KeyError: not a shipped asset.
    """
    if name not in ASSETS:
        raise KeyError(name)
    return files("agentgauge.documents").joinpath("static", name).read_text(encoding="utf-8")


def embed_json(value: Any) -> str:
    """JSON to put inside a ``<script>`` element: ``<``, ``>`` and ``&`` escaped (as JSON
    escapes), so that no string in it can end the element or open a comment; non-finite
    numbers become null.

    Args:
        value: JSON-serialisable data.
    """
    options: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "default": str}
    try:
        text = json.dumps(value, allow_nan=False, **options)
    except ValueError:  # a NaN or an infinity somewhere: rare, so looked for only then
        text = json.dumps(finite(value), **options)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _shell(title: str, mode: str, head: str, subtitle: str, body_end: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"{head}<title>{html.escape(title)}</title>\n</head>\n"
        f'<body data-mode="{mode}">\n'
        '<header class="top"><span class="brand">agentgauge</span><a href="#/">runs</a>'
        f'<span class="muted">{html.escape(subtitle)}</span></header>\n'
        '<main id="app"></main>\n'
        f"{body_end}</body>\n</html>\n"
    )


def server_page(store_path: str) -> str:
    """The viewer's page: it loads the assets and the data from the server.

    Args:
        store_path: the store shown, named in the page's header.
    """
    # no favicon request: the icon is an empty data URL
    head = '<link rel="icon" href="data:,">\n<link rel="stylesheet" href="assets/app.css">\n'
    scripts = (
        '<script src="assets/chart.umd.min.js"></script>\n<script src="assets/app.js"></script>\n'
    )
    return _shell("agentgauge", "server", head, store_path, scripts)


def report_page(title: str, data: dict[str, Any], samples_gzip: bytes) -> str:
    """The self-contained report: the assets inlined, the run's data embedded.

    Args:
        title: the page's title.
        data: the run's page (``run``) and its samples table (``table``).
        samples_gzip: the samples' pages, ``{key: page}`` as gzip-compressed JSON (a sample
            page is opened one at a time; compressed, a 10,000-sample run stays small).
    """
    scripts = [asset("chart.umd.min.js"), asset("app.js")]
    hashes = " ".join(f"'sha256-{_sha256(s)}'" for s in scripts)
    csp = (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:; "
        "object-src 'none'; base-uri 'none'; form-action 'none'"
    )
    head = (
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        f"<style>\n{asset('app.css')}</style>\n"
    )
    body_end = "".join(
        [
            f'<script type="application/json" id="ag-data">{embed_json(data)}</script>\n',
            '<script type="application/octet-stream" id="ag-samples">',
            base64.b64encode(samples_gzip).decode("ascii"),
            "</script>\n",
            *_inline_scripts(scripts),
        ]
    )
    return _shell(title, "report", head, "report", body_end)


def _inline_scripts(scripts: Iterable[str]) -> Iterable[str]:
    for script in scripts:
        yield f"<script>{script}</script>\n"


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
