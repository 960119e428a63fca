"""Make the viewer's screenshots in this folder from the demo run.

Scores ``examples/demo_traces.jsonl`` and a second demo run (the same tasks with other
timings, ``generate_demo.py --seed 11``) into a temporary store, serves ``agentgauge view`` on
127.0.0.1 and photographs the run, sample and compare pages with Debian's headless chromium
(through playwright)::

    python docs/screenshots/make_screenshots.py [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEMO = ROOT / "examples" / "demo_traces.jsonl"
SAMPLE = "demo-007"
"""The multi-agent sample shown: its timeline has three agents and their hand-offs."""


def _evaluate(source: str, db: str) -> str:
    """Score a trace file (paths relative to the working folder, as a user types them)."""
    out = Path(source).with_suffix(".json")
    options = ["--jobs", "1", "--no-progress", "--json", str(out)]
    subprocess.run(
        [sys.executable, "-m", "agentgauge", "evaluate", source, "--db", db, *options],
        check=True,
        capture_output=True,
    )
    return str(json.loads(out.read_text())["run_id"])


def _shoot(url: str, chromium: str, shots: dict[str, str]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, route in shots.items():
            page.goto(url + route)
            page.wait_for_function("() => document.body.dataset.ready === location.hash")
            height = min(page.evaluate("() => document.body.scrollHeight"), 3400)
            path = HERE / f"{name}.png"
            clip = {"x": 0, "y": 0, "width": 1280, "height": height}
            page.screenshot(path=str(path), full_page=True, clip=clip)
            print(f"wrote {path.relative_to(ROOT)}")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    from agentgauge.store import Store
    from agentgauge.web.app import serving

    with tempfile.TemporaryDirectory() as tmp:
        # in a folder of its own, the pages show the paths a user of the demo sees
        os.chdir(tmp)
        db, other = "agentgauge.db", "examples/demo_seed11.jsonl"
        Path("examples").mkdir()
        shutil.copy(DEMO, "examples/demo_traces.jsonl")
        generator = ROOT / "examples" / "generate_demo.py"
        subprocess.run(
            [sys.executable, str(generator), "--out", other, "--seed", "11"],
            check=True,
            capture_output=True,
        )
        a, b = _evaluate("examples/demo_traces.jsonl", db), _evaluate(other, db)
        with Store(db) as store:
            key = next(r.key for r in store.iter_samples(a) if r.trace_id == SAMPLE)
        with serving(db) as url:
            _shoot(
                url,
                args.chromium,
                {
                    "run": f"#/run/{a}",
                    "sample": f"#/run/{a}/sample/{quote(key, safe='')}",
                    "compare": f"#/compare/{a}/{b}",
                },
            )


if __name__ == "__main__":
    main()
