"""Self-check where nbgrader does not run (Colab, Kaggle, plain Jupyter): the visible tests report themselves.

`install` (called by `tfperf.env.setup`) registers an IPython hook. After every cell whose first
statement is a ``"Check that ..."`` docstring (every test cell of the course) it prints one line:
passed or failed, with the error's first line and any speedup the cell measured. `summary`, the last
cell of every lesson, lists the checks per exercise with their points, including the ones not run yet.
Only the visible part of each test runs in a student notebook; the hidden part runs when it is graded
(``tfperf-lab check``), so the summary is a lower bound on what can go wrong, not a grade.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping, Sequence

__all__ = ["Outcome", "install", "note", "outcomes", "record_cell", "summary", "summary_text", "undecided"]

PASS, FAIL, NOT_RUN, UNDECIDED = "✔", "✘", "·", "?"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one test cell did the last time it ran."""

    check: str
    passed: bool
    error: str = ""
    measured: tuple[str, ...] = ()
    undecided: bool = False  # a speed check this machine could not decide (`undecided`): neither passed nor failed

    def line(self) -> str:
        detail = ([self.error] if self.error else []) + list(self.measured)
        mark = UNDECIDED if self.undecided else PASS if self.passed else FAIL
        return f"{mark} {self.check}" + (f"  [{'; '.join(detail)}]" if detail else "")


_OUTCOMES: dict[str, Outcome] = {}
_PENDING: list[str] = []
_UNDECIDED: list[bool] = []  # set by `undecided` for the test cell that is running
_INSTALLED: dict[int, object] = {}


def check_name(source: str) -> str | None:
    """The ``"Check that ..."`` docstring a cell opens with, or None for any other cell."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        text = body[0].value.value
        name = " ".join(text.split()) if isinstance(text, str) else ""
        if name.startswith("Check that"):
            return name
    return None


def note(text: str) -> None:
    """Attach a measurement line (e.g. a speedup) to the test cell that is running."""
    _PENDING.append(text)


def undecided(text: str) -> None:
    """Mark the running test cell undecided: a speed check whose interval still held its threshold when its time ran
    out (a busy machine, or an answer near the threshold). It is no failure and no pass: the summary shows it apart,
    and the grader measures on its own."""
    _PENDING.append(text)
    _UNDECIDED.append(True)


def _first_line(error: BaseException | None) -> str:
    if error is None:
        return ""
    if isinstance(error, NotImplementedError) and not str(error).strip():
        return "NotImplementedError: an answer cell above is not written yet"
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0][:300]}" if message else type(error).__name__


def record_cell(source: str, error: BaseException | None) -> Outcome | None:
    """Record how a cell ended; returns the outcome for test cells, None for any other cell."""
    measured, _PENDING[:] = tuple(_PENDING), []
    unsure, _UNDECIDED[:] = bool(_UNDECIDED) and error is None, []
    name = check_name(source)
    if name is None:
        return None
    outcome = Outcome(name, error is None and not unsure, _first_line(error), measured, undecided=unsure)
    _OUTCOMES[name] = outcome
    return outcome


def outcomes() -> dict[str, Outcome]:
    """The last outcome of every test cell run in this kernel, keyed by its docstring."""
    return dict(_OUTCOMES)


def _after_cell(result) -> None:
    # Runs inside test cells: it must never raise or write to stderr (nbgrader would zero the cell).
    try:
        info = getattr(result, "info", None)
        outcome = record_cell(getattr(info, "raw_cell", "") or "", result.error_before_exec or result.error_in_exec)
        if outcome is not None:
            print(f"self-check: {outcome.line()}")
    except Exception:  # noqa: BLE001, S110  (a self-check line is never worth a zeroed test cell)
        pass


def install() -> bool:
    """Register the after-cell hook in the running IPython kernel (once); False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if id(shell) not in _INSTALLED:
        shell.events.register("post_run_cell", _after_cell)
        _INSTALLED[id(shell)] = shell
    return True


def summary(exercises: Mapping[str, Sequence[tuple[str, float]]], *, hand_graded: float = 0) -> None:
    """Print the per-exercise table of visible checks (see `summary_text`); returns None."""
    print(summary_text(exercises, hand_graded=hand_graded))


def summary_text(exercises: Mapping[str, Sequence[tuple[str, float]]], *, hand_graded: float = 0) -> str:
    """The per-exercise table of visible checks: passed, failed, not run, with points.

    Args:
        exercises: exercise title -> [(the test cell's "Check that ..." docstring, points), ...],
            as stamped into each lesson's last cell by ``tfperf-lab release``.
        hand_graded: points of written answers, graded by a person.
    """
    seen = outcomes()
    lines, passed, total, points_passed, points_total, unsure = [], 0, 0, 0.0, 0.0, 0
    for exercise, checks in exercises.items():
        rows, got = [], 0.0
        for check, points in checks:
            outcome = seen.get(" ".join(check.split()))
            if outcome is None:
                rows.append(f"  {NOT_RUN} {points:g} pt  not run yet: {check}")
            else:
                mark, rest = outcome.line().split(" ", 1)
                rows.append(f"  {mark} {points:g} pt  {rest}")
                passed += outcome.passed
                unsure += outcome.undecided
                got += points if outcome.passed else 0
        total, points_total, points_passed = total + len(checks), points_total + sum(p for _, p in checks), points_passed + got
        lines += [f"{exercise}: {got:g} of {sum(p for _, p in checks):g} points from the visible tests", *rows]
    head = f"Self-check: {passed} of {total} test cells pass ({points_passed:g} of {points_total:g} autograded points)"
    foot = ["Hidden tests run only when the notebook is graded: `tfperf-lab check <notebook>` gives the real score."]
    if unsure:
        foot.insert(0, f"{UNDECIDED} {unsure} speed check{'s' if unsure != 1 else ''} could not decide on this machine: no failure; "
                       "run the cell again when the machine is quieter, or leave it to the grader, which measures on its own.")
    if hand_graded:
        foot.insert(0, f"Written answers ({hand_graded:g} point{'s' if hand_graded != 1 else ''}) are graded by a person.")
    return "\n".join([head, *lines, *foot])
