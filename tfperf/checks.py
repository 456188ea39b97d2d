"""Assertion helpers for the exercise tests in lesson notebooks.

Each helper fails with a message a learner can act on: what was expected, what was received, and
which lesson section to reread. Speed is only ever checked through `assert_speedup`, which uses
the one harness in `tfperf.timing` and records what it measured (see `tfperf.report`).
Introduced in lesson 01.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import sys
import time
import types
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from . import link, present, report, selfcheck, stats, timing, units

__all__ = ["CallCount", "assert_close", "assert_raises", "assert_speedup", "count_calls", "harness_problems"]

# What the timing harness is made of, captured when tfperf is imported (in a lesson's setup cell,
# before any answer runs): `harness_problems` compares against it.
_HARNESS = {
    (module.__name__, name): getattr(module, name)
    for module, names in (
        (timing, ("compare", "measure", "paired_rounds", "seconds_per_call", "_caller", "_calibrate", "_block", "_CLOCK")),
        (stats, ("confidence_sequence", "decided", "needed", "e_value")),
        (report, ("record",)),
        (present, ("verdict",)),  # the rule `Comparison.words` (guarded below) calls
    )
    for name in names
}
_CODE = {key: value.__code__ for key, value in _HARNESS.items() if hasattr(value, "__code__")}
_PROPERTIES = {name: getattr(timing.Comparison, name).fget.__code__ for name in ("passed", "speedup", "words")}


def _hint(hint: str) -> str:
    return f" Hint: {hint}" if hint else ""


def assert_close(actual: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-6, what: str = "result", hint: str = "") -> None:
    """Check that ``actual`` equals ``expected`` element-wise within float32-aware tolerance.

    Lists and tuples are compared item by item, so their lengths must agree.

    Raises:
        AssertionError: naming ``what``, the shapes or the largest difference, and the hint.
    """
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            got = f"{type(actual).__name__} of length {len(actual)}" if isinstance(actual, (list, tuple)) else type(actual).__name__
            raise AssertionError(f"{what}: expected a list of {len(expected)} values, got {got}.{_hint(hint)}")
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol=rtol, atol=atol, what=f"{what}[{index}]", hint=hint)
        return
    actual_array, expected_array = np.asarray(actual), np.asarray(expected)
    if actual_array.shape != expected_array.shape:
        raise AssertionError(f"{what}: expected shape {expected_array.shape}, got {actual_array.shape}.{_hint(hint)}")
    if not np.allclose(actual_array, expected_array, rtol=rtol, atol=atol, equal_nan=True):
        worst = np.max(np.abs(actual_array.astype(float) - expected_array.astype(float)))
        raise AssertionError(
            f"{what}: values differ from the expected ones by up to {worst:.3g} "
            f"(expected {np.array2string(expected_array.ravel()[:4])}..., got {np.array2string(actual_array.ravel()[:4])}...).{_hint(hint)}"
        )


def assert_raises(error: type[BaseException] | tuple, fn: Callable, *args, match: str | None = None, hint: str = "", **kwargs) -> None:
    """Check that ``fn(*args, **kwargs)`` raises ``error`` (with a message matching ``match``).

    Like every ``assert_*`` helper it returns None, so it can end a test cell.
    """
    name = getattr(error, "__name__", None) or " or ".join(e.__name__ for e in error)
    try:
        fn(*args, **kwargs)
    except error as raised:
        if match is not None and not re.search(match, str(raised)):
            raise AssertionError(f"expected a {name} whose message mentions {match!r}; got: {raised}.{_hint(hint)}") from None
        return
    except Exception as other:  # noqa: BLE001  (report the wrong exception clearly)
        raise AssertionError(f"expected {name}, got {type(other).__name__}: {other}.{_hint(hint)}") from None
    raise AssertionError(f"expected {name}, but nothing was raised.{_hint(hint)}")


@dataclasses.dataclass
class CallCount:
    """How many times a patched attribute was called (see `count_calls`)."""

    name: str
    count: int = 0


@contextlib.contextmanager
def count_calls(owner: Any, name: str) -> Iterator[CallCount]:
    """Count calls of ``owner.name`` inside the block, calling through; restored afterwards.

    Example:
        >>> with count_calls(sess, "run") as runs:
        ...     handle({x: v})
        >>> runs.count
        0
    """
    original = getattr(owner, name)
    had_own = name in getattr(owner, "__dict__", {})
    counter = CallCount(name)

    @functools.wraps(original)
    def counting(*args, **kwargs):
        counter.count += 1
        return original(*args, **kwargs)

    setattr(owner, name, counting)
    try:
        yield counter
    finally:
        if had_own:
            setattr(owner, name, original)
        else:  # it came from the class: drop the instance attribute again
            delattr(owner, name)


def _genuine_clock(name: str) -> bool:
    clock = getattr(time, name, None)
    return (isinstance(clock, types.BuiltinFunctionType) and clock.__name__ == name
            and getattr(clock, "__self__", None) is time and sys.modules.get("time") is time)


def harness_problems() -> list[str]:
    """What in the timing harness or the clocks has been replaced since tfperf was imported (empty if nothing)."""
    problems = [f"time.{name}" for name in ("perf_counter", "time", "monotonic") if not _genuine_clock(name)]
    for (module, name), original in _HARNESS.items():
        current = getattr(sys.modules[module], name, None)
        if current is not original or (hasattr(original, "__code__") and original.__code__ is not _CODE[(module, name)]):
            problems.append(f"{module}.{name}")
    problems += [f"Comparison.{name}" for name, code in _PROPERTIES.items()
                 if getattr(getattr(timing.Comparison, name), "fget", None) is None
                 or getattr(timing.Comparison, name).fget.__code__ is not code]
    return problems


def assert_speedup(baseline: Callable, candidate: Callable, *, threshold: float, labels: tuple[str, str] = ("baseline", "your version"),
                   draw: Callable[[np.random.Generator], Any] | None = None, inputs: Sequence | Callable[[int], Any] | None = None,
                   observe: Callable[[Any], Any] | None = None, rtol: float = timing.CheckOptions.rtol, atol: float = timing.CheckOptions.atol,
                   name: str | None = None,
                   hint: str = "", **options) -> None:
    """Check that ``candidate`` is at least ``threshold`` times faster than ``baseline``.

    While you work, this measures here with `tfperf.timing.compare` (paired, interleaved, after warm-up) and passes
    when the confidence interval's lower bound clears ``threshold``. When the notebook is graded, the grader measures
    instead (`tfperf.link`): your kernel serves ``candidate``, a clean process running the instructor's code serves
    ``baseline``, the grader times both with its own clock on inputs it draws, checks that your outputs match the
    clean process's, and decides; this call prints the grader's numbers and fails when the grader's verdict does.

    Args:
        threshold: The speedup to clear: the interval's lower bound must reach it (the same name in the grader's
            options, the `Comparison` and the `Record`).
        draw: ``draw(rng) -> arguments`` of one call, from a ``numpy.random.Generator``: every timed call gets new
            arguments, so no answer can serve a remembered result. Graded checks use it.
        inputs: Argument tuples cycled through, or a function of the call index (self-checks only).
        observe: ``observe(output) -> what must match`` between the two sides (default: the whole output).
        rtol, atol: How close the candidate's observed outputs must be to the baseline's on the same inputs.
        own_baseline: When graded, time the learner's own ``baseline`` against their ``candidate`` (both served by
            their kernel, outputs checked against the clean process's ``baseline``), instead of the clean process's
            ``baseline``: for checks about the learner's code against itself ("stays flat after 100 images").

    Raises:
        AssertionError: with the measured speedup and its interval, when the interval lies below ``threshold`` (or, when
            graded, the grader's verdict fails). While you work, an interval that still holds ``threshold`` when the
            rounds run out is *undecided*: printed, marked ``?`` in the self-check, and not raised, so Run All goes on.
    """
    name = name or labels[1]
    if link.graded():
        _graded_speedup(baseline, candidate, threshold=threshold, labels=labels, draw=draw, inputs=inputs, observe=observe, rtol=rtol,
                        atol=atol, name=name, hint=hint, **options)
        return
    tampered = harness_problems()
    if tampered:
        raise AssertionError(f"the notebook replaced part of the timing harness ({', '.join(tampered)}): "
                             f"speed cannot be measured, so no speed points. Restart the kernel and remove that code.")
    if draw is not None:
        fresh = np.random.default_rng()
        inputs = lambda index: draw(fresh)  # noqa: E731
    options.pop("own_baseline", None)  # a grading setting: the self-check always times both functions given here
    result = timing.compare(baseline, candidate, labels=labels, inputs=inputs, threshold=threshold, **options)
    print(result.summary())
    report.record(name, result)
    shown = units.interval(*result.ci)  # rounded outward: a lower bound of 1.5951 shows 1.59, never the 1.60 it failed
    if not result.passed and result.ci[1] >= threshold:
        # The interval still holds the threshold: the loop ran out of time before deciding (a busy machine, or an answer
        # near the threshold). Neither a pass nor evidence of a slow answer: said so, and Run All goes on.
        print(f"undecided: {labels[1]} measured {result.speedup:.2f}x ({result.confidence:.0%} CI {shown} over {result.rounds} "
              f"rounds), an interval that still holds the {threshold:g}x needed. Not a failure: run this cell again when the "
              "machine is quieter; the grader measures on its own.")
        selfcheck.undecided(f"undecided: measured {result.speedup:.2f}x (CI {shown}), needs at least {threshold:g}x")
        return
    selfcheck.note(f"measured {result.speedup:.2f}x (CI {shown}), needs at least {threshold:g}x")
    if not result.passed:
        raise AssertionError(
            f"{labels[1]} should be at least {threshold:g}x faster than {labels[0]}; measured {result.speedup:.2f}x "
            f"({result.confidence:.0%} CI {shown} over {result.rounds} rounds).{_hint(hint)}"
        )


def _graded_speedup(baseline, candidate, *, threshold, labels, draw, inputs, observe, rtol, atol, name, hint, **options) -> None:
    """`assert_speedup` while a grader runs the notebook: serve this process's side and report the grader's verdict."""
    if draw is None and inputs is not None:
        raise AssertionError(f"speed check {name!r} gives fixed inputs, which a graded check cannot use: it needs draw=")
    learner = os.environ.get(link.ROLE_VARIABLE, "candidate") == "candidate"
    settings = timing.CheckOptions.of(options | {"threshold": threshold, "labels": labels, "rtol": rtol, "atol": atol}).to_dict()
    verdict = link.serve(name, candidate if learner else baseline, draw=draw, observe=observe, options=settings,
                         baseline=baseline if learner else None)
    if verdict.get("summary"):
        print(f"measured by the grader: {verdict['summary']}")
    selfcheck.note(verdict.get("summary") or verdict.get("reason") or "")
    if not verdict.get("passed"):
        reason = verdict.get("reason") or f"{labels[1]} should be at least {threshold:g}x faster than {labels[0]}"
        raise AssertionError(f"speed check {name} (measured by the grader): {reason}.{_hint(hint)}")
