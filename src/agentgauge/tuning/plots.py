"""PNG plots of tuning runs and impact analyses (matplotlib, Agg backend, no display)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgauge._atomic import atomic_path
from agentgauge.tuning.impact import Effect
from agentgauge.tuning.tuner import TuningResult

__all__ = ["plot_convergence", "plot_impact"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_convergence(
    results: Sequence[TuningResult],
    path: str | Path,
    *,
    optimum: float | None = None,
    title: str | None = None,
) -> Path:
    """Objective per episode (dots) and best level so far (line) of each tuning run.

    Args:
        results: one or more runs (e.g. rl, bayes and random on the same agent).
        path: the PNG to write.
        optimum: a known optimum to draw as a dashed line.
        title: the figure's title.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for result in results:
        episodes = [r.episode for r in result.history if r.objective is not None]
        levels = [r.objective for r in result.history if r.objective is not None]
        (line,) = ax.plot(
            [r.episode for r in result.history],
            [r.best_objective for r in result.history],
            label=f"{result.strategy} (best so far)",
        )
        ax.scatter(episodes, levels, s=10, alpha=0.45, color=line.get_color())
    if optimum is not None:
        ax.axhline(optimum, linestyle="--", color="black", linewidth=1, label="known optimum")
    objective = results[0].objective if results else "objective"
    ax.set_xlabel("episode")
    ax.set_ylabel(objective)
    ax.set_title(title or f"Tuning convergence: {objective}")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    with atomic_path(out) as temporary:
        fig.savefig(temporary, dpi=110)
    plt.close(fig)
    return out


def plot_impact(effects: Sequence[Effect], path: str | Path, *, title: str | None = None) -> Path:
    """Heat map of slopes (parameter rows × metric columns); '*' marks significant effects.

    Args:
        effects: from :func:`agentgauge.tuning.impact.analyse`.
        path: the PNG to write.
        title: the figure's title.
    """
    import numpy as np

    plt = _pyplot()
    params = list(dict.fromkeys(e.param for e in effects))
    metrics = list(dict.fromkeys(e.metric for e in effects))
    grid = np.full((len(params), len(metrics)), np.nan)
    marks = {}
    for e in effects:
        i, j = params.index(e.param), metrics.index(e.metric)
        if e.slope is not None:
            grid[i, j] = e.slope
            marks[i, j] = f"{e.slope:+.2f}{'*' if e.significant else ''}"
    bound = float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0
    bound = bound or 1.0
    fig, ax = plt.subplots(figsize=(1.3 * len(metrics) + 2.5, 0.6 * len(params) + 1.8))
    image = ax.imshow(grid, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    ax.set_xticks(range(len(metrics)), metrics, rotation=30, ha="right")
    ax.set_yticks(range(len(params)), params)
    for (i, j), text in marks.items():
        ax.text(j, i, text, ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="slope over the normalised range")
    ax.set_title(title or "Parameter impact (* = 95% CI excludes 0)")
    fig.tight_layout()
    out = Path(path)
    with atomic_path(out) as temporary:
        fig.savefig(temporary, dpi=110)
    plt.close(fig)
    return out
