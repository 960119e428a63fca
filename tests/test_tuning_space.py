"""The parameter space: spec ranges, validation, unit mapping, rounding on apply, TOML params."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentgauge.tuning.space import ParameterError, ParameterSpace, ParamSpec, load_space


def test_spec_parameters_and_ranges() -> None:
    space = ParameterSpace()
    assert space.names == [
        "context_length",
        "temperature",
        "max_steps",
        "tool_usage_threshold",
        "reasoning_depth",
    ]
    bounds = {p.name: (p.low, p.high) for p in space.params}
    assert bounds == {
        "context_length": (100, 5000),
        "temperature": (0.1, 2.0),
        "max_steps": (1, 50),
        "tool_usage_threshold": (0.0, 1.0),
        "reasoning_depth": (1, 10),
    }
    assert space.defaults() == {
        "context_length": 1000,
        "temperature": 0.7,
        "max_steps": 10,
        "tool_usage_threshold": 0.5,
        "reasoning_depth": 2,
    }


def test_values_are_validated_naming_the_parameter() -> None:
    space = ParameterSpace()
    with pytest.raises(ParameterError, match=r"'temperature': 2.5 is outside \[0.1, 2\]"):
        space.apply({"temperature": 2.5})
    with pytest.raises(ParameterError, match="'max_steps': 'ten' is not a number"):
        space.apply({"max_steps": "ten"})
    with pytest.raises(ParameterError, match="unknown parameter 'temprature'"):
        space.apply({"temprature": 0.5})
    with pytest.raises(ParameterError, match="is not a number"):
        space.apply({"max_steps": True})


def test_unit_mapping_is_continuous_and_integers_round_only_when_applied() -> None:
    space = ParameterSpace()
    values = space.from_unit([0.5, 0.0, 0.51, 1.0, 0.05])
    # unrounded in the space: 100 + 0.5·4900 = 2550; 1 + 0.51·49 = 25.99; 1 + 0.05·9 = 1.45
    assert values["context_length"] == pytest.approx(2550.0)
    assert values["max_steps"] == pytest.approx(25.99)
    assert values["reasoning_depth"] == pytest.approx(1.45)
    applied = space.apply(values)
    assert applied == {
        "context_length": 2550,
        "temperature": 0.1,
        "max_steps": 26,
        "tool_usage_threshold": 1.0,
        "reasoning_depth": 1,
    }
    assert isinstance(applied["max_steps"], int)
    # half rounds up, not to even
    assert ParameterSpace().apply({"reasoning_depth": 2.5})["reasoning_depth"] == 3
    round_trip = space.to_unit(values)
    np.testing.assert_allclose(round_trip, [0.5, 0.0, 0.51, 1.0, 0.05])
    # coordinates outside the cube are clipped
    assert space.from_unit([-1, 2, 0, 0, 0])["context_length"] == 100.0


def test_categorical_and_log_parameters() -> None:
    style = ParamSpec(name="style", type="categorical", choices=["terse", "plain", "verbose"])
    assert style.default == "terse"
    assert style.from_unit(0.0) == "terse" and style.from_unit(0.5) == "plain"
    assert style.from_unit(1.0) == "verbose"
    assert style.to_unit("verbose") == pytest.approx(5 / 6)
    with pytest.raises(ParameterError, match="'loud' is not one of"):
        style.check("loud")
    rate = ParamSpec(name="rate", type="float", low=0.001, high=0.1, log=True, default=0.01)
    assert rate.from_unit(0.5) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="'log' needs a positive 'low'"):
        ParamSpec(name="bad", low=0.0, high=1.0, log=True)


def test_user_parameters_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "space.toml"
    path.write_text(
        "[params.top_p]\n"
        'type = "float"\nlow = 0.5\nhigh = 1.0\ndefault = 0.9\n'
        "[params.retries]\n"
        'type = "int"\nlow = 0\nhigh = 4\n'
        "[params.style]\n"
        'type = "categorical"\nchoices = ["terse", "verbose"]\n'
        "[params.temperature]\n"
        "high = 1.0\n",
        encoding="utf-8",
    )
    space = load_space(path)
    assert space.names[-3:] == ["top_p", "retries", "style"]
    assert space.spec("temperature").high == 1.0
    assert space.spec("temperature").default == 0.7
    assert space.spec("retries").default == 2.0
    applied = space.apply({"retries": 3.6, "style": "verbose"})
    assert applied["retries"] == 4 and applied["style"] == "verbose"
    assert applied["top_p"] == 0.9


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[params.x]\ntype = "float"\nlow = 1\n', "params.x: a float parameter needs"),
        ('[params.x]\ntype = "int"\nlow = 0.5\nhigh = 3\n', "needs integer 'low' and 'high'"),
        ('[params.x]\ntype = "complex"\n', "params.x.type"),
        ("[other]\nk = 1\n", "unknown key 'other'"),
        ("[params.temperature]\nlow = 3.0\n", "params.temperature"),
    ],
)
def test_bad_toml_names_the_file_and_field(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "space.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ParameterError, match=message) as err:
        load_space(path)
    assert str(path) in str(err.value)
