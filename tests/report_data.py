"""What an HTML report embeds, read back: the run's page and samples table (JSON), and the
samples' pages (gzip-compressed JSON)."""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any


def embedded(page: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report's data and its samples' pages by key."""
    data = re.search(r'<script type="application/json" id="ag-data">(.*?)</script>', page, re.S)
    blob = re.search(
        r'<script type="application/octet-stream" id="ag-samples">(.*?)</script>', page, re.S
    )
    assert data is not None and blob is not None
    pages = json.loads(gzip.decompress(base64.b64decode(blob.group(1))))
    return json.loads(data.group(1)), pages
