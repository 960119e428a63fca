"""The viewer and the HTML report driven in headless Chromium (Debian's ``chromium``, through
playwright): the runs list, filters, a sample, a comparison; and a trace whose content is made
to run scripts runs none (no dialog, no page error, nothing it sets on ``window``).

Without chromium these tests are skipped with the reason, except in CI (``CI`` set), where
they fail: ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.store import Store
from viewer_server import DEMO, HOSTILE, record_runs, viewer

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        message = "chromium is not installed (apt-get install chromium): the browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with playwright.sync_playwright() as p:
        # as root (CI), Chromium runs only without its sandbox
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
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
