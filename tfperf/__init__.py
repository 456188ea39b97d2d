"""tfperf: the helpers every TF Performance Lab lesson imports.

One module per concern: `env` (setup, profile, fingerprint), `timing` (the harness), `data`
(MNIST that works offline), `plots`, `checks` (assertions for exercise tests), `selfcheck` (test
cells that report themselves where nbgrader does not run), `report` (measurement records), `stats` (the interval and the rule that decides),
`events` (TensorBoard event files read back), `trace` (timeline and profiler traces as plain
records), `units` (durations formatted for people, and intervals rounded outward) and `present` (the words printed
about a measurement: the faster/slower rule and the measurement line). Importing the package does not import TensorFlow.
"""

from . import checks, data, env, events, link, plots, present, report, selfcheck, stats, timing, trace, units
from .checks import assert_close, assert_raises, assert_speedup, count_calls
from .data import load_mnist
from .report import record
from .timing import Comparison, TimingResult, compare, measure

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "TimingResult",
    "assert_close",
    "assert_raises",
    "assert_speedup",
    "checks",
    "compare",
    "count_calls",
    "data",
    "env",
    "events",
    "link",
    "load_mnist",
    "measure",
    "plots",
    "present",
    "record",
    "report",
    "selfcheck",
    "stats",
    "timing",
    "trace",
    "units",
]
