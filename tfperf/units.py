"""Numbers as people read them: durations with one unit per value (results store seconds), and the bounds of an
interval rounded outward.

Durations: one unit per value, chosen when formatting. Shared by `tfperf.timing` (summaries) and `tfperf.plots`
(axes), so neither imports the other for it.

Intervals: every interval the course prints (a confidence interval of a speedup, an error rate's upper bound, the
lowest lower bound of a campaign) goes through `lower`, `upper` or `interval`: a lower bound is rounded down and an
upper bound up, at the precision shown, so the printed interval always contains the computed one and can never
contradict the verdict taken on it ("FAIL ... 95% CI 1.60-2.40x, needs >= 1.6x" for a lower bound of 1.5951 cannot
be printed). A point estimate (a median) stays rounded to nearest. Rounding works on the float's shortest decimal
form (``repr``), so 1.6, stored as 1.6000000000000000888..., stays 1.60 and never becomes 1.59 or 1.61, while a bound
of 1.5999999999999999 (below a threshold of 1.6) shows 1.59.
"""

from __future__ import annotations

import decimal
import math
import re

UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))

__all__ = ["UNITS", "ceil_to", "floor_to", "format_seconds", "interval", "lower", "pick_unit", "upper"]


def pick_unit(seconds: float) -> tuple[float, str]:
    """(scale, name) of the largest unit not larger than ``seconds``, e.g. ``(1e-3, "ms")`` for 0.02."""
    return next((u for u in UNITS if abs(seconds) >= u[0]), UNITS[-1])


def format_seconds(seconds: float, *, unit: str | None = None) -> str:
    """Format a duration with a readable unit, e.g. ``format_seconds(1.5e-4) == '150 us'``."""
    scale, name = pick_unit(seconds) if unit is None else next(u for u in UNITS if u[1] == unit)
    value = seconds / scale
    return f"{value:.3g} {name}" if value < 100 else f"{value:.0f} {name}"


_SPEC = re.compile(r"(?P<head>[^.]*)(?:\.(?P<digits>\d+))?(?P<kind>[fF%gG])")
_CONTEXT = decimal.Context(prec=1000)  # room for any float at any fixed precision: rounding here is only the quantize


def _directed(value: float, spec: str, down: bool) -> float:
    """``value`` rounded down (``down``) or up to the last digit ``format(value, spec)`` shows; formatting the result
    with ``spec`` then shows it as it is (nearest rounding has nothing left to round). ``spec``: a format spec ending
    in ``f``, ``%`` or ``g`` (``".2f"``, ``".3%"``, ``".3g"``, ``"6.2f"``)."""
    value = float(value)
    found = _SPEC.fullmatch(spec)
    if found is None:
        raise ValueError(f"a bound's format must end in f, % or g (e.g. '.2f', '.3%', '.3g'); got {spec!r}")
    if not math.isfinite(value) or value == 0:
        return value
    kind = found["kind"].lower()
    digits = int(found["digits"]) if found["digits"] is not None else 6
    exact = decimal.Decimal(repr(value))  # the shortest decimal that is this float: no binary residue to round on
    if kind == "%":
        exact = _CONTEXT.multiply(exact, 100)
    if kind == "g":
        exponent = exact.adjusted() - (max(digits, 1) - 1)
    else:
        exponent = -digits
    rounded = exact.quantize(decimal.Decimal(1).scaleb(exponent), rounding=decimal.ROUND_FLOOR if down else decimal.ROUND_CEILING,
                             context=_CONTEXT)
    if kind == "%":
        rounded = _CONTEXT.divide(rounded, 100)
    return float(rounded)


def floor_to(value: float, digits: int) -> float:
    """``value`` rounded down to ``digits`` decimals: ``floor_to(1.5951, 2) == 1.59``, ``floor_to(1.6, 2) == 1.6``."""
    return _directed(value, f".{digits}f", True)


def ceil_to(value: float, digits: int) -> float:
    """``value`` rounded up to ``digits`` decimals: ``ceil_to(2.3901, 2) == 2.4``, ``ceil_to(1.6, 2) == 1.6``."""
    return _directed(value, f".{digits}f", False)


def lower(value: float, spec: str = ".2f") -> str:
    """An interval's lower bound as printed: rounded down at the precision of ``spec`` (``lower(1.5951) == '1.59'``)."""
    return format(_directed(value, spec, True), spec)


def upper(value: float, spec: str = ".2f") -> str:
    """An interval's upper bound as printed: rounded up at the precision of ``spec`` (``upper(2.3901) == '2.40'``)."""
    return format(_directed(value, spec, False), spec)


def interval(low: float, high: float, spec: str = ".2f", unit: str = "x", sep: str = "-") -> str:
    """An interval as printed, rounded outward: ``interval(1.5951, 2.3901) == '1.59-2.40x'``; ``unit=""`` for none."""
    return f"{lower(low, spec)}{sep}{upper(high, spec)}{unit}"


def ratio_bounds(low: float, high: float) -> tuple[str, str]:
    """The two ends of a range of ratios as the lessons print a speedup (three significant figures, whole numbers from
    100), rounded outward: ``ratio_bounds(19.91, 29.48) == ('19.9', '29.5')``, ``ratio_bounds(3.841, 5.654) ==
    ('3.84', '5.66')``."""
    def spec(value: float) -> str:
        return ".3g" if value < 100 else ".0f"

    return lower(low, spec(low)), upper(high, spec(high))

