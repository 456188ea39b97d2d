"""Shared test helpers: a fake clock for the timing harness, and result factories."""

import numpy as np
import pytest

import tfperf


class FakeClock:
    """A clock that only moves when a fake workload says so: timing tests never sleep."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def workload(self, seconds: float, *, jitter: float = 0.0, seed: int = 0):
        """A function whose every call 'takes' ``seconds`` times (1 +- jitter)."""
        noise = np.random.default_rng(seed)

        def work(*_args):
            self.now += seconds * (1 + noise.uniform(-jitter, jitter))

        return work


@pytest.fixture
def clock():
    return FakeClock()


def make_result(label="f", samples=(1e-3, 1.1e-3, 0.9e-3), number=10, **metadata) -> tfperf.TimingResult:
    return tfperf.TimingResult(label, tuple(samples), number, (), metadata)


@pytest.fixture
def no_real_mnist(tmp_path, monkeypatch):
    """No TFPERF_DATA, an empty Keras cache and no network: the loader must fall back."""
    monkeypatch.delenv("TFPERF_DATA", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    monkeypatch.setenv("TFPERF_OFFLINE", "1")
    tfperf.data._load_full.cache_clear()
    yield
    tfperf.data._load_full.cache_clear()


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """The course of one tiny lesson (tests/tiny_course.py) that the tests of the grading machinery grade."""
    import tiny_course

    return tiny_course.build(tmp_path_factory.mktemp("tiny-course"))


@pytest.fixture(scope="session")
def graded_class(request, tmp_path_factory):
    """The test run's one class (tests/pipeline.py's `GradedClass`): the submissions of every selected module that
    defines ``class_submissions()``, graded together the first time a test needs one."""
    from pipeline import GradedClass

    graded = GradedClass()
    for module in sorted({item.module for item in request.session.items}, key=lambda module: module.__name__):
        if callable(getattr(module, "class_submissions", None)):
            graded.add_module(module)
    graded.grade(tmp_path_factory)
    return graded


def pytest_terminal_summary(terminalreporter):
    """Every reference answer's speed check graded in this run, thinnest margin first: what this machine measured.

    The margin is the median speedup over the threshold. The interval's low is no margin: the timer stops measuring
    as soon as the interval clears the threshold, so a passing check's low sits just above it by design. CI prints
    this, so a machine unlike the dev VM shows which check it brings near its threshold before one fails.
    """
    import sys

    from tfperf import units

    pipeline = sys.modules.get("pipeline")
    graded = getattr(pipeline, "GRADED", None)
    if graded is not None and graded.results:
        terminalreporter.section("the test run's class: where its time went")
        for line in graded.time_spent():
            terminalreporter.write_line(line)
    rows = [(lesson, record) for lesson, student, record in getattr(pipeline, "MEASURED", []) if student == "reference"]
    if not rows:
        return
    terminalreporter.section("speed margins of the reference answers on this machine (median speedup / threshold)")
    for lesson, record in sorted(rows, key=lambda row: row[1].speedup / row[1].threshold):
        margin = record.speedup / record.threshold
        terminalreporter.write_line(
            f"{margin:5.2f}  {lesson:22} {record.name:40} {record.speedup:7.2f}x ({units.interval(*record.ci, unit='')}, "
            f"{record.rounds} rounds)  needs {record.threshold:g}x" + ("  THIN" if margin < 1.5 else ""))
