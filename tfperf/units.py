"""Durations as people read them: one unit per value, chosen when formatting (results store seconds).

Shared by `tfperf.timing` (summaries) and `tfperf.plots` (axes), so neither imports the other for it.
"""

from __future__ import annotations

UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))

__all__ = ["UNITS", "format_seconds", "pick_unit"]


def pick_unit(seconds: float) -> tuple[float, str]:
    """(scale, name) of the largest unit not larger than ``seconds``, e.g. ``(1e-3, "ms")`` for 0.02."""
    return next((u for u in UNITS if abs(seconds) >= u[0]), UNITS[-1])


def format_seconds(seconds: float, *, unit: str | None = None) -> str:
    """Format a duration with a readable unit, e.g. ``format_seconds(1.5e-4) == '150 us'``."""
    scale, name = pick_unit(seconds) if unit is None else next(u for u in UNITS if u[1] == unit)
    value = seconds / scale
    return f"{value:.3g} {name}" if value < 100 else f"{value:.0f} {name}"
