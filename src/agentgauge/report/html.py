"""A self-contained HTML report of a run: the viewer's front-end (:mod:`agentgauge.documents`) in
one file, with the run's data embedded: summary with CIs, distributions, why values are missing,
what the run's kind adds, and every sample in a table to search, filter and sort, each with
its page (metrics, details, trace).

No request ever leaves the file. Trace content is made safe before it is embedded
(:mod:`agentgauge.documents.safe`: credentials hidden, long text clipped) and the page renders it as
text. The samples' pages are embedded once each, gzip-compressed: a 10,000-sample run stays a
few megabytes.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from agentgauge._atomic import atomic_path
from agentgauge.documents.frontend import embed_json, report_page
from agentgauge.documents.pages import run_document, sample_page, sample_row
from agentgauge.results import samples_of
from agentgauge.store import Store

__all__ = ["REPORT_MAX_CONTENT", "render_html", "write_html"]

REPORT_MAX_CONTENT = 2000
"""Characters of one piece of trace content kept in a report."""

_ROW_FIELDS = (
    "key seq trace_id task_id category error_type composite coverage recommendation band error"
).split()
"""The samples table's columns, in the order the page reads them; then the metrics' values
(in the order of ``table.metrics``) and the reasons."""


def render_html(store: Store, run_id: str, *, max_content: int = REPORT_MAX_CONTENT) -> str:
    """Render a run as one self-contained HTML page.

    Args:
        store: the results store.
        run_id: the run (a unique prefix is accepted).
        max_content: characters kept of one piece of trace content.
    """
    run = store.get_run(run_id)
    document = run_document(store, run.id)
    metrics = [m["name"] for m in document["metrics"]]
    rows = []
    # the pages go straight into a gzip stream: memory stays flat whatever the run's size
    gzip = zlib.compressobj(6, zlib.DEFLATED, 31)
    parts = [gzip.compress(b"{")]
    for i, row in enumerate(samples_of(store, run).iter_samples(run.id, with_trace=True)):
        table_row = sample_row(row)
        rows.append(
            [
                *(table_row[f] for f in _ROW_FIELDS),
                [row.values.get(m) for m in metrics],
                table_row["reasons"] or None,
            ]
        )
        page = sample_page(row, run.weights, max_content)
        entry = f"{',' if i else ''}{embed_json(row.key)}:{embed_json(page)}"
        parts.append(gzip.compress(entry.encode("utf-8")))
    parts += [gzip.compress(b"}"), gzip.flush()]
    data = {"run": document, "table": {"metrics": metrics, "rows": rows}}
    return report_page(f"agentgauge · run {run.id}", data, b"".join(parts))


def write_html(store: Store, run_id: str, path: str | Path) -> None:
    """Write the HTML report of a run.

    Args:
        store: the results store.
        run_id: the run.
        path: the output file.
    """
    text = render_html(store, run_id)
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
