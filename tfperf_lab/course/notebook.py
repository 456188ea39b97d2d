"""Notebook text as the course reads it: cell source, hidden-test regions, read-only cells, the names a cell binds.

Grading, lint, stamp, variants and the tests all read cells through these functions, so a cell's text is
joined one way and a hidden-test region ends one way everywhere.
"""

from __future__ import annotations

import ast
import copy as _copy
import json
import pathlib
import re
import threading

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
HIDDEN_REGION = re.compile(rf"{HIDDEN_BEGIN}.*?{HIDDEN_END}\n?", flags=re.S)
# Cells tagged so are the setup a speed test reads: the clean reference process runs them with the speed tests, lint
# checks that every name a speed test reads is bound by one.
FIXTURE_TAG = "speed-fixture"
SPEED_NAME = re.compile(r"assert_speedup\((?:.|\n)*?name=[\"']([\w.-]+)[\"']")


# CPython 3.11 can fail two parses that run at once in threads ("SystemError: AST constructor recursion depth
# mismatch", python/cpython#106905); a class is graded by several threads, so every parse of a cell goes through `parse`.
_PARSING = threading.Lock()


def parse(text: str) -> ast.Module:
    """``ast.parse(text)`` under the course's one parse lock: the only way the grader parses code (a test holds it)."""
    with _PARSING:
        return ast.parse(text)


def read(path: str | pathlib.Path) -> dict:
    """A notebook file as plain JSON data."""
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def write(nb: dict, path: str | pathlib.Path) -> pathlib.Path:
    """Write a notebook as nbformat does (indent 1, UTF-8, trailing newline)."""
    path = pathlib.Path(path)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def copy(nb: dict) -> dict:
    """A deep copy a caller may change."""
    return _copy.deepcopy(nb)


def text(value) -> str:
    """A cell's source (or an output's text), which nbformat stores as a string or a list of lines."""
    return "".join(value) if isinstance(value, list) else str(value or "")


def source(cell: dict) -> str:
    return text(cell.get("source"))


def visible(source_text: str) -> str:
    """A test cell as learners see it: without its hidden region (an instructor's copy still has it)."""
    return HIDDEN_REGION.sub("", source_text).strip()


def hidden_regions(source_text: str) -> list[str]:
    """The hidden-test regions of a cell, without their markers."""
    return [region[len(HIDDEN_BEGIN):].rsplit(HIDDEN_END, 1)[0] for region in HIDDEN_REGION.findall(source_text)]


def nbgrader_meta(cell: dict) -> dict:
    meta = cell.get("metadata", {})
    found = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return found if isinstance(found, dict) else {}


def is_read_only(cell: dict) -> bool:
    """A locked code cell that is neither a test nor an answer: support code, such as the baselines speed checks time."""
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("locked")) and not meta.get("grade") and not meta.get("solution")


def is_protected(cell: dict) -> bool:
    """A cell nbgrader restores when grading: locked, or a test (graded but not an answer)."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("locked") or (meta.get("grade") and not meta.get("solution")))


def fingerprint(nb: dict) -> str:
    """What a grade depends on besides the learner's answers: the instructor's test, read-only and fixture cells (ids,
    text with hidden tests, points), hashed. A grade saved against another fingerprint is stale."""
    import hashlib

    kept = [[cell.get("id"), cell.get("cell_type"), source(cell), nbgrader_meta(cell).get("points")]
            for cell in nb["cells"] if is_protected(cell) or FIXTURE_TAG in cell.get("metadata", {}).get("tags", [])]
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def grade_cells(nb: dict) -> list[dict]:
    """The graded cells, in notebook order: ``{"id", "points", "kind"}`` (kind: auto, or manual for answers graded by hand)."""
    cells = []
    for cell in nb["cells"]:
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            kind = "manual" if cell["cell_type"] == "markdown" or meta.get("solution") else "auto"
            cells.append({"id": meta["grade_id"], "points": float(meta.get("points", 0)), "kind": kind})
    return cells


def speed_checks(nb: dict) -> dict[str, list[str]]:
    """grade_id -> names of the speed checks (``assert_speedup(..., name=...)``) its test cell runs."""
    checks = {}
    for cell in nb["cells"]:
        body = source(cell)
        if nbgrader_meta(cell).get("grade") and "assert_speedup(" in body:
            checks[cell["id"]] = SPEED_NAME.findall(body)
    return checks


def check_fingerprint(nb: dict, cell_id: str, *, threshold: float | None = None, rule: str | None = None) -> str:
    """What a speed check's verdict depends on in the instructor's source, as a short hash: the check's test cell and the
    cells the reference process runs before it (tagged ``speed-fixture``), less the stamped setup cell (it only imports
    the course), and the decision rule's version (`tfperf.stats.RULE`). A flake campaign keeps it per row, so a
    campaign measured before the check, its fixture or the rule changed shows as stale (tests/unit/test_flake_records.py).

    ``threshold``: the hash the check had when its threshold was this and nothing else differed (`at_threshold`). A row
    measured at another threshold matches it exactly when only the threshold changed since; its kept rounds can then be
    decided again at today's (`tfperf_lab.speed.replay.at_threshold`). ``rule``: the hash under another rule's version
    (a row recorded under an earlier rule measured today's check when it matches: its rounds still are the check's)."""
    import hashlib

    from tfperf.stats import RULE

    def text(cell: dict) -> str:
        return at_threshold(source(cell), threshold) if threshold is not None and cell.get("id") == cell_id else source(cell)

    parts = [f"rule {rule or RULE}"] + [text(cell) for cell in nb["cells"]
             if cell.get("id") == cell_id or (FIXTURE_TAG in cell.get("metadata", {}).get("tags", []) and cell.get("id") != "setup")]
    return hashlib.sha256("\n\x00".join(parts).encode()).hexdigest()[:16]


THRESHOLD = re.compile(r"threshold=([0-9.]+)")  # a speed test cell's threshold, as its source writes it


def at_threshold(text: str, value: float) -> str:
    """A speed test cell's source as it read with threshold ``value``: its one ``threshold=`` literal (written as Python
    prints the float, ``threshold=1.3``, ``threshold=2.0``) and the ``1.3x`` its docstring names. Only a hash compares
    the result (`check_fingerprint`), so a cell written any other way reads as a different check, never as the same."""
    found = THRESHOLD.findall(text)
    if len(found) != 1:
        return text
    today = float(found[0])
    text = text.replace(f"threshold={found[0]}", f"threshold={float(value)!r}")
    return re.sub(rf"(?<![0-9.]){re.escape(f'{today:g}')}x\b", f"{float(value):g}x", text)


def code_fingerprint(nb: dict, *, earlier: dict[str, float] | None = None) -> str:
    """What a lesson's recorded runs depend on in its source, as a short hash: every code cell, less the stamped shared
    cells (they only import the course and summarise the tests). A kept run (`tfperf_lab.publish.ranges`) carries it
    per lesson; a run whose lesson's code changed since no longer counts for the ranges and figures lessons quote. The
    decision rule's version (`tfperf.stats.RULE`) is part of it: the words a figure quotes are the rule's. ``earlier``:
    speed test cell -> the threshold it had before (`code_fingerprints`)."""
    import hashlib

    from tfperf.stats import RULE

    shared = {"setup", "self-check"}
    earlier = earlier or {}

    def text(cell: dict) -> str:
        return at_threshold(source(cell), earlier[cell["id"]]) if cell.get("id") in earlier else source(cell)

    parts = [f"rule {RULE}"] + [text(cell) for cell in nb["cells"] if cell.get("cell_type") == "code" and cell.get("id") not in shared]
    return hashlib.sha256("\n\x00".join(parts).encode()).hexdigest()[:16]


THRESHOLD_WAS = "threshold_was"


def code_fingerprints(nb: dict) -> set[str]:
    """Every fingerprint a run of the lesson's code as it is today may carry: today's, and one per threshold a speed
    test cell names in ``metadata.tfperf.threshold_was`` (its earlier thresholds, nothing else changed). A threshold
    decides a grade, not what the lesson measures, so a lowered one keeps the kept runs; the hash still refuses a
    run whose code differed in anything else."""
    found = {code_fingerprint(nb)}
    for cell in nb["cells"]:
        for value in tfperf_meta(cell).get(THRESHOLD_WAS, []):
            found.add(code_fingerprint(nb, earlier={cell["id"]: float(value)}))
    return found


def tfperf_meta(cell: dict) -> dict:
    """A cell's ``metadata.tfperf`` (the course's own keys: ``review_with``, ``paid_with``, ``threshold_was``), or an empty dict."""
    meta = cell.get("metadata", {})
    found = meta.get("tfperf", {}) if isinstance(meta, dict) else {}
    return found if isinstance(found, dict) else {}


def review_cells(nb: dict) -> dict[str, list[str]]:
    """grade_id -> the speed checks whose points it shares when the review (`tfperf_lab.grading.review`) flags an answer: a speed
    test cell's own checks, and for a structural test cell the checks named in ``metadata.tfperf.review_with``. A
    structural cell's point never depends on a speed verdict (slow or wrong answers keep the structure they got right);
    it is withheld only when the answer reaches into the machinery that reports that structure, as the speed check's is."""
    cells = speed_checks(nb)
    for cell in nb["cells"]:
        linked = tfperf_meta(cell).get("review_with")
        grade_id = nbgrader_meta(cell).get("grade_id")
        if linked and grade_id and nbgrader_meta(cell).get("grade"):
            cells[grade_id] = sorted(set(cells.get(grade_id, [])) | set(linked))
    return cells


def bound_names(source_text: str) -> dict[str, int]:
    """Names a cell binds at its top level (def, class, assignment, import) -> line number."""
    try:
        body = parse(source_text).body
    except SyntaxError:
        return {}
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node.lineno
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update({n.id: node.lineno for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(alias.asname or alias.name).split(".")[0]: node.lineno for alias in node.names})
    return names


def read_only_names(nb: dict) -> set[str]:
    """Functions, classes and CONSTANTS defined by read-only cells: the baselines and settings speed checks use."""
    names = set()
    for cell in nb["cells"]:
        if is_read_only(cell):
            body = source(cell)
            names |= {name for name in bound_names(body) if name.isupper() or re.search(rf"^(def|class)\s+{name}\b", body, re.M)}
    return names


# A section opens at a markdown heading of level 1 or 2 (``# Title``, ``## 3. Exercise 1: ... (6 points)``); ``###``
# headings are parts of the section they sit in (lesson 04's "### Your task" holds its exercise's answer cell).
SECTION_HEADING = re.compile(r"^ {0,3}(#{1,2})[ \t]+(\S.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def headings(cell: dict, *, level: int = 2) -> list[str]:
    """The titles of the markdown headings of ``level`` or above in a cell (``#`` lines inside fenced code are not
    headings); nothing for a code cell."""
    if cell.get("cell_type") != "markdown":
        return []
    found, fenced = [], False
    for line in source(cell).splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else SECTION_HEADING.match(line)
        if match and len(match.group(1)) <= level:
            found.append(match.group(2))
    return found


def sections(nb: dict, *, openers=None) -> list[dict]:
    """The notebook split at its section headings, in order: ``{"title", "heading", "start", "stop", "graded", "tests"}``.

    A section runs from a markdown cell with a heading of level 1 or 2 (``start``, the cell's index; ``heading``, its
    id; ``title``, its first heading) to the next one (``stop``, exclusive); cells before the first heading form a
    section with ``heading`` None. ``graded`` lists the grade ids of the graded cells it holds (tests and written
    answers), ``tests`` those of its autograded test cells. With ``openers`` (cell ids), only those cells open a
    section: a submission split at the release's headings, so a heading a learner wrote (in a written answer, in a
    cell they added) opens none, and one they deleted merges two sections into one.
    """
    found: list[dict] = []
    current = {"title": "", "heading": None, "start": 0, "stop": 0, "graded": [], "tests": []}
    for index, cell in enumerate(nb["cells"]):
        titles = headings(cell)
        opens = bool(titles) if openers is None else cell.get("id") in openers
        if opens:
            if index > current["start"]:  # the section so far holds cells (none before a heading in the first cell)
                found.append(dict(current, stop=index))
            current = {"title": titles[0] if titles else source(cell).strip().split("\n")[0], "heading": cell.get("id"),
                       "start": index, "stop": index, "graded": [], "tests": []}
        meta = nbgrader_meta(cell)
        if meta.get("grade") and meta.get("grade_id"):
            current["graded"].append(meta["grade_id"])
            if cell.get("cell_type") == "code" and not meta.get("solution"):
                current["tests"].append(meta["grade_id"])
    if len(nb["cells"]) > current["start"]:
        found.append(dict(current, stop=len(nb["cells"])))
    return found


def exercises(nb: dict, *, openers=None) -> list[dict]:
    """The sections (`sections`) that hold graded cells: the exercises, and the written questions graded by hand (each a
    section of its own in every lesson)."""
    return [section for section in sections(nb, openers=openers) if section["graded"]]


def speed_outputs(nb: dict) -> dict[str, list[str]]:
    """Speed test cell -> the tests that check the outputs its speed is paid for (``metadata.tfperf.paid_with`` in the
    source, named by the instructor beside the check, as ``review_with`` is): the speed is paid only when they all
    pass, so a fast but wrong answer earns no speed point whatever the speed check compared. A speed cell that names
    none depends on no other cell (`tests/unit/test_review_scope.py` requires every lesson's to name its own exercise's)."""
    speed, found = speed_checks(nb), {}
    for cell in nb["cells"]:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in speed:
            paid = tfperf_meta(cell).get("paid_with")
            found[grade_id] = [str(name) for name in paid] if isinstance(paid, list) else []
    return found
