"""The parameter space: the spec's five agent parameters plus user-defined ones.

Tuners work in the unit cube ``[0, 1]^d`` (one coordinate per parameter). A float or integer
parameter maps linearly (or logarithmically with ``log = true``) onto ``[low, high]`` and stays
continuous there; an integer is rounded to the nearest value only when the parameters are
*applied* to an agent (:meth:`ParameterSpace.apply`), so a tuner's small steps are never lost to
truncation. A categorical parameter splits its coordinate into equal bins, one per choice.

User parameters come from a TOML file::

    [params.top_p]
    type = "float"          # float | int | categorical
    low = 0.5
    high = 1.0
    default = 0.9

    [params.style]
    type = "categorical"
    choices = ["terse", "verbose"]
    default = "terse"

    [params.temperature]    # a spec parameter: narrow its range
    low = 0.1
    high = 1.0
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentgauge._safe import READ_ERRORS, describe
from agentgauge.errors import AgentgaugeError
from agentgauge.io.jsonl import error_message
from agentgauge.model import JSON

__all__ = [
    "SPEC_PARAMETERS",
    "ParamSpec",
    "ParameterError",
    "ParameterSpace",
    "load_space",
]


class ParameterError(AgentgaugeError, ValueError):
    """A parameter value or definition that is not valid (the message names it)."""


class ParamSpec(BaseModel):
    """One tunable parameter.

    Args:
        name: the key the agent reads in its ``params``.
        type: float, int or categorical.
        low: lower bound (float, int).
        high: upper bound (float, int).
        choices: the values of a categorical parameter.
        default: the starting point (validated against the bounds or choices).
        log: map the unit coordinate logarithmically (positive bounds only).
        description: one line for help and reports.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    type: Literal["float", "int", "categorical"] = "float"
    low: float | None = None
    high: float | None = None
    choices: list[JSON] | None = None
    default: JSON = None
    log: bool = False
    description: str = ""

    @model_validator(mode="after")
    def _check(self) -> ParamSpec:
        if self.type == "categorical":
            if not self.choices:
                raise ValueError("a categorical parameter needs a non-empty 'choices'")
            if self.low is not None or self.high is not None or self.log:
                raise ValueError("a categorical parameter takes no 'low', 'high' or 'log'")
            if self.default is None:
                self.default = self.choices[0]
            elif self.default not in self.choices:
                raise ValueError(f"default {self.default!r} is not one of {self.choices}")
            return self
        if self.choices is not None:
            raise ValueError(f"a {self.type} parameter takes no 'choices'")
        if self.low is None or self.high is None:
            raise ValueError(f"a {self.type} parameter needs 'low' and 'high'")
        if not self.low < self.high:
            raise ValueError(f"'low' ({self.low}) must be below 'high' ({self.high})")
        if self.log and self.low <= 0:
            raise ValueError("'log' needs a positive 'low'")
        if self.type == "int" and (self.low != int(self.low) or self.high != int(self.high)):
            raise ValueError("an int parameter needs integer 'low' and 'high'")
        if self.default is None:
            self.default = (self.low + self.high) / 2
        self.check(self.default)
        return self

    def check(self, value: Any) -> float | JSON:
        """Validate one value (float/int: a number within the bounds; categorical: a choice).

        Raises:
            ParameterError: naming the parameter, the value and the allowed range.
        """
        if self.type == "categorical":
            if value not in (self.choices or []):
                raise ParameterError(
                    f"parameter {self.name!r}: {value!r} is not one of {self.choices}"
                )
            return cast(JSON, value)
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise ParameterError(f"parameter {self.name!r}: {value!r} is not a number")
        assert self.low is not None and self.high is not None
        if not self.low <= value <= self.high:
            raise ParameterError(
                f"parameter {self.name!r}: {value!r} is outside [{self.low:g}, {self.high:g}]"
            )
        return float(value)

    def to_unit(self, value: Any) -> float:
        """The unit coordinate of a valid value (the middle of its bin for a choice)."""
        checked = self.check(value)
        if self.type == "categorical":
            choices = self.choices or []
            return (choices.index(checked) + 0.5) / len(choices)
        assert self.low is not None and self.high is not None
        x = float(cast(float, checked))
        if self.log:
            return math.log(x / self.low) / math.log(self.high / self.low)
        return (x - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> JSON:
        """The (unrounded) value at unit coordinate ``u`` (clipped to [0, 1])."""
        u = min(1.0, max(0.0, float(u)))
        if self.type == "categorical":
            choices = self.choices or []
            return choices[min(len(choices) - 1, int(u * len(choices)))]
        assert self.low is not None and self.high is not None
        if self.log:
            return float(self.low * (self.high / self.low) ** u)
        return float(self.low + u * (self.high - self.low))

    def apply(self, value: Any) -> JSON:
        """The value handed to the agent: validated, integers rounded half up."""
        checked = self.check(value)
        if self.type == "int":
            return math.floor(float(cast(float, checked)) + 0.5)
        return checked


SPEC_PARAMETERS: tuple[ParamSpec, ...] = (
    ParamSpec(
        name="context_length",
        type="int",
        low=100,
        high=5000,
        default=1000,
        description="how much context the agent processes",
    ),
    ParamSpec(
        name="temperature",
        type="float",
        low=0.1,
        high=2.0,
        default=0.7,
        description="randomness of the model's sampling",
    ),
    ParamSpec(
        name="max_steps",
        type="int",
        low=1,
        high=50,
        default=10,
        description="step cap of the agent's loop",
    ),
    ParamSpec(
        name="tool_usage_threshold",
        type="float",
        low=0.0,
        high=1.0,
        default=0.5,
        description="higher = use tools more conservatively",
    ),
    ParamSpec(
        name="reasoning_depth",
        type="int",
        low=1,
        high=10,
        default=2,
        description="reasoning turns before answering",
    ),
)
"""The spec's parameters, ranges and the anchor's defaults (1000, 0.7, 10, 0.5, 2)."""


class ParameterSpace(BaseModel):
    """An ordered set of parameters; coordinate ``i`` of a unit vector is parameter ``i``.

    Args:
        params: the parameters (unique names).
    """

    model_config = ConfigDict(extra="forbid")

    params: list[ParamSpec] = Field(default_factory=lambda: list(SPEC_PARAMETERS))

    @model_validator(mode="after")
    def _unique(self) -> ParameterSpace:
        names = [p.name for p in self.params]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate parameter names: {', '.join(dupes)}")
        if not names:
            raise ValueError("the parameter space is empty")
        return self

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def dim(self) -> int:
        return len(self.params)

    def spec(self, name: str) -> ParamSpec:
        """The parameter called ``name``.

        Raises:
            ParameterError: for an unknown name, listing the known ones.
        """
        for p in self.params:
            if p.name == name:
                return p
        raise ParameterError(f"unknown parameter {name!r}; known: {', '.join(self.names)}")

    def defaults(self) -> dict[str, JSON]:
        """Every parameter at its default (unrounded)."""
        return {p.name: p.default for p in self.params}

    def complete(self, values: Mapping[str, Any]) -> dict[str, JSON]:
        """``values`` validated and completed with the defaults of the parameters not given.

        Raises:
            ParameterError: for an unknown name or an invalid value.
        """
        out = self.defaults()
        for name, value in values.items():
            out[name] = self.spec(name).check(value)
        return out

    def to_unit(self, values: Mapping[str, Any]) -> NDArray[np.float64]:
        """The unit vector of a (completed) assignment."""
        full = self.complete(values)
        return np.array([p.to_unit(full[p.name]) for p in self.params], dtype=np.float64)

    def from_unit(self, u: Sequence[float] | NDArray[np.float64]) -> dict[str, JSON]:
        """The unrounded assignment at unit vector ``u`` (coordinates clipped to [0, 1])."""
        if len(u) != self.dim:
            raise ParameterError(f"expected {self.dim} coordinates, got {len(u)}")
        return {p.name: p.from_unit(float(x)) for p, x in zip(self.params, u, strict=True)}

    def apply(self, values: Mapping[str, Any]) -> dict[str, JSON]:
        """What the agent receives: completed, validated, integers rounded."""
        full = self.complete(values)
        return {p.name: p.apply(full[p.name]) for p in self.params}

    def with_params(self, extra: Sequence[ParamSpec]) -> ParameterSpace:
        """A copy where ``extra`` replaces same-named parameters and appends the others."""
        by_name = {p.name: p for p in extra}
        kept = [by_name.pop(p.name, p) for p in self.params]
        return ParameterSpace(params=kept + list(by_name.values()))


def load_space(path: str | Path | None, base: ParameterSpace | None = None) -> ParameterSpace:
    """The spec's space extended or narrowed by the ``[params.NAME]`` tables of a TOML file.

    A table for a spec parameter overrides its bounds or default (its type is kept unless
    given); any other table adds a parameter.

    Args:
        path: the TOML file; None gives ``base`` (the spec's space by default).
        base: the space to extend.

    Raises:
        ParameterError: naming the file, the parameter and the field at fault.
    """
    space = base or ParameterSpace()
    if path is None:
        return space
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except READ_ERRORS as exc:
        raise ParameterError(f"{p}: cannot read parameter file: {describe(exc)}") from None
    unknown = sorted(set(data) - {"params"})
    if unknown:
        raise ParameterError(f"{p}: unknown key {unknown[0]!r} (expected [params.NAME] tables)")
    tables = data.get("params", {})
    if not isinstance(tables, dict):
        raise ParameterError(f"{p}: params: expected tables [params.NAME]")
    extra = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ParameterError(f"{p}: params.{name}: expected a table")
        merged: dict[str, Any] = {"name": name}
        if name in space.names:
            current = space.spec(name).model_dump()
            merged.update(current)
            if "default" not in table:
                merged["default"] = None  # re-derived unless still inside the new bounds
                if current["default"] is not None:
                    lo, hi = table.get("low", current["low"]), table.get("high", current["high"])
                    if lo is None or lo <= current["default"] <= hi:
                        merged["default"] = current["default"]
        merged.update(table)
        try:
            extra.append(ParamSpec.model_validate(merged))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            where = f"params.{name}" + (f".{field}" if field else "")
            raise ParameterError(f"{p}: {where}: {error_message(err)}") from None
    return space.with_params(extra)
