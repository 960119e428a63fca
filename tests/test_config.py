from pathlib import Path

import pytest

from agentgauge.config import SuiteError, load_suite
from agentgauge.metrics.base import MetricResult, metric
from agentgauge.model import Trace


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
        ('metrics = ["cfg_len"]\n[weights]\ncfg_len = -1\n', "negative"),
        ('metrics = ["cfg_len"\n', "cannot read suite file"),
        ('extends = "nothing"\n', "extends: unknown suite 'nothing'"),
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
