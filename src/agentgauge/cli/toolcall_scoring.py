"""What ``toolcall score`` and ``toolcall run`` share: the scoring options, the suite they
choose, and the scoring and report of a run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentgauge.cli._common import (
    check_choice,
    console,
    label_run,
    score_level,
    write_outputs,
)
from agentgauge.toolcall.matching import VALUE_ACCURACY_MODES

if TYPE_CHECKING:
    from agentgauge.config import Suite
    from agentgauge.workflows.toolcall_runs import Dataset

ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode",
        help=f"value_accuracy mode: {', '.join(VALUE_ACCURACY_MODES)} (default: the format's).",
    ),
]
ParserOpt = Annotated[
    str, typer.Option("--parser", help="How answers are read: auto (detect) or a parser's name.")
]
WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        help="Overall weights as k=v,... (replace the defaults; unnamed metrics weigh 0).",
    ),
]
JobsOpt = Annotated[int | None, typer.Option("--jobs", min=1, help="Scoring processes.")]
FailUnderOpt = Annotated[
    float | None,
    typer.Option(
        "--fail-under", callback=score_level, help="Exit 1 if the mean overall is below this."
    ),
]
ProgressOpt = Annotated[bool, typer.Option(help="Show progress bars.")]


def scoring_suite(fmt: str, mode: str | None, weights: str | None, parser: str) -> Suite:
    """The suite to score with, once the format, the mode and the parser are checked.

    Args:
        fmt: ``--format``.
        mode: ``--mode`` (default: the format's).
        weights: ``--weights``.
        parser: ``--parser``.
    """
    from agentgauge.toolcall.formats import FORMATS
    from agentgauge.toolcall.parsers import PARSERS
    from agentgauge.workflows.toolcall_runs import toolcall_suite

    check_choice("--format", fmt, FORMATS)
    if mode is not None:
        check_choice("--mode", mode, VALUE_ACCURACY_MODES)
    check_choice("--parser", parser, PARSERS)
    return toolcall_suite(mode or FORMATS.get(fmt).value_mode, weights)


@dataclass(frozen=True)
class Scoring:
    """How a command scores predictions and reports the run (the options it shares).

    Args:
        db: the store.
        parser: how the model's answers are read.
        jobs: scoring processes (default: cores).
        progress: show progress bars.
        json_out: where to write the results JSON, if anywhere.
        html_out: where to write the HTML report, if anywhere.
        fail_under: exit 1 when the mean overall is below this.
        name: the run's --name.
        tags: the run's --tag values.
    """

    db: Path
    parser: str
    jobs: int | None
    progress: bool
    json_out: Path | None
    html_out: Path | None
    fail_under: float | None
    name: str | None = None
    tags: list[str] | None = None

    def run(
        self,
        data: Dataset,
        predictions: Path,
        suite: Suite,
        extra_config: dict[str, Any] | None = None,
        *,
        failed: bool = False,
    ) -> None:
        """Score ``predictions`` against ``data`` into the store, then report the run.

        Args:
            data: the dataset the predictions answer.
            predictions: ``{"id", "result"}`` per line.
            suite: the suite to score with (:func:`scoring_suite`).
            extra_config: further keys recorded in the run's configuration.
            failed: the model answered nothing: the run is stored with status ``failed``.
        """
        from agentgauge.report.export import write_result_json
        from agentgauge.store import Store
        from agentgauge.workflows.toolcall_runs import (
            add_verdict,
            count_unanswered,
            score_predictions,
        )

        with Store(self.db) as store:
            run_id = score_predictions(
                data,
                predictions,
                suite,
                store=store,
                parser=self.parser,
                jobs=self.jobs,
                progress=self.progress,
                extra_config=extra_config,
            )
            label_run(store, run_id, self.name, self.tags)
            if failed:
                store.finish_run(run_id, "failed")
            if self.json_out is not None:
                write_result_json(store, run_id, self.json_out, sample_hook=add_verdict)
                console.print(f"wrote {self.json_out}", markup=False, highlight=False)
            console.print(
                f"run id: {run_id}  (agentgauge toolcall failures {run_id} --db {self.db})",
                markup=False,
            )
            unanswered = count_unanswered(store, run_id)
        if unanswered:
            console.print(
                f"[yellow]{unanswered} samples have no answer from the model[/] (no prediction, "
                "or a failed request): each scores 0 on every metric (error type run_error)."
            )
        write_outputs(
            self.db,
            run_id,
            json_out=None,
            csv_out=None,
            html_out=self.html_out,
            fail_under=self.fail_under,
        )
