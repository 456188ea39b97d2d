"""Broken and dishonest submissions of lesson 01, each with the outcome grading must give.

Every case is a real notebook file built from the course's own lesson 01 (the reference answer, or
the correct-but-slow answer that still calls sess.run), then broken or doctored the way students'
notebooks are. `expected` names cells that must score full marks and cells that must score 0.
"""

from __future__ import annotations

import dataclasses
import json

from tfperf_lab.course import variants
from pipeline import COURSE

LESSON = COURSE.lesson("01_callable_handles")
SOLUTION = "make_callable_solution"
SLOW = next(v for v in variants.for_lesson(LESSON.id) if v.name == "calls_sess_run")
CORRECTNESS = ("handle_matches_sess_run", "handle_rejects_bad_elements")
STRUCTURE = ("handle_matches_sess_run", "handle_rejects_bad_elements", "handle_built_once")
# handle_built_once shares the speed check's review (metadata.tfperf.review_with): an answer on the review list loses both,
# while an honest slow answer keeps the structure it got right
REVIEWED = ("handle_built_once", "handle_is_faster")
ALL_AUTO = ("handle_matches_sess_run", "handle_rejects_bad_elements", "handle_built_once", "handle_is_faster")


@dataclasses.dataclass
class Case:
    name: str
    build: object  # () -> dict | bytes
    full: tuple[str, ...] = ()
    zero: tuple[str, ...] = ()
    error: str | None = None  # text the submission-level error must contain
    note: str | None = None  # text one of the notes must contain
    status: dict = dataclasses.field(default_factory=dict)  # cell -> status
    filename: str = f"{LESSON.id}.ipynb"


def reference() -> dict:
    return LESSON.source_notebook()


def slow() -> dict:
    """Correct, but calls sess.run inside: fails the structure and speed checks honestly."""
    return SLOW.notebook(LESSON)


def sleepy() -> dict:
    """Correct and structurally right (one handle, no sess.run), but 1 ms slower per call: fails only on speed."""
    slowed = _replace_answer(reference(), "        return handle(*[", "        time.sleep(0.001)\n        return handle(*[")
    cell = _cell(slowed, SOLUTION)
    cell["source"] = "import time\n\n" + "".join(cell["source"])
    return slowed


def _cell(notebook: dict, cell_id: str) -> dict:
    return next(cell for cell in notebook["cells"] if cell.get("id") == cell_id)


def _append_to_answer(notebook: dict, code: str) -> dict:
    cell = _cell(notebook, SOLUTION)
    cell["source"] = "".join(cell["source"]) + "\n" + code
    return notebook


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


HANG = ('        if any(getattr(key, "name", "").startswith("stranger") for key in feed_dict):\n'
        '            while True:\n                pass\n')
CACHED_RUN = (  # serve repeated inputs from a cache: fast on a cycled pool of test inputs, not on fresh ones
    "    cache = {}\n"
    "    def cached_run(feed_dict):\n"
    "        if len(feed_dict) != len(feed) or any(p not in feed_dict for p in feed):\n"
    "            return run_callable(feed_dict)\n"
    "        key = b''.join(np.asarray(feed_dict[p]).tobytes() for p in feed)\n"
    "        if key not in cache:\n            cache[key] = run_callable(feed_dict)\n"
    "        return cache[key]\n"
)

CASES = [
    Case("reference", reference, full=ALL_AUTO),
    Case("infinite_loop", lambda: _replace_answer(reference(), "        missing = [", HANG + "        missing = ["),
         full=("handle_matches_sess_run", "handle_built_once", "handle_is_faster"), zero=("handle_rejects_bad_elements",),
         status={"handle_rejects_bad_elements": "timeout"}),
    Case("exception", lambda: _append_to_answer(reference(), "make_callable = None\nraise RuntimeError('half-finished answer')"),
         zero=ALL_AUTO),
    Case("syntax_error", lambda: _append_to_answer(reference(), "def broken(:\n    pass"), zero=ALL_AUTO),
    Case("sys_exit", lambda: _append_to_answer(reference(), "import sys\nsys.exit(0)"), full=ALL_AUTO),
    Case("kernel_crash", lambda: _append_to_answer(reference(), "import os\nos._exit(1)"), zero=ALL_AUTO, error="kernel died"),
    Case("tests_tampered", lambda: _edit(_edit(_delete(slow(), "handle_built_once"), "handle_is_faster", source="pass"),
                                         "handle_rejects_bad_elements", cell_type="markdown", outputs=None, execution_count=None),
         full=CORRECTNESS, zero=("handle_built_once", "handle_is_faster"),
         note="handle_built_once was deleted|handle_is_faster was edited|handle_rejects_bad_elements was changed to markdown"),
    Case("metadata_stripped", lambda: _strip_metadata(reference(), ids=False), full=ALL_AUTO, note="lost their nbgrader metadata"),
    Case("metadata_and_ids_stripped", lambda: _colab_download(reference()), full=ALL_AUTO, note="matched to the release by their content"),
    Case("unmatchable", lambda: {**_strip_metadata(reference(), ids=True), "cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                                                     "execution_count": None, "source": "x = 1"}]},
         error="none of its cells matches"),
    Case("invalid_json", lambda: json.dumps(reference())[:-200].encode(), error="not valid notebook JSON"),
    Case("empty_file", lambda: b"", error="is empty"),
    Case("unknown_lesson", lambda: _strip_metadata(_retag(reference(), "99_unknown"), ids=True), error="cannot tell which lesson",
         filename="homework.ipynb"),
    Case("fake_perf_counter", lambda: _append_to_answer(sleepy(), "import time, itertools\n_ticks = itertools.count()\n"
                                                               "time.perf_counter = lambda: next(_ticks) * 1e-9"),
         full=CORRECTNESS, zero=REVIEWED, note="on the review list"),
    Case("fake_assert_speedup", lambda: _append_to_answer(sleepy(), "tfperf.assert_speedup = lambda *args, **kwargs: None"),
         full=CORRECTNESS, zero=REVIEWED, note="on the review list"),
    Case("fake_compare", lambda: _append_to_answer(sleepy(), "import tfperf.timing\n_real = tfperf.timing.compare\n"
                                                             "tfperf.timing.compare = lambda *a, **k: _real(*a[::-1], **k)"),
         full=CORRECTNESS, zero=REVIEWED, note="on the review list"),
    Case("cached_results", lambda: _replace_answer(sleepy(), "    return run_callable", CACHED_RUN + "    return cached_run"),
         full=("handle_rejects_bad_elements", "handle_built_once"), zero=("handle_is_faster",)),
    Case("output_flood", lambda: _append_to_answer(reference(), "for _ in range(20000):\n    print('x' * 100)"), full=ALL_AUTO),
    Case("stderr_noise", lambda: _append_to_answer(reference(), "import sys\nprint('I0000 00:00:1.0 123 port.cc:1] oneDNN custom operations', file=sys.stderr)"),
         full=ALL_AUTO),
]
