"""What crosses the sandbox's wall: a submission going in is checked, a notebook coming out is made safe.

In: a size limit, a JSON depth limit, the notebook's shape and nbformat's schema (`check_notebook`), and a safe
student id (`check_student_id`). Out: every output capped in bytes (`CapOutputs`) and HTML in outputs and markdown
sanitized with nbconvert's own `SanitizeHTML` and its defaults (`SanitizeOutputs`; no sanitizer imported here), before anything is scored or shown.
"""

from __future__ import annotations

import json
import re

from nbconvert.preprocessors.sanitize import SanitizeHTML
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer

from ..isolation import outputs

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_DEPTH = 64
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,63}$")


class UntrustedInput(ValueError):
    """A submission refused before anything runs: the message says why, for the student's row."""


def check_student_id(student: str) -> str:
    """A student id that is safe as a folder name, a gradebook key and an nbgrader argument (no globs, no options)."""
    if not STUDENT_ID.match(student) or student in (".", ".."):
        raise UntrustedInput(f"student folder {student!r} is not a usable student id: use letters, digits and _ . @ + - "
                             f"(at most 64, starting with a letter or digit); rename the folder to grade it")
    return student


def _depth(value, limit: int) -> int:
    """How deeply ``value`` nests, without recursion (so a hostile file cannot overflow the stack here)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return level
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
    return deepest


def parse_notebook(data: bytes, name: str) -> dict:
    """Notebook JSON from untrusted bytes: size, encoding, JSON, depth and shape checked; raises `UntrustedInput`."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise UntrustedInput(f"{name} is {len(data) / 2**20:.0f} MiB, over the {MAX_NOTEBOOK_BYTES // 2**20} MiB a lesson notebook "
                             f"can need: clear its outputs (Kernel > Restart & Clear Output) and submit again")
    if not data.strip():
        raise UntrustedInput(f"{name} is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UntrustedInput(f"{name} is not UTF-8 text, so not a notebook") from None
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as error:
        raise UntrustedInput(f"{name} is not valid notebook JSON (line {error.lineno}: {error.msg}); re-download it from Jupyter") from None
    except RecursionError:
        raise UntrustedInput(f"{name} nests deeper than any notebook (over {MAX_DEPTH} levels): not a notebook") from None
    if _depth(nb, MAX_DEPTH) > MAX_DEPTH:
        raise UntrustedInput(f"{name} nests deeper than any notebook (over {MAX_DEPTH} levels): not a notebook")
    check_shape(nb, name)
    return nb


def check_shape(nb, name: str) -> None:
    """The shape the grader relies on before nbformat's own validation (which needs the repair that relies on it)."""
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise UntrustedInput(f"{name} is JSON but not a Jupyter notebook (no cell list)")
    if not isinstance(nb.get("metadata", {}), dict):
        raise UntrustedInput(f"{name} is JSON but not a Jupyter notebook (its metadata is not an object)")
    for index, cell in enumerate(nb["cells"]):
        problem = None
        if not isinstance(cell, dict):
            problem = "is not an object"
        elif cell.get("cell_type") not in ("code", "markdown", "raw"):
            problem = f"has cell_type {cell.get('cell_type')!r}"
        elif not isinstance(cell.get("source", ""), (str, list)) or (isinstance(cell.get("source"), list)
                                                                    and not all(isinstance(line, str) for line in cell["source"])):
            problem = "has a source that is not text"
        elif not isinstance(cell.get("metadata", {}), dict):
            problem = "has metadata that is not an object"
        elif "id" in cell and not isinstance(cell["id"], str):
            problem = "has an id that is not text"
        if problem:
            raise UntrustedInput(f"{name} is not a valid notebook: cell {index} {problem}")


def normalize(nb: dict) -> None:
    """Undo harmless edits that break the schema: outputs on a cell retyped to markdown, a code cell without its outputs."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            if not isinstance(cell.get("outputs"), list):
                cell["outputs"] = []
            if not isinstance(cell.get("execution_count"), (int, type(None))) or isinstance(cell.get("execution_count"), bool):
                cell["execution_count"] = None
            cell.setdefault("execution_count", None)
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
        cell.setdefault("source", "")


def validate(nb: dict, name: str) -> None:
    """nbformat's schema, on the repaired notebook (harmless edits undone first); raises `UntrustedInput` with the first problem."""
    import nbformat

    normalize(nb)
    try:
        nbformat.validate(nbformat.from_dict(nb))
    except nbformat.ValidationError as error:
        raise UntrustedInput(f"{name} is not a valid notebook: {str(error.message)[:300]}") from None


class CapOutputs(NbGraderPreprocessor):
    """Cap every output in bytes, the rule of `tfperf_lab.isolation.outputs` with the host's limits (nbgrader's
    LimitOutput counts lines, and one line can be 40 MiB: this takes its place)."""

    max_text_bytes = Integer(64 * 1024, help="Bytes kept of each text output (stream, error, text/* data)").tag(config=True)
    max_data_bytes = Integer(2 * 1024 * 1024, help="Bytes of each image or other data output; larger ones are dropped").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                outputs.cap_output(output, text_bytes=self.max_text_bytes, data_bytes=self.max_data_bytes, by="by the grader")
        return cell, resources


# HTML that can render but not run: no scripts, no event handlers, no styles, no frames, no images (they come as image/png).
# nbconvert's own defaults (its SanitizeHTML's traits), widened by the table and text tags a notebook's outputs use.
_DEFAULTS = SanitizeHTML()
SAFE_TAGS = sorted(set(_DEFAULTS.tags) | {"p", "div", "span", "pre", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead",
                                        "tbody", "tr", "th", "td", "caption", "sup", "sub", "dl", "dt", "dd"})
SAFE_ATTRIBUTES = {**_DEFAULTS.attributes, "th": ["colspan", "rowspan"], "td": ["colspan", "rowspan"]}


class SanitizeOutputs(SanitizeHTML):
    """nbconvert's sanitizer over outputs and markdown, so feedback and the formgrader cannot run student HTML."""

    enabled = Bool(True)  # nbconvert preprocessors are off unless enabled; nbgrader registers them as-is

    def __init__(self, **kw):
        super().__init__(**kw)
        self.tags = SAFE_TAGS
        self.attributes = SAFE_ATTRIBUTES
        self.strip = False  # escaped, so the student sees what was removed

    def preprocess_cell(self, cell, resources, cell_index):
        result = super().preprocess_cell(cell, resources, cell_index)
        return result if result is not None else (cell, resources)
