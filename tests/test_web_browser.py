"""The viewer and the HTML report driven in headless Chromium (Debian's ``chromium``, through
playwright): the runs list, filters, a sample, a comparison; and a trace whose content is made
to run scripts runs none (no dialog, no page error, nothing it sets on ``window``). A page on
another origin cannot post a trace to the live receiver (no-cors ``fetch`` of text and form
bodies, a beacon, a form), nor read the viewer or post to the receiver through a name rebound
to this machine (DNS rebinding: Chromium resolves ``attacker.example`` to 127.0.0.1).

Without chromium these tests are skipped with the reason, except in CI (``CI`` set), where
they fail: ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import load_suite
from agentgauge.serve.otlp import LiveRun, ReceiverSettings
from agentgauge.store import Store
from viewer_server import DEMO, HOSTILE, record_runs, viewer

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ATTACKER = "attacker.example"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        message = "chromium is not installed (apt-get install chromium): the browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with playwright.sync_playwright() as p:
        # as root (CI), Chromium runs only without its sandbox
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            # another site's name that points at this machine: a rebound DNS name
            args=["--no-sandbox", f"--host-resolver-rules=MAP {ATTACKER} 127.0.0.1"],
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Path]:
    folder = tmp_path_factory.mktemp("browser")
    db, ids = record_runs(folder)
    return db, ids, folder


@pytest.fixture(scope="module")
def served(runs: tuple[Path, list[str], Path]) -> Iterator[str]:
    with viewer(runs[0]) as url:
        yield url


@dataclass
class Watched:
    """A page with everything that would show a script ran: dialogs and page errors."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def go(self, url: str) -> None:
        self.page.goto(url)
        self.settle()

    def settle(self) -> None:
        """Wait until the route in the address is drawn."""
        self.page.wait_for_function(
            "() => document.body.dataset.ready === (location.hash || '#/')", timeout=30_000
        )

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).first.text_content())

    def clean(self) -> None:
        assert self.dialogs == [] and self.errors == []
        assert self.page.evaluate("() => window.__pwned") is None


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    w = Watched(page)
    page.on("dialog", lambda d: (w.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    yield w
    page.close()


def _categories() -> Counter[str]:
    with DEMO.open(encoding="utf-8") as fh:
        return Counter(json.loads(line)["task"]["category"] for line in fh)


def test_runs_list_filter_and_a_sample(
    watched: Watched, served: str, runs: tuple[Path, list[str], Path]
) -> None:
    db, ids, _ = runs
    page = watched.page
    watched.go(served)
    assert page.locator("#runs tbody tr").count() == 3
    page.fill("input[aria-label='filter runs']", "demo_b")
    assert [page.locator("#runs tbody tr").get_attribute("data-run")] == [ids[1]]
    page.fill("input[aria-label='filter runs']", "")
    page.click(f"#runs tr[data-run='{ids[0]}'] a")
    watched.settle()
    assert watched.text("#run-verdict") == "weak_accept"
    # a distribution per metric with values, and the composite's
    with Store(db) as store:
        names = store.metric_names(ids[0])
        measured = [
            m for m in names if any(v is not None for c in store.iter_metric(ids[0], m) for v in c)
        ]
    assert page.locator(".grid canvas").count() == len(measured) + 1
    assert "28 × the task needs no tools and the agent used none" in watched.text("#missing")

    page.select_option("#filter-category", "tool_use")
    watched.settle()
    n = _categories()["tool_use"]
    assert watched.text("#sample-count").startswith(f"{n} samples")
    page.select_option("#sort", "composite")
    watched.settle()
    page.click("#sort-direction")  # high to low
    watched.settle()
    with Store(db) as store:
        best = max(
            (r for r in store.iter_samples(ids[0]) if r.category == "tool_use"),
            key=lambda r: (r.composite or 0.0, -r.seq),
        )
    first = page.locator("#samples-table tr[data-key]").first
    assert first.get_attribute("data-key") == best.key
    first.locator("a").click()
    watched.settle()
    assert watched.text("h1") == f"Sample {best.trace_id}"
    assert page.locator(".card[data-metric]").count() == len(names)
    page.click("text=next sample")
    watched.settle()
    assert watched.text("h1") != f"Sample {best.trace_id}"
    watched.clean()


def test_compare_two_runs(
    watched: Watched, served: str, runs: tuple[Path, list[str], Path]
) -> None:
    _, ids, _ = runs
    page = watched.page
    watched.go(served)
    button = page.locator("text=Compare the two selected runs")
    page.check(f"input[aria-label='select {ids[1]}']")
    assert button.is_disabled()
    page.check(f"input[aria-label='select {ids[0]}']")
    button.click()
    watched.settle()
    # the older run is the baseline
    assert page.evaluate("() => location.hash") == f"#/compare/{ids[0]}/{ids[1]}"
    rows = page.locator("table.compare tr").all_text_contents()
    assert any(r.startswith("composite") for r in rows)
    page.locator("table.regressed a").first.click()
    watched.settle()
    assert page.locator(".side [data-sample]").count() == 2
    watched.clean()


def _hostile_keys(db: Path, run_id: str) -> list[str]:
    with Store(db) as store:
        return [r.key for r in store.iter_samples(run_id)]


def test_hostile_trace_content_runs_no_script_in_the_viewer(
    watched: Watched, served: str, runs: tuple[Path, list[str], Path]
) -> None:
    db, ids, _ = runs
    page = watched.page
    watched.go(served)
    watched.go(f"{served}#/run/{ids[2]}")
    for i, key in enumerate(_hostile_keys(db, ids[2])):
        page.goto(f"{served}#/run/{ids[2]}/sample/{_quote(key)}")
        watched.settle()
        # shown as text, character for character
        assert watched.text("#trace-output") == HOSTILE[i]
        assert HOSTILE[3] in page.locator(".steps").inner_text()
        assert page.locator("main img, main script, main a[href^='javascript']").count() == 0
    watched.clean()


def _quote(key: str) -> str:
    from urllib.parse import quote

    return quote(key, safe="")


def _report(db: Path, run_id: str, folder: Path) -> Path:
    out = folder / f"{run_id}.html"
    args = ["show", run_id, "--db", str(db), "--html", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_html_report_search_filter_and_sample_pages(
    watched: Watched, runs: tuple[Path, list[str], Path]
) -> None:
    db, ids, folder = runs
    report = _report(db, ids[0], folder)
    page = watched.page
    watched.go(report.as_uri())
    # one run: the report opens on it
    assert page.evaluate("() => location.hash") == f"#/run/{ids[0]}"
    assert watched.text("#run-verdict") == "weak_accept"
    page.fill("#sample-search", "demo-01")
    page.wait_for_function("() => location.hash.includes('search=demo-01')")
    watched.settle()
    assert watched.text("#sample-count").startswith("10 samples")
    page.select_option("#filter-band", "poor")
    watched.settle()
    with Store(db) as store:
        poor = [
            r.key
            for r in store.iter_samples(ids[0])
            if r.band == "poor" and "demo-01" in r.trace_id
        ]
    keys = page.locator("#samples-table tr[data-key]").evaluate_all(
        "rows => rows.map(r => r.dataset.key)"
    )
    assert keys == poor and poor
    page.locator("#samples-table tr[data-key] a").first.click()
    watched.settle()
    assert page.locator(".card[data-metric]").count() > 0
    assert page.locator(".steps .step").count() > 0
    watched.clean()


def test_hostile_trace_content_runs_no_script_in_the_report(
    watched: Watched, runs: tuple[Path, list[str], Path]
) -> None:
    db, ids, folder = runs
    report = _report(db, ids[2], folder)
    page = watched.page
    watched.go(report.as_uri())
    for i, key in enumerate(_hostile_keys(db, ids[2])):
        page.goto(f"{report.as_uri()}#/run/{ids[2]}/sample/{_quote(key)}")
        watched.settle()
        assert watched.text("#trace-output") == HOSTILE[i]
        assert page.locator("main img, main script, main a[href^='javascript']").count() == 0
    # only the report's own two scripts exist (and its two data blocks, which do not run)
    assert page.locator("script:not([type])").count() == 2
    watched.clean()


# -- pages of other sites ---------------------------------------------------------------------

ROOT_SPAN_REQUEST = (
    (Path(__file__).parent / "fixtures" / "otel" / "openai_agents.jsonl")
    .read_text()
    .splitlines()[-1]
)
"""An OTLP/JSON request that holds a whole agent run's root span: one trace on its own."""

# what a page elsewhere can send without asking (no preflight): text, a form, a beacon; a
# no-cors fetch drops a Content-Type that is not one of those (application/json)
_ATTACK = """async ([url, body]) => {
  const sent = [];
  for (const init of [
    {body, headers: {"Content-Type": "text/plain"}},
    {body: new URLSearchParams({trace: body})},
    {body, headers: {"Content-Type": "application/json"}},
    {body: new Blob([body], {type: "text/plain"})},
  ]) {
    await fetch(url, {method: "POST", mode: "no-cors", ...init});
    sent.push(init.headers ? init.headers["Content-Type"] : typeof init.body);
  }
  navigator.sendBeacon(url, body);
  return sent;
}"""


@contextmanager
def _site() -> Iterator[int]:
    """An empty page served on another port of this machine: another site's origin."""

    class Page(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = b"<!doctype html><title>another site</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_on_another_site_cannot_post_a_trace_to_the_receiver(
    browser: Any, tmp_path: Path
) -> None:
    db = tmp_path / "live.db"
    live = LiveRun(load_suite("behavior"), db, ReceiverSettings(port=0)).start()
    receiver = f"{live.url}/v1/traces"
    port = live.url.rsplit(":", 1)[1]
    page = browser.new_page()
    answered: list[int] = []
    page.on(
        "response",
        lambda r: answered.append(r.status) if r.url.endswith("/v1/traces") else None,
    )
    try:
        with _site() as site:
            page.goto(f"http://{ATTACKER}:{site}/")
            sent = page.evaluate(_ATTACK, [receiver, ROOT_SPAN_REQUEST])
            assert len(sent) == 4
            # a form whose text body is the request's JSON: name '{"resourceSpans": ...,"x":"'
            # and value '"}' make '{..., "x": "="}'
            head, tail = ROOT_SPAN_REQUEST[:-1] + ', "x": "', '"}'
            page.set_content(
                f"<form method=post enctype=text/plain action='{receiver}'>"
                "<input id=f type=hidden></form>"
            )
            page.evaluate(
                "([name, value]) => { const f = document.getElementById('f');"
                " f.name = name; f.value = value; f.form.submit(); }",
                [head, tail],
            )
            page.wait_for_url(receiver)
            # DNS rebinding: a page of the attacker's name, rebound to the receiver's address,
            # posts JSON to its own origin (no preflight): the Host names no receiver
            page.goto(f"http://{ATTACKER}:{port}/")
            status = page.evaluate(
                "async (body) => (await fetch('/v1/traces', {method: 'POST', body,"
                " headers: {'Content-Type': 'application/json'}})).status",
                ROOT_SPAN_REQUEST,
            )
            assert status == 403
        deadline = time.monotonic() + 30
        while len(answered) < 7 and time.monotonic() < deadline:  # the beacon's answer
            page.wait_for_timeout(100)
    finally:
        page.close()
        run_id = live.stop()
    # every request was refused for the site it came from (Chromium names it in Origin, on a
    # no-cors request too); the beacon's answer may reach a page that has moved on too late to
    # be seen, but a beacon let through would have stored its trace
    assert set(answered) == {403} and len(answered) >= 6, answered
    with Store(db) as store:
        assert list(store.iter_samples(run_id)) == []
        assert store.records(run_id, "otlp") == []


def test_the_viewer_answers_no_page_to_a_name_rebound_to_this_machine(
    browser: Any, served: str, runs: tuple[Path, list[str], Path]
) -> None:
    _, ids, _ = runs
    port = served.rstrip("/").rsplit(":", 1)[1]
    page = browser.new_page()
    try:
        for path in ("/", "/api/runs", f"/api/run?id={ids[0]}"):
            response = page.goto(f"http://{ATTACKER}:{port}{path}")
            assert response is not None and response.status == 400
            assert not any(run_id in response.text() for run_id in ids)
        # the same viewer, asked by its own name, answers
        response = page.goto(f"{served}api/runs")
        assert response is not None and response.status == 200 and ids[0] in response.text()
    finally:
        page.close()
