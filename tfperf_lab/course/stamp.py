"""Cells every lesson shares, generated from one place: the hosted-notebook badges, the setup cell, the self-check.

- ``colab-badge``: "Open in Colab" and "Open in Kaggle" links to the student version of the lesson,
  built from ``[tool.tfperf] repository`` and ``branch`` in ``pyproject.toml`` (change them there
  when you fork the course, then run ``tfperf-lab release``).
- ``setup-help``: the markdown cell just before the setup cell, saying what to do when it fails, locally
  and on Colab or Kaggle (Kaggle's Internet switch).
- ``setup``: the first code cell. On Colab or Kaggle (``tfperf.env.hosted``, whose source the cell
  carries, so the cell and the library decide alike) it installs the course helpers from that
  repository (``--no-deps``: TensorFlow and the rest are preinstalled there), and a failed install ends
  in one message naming the fix; elsewhere it only imports them. Then ``tfperf.env.setup()`` reports
  versions, the device and how to switch on a GPU.
- read-only code cells (the baselines speed checks time) open with `READ_ONLY_NOTE`, saying what the
  grader does with them.
- ``how-graded``: the lesson's one note on grading ("## How this is graded"), the only place its prose speaks of the
  grading machinery (sandbox, profiles, the grader's clock, the decision rule: `tests/unit/test_lesson_prose.py`). The
  lesson owns the cell; stamping adds it with `NOTE_DEFAULT` when it is missing and moves it before the self-check.
- ``self-check-heading`` / ``self-check``: the last cells, a per-exercise table of the visible tests
  (`tfperf.selfcheck.summary`), with the exercises, docstrings and points read from the test cells, and the time
  grading takes (`tfperf_lab.course.lessons.graded_time_text`).

``tfperf-lab release`` stamps the source notebooks before generating the student versions, and the
lint rule `problems` reports a notebook whose stamped cells are missing or out of date.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib

import nbformat

from . import notebook
from .prose import NOTE_HEADING, NOTE_ID
from .lessons import Course, Lesson

SETUP_CALL = "ENV = tfperf.env.setup()"
HOSTED_INSTALL = '''\
# On Colab or Kaggle, install the course helpers first (TensorFlow is already there); elsewhere this only imports them.
import importlib.util
import os
import subprocess
import sys


{hosted}


if importlib.util.find_spec("tfperf") is None and hosted():
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "{install}"],
                               capture_output=True, text=True)
    if installed.returncode != 0:
        lines = installed.stderr.strip().splitlines() or ["no message from pip"]
        reason = next((line.strip() for line in lines if line.strip().startswith(("fatal:", "ERROR:"))), lines[-1].strip())
        advice = {advice}
        raise RuntimeError(f"Could not install the course helpers from {url} ({{reason}}). {{advice[hosted()]}}") from None
'''
# What to do when the hosted install fails, per service (the setup cell's last message).
INSTALL_ADVICE = {
    "kaggle": ("Kaggle notebooks start offline: in the editor's right-hand panel open Session options and switch "
               "Internet on (Kaggle asks once for a verified phone number), then run this cell again."),
    "colab": ("Check that the runtime is connected and that the repository opens in a browser, then run this cell "
              "again (Runtime > Restart session if it keeps failing)."),
}
SETUP_HELP = """\
If the next cell fails: on your own computer, install the course first (`pip install -e ".[learn]"` in the course
folder: TensorFlow, Jupyter and `tfperf-lab check`; see the README). On Colab and Kaggle the cell installs the course helpers itself and ends with one
message saying what to do if that fails; on Kaggle, switch **Internet** on first (Session options, in the
editor's right-hand panel): Kaggle notebooks start offline."""
# The sentence lessons used to carry by hand before `SETUP_HELP` (wrong on Colab and Kaggle); stamping removes it.
LEGACY_SETUP_HELP = re.compile(r"\s*If this cell fails, install the course first:\s+`pip install -e \.`\s+in the course folder\s+\(see the README\)\.")
# The note's opening paragraph: stamped into a lesson that has no note yet; a lesson's note keeps it and adds its own.
NOTE_DEFAULT = NOTE_HEADING + """

When the notebook is graded (`tfperf-lab check` on your own machine, or your instructor's nbgrader), it runs again
from the top in a fresh, sandboxed kernel, on the smaller workloads of the reduced profile (`tfperf.env.profile()`
says which profile a run uses), with hidden tests beside the visible ones. The read-only cells (the baselines the
speed checks time) are restored first. Each speed check is timed by the grader, in a process of its own: your code
against the course's copy of the baseline, in paired, interleaved rounds, decided by a confidence interval that must
clear the threshold. A check the machine left undecided while your rounds cleared the threshold is measured again,
never failed for it. [How grading works]({url}) has the details."""
SUMMARY_HEADING = """\
### Self-check summary

Run this cell last. It lists every test cell above: passed, failed (with the reason and any measured
speedup), undecided (`?`, a busy machine: no failure) or not run yet. Only the visible tests run here; the hidden ones run when the notebook is graded,
so a full self-check is necessary, not sufficient. Graded locally: `tfperf-lab check <this notebook>`
(see the README); in a class: your instructor's nbgrader. {graded}"""
READ_ONLY_NOTE = ("# Read-only: graded speed checks time this code. Changes are undone when graded, and redefining its\n"
                  "# functions or CONSTANTS in your own cells costs the speed points: copy them under new names to experiment.")
# A section with autograded points: "## 3. Exercise 2: a fast pipeline (6 points)" gives "Exercise 2: a fast pipeline".
# Headings of hand-graded answers ("(2 points, graded by hand)") are not sections of the self-check.
EXERCISE_HEADING = re.compile(r"^#{2,3}\s+(?:\d+\.\s*)?([^\n]*?)\s*\(\d+(?:\.\d+)?\s+points?\)\s*$", re.M)


def location(course: Course) -> tuple[str, str]:
    """(GitHub ``owner/name``, branch) the badges and hosted installs point at, from the course's pyproject.toml."""
    config = tomllib.loads(course.pyproject.read_text(encoding="utf-8"))["tool"]["tfperf"]
    return config["repository"], config["branch"]


def install_spec(where: tuple[str, str]) -> str:
    repository, branch = where
    return f"git+https://github.com/{repository}@{branch}"


def colab_url(lesson_id: str, where: tuple[str, str]) -> str:
    repository, branch = where
    return f"https://colab.research.google.com/github/{repository}/blob/{branch}/lessons/{lesson_id}/{lesson_id}.ipynb"


def kaggle_url(lesson_id: str, where: tuple[str, str]) -> str:
    repository, branch = where
    return f"https://kaggle.com/kernels/welcome?src=https://github.com/{repository}/blob/{branch}/lessons/{lesson_id}/{lesson_id}.ipynb"


def badge_source(lesson_id: str, where: tuple[str, str]) -> str:
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(lesson_id, where)}) "
            f"[![Open In Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]({kaggle_url(lesson_id, where)})")


def grading_url(where: tuple[str, str]) -> str:
    """docs/grading.md on GitHub: the note's link works in the student version wherever it is opened (Colab too)."""
    repository, branch = where
    return f"https://github.com/{repository}/blob/{branch}/docs/grading.md"


def summary_heading(nb: dict) -> str:
    """The self-check's heading cell, with the time grading takes (from ``metadata.tfperf.minutes``) and, for each speed
    check, where one run of the reference solution lands in the self-check and when graded (`speed_figures`)."""
    from .lessons import graded_time_text

    minutes = nb.get("metadata", {}).get("tfperf", {}).get("minutes", {})
    if "full" not in minutes or "grading" not in minutes:
        return (SUMMARY_HEADING.format(graded="").rstrip() + speed_figures(nb)).rstrip()
    sentence = graded_time_text(minutes["full"], minutes["grading"])
    figure = sentence.split(" in under ", 1)[1].split(" on a ", 1)[0]  # "1.5 minutes": the notebook's budget, a definition
    return SUMMARY_HEADING.format(graded=sentence.replace(f" {figure} ", f" <!--def-->{figure}<!--/def--> ", 1)) + speed_figures(nb)


SPEED_FIGURES = """

The reference solution's speed checks, one run on the course's 2-core VM (9 runs in 10 land in these ranges):
{checks}
The two differ: grading times the smaller workload, in a process of its own, in batches of about <!--def-->20 ms<!--/def-->, while other
gradings and programs share the cores; your own machine is another CPU."""


def speed_figures(nb: dict) -> str:
    """Issue 51, item 3: per speed check, the figure the self-check measured for the reference (its record, recorded
    runs of the full profile) and the figure the grader measured (`tfperf_lab.publish.ranges.graded`), rendered now
    where the records exist (``tfperf-lab release`` renders them again)."""
    from . import figures

    lesson_id = nb.get("metadata", {}).get("tfperf", {}).get("lesson", "")
    number = lesson_id.split("_", 1)[0]
    ranges = figures.recorded()
    if not any(lesson_id in by_profile for by_profile in ranges.get("profiles", {}).values()):
        return ""  # a lesson no run recorded yet (an instructor's own): nothing to quote; once recorded, the marks follow
    lines = []
    for cell_id, names in notebook.speed_checks(nb).items():
        for name in names[:1]:
            lines.append(f"- `{cell_id}`: <!--fig {number}.{name}-->?<!--/fig--> in this notebook's self-check, "
                         f"<!--fig grader:{cell_id}-->?<!--/fig--> graded with other work on the machine.")
    if not lines:
        return ""
    text = SPEED_FIGURES.format(checks="\n".join(lines) + "\n")
    try:
        return figures.render_text(text, lesson_id, ranges, figures.thresholds_of(nb))
    except figures.FigureError:
        return text  # not recorded yet: `tfperf-lab lint` names the figure
def setup_source(where: tuple[str, str]) -> str:
    """The setup cell: `tfperf.env.hosted`'s own source (one predicate for the cell and the library), the
    hosted install with one readable error, then the import and `tfperf.env.setup`."""
    import inspect

    from tfperf import env

    repository, _ = where
    advice = "{\n" + "".join(f"            {_quoted(k)}: {_quoted(v)},\n" for k, v in INSTALL_ADVICE.items()) + "        }"
    cell = HOSTED_INSTALL.format(hosted=inspect.getsource(env.hosted).rstrip(), install=install_spec(where),
                                 url=f"https://github.com/{repository}", advice=advice)
    return cell + "\nimport tfperf\n\n" + SETUP_CALL


_text = notebook.source


def exercises(nb: dict) -> tuple[dict[str, list[tuple[str, float]]], float]:
    """exercise title -> [(test docstring, points)], and the points of hand-graded answers."""
    from tfperf.selfcheck import check_name

    table: dict[str, list[tuple[str, float]]] = {}
    title, hand_graded = "Checks", 0.0
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "markdown":
            found = EXERCISE_HEADING.search(_text(cell))
            title = found.group(1).strip() if found else title
            hand_graded += meta.get("points", 0) if meta.get("grade") else 0
        elif meta.get("grade") and not meta.get("solution"):
            name = check_name(_text(cell))
            if name:
                table.setdefault(title, []).append((name, meta.get("points", 0)))
    return table, hand_graded


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a Python string literal too


def summary_source(nb: dict) -> str:
    table, hand_graded = exercises(nb)
    lines = ["# Generated by `tfperf-lab release` from the test cells above.", "tfperf.selfcheck.summary({"]
    for title, checks in table.items():
        lines.append(f"    {_quoted(title)}: [")
        lines += [f"        ({_quoted(check)}, {points:g})," for check, points in checks]
        lines.append("    ],")
    lines.append(f"}}, hand_graded={hand_graded:g})" if hand_graded else "})")
    return "\n".join(lines)


def _find(nb: dict, cell_id: str) -> int | None:
    return next((i for i, cell in enumerate(nb["cells"]) if cell.get("id") == cell_id), None)


def _setup_index(nb: dict) -> int | None:
    found = _find(nb, "setup")
    if found is not None:
        return found
    return next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and SETUP_CALL in _text(c)), None)


def stamped(nb: dict, where: tuple[str, str]) -> dict:
    """A copy of ``nb`` with the shared cells added or brought up to date (idempotent)."""
    nb = copy.deepcopy(nb)
    lesson_id = nb["metadata"]["tfperf"]["lesson"]

    def put(cell_id: str, kind: str, source: str, index: int) -> None:
        at = _find(nb, cell_id)
        if at is None:
            cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
            cell["id"] = cell_id
            nb["cells"].insert(index, cell)
        else:
            nb["cells"][at]["source"] = source

    put("colab-badge", "markdown", badge_source(lesson_id, where), 1)
    at = _setup_index(nb)
    if at is None:
        raise ValueError(f"{lesson_id}: no setup cell (a code cell with {SETUP_CALL!r}) to stamp")
    nb["cells"][at]["id"], nb["cells"][at]["source"] = "setup", setup_source(where)
    helper = _find(nb, "setup-help")
    if helper is not None and helper != at - 1:
        nb["cells"].pop(helper)
        at = _setup_index(nb)
    if at > 0 and nb["cells"][at - 1]["cell_type"] == "markdown" and nb["cells"][at - 1].get("id") != "setup-help":
        before = nb["cells"][at - 1]
        before["source"] = LEGACY_SETUP_HELP.sub("", _text(before))
    put("setup-help", "markdown", SETUP_HELP, at)
    for cell in nb["cells"]:
        if notebook.is_read_only(cell) and not _text(cell).startswith(READ_ONLY_NOTE):
            cell["source"] = READ_ONLY_NOTE + "\n" + _text(cell)
    at = _find(nb, NOTE_ID)
    note = nb["cells"].pop(at) if at is not None else None
    if note is None:
        note = nbformat.v4.new_markdown_cell(NOTE_DEFAULT.format(url=grading_url(where)))
        note["id"] = NOTE_ID
    for cell_id in ("self-check-heading", "self-check"):  # always last, after any cell added since
        at = _find(nb, cell_id)
        if at is not None:
            nb["cells"].pop(at)
    nb["cells"].append(note)
    put("self-check-heading", "markdown", summary_heading(nb), len(nb["cells"]))
    put("self-check", "code", summary_source(nb), len(nb["cells"]))
    return nb


SHARED = ("colab-badge", "setup-help", "setup", NOTE_ID, "self-check-heading", "self-check")


def _place(nb: dict, cell_id: str) -> tuple[int, str] | None:
    at = _find(nb, cell_id)
    return None if at is None else (at, _text(nb["cells"][at]))


def problems(nb: dict, where: tuple[str, str]) -> list[str]:
    """Shared cells that `stamped` would add, change or move (empty when they are up to date)."""
    try:
        expected = stamped(nb, where)
    except (KeyError, ValueError) as error:
        return [f"cannot stamp the shared cells: {error}"]
    stale = [cell_id for cell_id in SHARED if _place(nb, cell_id) != _place(expected, cell_id)]
    stale += [cell.get("id") for cell in nb["cells"] if notebook.is_read_only(cell) and not _text(cell).startswith(READ_ONLY_NOTE)]
    return [f"shared cells missing or out of date ({', '.join(stale)}): run `tfperf-lab release` to stamp them"] if stale else []


def stamp(course: Course, lesson: Lesson) -> bool:
    """Stamp the lesson's source notebook in place; True when it changed."""
    nb = notebook.read(lesson.source)
    new = stamped(nb, location(course))
    if new == nb:
        return False
    nbformat.validate(nbformat.from_dict(new))
    notebook.write(new, lesson.source)
    return True
