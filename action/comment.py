"""Post the comparison on the pull request, or update the comment an earlier push posted (the
one whose body starts with the marker), through GitHub's REST API. A token that may not write
(a pull request from a fork) leaves a warning: the comparison is in the job's summary all the
same. Python's standard library only: it runs wherever the action's Python does."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

MARKER = "<!-- agentgauge-compare -->"


def _call(method: str, url: str, token: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def main() -> int:
    token, number = os.environ["AG_TOKEN"], os.environ["AG_PR_NUMBER"]
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    issues = f"{api}/repos/{os.environ['GITHUB_REPOSITORY']}/issues"
    with open(os.environ["AG_MARKDOWN"], encoding="utf-8") as fh:
        body = {"body": fh.read()}
    try:
        existing = None
        page = 1
        while existing is None:
            listed = _call("GET", f"{issues}/{number}/comments?per_page=100&page={page}", token)
            if not listed:
                break
            existing = next((c["id"] for c in listed if c["body"].startswith(MARKER)), None)
            page += 1
        if existing is None:
            _call("POST", f"{issues}/{number}/comments", token, body)
        else:
            _call("PATCH", f"{issues}/comments/{existing}", token, body)
    except (urllib.error.URLError, OSError) as exc:
        print(
            f"::warning::agentgauge: cannot post the comment ({exc}); see the job summary",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
