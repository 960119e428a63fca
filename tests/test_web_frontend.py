"""The page shell and the shipped assets: data embedded inertly, the report's scripts allowed by
their hashes and nothing else, Chart.js shipped at its stated version with its licence."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib.resources import files

from agentgauge.documents.frontend import (
    ASSETS,
    CHART_JS_VERSION,
    asset,
    embed_json,
    report_page,
    server_page,
)


def test_embedded_json_cannot_close_its_element() -> None:
    value = {"a": "</script><script>alert(1)</script>", "b": "<!-- & -->", "n": float("nan")}
    text = embed_json(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {**value, "n": None}


def test_report_allows_only_its_own_inline_scripts() -> None:
    page = report_page("t", {"run": {}, "table": {"metrics": [], "rows": []}}, b"")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    inline = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(inline) == 2
    hashes = {
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in inline
    }
    script_src = re.search(r"script-src ([^;]+);", policy.group(1))
    assert script_src is not None and set(script_src.group(1).split()) == hashes
    assert "default-src 'none'" in policy.group(1)


def test_assets_are_shipped_and_inert_inside_a_script_element() -> None:
    for name in ASSETS:
        assert "</script" not in asset(name).lower(), name
    assert asset("chart.umd.min.js").startswith(f"/*!\n * Chart.js v{CHART_JS_VERSION}\n")
    licence = files("agentgauge.documents").joinpath("static", "chart.js-LICENSE.md").read_text()
    assert licence.startswith("The MIT License")
    assert 'src="assets/app.js"' in server_page("x.db")
