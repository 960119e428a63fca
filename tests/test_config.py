from pathlib import Path

import pytest

from agentgauge.config import SuiteError, load_suite
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.model import Trace
from agentgauge.registry import DeprecatedNameWarning


@metric("cfg_len")
def _cfg_len(trace: Trace, *, limit: int = 10) -> MetricResult:
    return MetricResult(value=1.0 if len(str(trace.output)) <= limit else 0.0)


@metric("cfg_one")
def _cfg_one(trace: Trace) -> MetricResult:
    return MetricResult(value=1.0)


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_suite_file_with_weights_options_thresholds(tmp_path: Path) -> None:
    suite = load_suite(
        _toml(
            tmp_path,
            """
name = "mine"
metrics = ["cfg_len", "cfg_one"]
[weights]
cfg_len = 2
cfg_one = 1
[options.cfg_len]
limit = 3
[thresholds]
accept = 0.9
""",
        )
    )
    assert suite.name == "mine"
    assert suite.weights == {"cfg_len": 2, "cfg_one": 1}
    assert suite.thresholds.accept == 0.9
    (m_len, _) = suite.build_metrics()
    assert m_len.score(Trace(id="a", task={"id": "t"}, output="abcd")).value == 0.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('metrics = ["cfg_len"]\n[weights]\ncfg_lenn = 1\n', "unknown weight key 'cfg_lenn'"),
        ('metrics = ["nope"]\n', "unknown metric 'nope'"),
        ('metrics = ["cfg_len"]\n[options.cfg_len]\nlimitt = 1\n', "unknown option 'limitt'"),
        ('metrics = ["cfg_len"]\n[options.cfg_one]\n', "options: unknown metric 'cfg_one'"),
        ('metrics = ["cfg_len"]\nweightz = 1\n', "weightz"),
        ('metrics = ["cfg_len"]\n[weights]\ncfg_len = -1\n', "must be a finite number >= 0"),
        ('metrics = ["cfg_len"]\n[weights]\ncfg_len = nan\n', "must be a finite number >= 0"),
        (
            'metrics = ["cfg_len", "cfg_one"]\n[weights]\ncfg_len = 1e308\ncfg_one = 1e308\n',
            "overflows",
        ),
        ('metrics = ["cfg_len"]\n[options.cfg_len]\nlimit = inf\n', "expected a finite number"),
        ('metrics = ["cfg_len"\n', "cannot read suite file"),
        ('extends = "nothing"\n', "extends: unknown suite 'nothing'"),
        ('extends = ["behavior"]\n', "extends: unknown suite \\['behavior'\\]"),
        ('metrics = ["cfg_len"]\nweights = 5\n', "weights: expected a table"),
        ('extends = "review"\n[text]\nmodle = "x"\n', "text: unknown option 'modle'"),
        (
            'metrics = ["cfg_len"]\n[options.cfg_len]\nlimit = "abc"\n',
            "option 'limit': expected a finite number, got 'abc'",
        ),
        (
            'extends = "behavior"\n[options.efficiency]\nmax_steps_ref = 0\n',
            "max_steps_ref must be > 0",
        ),
        ('extends = "behavior"\n[gates]\nsafty = 0.9\n', "gates: unknown metric 'safty'"),
        ('extends = "behavior"\n[gates]\nsafety = 1.5\n', "gates: 'safety' must be within"),
        ('extends = "behavior"\ngates = 0.9\n', "gates: expected a table"),
        (
            'extends = "review"\nmetrics = ["communication_overhead"]\n[gates]\n'
            "communication_overhead = 0.2\n",
            "'communication_overhead' is lower-is-better",
        ),
    ],
)
def test_bad_suite_files_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    path = _toml(tmp_path, body)
    with pytest.raises(SuiteError, match=message) as info:
        load_suite(path)
    assert str(path) in str(info.value)


def test_unknown_suite_name() -> None:
    with pytest.raises(SuiteError, match="unknown suite 'behaviour'"):
        load_suite("behaviour")


def test_text_table_is_shared_by_the_tier_1_metrics_under_their_own_options(
    tmp_path: Path,
) -> None:
    suite = load_suite(
        _toml(
            tmp_path,
            """
extends = "review"
[text]
model = "all-MiniLM-L6-v2"
num_layers = 4
semantic_weight = 0.6
cosine_weight = 0.2
[options.task_success]
confidence_threshold = 0.7
[options.output_similarity]
batch_size = 8
""",
        )
    )
    built = {m.name: m for m in suite.build_metrics()}
    assert set(built) >= {"task_success", "output_similarity"}
    shared = {
        "model": "all-MiniLM-L6-v2",
        "num_layers": 4,
        "semantic_weight": 0.6,
        "cosine_weight": 0.2,
    }
    for name in ("task_success", "output_similarity"):
        options = vars(built[name])["_options"]
        assert {k: getattr(options, k) for k in shared} == shared
    assert built["task_success"].confidence_threshold == 0.7  # type: ignore[attr-defined]
    # a metric's own option wins over the shared table
    assert vars(built["output_similarity"])["_options"].batch_size == 8
    assert vars(built["task_success"])["_options"].batch_size is None  # the device's choice


def test_former_metric_names_are_taken_as_their_current_names(tmp_path: Path) -> None:
    path = tmp_path / "old.toml"
    path.write_text(
        'extends = "review"\n'
        "[weights]\nplanning_rational = 0.5\n"
        '[options.planning_rationality]\nfallback = "heuristic"\n',
        encoding="utf-8",
    )
    with pytest.warns(DeprecatedNameWarning) as warned:
        suite = load_suite(path)
    assert [str(w.message) for w in warned] == [
        "the metric 'planning_rational' is now called 'planning_judge'; the old name is deprecated",
        "the metric 'planning_rationality' is now called 'planning_judge'; the old name is "
        "deprecated",
    ]
    assert suite.metrics.count("planning_judge") == 1
    assert "planning_rational" not in suite.metrics
    assert suite.weights["planning_judge"] == 0.5
    assert set(suite.weights) == set(suite.metrics)
    assert suite.options["planning_judge"] == {"fallback": "heuristic"}
    # both former names listed: one metric
    both = tmp_path / "both.toml"
    both.write_text('metrics = ["planning_rational", "planning_rationality"]\n', encoding="utf-8")
    with pytest.warns(DeprecatedNameWarning):
        assert load_suite(both).metrics == ["planning_judge"]
    with pytest.warns(DeprecatedNameWarning, match="'planning_rationality' is now called"):
        weighted = load_suite("review").with_weights({"planning_rationality": 0.0})
    assert weighted.weights["planning_judge"] == 0.0
    assert "planning_rationality" not in weighted.weights
