"""The words the course prints about a measurement, in one place (pyperf's ``_formatter`` is the model): the rule that
calls an interval faster, slower or neither, and the one line that states a measured speedup.

The rule (`verdict`): faster or slower only when the whole interval lies above or below 1x; an interval that reaches
1x, touching it included, is neither. It has no tolerance around 1x (`tfperf.timing.compare`'s tolerance only decides
when rounds stop). Each place keeps its own word for neither: "no measurable difference" in the lessons
(`tfperf.timing.Comparison.words`, `tfperf.report.recorded_words`), "inconclusive" for a bar of `tfperf.plots`,
"none" in ``tfperf/ranges.json`` (`tfperf_lab.publish.ranges`).

The line (`measurement`): ``"speed check NAME: 4.74x (95% CI 3.84-5.98x, needs >= 1.75x)"``, its interval rounded
outward (`tfperf.units.interval`), in the grader's result lines (`tfperf_lab.grading.results`), the exports and the
feedback they carry (`tfperf_lab.grading.exports`) and the review list (`tfperf_lab.grading.decisions`).
"""

from __future__ import annotations

from typing import Sequence

from . import stats as _stats
from . import units as _units

VERDICTS = ("faster", "slower", "none")  # what `verdict` answers, in the order tfperf/ranges.json counts them
NO_DIFFERENCE = "no measurable difference"  # what a lesson says of an interval that reaches 1x

__all__ = ["NO_DIFFERENCE", "VERDICTS", "measurement", "verdict"]


def verdict(ci: Sequence[float], neither: str = "none") -> str:
    """The word an interval allows: ``"faster"`` when the whole interval lies above 1x, ``"slower"`` when it lies
    below, otherwise ``neither`` (``verdict((1.0, 1.2)) == "none"``: an interval touching 1x reaches it)."""
    low, high = ci
    return "faster" if low > 1 else "slower" if high < 1 else neither


def measurement(item, *, outcome: str | None = None, too_few: bool = False) -> str:
    """One measured speedup as the grader's pages say it: ``"speed check NAME: 4.74x (95% CI 3.84-5.98x, needs >=
    1.75x)"`` for a check (a record with a threshold), ``"measured NAME: 2.00x (95% CI 1.20-1.45x)"`` otherwise.

    Args:
        item: A `tfperf.report.Record`, or anything with its ``name``, ``speedup``, ``ci``, ``threshold`` and ``passed``.
        outcome: What joins a check's outcome to the line, or None for no outcome: ``": "`` gives ``"...x): passed"``
            (the exports), ``" "`` gives ``"...x) failed"`` (the review list). A line without a threshold has none.
        too_few: Say an interval that too few rounds left unbounded as `tfperf.stats.shown` does ("no 95% interval
            yet: at least 8 blocks of 0.2 s of rounds are needed") rather than by its bounds ("95% CI 0.00-infx").
    """
    shown = _stats.shown(item.ci) if too_few else f"{_stats.CONFIDENCE:.0%} CI {_units.interval(*item.ci)}"
    if not item.threshold:
        return f"measured {item.name}: {item.speedup:.2f}x ({shown})"
    line = f"speed check {item.name}: {item.speedup:.2f}x ({shown}, needs >= {item.threshold:g}x)"
    return line if outcome is None else line + outcome + ("passed" if item.passed else "failed")
