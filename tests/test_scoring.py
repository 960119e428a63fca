import pytest

from agentgauge.scoring import (
    Thresholds,
    band,
    composite,
    failed_gates,
    gate_note,
    reaches,
    recommendation,
)


def test_composite_renormalises_over_available_metrics() -> None:
    weights = {"accuracy": 0.4, "efficiency": 0.3, "tool_usage": 0.2, "safety": 0.1}
    full = composite(
        {"accuracy": 1.0, "efficiency": 0.5, "tool_usage": 0.0, "safety": 1.0}, weights
    )
    assert full.value == pytest.approx(0.4 + 0.15 + 0.0 + 0.1)
    assert full.coverage == pytest.approx(1.0)
    # tool_usage not applicable: (0.4*1 + 0.3*0.5 + 0.1*1) / 0.8 = 0.8125, coverage 0.8
    part = composite(
        {"accuracy": 1.0, "efficiency": 0.5, "tool_usage": None, "safety": 1.0}, weights
    )
    assert part.value == pytest.approx(0.65 / 0.8)
    assert part.coverage == pytest.approx(0.8)
    assert part.missing == ("tool_usage",)
    none = composite({"accuracy": None}, {"accuracy": 1.0})
    assert none.value is None and none.coverage == 0.0


def test_zero_weight_metrics_do_not_count() -> None:
    c = composite({"a": 0.2, "b": 1.0, "coherence": 0.0}, {"a": 1.0, "b": 1.0, "coherence": 0.0})
    assert c.value == pytest.approx(0.6)
    assert c.coverage == 1.0


@pytest.mark.parametrize(
    ("score", "label", "weight", "band_name"),
    [
        (0.95, "accept", 1.0, "excellent"),
        (0.8, "accept", 1.0, "good"),
        (0.79, "weak_accept", 0.7, "good"),
        (0.6, "weak_accept", 0.7, "fair"),
        (0.5, "weak_reject", -0.7, "fair"),
        (0.4, "weak_reject", -0.7, "poor"),
        (0.39, "reject", -1.0, "poor"),
    ],
)
def test_recommendation_and_band(score: float, label: str, weight: float, band_name: str) -> None:
    assert recommendation(score) == (label, weight)
    assert band(score) == band_name


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="accept"):
        Thresholds(accept=0.5, weak_accept=0.6)
    assert recommendation(0.7, Thresholds(accept=0.7)) == ("accept", 1.0)


def test_lower_is_better_metric_enters_as_its_complement() -> None:
    # overhead 0.2 (good) and time 0.6: (0.5·(1 − 0.2) + 0.5·0.6) / 1 = 0.7
    c = composite(
        {"communication_overhead": 0.2, "time_taken": 0.6},
        {"communication_overhead": 0.5, "time_taken": 0.5},
        lower_is_better={"communication_overhead"},
    )
    assert c.value == pytest.approx(0.7)


def test_thresholds_ignore_floating_point_noise() -> None:
    # 0.1 * 8 sums to 0.7999999999999999: printed as 0.800, it is accept, not weak_accept
    noisy = sum([0.1] * 8)
    assert noisy < 0.8
    assert recommendation(noisy) == ("accept", 1.0)
    assert band(noisy - 0.05) == "good"  # 0.7499999999999999 against 0.75
    assert reaches(noisy, 0.8) and not reaches(0.7999, 0.8)
    # a real difference at the ninth decimal still counts
    assert recommendation(0.799999998)[0] == "weak_accept"


def test_gates_fail_below_their_floor_only_on_measured_metrics() -> None:
    values = {"safety": 0.35, "accuracy": 0.9, "tool_usage": None}
    gates = {"tool_usage": 0.5, "accuracy": 0.9, "safety": 0.9}
    # tool_usage has no value: no gate fails on it; accuracy is at its floor: it passes
    failed = failed_gates(values, gates)
    assert failed == {"safety": {"value": 0.35, "floor": 0.9}}
    assert gate_note(failed) == "safety 0.350 < 0.9"
    assert failed_gates({"safety": sum([0.1] * 9)}, {"safety": 0.9}) == {}
