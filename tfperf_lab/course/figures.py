"""Figures in a lesson's prose: rendered from the course's recorded runs, labelled as a claim, or marked a definition.

A number with a unit (``19.9x``, ``0.3-1.5 ms``, ``15-20%``, ``2 minutes``) in a lesson's markdown is one of three
things, each written between two HTML comments (invisible in Jupyter, Colab and the feedback page):

- **a recorded figure**, rendered by ``tfperf-lab release`` from ``tfperf/ranges.json`` (the runs in ``docs/runs/``
  of the lesson's current code): ``<!--fig 03.tiny_ops_loop-->19.9-29.5x<!--/fig-->``. The key is the lesson's
  number, a record's name (what the lesson passes to ``tfperf.record``), an optional ``:format`` and ``@profile``
  (``full``, the learner's, by default). Formats (`FORMATS`): ``range`` (the default: where one run lands, 9 runs in
  10, `tfperf.stats.one_run_range` over the recorded runs, not the spread of their medians), ``words`` (what the one
  rule says of each run's interval: "faster in all 5 recorded runs"), ``runs``, ``baseline`` and ``candidate`` (where
  one run's median time per call lands, each side), ``gain`` (``(speedup - 1)`` as a percentage) and ``saved`` (the
  share of time saved, ``1 - 1 / speedup``), both of one run. A range wider than a factor of `WIDE` reads "anywhere
  from A to B". The paragraph that quotes a range says it is one run's on the 2-core machine
  (`tfperf_lab.course.prose`). ``<!--fig threshold:CELL-->3x<!--/fig-->`` is the graded threshold of
  the lesson's speed check ``CELL``, read from its test cell, and ``<!--fig grader:CELL-->3.0-5.2x<!--/fig-->`` where one
  graded run of the reference lands on the course's machine with other work on it (the flake campaigns the grader
  timed, `tfperf_lab.publish.ranges.graded`).
- **a claim**, the article's or the course notes' words, not a measurement:
  ``<!--claim-->about 10x<!--/claim-->``; its paragraph says whose claim it is (it names an article or the notes).
- **a definition**: a constant of the lesson's code, arithmetic on one, a budget or a workload size:
  ``<!--def-->10 ms<!--/def-->``.

Anything else is hand-typed, and `problems` reports it (``tfperf-lab lint`` and ``tests/unit/test_figures.py`` run it on
every lesson; the test also reads the README's speedups). Prose that interprets a measurement ("no measurable difference", "fragile") comes from a ``words`` figure,
never from a sentence typed beside it. A mark never opens a line (Markdown would read the whole line as raw HTML).
"""

from __future__ import annotations

import copy
import json
import pathlib
import re

from tfperf.units import lower, ratio_bounds, upper

from . import notebook

FIG = re.compile(r"<!--fig ([^>]*?)-->(.*?)<!--/fig-->", re.S)
MARK = re.compile(r"<!--(fig|claim|def)\b([^>]*?)-->(.*?)<!--/\1-->", re.S)
FORMATS = ("range", "words", "runs", "baseline", "candidate", "gain", "saved")
WIDE = 2.0  # a range of one run wider than this factor reads "anywhere from A to B": the runs spread, no narrow range
ONE_RUN_RUNS = 3  # tfperf.stats.ONE_RUN_RUNS
PROFILES = ("full", "reduced")
DEFAULT_PROFILE = "full"  # a learner's notebook runs the full profile; grading runs the reduced one
# A figure: a number, or a range of two, with a unit of time, a ratio or a share. "1x" alone is the line between
# faster and slower (the rule), "512x512" a shape: neither is a figure.
NUMBER = r"\d+(?:[.,]\d+)*"
FIGURE = re.compile(rf"(?<![\w.\-/])({NUMBER}(?:\s*x)?(?:\s*(?:-|–|to)\s*{NUMBER})?)\s*"
                    r"(x|×|%|ms|µs|us|ns|s|sec|seconds?|minutes?|mins?|hours?|h)(?![\w(])")
CLAIM_OWNERS = re.compile(r"article|notes|claim|原文|文章", re.I)


class FigureError(ValueError):
    """A figure mark that names no recorded figure (unknown record, too few runs, unknown format or profile)."""


def _lesson_of(number: str, lessons: list[str]) -> str:
    found = [lesson for lesson in lessons if lesson.split("_", 1)[0] == number]
    if len(found) != 1:
        raise FigureError(f"no lesson numbered {number!r}")
    return found[0]


def parse(key: str) -> tuple[str, str, str, str]:
    """``"03.tiny_ops_loop:words@reduced"`` -> (``"03"``, ``"tiny_ops_loop"``, ``"words"``, ``"reduced"``)."""
    key = key.strip()
    profile = DEFAULT_PROFILE
    if "@" in key:
        key, profile = key.rsplit("@", 1)
    form = "range"
    if ":" in key and not key.startswith(("threshold:", "grader:")):
        key, form = key.rsplit(":", 1)
    if key.startswith(("threshold:", "grader:")):
        form, name = key.split(":", 1)
        return "", name, form, profile
    number, _, name = key.partition(".")
    if not number.isdigit() or not name:
        raise FigureError(f"a figure's key is LESSON_NUMBER.RECORD[:FORMAT][@PROFILE] or threshold:CELL; got {key!r}")
    if form not in FORMATS:
        raise FigureError(f"unknown format {form!r} (one of {', '.join(FORMATS)})")
    if profile not in PROFILES:
        raise FigureError(f"unknown profile {profile!r} (one of {', '.join(PROFILES)})")
    return number, name, form, profile


def _span(low: str, high: str, unit: str) -> str:
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}" if not low.startswith("-") and not high.startswith("-") \
        else f"{low}{unit} to {high}{unit}"


def _seconds(values: list[float]) -> str:
    """A range of seconds per call in one unit, two significant figures (whole numbers from 10), rounded outward."""
    from tfperf.units import pick_unit

    scale, unit = pick_unit(min(values))
    low, high = (float(f"{value / scale:.12g}") for value in values)  # 0.0061 / 1e-3 is 6.1000000000000005: no rounding up to 6.2
    return _spread(lower(low, ".2g" if low < 10 else ".0f"), upper(high, ".2g" if high < 10 else ".0f"), f" {unit}",
                   wide=high / low > WIDE)


def _words(entry: dict) -> str:
    from tfperf.present import VERDICTS
    from tfperf.report import recorded_words

    return recorded_words(*(entry.get(word, 0) for word in VERDICTS))


def render(key: str, lesson: str, ranges: dict, thresholds: dict[str, float]) -> str:
    """The text a figure mark shows, from ``ranges`` (`tfperf_lab.publish.ranges.build`) and the lesson's graded
    ``thresholds`` (speed check -> threshold); ``lesson`` resolves nothing but ``threshold:`` keys."""
    number, name, form, profile = parse(key)
    if form == "threshold":
        if name not in thresholds:
            raise FigureError(f"{lesson} has no speed check {name!r} with a threshold")
        return f"{thresholds[name]:g}x"
    if form == "grader":
        entry = ranges.get("graded", {}).get(lesson, {}).get(name)
        if not entry:
            raise FigureError(f"grader:{name}: no campaign the grader timed measured {lesson}'s speed check {name!r} as it is "
                              f"today (tfperf-lab flake {lesson[:2]} --runs 20 --hog 1 --workers 2 --variants, then tfperf-lab ranges)")
        low, high = entry["one_run"]
        return _spread(*ratio_bounds(low, high), "x", wide=high / low > WIDE)
    lessons = sorted({lesson_id for by_profile in ranges.get("profiles", {}).values() for lesson_id in by_profile})
    lesson_id = _lesson_of(number, lessons)
    entry = ranges["profiles"].get(profile, {}).get(lesson_id, {}).get(name)
    if not entry or entry["runs"] < 2:
        raise FigureError(f"{number}.{name}: not recorded in two or more {profile}-profile runs of the lesson's current code "
                          f"(record it: tfperf-lab run --profile {profile} --keep-run --runs 5)")
    if form == "runs":
        return str(entry["runs"])
    if form == "words":
        return _words(entry)
    side = "" if form in ("range", "gain", "saved") else f"{form}_"
    predicted = entry.get(f"{side}one_run")
    if not predicted:
        raise FigureError(f"{number}.{name}: no range of one run (it needs {ONE_RUN_RUNS} or more {profile}-profile runs that kept "
                          f"{'speedups' if not side else form + ' times'}: tfperf-lab run --profile {profile} --keep-run --runs 5)")
    low, high = predicted
    if form == "range":
        return _spread(*ratio_bounds(low, high), "x", wide=high / low > WIDE)
    if side:
        return _seconds([low, high])
    share = (lambda s: (s - 1) * 100) if form == "gain" else (lambda s: (1 - 1 / s) * 100)  # grows with s: ends stay ends
    return _spread(lower(share(low), ".0f"), upper(share(high), ".0f"), "%", wide=high / low > WIDE)


def _spread(low: str, high: str, unit: str, *, wide: bool) -> str:
    """A range; one wider than a factor of `WIDE` says that runs spread: "anywhere from 0.8x to 2.4x"."""
    return f"anywhere from {low}{unit} to {high}{unit}" if wide else _span(low, high, unit)


def thresholds_of(nb: dict) -> dict[str, float]:
    """Speed check -> the threshold its test cell passes (``threshold=3``)."""
    found = {}
    for cell_id in notebook.speed_checks(nb):
        cell = next((c for c in nb["cells"] if c.get("id") == cell_id), None)
        values = notebook.THRESHOLD.findall(notebook.source(cell)) if cell else []
        if values:
            found[cell_id] = float(values[0])
    return found


def render_text(text: str, lesson: str, ranges: dict, thresholds: dict[str, float]) -> str:
    """``text`` with every figure mark's shown text rendered anew."""
    return FIG.sub(lambda m: f"<!--fig {m.group(1).strip()}-->{render(m.group(1), lesson, ranges, thresholds)}<!--/fig-->", text)


def rendered(nb: dict, lesson: str, ranges: dict) -> dict:
    """A copy of ``nb`` whose markdown cells' figure marks show the recorded figures (idempotent)."""
    nb = copy.deepcopy(nb)
    thresholds = thresholds_of(nb)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and "<!--fig" in notebook.source(cell):
            cell["source"] = render_text(notebook.source(cell), lesson, ranges, thresholds)
    return nb


def recorded() -> dict:
    """The figures the course's runs recorded (``tfperf/ranges.json``, rebuilt by ``tfperf-lab ranges``)."""
    from tfperf.report import RANGES_FILE

    return json.loads(RANGES_FILE.read_text(encoding="utf-8")) if RANGES_FILE.exists() else {"profiles": {}}


def render_lesson(lesson) -> bool:
    """Render the figure marks of a lesson's source notebook in place (``tfperf-lab release`` does); True when it
    changed. Raises `FigureError` for a mark the runs cannot fill."""
    nb = notebook.read(lesson.source)
    new = rendered(nb, lesson.id, recorded())
    if new == nb:
        return False
    notebook.write(new, lesson.source)
    return True


def render_markdown(path: pathlib.Path) -> bool:
    """Render the figure marks of a markdown file (the README) in place; True when it changed."""
    text = path.read_text(encoding="utf-8")
    new = render_text(text, "", recorded(), {})
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def _visible(text: str) -> str:
    """The prose a figure check reads: marks, comments, code and link targets taken out."""
    text = MARK.sub(" ", text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"https?://\S+", " ", text)
    return re.sub(r"\$[^$]+\$", " ", text)


def hand_typed(text: str) -> list[str]:
    """The figures in ``text`` that are neither rendered, nor a claim, nor a definition."""
    found = []
    for match in FIGURE.finditer(_visible(text)):
        number, unit = match.group(1), match.group(2)
        if unit in ("x", "×") and re.fullmatch(r"1(\.0+)?", number) and number == "1":
            continue  # 1x: the line the rule draws between faster and slower
        found.append(match.group(0).strip())
    return found


def _paragraphs(text: str) -> list[str]:
    return re.split(r"\n\s*\n|\n(?=\s*[-*] )|\n(?=\|)", text)


def text_problems(text: str, where: str, lesson: str, ranges: dict, thresholds: dict[str, float],
                  generated: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with the figures of one markdown text: hand-typed figures, marks that render nothing or render
    stale, a mark that opens a line, a claim whose paragraph names no owner."""
    prose = " ".join(text.split())
    for fixed in generated:  # generated sentences (a lesson's run-time budget) are definitions
        prose = prose.replace(" ".join(fixed.split()), " ")
    found = [f"{where}: hand-typed figure {figure!r} (render it from the runs, or mark it a claim or a definition)"
             for figure in hand_typed(prose)]
    for match in FIG.finditer(text):
        try:
            expected = render(match.group(1), lesson, ranges, thresholds)
        except FigureError as error:
            found.append(f"{where}: {error}")
            continue
        if match.group(2) != expected:
            found.append(f"{where}: figure {match.group(1).strip()!r} shows {match.group(2)!r}, the runs say {expected!r}: "
                         "run `tfperf-lab release`")
    for line in text.splitlines():
        if line.lstrip().startswith("<!--") and MARK.search(line):
            found.append(f"{where}: a mark opens a line ({line.strip()[:40]}...): Markdown would show that line as raw HTML")
    for paragraph in _paragraphs(text):
        if "<!--claim" in paragraph and not CLAIM_OWNERS.search(MARK.sub(lambda m: m.group(3), paragraph)):
            found.append(f"{where}: a claim whose paragraph does not say whose it is (the article's, the notes'): "
                         f"{' '.join(paragraph.split())[:80]}...")
    return found


def problems(nb: dict, lesson: str, ranges: dict, generated: tuple[str, ...] = ()) -> list[str]:
    """Every figure problem of a lesson notebook's markdown cells (see `text_problems`)."""
    thresholds = thresholds_of(nb)
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            found += text_problems(notebook.source(cell), f"{lesson}, {cell.get('id')}", lesson, ranges, thresholds, generated)
    return found
