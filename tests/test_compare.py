import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agentgauge.cli import app
from agentgauge.config import Suite
from agentgauge.documents.compare import compare_runs, pass_k_table
from agentgauge.engine import EvaluateOptions, evaluate
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.model import Task, Trace
from agentgauge.stats import paired_comparison, pass_at_k, pass_hat_k


@metric("cmp_quality")
def _quality(trace: Trace) -> MetricResult:
    return MetricResult(value=float(trace.output))  # type: ignore[arg-type]


QUIET = EvaluateOptions(jobs=1, progress=False)
SUITE = Suite(name="cmp", metrics=["cmp_quality"], weights={"cmp_quality": 1.0})


def test_pass_at_k_matches_enumeration() -> None:
    # 5 trials, 2 successes: enumerate every 3-subset
    outcomes = [True, True, False, False, False]
    subsets = list(itertools.combinations(outcomes, 3))
    assert pass_at_k(5, 2, 3) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    assert pass_hat_k(5, 2, 3) == 0.0
    assert pass_hat_k(5, 4, 2) == pytest.approx(math.comb(4, 2) / math.comb(5, 2))
    assert pass_at_k(5, 0, 1) == 0.0 and pass_at_k(5, 5, 1) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_paired_comparison_exact_small_sample() -> None:
    a = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    b = [0.3, 0.45, 0.5, 0.65, 0.7, 0.8]
    r = paired_comparison(a, b)
    assert r.diff == pytest.approx(np.mean(np.subtract(b, a)))
    # all 6 differences positive: of the 2^6 sign flips only all-plus and all-minus are as
    # extreme, so the exact two-sided p-value is 2/64
    assert r.p_value == pytest.approx(2 / 64)
    assert r.ci_low > 0
    same = paired_comparison(a, a)
    assert same.diff == 0 and same.p_value == 1.0


def test_compare_and_passk_on_stored_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.7, size=40)

    def traces(shift: float, repeats: int) -> list[Trace]:
        return [
            Trace(
                id=f"{t}-{r}",
                task=Task(id=f"task{t}"),
                output=float(min(1.0, base[t] + shift + 0.01 * r)),
            )
            for t in range(40)
            for r in range(repeats)
        ]

    db = tmp_path / "c.db"
    from agentgauge.store import Store

    with Store(db) as store:
        a = evaluate(traces(0.0, 2), SUITE, store=store, options=QUIET)
        b = evaluate(traces(0.1, 2), SUITE, store=store, options=QUIET)
        result = compare_runs(store, a, b)
        comp = result["metrics"]["composite"]
        assert comp["n"] == 40 and comp["diff"] == pytest.approx(0.1, abs=1e-9)
        assert comp["verdict"] == "B better" and comp["p_value"] < 0.001
        # per task: values base+0.0 and base+0.01 -> success at 0.5 iff base >= 0.5 (both)
        # or 0.49 <= base < 0.5 (one of two)
        table = pass_k_table(store, a, [1, 2], threshold=0.5)
        n_both = int(np.sum(base >= 0.5))
        n_one = int(np.sum((base >= 0.49) & (base < 0.5)))
        assert table["k"]["1"]["pass_at_k"] == pytest.approx((n_both + 0.5 * n_one) / 40)
        assert table["k"]["2"]["pass_hat_k"] == pytest.approx(n_both / 40)
    out = CliRunner().invoke(app, ["compare", a, b, "--db", str(db)])
    assert out.exit_code == 0 and "B better" in out.output
    worse = CliRunner().invoke(app, ["compare", b, a, "--db", str(db), "--fail-if-worse"])
    assert worse.exit_code == 1
    pk = CliRunner().invoke(app, ["passk", a, "--k", "1,2", "--threshold", "0.5", "--db", str(db)])
    assert pk.exit_code == 0 and "pass@k" in pk.output
    # more trials asked for than were run: said, not a silent zero
    three = CliRunner().invoke(app, ["passk", a, "--k", "3", "--db", str(db)])
    assert three.exit_code == 0 and "no task has 3 trials; the most is 2" in three.output
    for bad in (["--metric", "nope"], ["--k", "0"], ["--threshold", "2"]):
        res = CliRunner().invoke(app, ["passk", a, "--db", str(db), *bad])
        assert res.exit_code == 2, bad
    assert (
        "has no metric 'nope'"
        in CliRunner().invoke(app, ["passk", a, "--db", str(db), "--metric", "nope"]).output
    )


@metric("cmp_overhead", higher_is_better=False)
def _overhead(trace: Trace) -> MetricResult:
    return MetricResult(value=float(trace.output))  # type: ignore[arg-type]


def test_lower_is_better_metric_is_oriented_in_composite_and_verdict(tmp_path: Path) -> None:
    from agentgauge.store import Store

    suite = Suite(
        name="cmp-low",
        metrics=["cmp_quality", "cmp_overhead"],
        weights={"cmp_quality": 0.5, "cmp_overhead": 0.5},
    )
    assert suite.lower_is_better == {"cmp_overhead"}

    def traces(value: float) -> list[Trace]:
        return [Trace(id=f"t{i}", task=Task(id=f"t{i}"), output=value + i / 100) for i in range(12)]

    with Store(tmp_path / "low.db") as store:
        a = evaluate(traces(0.6), suite, store=store, options=QUIET)
        b = evaluate(traces(0.2), suite, store=store, options=QUIET)
        # a sample with value v scores 0.5·v + 0.5·(1 − v) = 0.5 whatever v is
        composites = [c for rows in store.iter_columns(a, ["composite"]) for (c,) in rows]
        assert composites == pytest.approx([0.5] * 12)
        result = compare_runs(store, a, b)["metrics"]
    assert result["cmp_overhead"]["verdict"] == "B better"  # lower overhead
    assert result["cmp_quality"]["verdict"] == "B worse"
    # the metrics' verdicts use Benjamini–Hochberg q-values; the composite its own p-value
    from scipy.stats import false_discovery_control

    ps = [result["cmp_quality"]["p_value"], result["cmp_overhead"]["p_value"]]
    expected_q = false_discovery_control(ps, method="bh")
    assert [result["cmp_quality"]["q_value"], result["cmp_overhead"]["q_value"]] == pytest.approx(
        list(expected_q)
    )
    assert result["composite"]["q_value"] == result["composite"]["p_value"]


def test_compare_refuses_runs_with_nothing_in_common_and_warns_on_other_suites(
    tmp_path: Path,
) -> None:
    from agentgauge.store import Store

    def traces(prefix: str) -> list[Trace]:
        return [
            Trace(id=f"{prefix}{i}", task=Task(id=f"{prefix}{i}"), output=0.5) for i in range(5)
        ]

    other = Suite(name="cmp-other", metrics=["cmp_quality"], weights={"cmp_quality": 2.0})
    db = tmp_path / "c.db"
    with Store(db) as store:
        a = evaluate(traces("x"), SUITE, store=store, options=QUIET)
        b = evaluate(traces("y"), SUITE, store=store, options=QUIET)
        c = evaluate(traces("x"), other, store=store, options=QUIET)
        warnings = compare_runs(store, a, c)["warnings"]
    disjoint = CliRunner().invoke(app, ["compare", a, b, "--db", str(db), "--fail-if-worse"])
    assert disjoint.exit_code == 2 and "nothing to compare" in disjoint.output
    assert len(warnings) == 1 and "different suites or options (cmp and cmp-other)" in warnings[0]


def test_compare_markdown_is_a_pull_request_comment(tmp_path: Path) -> None:
    """Run A scores 0.6 + i/100 on tasks t0..t11, run B 0.2 + i/100: B − A = −0.4 on every
    pair (CI [−0.4, −0.4]; all 12 signs negative: exact p = 2/2^12, reported after the
    permutation test's resolution), B fails its gate, costs 0.002 vs 0.001 per sample."""
    from agentgauge.documents.compare import compare_runs
    from agentgauge.report.markdown import MARKER
    from agentgauge.store import Store

    suite = Suite(
        name="cmp-gated",
        metrics=["cmp_quality", "cmp_overhead"],
        weights={"cmp_quality": 1.0, "cmp_overhead": 0.0},
        gates={"cmp_quality": 0.5},
    )

    def traces(value: float, cost: float) -> list[Trace]:
        return [
            Trace(
                id=f"t{i}",
                task=Task(id=f"t{i}"),
                output=value + i / 100,
                usage={"input_tokens": 100, "output_tokens": 10, "cost_usd": cost},
            )
            for i in range(12)
        ]

    db = tmp_path / "md.db"
    with Store(db) as store:
        a = evaluate(traces(0.6, 0.001), suite, store=store, options=QUIET)
        b = evaluate(traces(0.2, 0.002), suite, store=store, options=QUIET)
        store.label_run(a, name="main | <b>base</b>")
        result = compare_runs(store, a, b)
    out = tmp_path / "comment.md"
    args = ["compare", a, b, "--db", str(db), "--markdown", str(out)]
    done = CliRunner().invoke(app, [*args, "--report-url", "https://ci.example/run/7"])
    assert done.exit_code == 0, done.output
    text = out.read_text(encoding="utf-8")
    comp, quality = result["metrics"]["composite"], result["metrics"]["cmp_quality"]
    cost = result["usage"]["cost_usd"]
    # means of 0.6 + i/100 and 0.2 + i/100 over i = 0..11
    assert (comp["mean_a"], comp["mean_b"]) == (pytest.approx(0.655), pytest.approx(0.255))
    assert comp["verdict"] == "B worse" and cost["verdict"] == "B dearer"
    p = f"{comp['p_value']:.3f}"
    assert text.splitlines()[:3] == [
        MARKER,
        rf"### agentgauge: `{b}` against main \| \<b\>base\</b\> (`{a}`)",
        "",
    ]
    assert (
        f"Composite 0.655 → 0.255 (B − A -0.400, 95% CI [-0.400, -0.400], p {p}): **B worse**."
        in text
    )
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[:4] == [
        "| metric | A | B | B − A | 95% CI | p / q | verdict |",
        f"| **composite** | 0.655 | 0.255 | -0.400 | [-0.400, -0.400] | {p} | **B worse** |",
        f"| cmp\\_quality | 0.655 | 0.255 | -0.400 | [-0.400, -0.400] | "
        f"{quality['q_value']:.3f} | **B worse** |",
        # lower is better: 0.4 lower is "B better"
        f"| cmp\\_overhead | 0.655 | 0.255 | -0.400 | [-0.400, -0.400] | "
        f"{result['metrics']['cmp_overhead']['q_value']:.3f} | **B better** |",
    ]
    assert "- cmp\\_quality: 0.655 → 0.255 (-0.400, 95% CI [-0.400, -0.400])" in text
    assert (
        "**Gates** of run B: **failed**: cmp\\_quality 0.255 \\< 0.5: run B is a reject "
        "whatever its composite (gates: cmp\\_quality ≥ 0.5)." in text
    )
    assert (
        f"| cost (USD) per sample | 0.001 | 0.002 | +0.001 | [+0.001, +0.001] | "
        f"{cost['p_value']:.3f} | B dearer |" in table
    )
    assert "Paired by task: 12 pairs." in text
    assert text.rstrip().endswith("[HTML report of run B](https://ci.example/run/7)")


def test_the_sign_flip_test_is_scipys_permutation_test() -> None:
    """Exact (every sign pattern) where scipy is exact, within Monte Carlo error elsewhere, ties
    (0/1 metrics) included."""
    from scipy.stats import permutation_test

    from agentgauge.stats import sign_flip_p_value

    def reference(a: np.ndarray, b: np.ndarray, seed: int) -> float:
        return float(
            permutation_test(
                (a, b),
                lambda u, v, axis: np.mean(v - u, axis=axis),
                permutation_type="samples",
                n_resamples=5000,
                vectorized=True,
                random_state=np.random.default_rng(seed),
            ).pvalue
        )

    rng = np.random.default_rng(5)
    for n in (3, 7, 12):  # 2^12 = 4096 patterns <= 5000: exact
        a, b = rng.uniform(size=n), rng.uniform(size=n)
        assert sign_flip_p_value(b - a, n_resamples=5000, seed=0) == reference(a, b, 0)
        a, b = rng.integers(0, 2, size=n).astype(float), rng.integers(0, 2, size=n).astype(float)
        if np.any(a != b):
            assert sign_flip_p_value(b - a, n_resamples=5000, seed=0) == reference(a, b, 0)
    for n, shift in ((200, 0.0), (200, 0.03), (3000, 0.005)):
        a = rng.uniform(size=n)
        b = np.clip(a + shift + rng.normal(0, 0.2, size=n), 0, 1)
        ours = sign_flip_p_value(b - a, n_resamples=5000, seed=0)
        # both are estimates from 5,000 random patterns: sd <= 0.5/sqrt(5000) = 0.007 each
        assert abs(ours - reference(a, b, 1)) < 0.04
