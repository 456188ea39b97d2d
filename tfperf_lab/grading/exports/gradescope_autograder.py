"""Gradescope's autograder: ``OUT/gradescope-autograder/autograder.zip``, which grades each submission on Gradescope.

The zip holds what Gradescope's specs ask for at its root (gradescope-autograders.readthedocs.io/en/latest/specs/):
``setup.sh``, run once as root on Ubuntu when Gradescope builds the autograder's image (the zip is unpacked in
``/autograder/source``; it installs Python 3.11+, bubblewrap and the course's package with its grader extra into
``/autograder/venv``), and ``run_autograder``, run for each submission with the student's files in
``/autograder/submission/``. It installs nothing; it runs this module::

    python -m tfperf_lab.grading.exports.gradescope_autograder run --submission DIR --results FILE

which grades the one notebook handed in as ``tfperf-lab check`` does (the course's hidden tests, its time limits; the
course's sandbox when bubblewrap can run in Gradescope's container, else without it, saying so in the output) and
writes ``/autograder/results/results.json`` (`tfperf_lab.grading.exports.gradescope.gradescope_result`). Beside them,
the course: the package sources (``tfperf/``, ``tfperf_lab/``, ``pyproject.toml``, ``README.md``), ``solutions/``,
``lessons/`` and ``autograder/`` (without the class list, ``roster.csv``, or the semester file: Gradescope keeps its own
due dates); never ``.venv``, ``.work``, ``docs/``, tests or caches.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import stat
import sys
import time
import zipfile

from . import ExportError, Request, Written, descriptions, grade_one, hidden_cells, register, write_json

SOURCE = pathlib.PurePosixPath("/autograder/source")
VENV = pathlib.PurePosixPath("/autograder/venv")
SUBMISSION = pathlib.PurePosixPath("/autograder/submission")
RESULTS = pathlib.PurePosixPath("/autograder/results/results.json")
COURSE = ("pyproject.toml", "README.md", "tfperf", "tfperf_lab", "solutions", "lessons", "autograder")
LEFT_OUT = {"roster.csv", "semester.toml", "mapping.csv"}  # the class's own data: not Gradescope's to hold
SKIPPED = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}

SETUP = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04 or later; the zip is
# unpacked in {SOURCE}): Python 3.11+, bubblewrap (the course's sandbox, where the container lets it run) and
# the course's package with the grader's extra, in {VENV}. run_autograder installs nothing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends ca-certificates bubblewrap python3 python3-venv python3-pip
PYTHON=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    apt-get install -y --no-install-recommends python3.11 python3.11-venv
    PYTHON=python3.11
fi
"$PYTHON" -m venv {VENV}
{VENV}/bin/pip install --upgrade pip
{VENV}/bin/pip install "{SOURCE}[grader]"
"""

RUN = f"""#!/usr/bin/env bash
cd {SOURCE}
exec {VENV}/bin/python -m tfperf_lab.grading.exports.gradescope_autograder run --submission {SUBMISSION} --results {RESULTS}
"""


def _files(root: pathlib.Path) -> list[tuple[pathlib.Path, str]]:
    """(file, name in the zip) of the course's part of the autograder, sorted."""
    found = []
    for top in COURSE:
        path = root / top
        if path.is_file():
            found.append((path, top))
            continue
        for base, dirs, files in os.walk(path, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info") and not d.startswith("."))
            for name in sorted(files):
                if name.endswith((".pyc", ".feedback.html")) or (top == "autograder" and name in LEFT_OUT):
                    continue
                file = pathlib.Path(base, name)
                if file.is_symlink() or not file.is_file():
                    continue
                found.append((file, file.relative_to(root).as_posix()))
    return found


def _add(archive: zipfile.ZipFile, name: str, text: str | bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    archive.writestr(info, text)


def build(course, target: pathlib.Path) -> tuple[pathlib.Path, list[str]]:
    """Write the autograder zip of ``course`` to ``target``; returns it and what the person uploading it should know.

    Raises:
        ExportError: no course, or a course folder without the package sources or the sources of its lessons.
    """
    if course is None:
        raise ExportError("the Gradescope autograder is built from the course folder: run it from the course (or --course PATH)")
    root = pathlib.Path(course.root)
    missing = [name for name in COURSE if not (root / name).exists()]
    if missing:
        raise ExportError(f"the course folder {root} lacks {', '.join(missing)}: the autograder is built from an instructor's "
                          "clone of the course (with solutions/, whose hidden tests grade)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    with zipfile.ZipFile(partial, "w") as archive:
        _add(archive, "setup.sh", SETUP, executable=True)
        _add(archive, "run_autograder", RUN, executable=True)
        for path, name in _files(root):
            _add(archive, name, path.read_bytes(), executable=bool(path.stat().st_mode & stat.S_IXUSR))
    partial.replace(target)
    notes = [f"upload {target} in Gradescope (Programming Assignment > Configure Autograder > Zip file upload; base image "
             "Ubuntu 22.04 or later), the same zip for every lesson: each notebook says which lesson it is"]
    left = sorted(name for name in LEFT_OUT if (course.autograder / name).exists())
    if left:
        notes.append(f"left out of the zip: autograder/{', autograder/'.join(left)} (the class's own data)")
    return target, notes


@register("gradescope-autograder", help="OUT/gradescope-autograder/autograder.zip: the autograder Gradescope builds its "
                                        "image from (setup.sh, run_autograder, the course); it grades each submission there",
          files="autograder.zip", reads_grades=False)
def write(request: Request) -> Written:
    target, notes = build(request.course, pathlib.Path(request.folder) / "autograder.zip")
    return Written("gradescope-autograder", target.parent, [target], notes)


# -------------------------------------------------------------------------------------------------------- run_autograder


def run(course, submission: pathlib.Path, results: pathlib.Path, *, config=None, lesson_id: str | None = None) -> dict:
    """Grade the one notebook in ``submission`` and write Gradescope's ``results.json`` to ``results``; returns it."""
    from .gradescope import gradescope_result

    began = time.monotonic()
    graded = grade_one(course, pathlib.Path(submission), config=config, lesson_id=lesson_id)
    if graded.result is None:
        data = {"score": 0.0, "output": f"Not graded: {graded.why}.", "tests": []}
    else:
        lesson = graded.lesson
        data = gradescope_result(graded.result, lesson, hidden_cells(course, lesson), descriptions(lesson), extra=graded.notes)
        data["extra_data"] = {"lesson": graded.result.lesson, "notebook": graded.notebook.name if graded.notebook else None,
                              "sandbox": graded.result.sandbox or None}
        print("\n".join(graded.result.lines()))  # stdout: the instructor's only
    data["execution_time"] = round(time.monotonic() - began)
    write_json(pathlib.Path(results), data)
    return data


def main(argv: list[str] | None = None) -> int:
    from ...course import Course, CourseNotFound
    from ...course.config import GradingConfig, add_options

    parser = argparse.ArgumentParser(prog="python -m tfperf_lab.grading.exports.gradescope_autograder",
                                     description="Gradescope's run_autograder: grade one submission into results.json")
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("run", help="grade the notebook handed in")
    step.add_argument("--submission", default=str(SUBMISSION), help=f"the student's files (default: {SUBMISSION})")
    step.add_argument("--results", default=str(RESULTS), help=f"where results.json goes (default: {RESULTS})")
    step.add_argument("--course", help="the course folder (default: $TFPERF_COURSE or the working directory)")
    step.add_argument("--lesson", help="the lesson, where the notebook does not say")
    add_options(step, "notebook_seconds", "cell_seconds", "backend")
    args = parser.parse_args(argv)
    try:
        course = Course.find(args.course)
    except CourseNotFound as error:
        write_json(pathlib.Path(args.results), {"score": 0.0, "output": "Not graded: the autograder has no course "
                                                "(a fault of the autograder's setup, not your notebook).", "tests": []})
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2
    data = run(course, pathlib.Path(args.submission), pathlib.Path(args.results), config=GradingConfig.from_options(args),
               lesson_id=args.lesson)
    print(f"wrote {args.results}: score {data['score']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
