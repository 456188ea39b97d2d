"""What a learner may see after grading: feedback without hidden tests, and TF log noise filtering.

nbgrader's feedback (and its autograded notebooks) contain the hidden tests verbatim and full
tracebacks through them. The preprocessors here remove the hidden regions and reduce every error
to its type and message, which the tests write for the learner (expected, received, hint).
"""

import re

from traitlets import Bool

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

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


FEEDBACK_PREPROCESSORS = [GetGrades, ClearHiddenTests, ScrubTracebacks, CSSHTMLHeaderPreprocessor]
