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
