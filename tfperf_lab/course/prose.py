"""A lesson's prose as a learner reads it: its length, grading talk kept to one note, and ranges that say what they are.

Three rules, each reported by ``tfperf-lab lint`` and held by ``tests/unit/test_lesson_prose.py``:

- **A word budget** (`WORD_BUDGET`): every markdown cell of a lesson, the shared ones included, as Jupyter shows it
  (figure marks' keys and comments left out, the rendered figures counted). 3,000 words is about 20 minutes of
  reading at 150 words a minute of technical text; the shortest lesson's study time is 70 minutes, and the rest is for
  running the cells, reading what they print, and the exercises.
- **Grading talk in one place**: the grading machinery (the sandbox, workload profiles, the grader's own clock, the
  decision rule, hidden tests, nbgrader, read-only cells, flake campaigns, the review list: `MACHINERY`) appears only
  in the lesson's note, the markdown from its ``## How this is graded`` cell (`tfperf_lab.course.stamp.NOTE_ID`) to the
  end. A lesson reads as a lesson: the technique, why it helps, the measurement, the exercise, where the article is
  wrong. A term list is a second witness for a reader's judgement, never the only one: the lessons were read whole.
- **Ranges that say what they are**: a recorded range (`tfperf_lab.course.figures`, every format that renders one) is
  where a single run on the course's 2-core machine lands (`tfperf_lab.publish.ranges.one_run`), and the paragraph that
  quotes it says so: it speaks of a run (``run``/``runs``) on the ``2-core`` machine.
"""

from __future__ import annotations

import re

from . import notebook

WORD_BUDGET = 3000
NOTE_ID = "how-graded"  # tfperf_lab.course.stamp.NOTE_ID (imported there from here)
NOTE_HEADING = "## How this is graded"
# Terms of the grading machinery, each with the words a report shows. "profile" alone is lesson 08's TensorFlow
# profile, "CI" a confidence interval: neither is listed.
MACHINERY = {
    "the sandbox": r"\bsandbox",
    "workload profiles": r"\b(?:reduced|full|grading) profile\b|\byour profile\b|tfperf\.env\.(?:profile|choose)\b",
    "the decision rule": r"\bdecision rule\b|\bconfidence sequences?\b",
    "nbgrader": r"\bnbgrader\b|\bformgrader\b|\bautograd(?:er|ed|ing|e)\b",
    "hidden tests": r"\bhidden tests?\b",
    "the grader": r"\bgrader(?:'s|s)?\b|\btimer process\b|\bgrading process\b|\boutside (?:your|the learner's) kernel\b",
    "read-only cells": r"\bread-only\b",
    "flake campaigns": r"\bcampaigns?\b",
    "the review list": r"\breview list\b",
}
_MACHINERY = re.compile("|".join(f"(?P<t{i}>{pattern})" for i, pattern in enumerate(MACHINERY.values())), re.I)
RANGE_FORMATS = ("range", "baseline", "candidate", "gain", "saved", "grader")  # figure formats that render a range of runs
LABEL = (re.compile(r"\bruns?\b", re.I), re.compile(r"\b2-core\b"))
_MARK_KEY = re.compile(r"<!--(?:fig|claim|def)\b[^>]*?-->|<!--/(?:fig|claim|def)-->")


def shown(text: str) -> str:
    """Markdown as Jupyter shows it: marks' keys and comments out, what they enclose kept."""
    return re.sub(r"<!--.*?-->", " ", _MARK_KEY.sub("", text), flags=re.S)


def words(nb: dict) -> int:
    """The words of every markdown cell, as shown."""
    return sum(len(shown(notebook.source(cell)).split()) for cell in nb["cells"] if cell["cell_type"] == "markdown")


def note_index(nb: dict) -> int | None:
    return next((i for i, cell in enumerate(nb["cells"]) if cell.get("id") == NOTE_ID), None)


def body(nb: dict) -> list[dict]:
    """The markdown cells before the grading note (all of them when there is none)."""
    end = note_index(nb)
    return [cell for cell in nb["cells"][:end] if cell["cell_type"] == "markdown"]


def machinery(text: str) -> list[str]:
    """The grading-machinery terms in ``text`` (as shown), each as "TERM ('what was written')"."""
    names = list(MACHINERY)
    return [f"{names[int(match.lastgroup[1:])]} ({match.group(0)!r})" for match in _MACHINERY.finditer(shown(text))]


def _paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines; a table is one block."""
    return [block for block in re.split(r"\n\s*\n", text) if block.strip()]


def unlabelled_ranges(text: str) -> list[str]:
    """Paragraphs of ``text`` quoting a recorded range without saying it is where a run on the 2-core machine lands."""
    from .figures import FIG, parse

    found = []
    for block in _paragraphs(text):
        keys = [match.group(1) for match in FIG.finditer(block)]
        ranged = [key for key in keys if parse(key)[2] in RANGE_FORMATS]
        if ranged and not all(label.search(shown(block)) for label in LABEL):
            found.append(f"{', '.join(ranged)}: {' '.join(shown(block).split())[:100]}...")
    return found


def problems(nb: dict) -> list[str]:
    """What breaks the three rules in a lesson's source notebook."""
    found = []
    count = words(nb)
    if count > WORD_BUDGET:
        found.append(f"{count:,} words of markdown: over the budget of {WORD_BUDGET:,} (tfperf_lab.course.prose)")
    at = note_index(nb)
    if at is None or not notebook.source(nb["cells"][at]).startswith(NOTE_HEADING):
        found.append(f"no grading note: a markdown cell with id {NOTE_ID!r} opening with {NOTE_HEADING!r}")
    for cell in body(nb):
        terms = machinery(notebook.source(cell))
        if terms:
            found.append(f"cell {cell.get('id')}: grading talk outside the note ('{NOTE_HEADING}'): {', '.join(terms)}")
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            found += [f"cell {cell.get('id')}: a range not labelled as one run's on the 2-core machine: {where}"
                      for where in unlabelled_ranges(notebook.source(cell))]
    return found
