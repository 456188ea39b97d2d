"""What a learner may see after grading: feedback without hidden tests, and TF log noise filtering.

nbgrader's feedback (and its autograded notebooks) contain the hidden tests verbatim and full
tracebacks through them. The preprocessors here remove the hidden regions of test cells (only of
test cells: a learner's own text that happens to contain the marker cannot break feedback), reduce
every error to its type and message, which the tests write for the learner (expected, received,
hint), and sanitize HTML in outputs and markdown once more before the page is rendered.
"""

import re

from traitlets import Bool

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

from .untrusted import CapOutputs, SanitizeOutputs

# TensorFlow / absl C++ log lines ("I0000 00:00:17.. 123 port.cc:153] ...", "W1129 ...") and the
# absl banner printed before its logger starts. Matched per line.
TF_NOISE_PATTERN = r"(?m)^(WARNING: All log messages before absl::InitializeLog\(\)|[IWE]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\])"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ScrubTracebacks(Preprocessor):
    """Replace each error's traceback with one line, ``Type: message``, in every code cell.

    Tracebacks through test cells would show hidden test lines; the learner can rerun their own
    cells for a full traceback, so feedback keeps one line everywhere.
    """

    enabled = Bool(True)  # nbconvert preprocessors are off unless enabled; nbgrader registers them as-is

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    message = _ANSI.sub("", f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
                    output["traceback"] = [message]
        return cell, resources


class ClearHiddenTestsOfTests(ClearHiddenTests):
    """nbgrader's ClearHiddenTests, on test cells only: elsewhere the marker is a learner's text, not a region to cut."""

    def preprocess_cell(self, cell, resources, cell_index):
        if utils.is_grade(cell) and not utils.is_solution(cell):
            return super().preprocess_cell(cell, resources, cell_index)
        return cell, resources


FEEDBACK_PREPROCESSORS = [GetGrades, ClearHiddenTestsOfTests, ScrubTracebacks, CapOutputs, SanitizeOutputs, CSSHTMLHeaderPreprocessor]


# ---- what happened, in a student's words: the box at the top of every feedback page, and the page of a row that has no
# graded notebook (not a notebook, not this lesson's, timed out, the grading machine's fault) ----

OUTCOME_CSS = ("div.tfperf-outcome { border: 2px solid #888; border-radius: 6px; padding: .6em 1em; margin: 1em 0; "
               "font-family: system-ui, sans-serif; background: #fcfcf6; } div.tfperf-outcome h2 { margin: .2em 0 .4em; "
               "font-size: 1.25em; } div.tfperf-outcome li { margin: .2em 0; }")


# how the score stage begins the notes that say where a notebook was stopped (a time limit, a dead kernel)
STOPPED = ("the notebook's time limit ran out", "the kernel died", "cells that ran out of time")


def _advice(reason: str) -> str:
    """What a student can do about a notebook that could not be graded, from the reason the grader gave."""
    said = reason.lower()
    if "not valid notebook json" in said or "not utf-8" in said or "is empty" in said or "not a jupyter notebook" in said \
            or "nests deeper" in said:
        return ("The file you handed in is not a readable notebook (it may have been cut short, or saved by another program). "
                "Open your work in Jupyter, check it opens, and hand in the .ipynb file Jupyter saves (File > Save, or File > "
                "Download on Colab).")
    if "which lesson" in said or " is lesson " in said or "lost its nbgrader metadata" in said:
        return ("The grader could not match this file to the lesson's exercises. Copy your answers into a fresh copy of the "
                "lesson's notebook and hand that in.")
    if "did not finish within" in said:
        return ("Your notebook ran past its time limit and was stopped. Look for a loop that never ends or a cell that waits "
                "forever; run the whole notebook yourself (Kernel > Restart and Run All) and check it finishes.")
    if "memory" in said:
        return "Your notebook used more memory than grading allows. Look for arrays or lists that grow without end."
    if "kernel died" in said:
        return "Python stopped while running your notebook (os._exit, a crash or too much memory). Run it yourself to find the cell."
    if "symbolic link" in said or "too big" in said or " mib, over" in said:
        return "Hand in the notebook file itself, as Jupyter saves it."
    return "Ask your instructor if the reason above is not clear."


def outcome_items(result) -> tuple[str, list[str]]:
    """(headline, what happened) of one graded or ungraded submission (a `tfperf_lab.grading.results.SubmissionResult`),
    as plain sentences for the student: the one place these words are chosen."""
    items = []
    if result.machine:
        return ("Not graded yet: a problem of the grading machine, not of your notebook",
                ["Your notebook is kept exactly as you handed it in and will be graded again once the machine is fixed. "
                 "You need not do anything."])
    if result.error:
        reason = re.sub(r" \(log: [^)]*\)$", "", result.error)
        return "Your notebook could not be graded", [f"Why: {reason}", f"What to do: {_advice(reason)}"]
    manual = [cell for cell in result.cells if cell.kind == "manual"]
    auto_max = sum(cell.max_score for cell in result.cells if cell.kind == "auto")
    headline = f"{result.score:g} of {auto_max:g} points graded automatically"
    pending = [cell for cell in manual if cell.score is None]
    if manual:
        marked = sum(cell.score or 0 for cell in manual if cell.score is not None)
        items.append(f"Written answers ({', '.join(cell.id for cell in manual)}, {sum(c.max_score for c in manual):g} points) are "
                     f"graded by your instructor: " + (f"not graded yet, so the 0 the page shows for them is not a mark"
                                                         if pending else f"{marked:g} points given"))
    withheld = [cell for cell in result.cells if cell.status in ("review", "rejected")]
    if result.decision and result.review:
        decided, who = result.decision["decision"], result.decision.get("by", "your instructor")
        if decided == "accepted":
            items.append(f"Your instructor ({who}) looked at the code the grader flagged and accepted it: the points your tests "
                         f"earned for {', '.join(result.withheld) or 'those cells'} are paid.")
        else:
            items.append(f"Your instructor ({who}) looked at the code the grader flagged and decided not to pay "
                         f"{', '.join(cell.id for cell in withheld) or 'the withheld cells'}.")
    elif withheld:
        where = "; ".join(sorted({finding for info in result.withheld.values() for finding in info.get("findings", [])}))
        items.append(f"Points for {', '.join(cell.id for cell in withheld)} wait for your instructor: your code reaches into the "
                     f"grading machinery or the interpreter ({where or 'see the notes'}), which honest answers rarely need. A "
                     f"person will look and decide; until then those cells show 0. You need not do anything.")
    stops = [note for note in result.notes if note.startswith(STOPPED)]  # the score stage's own sentences (`score.score`)
    items += [note[0].upper() + note[1:] + "." for note in stops]
    timed_out = [cell.id for cell in result.cells if cell.status == "timeout"]
    if timed_out and not stops:
        items.append(f"Stopped at a time limit (an endless loop?): {', '.join(timed_out)}; every cell that ran before keeps its points.")
    not_run = [cell.id for cell in result.cells if cell.status == "not run"]
    if not_run:
        items.append(f"Not run, because the notebook stopped earlier: {', '.join(not_run)}.")
    if result.late:
        late = result.late
        items.append(f"Handed in late: {late['submitted']} ({late['how']}), due {late['due']}"
                     f"{' (your extension)' if late['extended'] else ''}, {late['days']} day(s) late: {late['penalty']:g} "
                     f"points off ({late['policy']}). The points above are after it.")
    elif result.excused:
        items.append("You are excused from this lesson: it does not count against you.")
    if result.attempts > 1:
        items.append("Graded again after a fault of the grading machine; this is the grade.")
    return headline, items


def outcome_box(result) -> str:
    """The box at the top of a feedback page: headline and what happened, every string escaped."""
    import html

    headline, items = outcome_items(result)
    body = "".join(f"<li>{html.escape(item)}</li>" for item in items)
    return (f'<style>{OUTCOME_CSS}</style><div class="tfperf-outcome"><h2>{html.escape(headline)}</h2>'
            + (f"<ul>{body}</ul>" if body else "") + "</div>")


def with_outcome(page: str, result) -> str:
    """nbgrader's feedback page with the outcome box first in its body."""
    box = outcome_box(result)
    match = re.search(r"<body[^>]*>", page)
    return page[:match.end()] + box + page[match.end():] if match else box + page


def outcome_page(result, title: str) -> str:
    """A whole page for a submission with no graded notebook to show."""
    import html

    return ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><meta http-equiv='Content-Security-Policy' "
            "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{html.escape(title)}</title></head><body style='max-width:50em;margin:2em auto'>"
            f"<h1>{html.escape(title)}</h1>{outcome_box(result)}</body></html>\n")
