"""What crosses the sandbox's wall: a submission going in is checked, a notebook coming out is made safe.

In: a size limit, a JSON depth limit, the notebook's shape and nbformat's schema (`check_notebook`), and a safe
student id (`check_student_id`). Out: every output capped in bytes (`CapOutputs`) and HTML in outputs and markdown
made inert (`SanitizeOutputs`, on the maintained sanitizer nh3; nbconvert's own SanitizeHTML rests on bleach, whose
last release is final), before anything is scored or shown.
"""

from __future__ import annotations

import html
import html.parser
import json
import re
import urllib.parse

import nh3
from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool

from ..course import config
from ..isolation import outputs

MAX_NOTEBOOK_BYTES = config.DEFAULTS.submission_bytes
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

    locals().update(config.traits("CapOutputs"))  # output_text_bytes, output_data_bytes: from the course's one configuration

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                outputs.cap_output(output, text_bytes=self.output_text_bytes, data_bytes=self.output_data_bytes, by="by the grader")
        return cell, resources


# HTML that can render but not run: no scripts, no event handlers, no styles, no frames, no images (they come as image/png).
# The tags and attributes nbconvert's sanitizer allowed by default, widened by the table and text tags a
# notebook's outputs use.
SAFE_TAGS = sorted({"a", "abbr", "acronym", "b", "blockquote", "code", "em", "i", "li", "ol", "strong", "ul", "p", "div", "span",
                    "pre", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "caption",
                    "sup", "sub", "dl", "dt", "dd"})
SAFE_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"], "acronym": ["title"], "th": ["colspan", "rowspan"],
                   "td": ["colspan", "rowspan"]}
SAFE_SCHEMES = {"http", "https", "mailto"}
# What nbconvert's sanitizer also keeps: output types rendered as they are, and those sanitized; any other is dropped.
SAFE_OUTPUT_KEYS = {"metadata", "text/plain", "text/latex", "application/json", "image/png", "image/jpeg"}
SANITIZED_OUTPUT_TYPES = {"text/html", "text/markdown"}


class _Unsafe(html.parser.HTMLParser):
    """Lists what in a fragment could run or load something: tags off the allowlist, event handlers and styles, links
    of other schemes than http(s) and mailto, declarations."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in SAFE_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:  # other attributes (a table's border or class) are only dropped, by nh3
            if name.startswith("on") or name in ("style", "src", "srcset", "formaction", "xlink:href"):
                self.found.append(f"{name}=")
            elif name == "href" and value and urllib.parse.urlsplit(value.strip()).scheme.lower() not in SAFE_SCHEMES | {""}:
                self.found.append(f"href={value[:20]}")

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag not in SAFE_TAGS:
            self.found.append(f"</{tag}>")

    def handle_decl(self, decl):
        self.found.append("<!...>")

    def handle_pi(self, data):
        self.found.append("<?...>")

    unknown_decl = handle_decl


def inert_html(text: str) -> str:
    """``text`` (HTML, or markdown with HTML in it) as it may be shown to the instructor and the student.

    The decision, written down: a tag off the allowlist (a script, a frame, an image), an event handler, a style or a
    ``javascript:`` link makes the whole fragment *escaped*, shown as text, so the reader sees what was there and
    nothing of it runs (what nbconvert's sanitizer did for tags). Otherwise the fragment renders after nh3 (ammonia)
    has cleaned it, which *strips* attributes off the allowlist (a table's border and class, as before) and whatever
    the check above would have missed: escaping keeps an attack visible, nh3 is the guarantee."""
    scanner = _Unsafe()
    try:
        scanner.feed(text)
        scanner.close()
    except Exception:  # noqa: BLE001  (a fragment the parser chokes on is not shown as markup)
        scanner.found.append("unparsable")
    if scanner.found:
        return html.escape(text, quote=False)
    return nh3.clean(text, tags=set(SAFE_TAGS), attributes={tag: set(names) for tag, names in SAFE_ATTRIBUTES.items()},
                     url_schemes=SAFE_SCHEMES, strip_comments=True, link_rel=None)


class SanitizeOutputs(Preprocessor):
    """Outputs and markdown made inert (`inert_html`), so feedback and the formgrader cannot run student HTML: markdown
    and raw cells' text, and each output's HTML and markdown; output types that could run code (JavaScript, SVG,
    widgets) are dropped, as nbconvert's sanitizer drops them."""

    enabled = Bool(True)  # nbconvert preprocessors are off unless enabled; nbgrader registers them as-is

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type in ("markdown", "raw"):
            cell.source = inert_html(cell.source)
        elif cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") in ("stream", "error"):
                    continue
                data = output.get("data", {})
                for key in list(data):
                    if key in SANITIZED_OUTPUT_TYPES:
                        value = data[key]
                        data[key] = inert_html("".join(value) if isinstance(value, list) else str(value))
                    elif key not in SAFE_OUTPUT_KEYS:
                        del data[key]
        return cell, resources
