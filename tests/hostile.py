"""Broken and dishonest submissions of the tiny lesson, each with the outcome grading must give.

Every case is a real notebook file built from the tiny lesson (tests/tiny_course.py: a real lesson's machinery,
seconds to grade): the reference answer, or a correct answer that loops in Python, then broken or doctored the way
students' notebooks are. `expected` names cells that must score full marks and cells that must score 0. What the
dishonest ones try (replacing the clock or the harness in the kernel, caching repeated inputs) does not depend on what
the lesson teaches; the real lessons' own cheats are graded in test_verdicts.py and test_grade_findings.py.
"""

from __future__ import annotations

import dataclasses
import json

import tiny_course

LESSON_ID = tiny_course.LESSON_ID
SOLUTION = tiny_course.ANSWER
CORRECTNESS = tiny_course.CORRECT
# scale_has_no_loop shares the speed check's review (metadata.tfperf.review_with): an answer on the review list loses both,
# while an honest slow answer keeps the structure it got right
REVIEWED = ("scale_has_no_loop", "scale_is_faster")
ALL_AUTO = CORRECTNESS + REVIEWED
COURSE = None  # the tiny course, set by test_hostile.py's fixture before any case is built (`use`)


def use(course) -> None:
    global COURSE
    COURSE = course


@dataclasses.dataclass
class Case:
    name: str
    build: object  # () -> dict | bytes
    full: tuple[str, ...] = ()
    zero: tuple[str, ...] = ()
    error: str | None = None  # text the submission-level error must contain
    note: str | None = None  # text one of the notes must contain
    status: dict = dataclasses.field(default_factory=dict)  # cell -> status
    filename: str = f"{LESSON_ID}.ipynb"


def reference() -> dict:
    return COURSE.lesson(LESSON_ID).source_notebook()


def slow() -> dict:
    """Correct, but a Python loop: fails the structure and speed checks honestly."""
    return tiny_course.append_to_answer(reference(), tiny_course.LOOPING)


def sleepy() -> dict:
    """Correct and structurally right (no Python loop), but 1 ms slower per call: fails only on speed."""
    return _replace_answer(reference(), "    return 3.0 * values - 1.0\n", "    time.sleep(0.001)\n    return 3.0 * values - 1.0\n")


def _cell(notebook: dict, cell_id: str) -> dict:
    return next(cell for cell in notebook["cells"] if cell.get("id") == cell_id)


def _replace_answer(notebook: dict, old: str, new: str) -> dict:
    cell = _cell(notebook, SOLUTION)
    text = "".join(cell["source"])
    assert old in text
    cell["source"] = text.replace(old, new)
    return notebook


def _edit(notebook: dict, cell_id: str, **changes) -> dict:
    _cell(notebook, cell_id).update(changes)
    return notebook


def _delete(notebook: dict, cell_id: str) -> dict:
    notebook["cells"] = [c for c in notebook["cells"] if c.get("id") != cell_id]
    return notebook


def _strip_metadata(notebook: dict, *, ids: bool) -> dict:
    for cell in notebook["cells"]:
        cell["metadata"].pop("nbgrader", None)
        if ids:
            cell.pop("id", None)
    if ids:
        notebook["nbformat_minor"] = 4
    return notebook


def _colab_download(notebook: dict) -> dict:
    """What a Colab round trip can do: no nbgrader metadata, no cell ids, Colab's own metadata, a scratch cell."""
    notebook = _strip_metadata(notebook, ids=True)
    for cell in notebook["cells"]:
        cell["metadata"]["colab"] = {"base_uri": "https://localhost:8080/"}
    notebook["cells"].insert(len(notebook["cells"]) // 2, {"cell_type": "code", "metadata": {}, "execution_count": None,
                                                           "outputs": [], "source": "print('scratch')"})
    return notebook


def _retag(notebook: dict, lesson_id: str) -> dict:
    notebook["metadata"]["tfperf"]["lesson"] = lesson_id
    return notebook


HANG = "    if values.ndim != 1:\n        while True:\n            pass\n"
CACHED_RUN = (  # serve repeated inputs from a cache: fast on a cycled pool of test inputs, not on fresh ones
    "_computed, _cache = fast_scale, {}\n\n\n"
    "def fast_scale(values):\n"
    "    key = np.asarray(values).tobytes()\n"
    "    if key not in _cache:\n        _cache[key] = _computed(values)\n"
    "    return _cache[key]\n"
)

CASES = [
    Case("reference", reference, full=ALL_AUTO),
    Case("infinite_loop", lambda: _replace_answer(reference(), "    if values.ndim != 1:\n", HANG + "    if values.ndim != 1:\n"),
         full=("scale_matches", "scale_is_faster"), zero=("scale_rejects_matrices", "scale_has_no_loop"),  # the hang is a loop
         status={"scale_rejects_matrices": "timeout"}),
    Case("exception", lambda: tiny_course.append_to_answer(reference(), "fast_scale = None\nraise RuntimeError('half-finished answer')"),
         zero=ALL_AUTO),
    Case("syntax_error", lambda: tiny_course.append_to_answer(reference(), "def broken(:\n    pass"), zero=ALL_AUTO,
         note="has a syntax error at line"),  # named in the feedback, not only as the tests' NameErrors
    Case("sys_exit", lambda: tiny_course.append_to_answer(reference(), "import sys\nsys.exit(0)"), full=ALL_AUTO),
    Case("kernel_crash", lambda: tiny_course.append_to_answer(reference(), "import os\nos._exit(1)"), zero=ALL_AUTO, note="kernel died"),
    Case("tests_tampered", lambda: _edit(_edit(_delete(slow(), "scale_has_no_loop"), "scale_is_faster", source="pass"),
                                         "scale_rejects_matrices", cell_type="markdown", outputs=None, execution_count=None),
         full=CORRECTNESS, zero=("scale_has_no_loop", "scale_is_faster"),
         note="scale_has_no_loop was deleted|scale_is_faster was edited|scale_rejects_matrices was changed to markdown"),
    Case("metadata_stripped", lambda: _strip_metadata(reference(), ids=False), full=ALL_AUTO, note="lost their nbgrader metadata"),
    Case("metadata_and_ids_stripped", lambda: _colab_download(reference()), full=ALL_AUTO, note="matched to the release by their content"),
    Case("unmatchable", lambda: {**_strip_metadata(reference(), ids=True), "cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                                                     "execution_count": None, "source": "x = 1"}]},
         error="none of its cells matches"),
    Case("invalid_json", lambda: json.dumps(reference())[:-200].encode(), error="not valid notebook JSON"),
    Case("empty_file", lambda: b"", error="is empty"),
    Case("unknown_lesson", lambda: _strip_metadata(_retag(reference(), "99_unknown"), ids=True), error="cannot tell which lesson",
         filename="homework.ipynb"),
    Case("fake_perf_counter", lambda: tiny_course.append_to_answer(sleepy(), "import time, itertools\n_ticks = itertools.count()\n"
                                                               "time.perf_counter = lambda: next(_ticks) * 1e-9"),
         full=CORRECTNESS, zero=REVIEWED, note="on the review list"),
    Case("fake_assert_speedup", lambda: tiny_course.append_to_answer(sleepy(), "tfperf.assert_speedup = lambda *args, **kwargs: None"),
         full=CORRECTNESS, zero=REVIEWED, note="on the review list"),
    Case("fake_compare", lambda: tiny_course.append_to_answer(sleepy(), "import tfperf.timing\n_real = tfperf.timing.compare\n"
                                                             "tfperf.timing.compare = lambda *a, **k: _real(*a[::-1], **k)"),
         full=CORRECTNESS, zero=REVIEWED, note="on the review list"),
    Case("cached_results", lambda: tiny_course.append_to_answer(sleepy(), CACHED_RUN),
         full=CORRECTNESS + ("scale_has_no_loop",), zero=("scale_is_faster",)),
    Case("output_flood", lambda: tiny_course.append_to_answer(reference(), "for _ in range(20000):\n    print('x' * 100)"), full=ALL_AUTO),
    Case("stderr_noise", lambda: tiny_course.append_to_answer(reference(), "import sys\nprint('I0000 00:00:1.0 123 port.cc:1] oneDNN custom operations', file=sys.stderr)"),
         full=ALL_AUTO),
]
