"""Capping a notebook's outputs by size: one rule, applied where a notebook leaves the sandbox and again on the host.

A line of output can be 40 MiB, so lines are no measure (nbgrader's ``LimitOutput`` counts them): every text (a
stream, an error's value and traceback, ``text/*`` data) is cut to a number of bytes, and any other data over its
limit (an image, a widget's JSON) is replaced by a line saying what was dropped. The runner applies it inside the
sandbox with generous limits, so a chatty notebook's copy still comes back; the host's `CapOutputs`
(`tfperf_lab.grading.untrusted`) applies it again, tighter, before anything is scored or shown.
"""

from __future__ import annotations

import json

TRACEBACK_LINES = 40  # lines of an error's traceback kept (nbgrader's LimitOutput.max_traceback was set to 40 here)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def cut(text: str, limit: int, by: str) -> str:
    """``text`` cut to ``limit`` bytes of UTF-8, with a line saying so."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"\n... [output cut at {limit // 1024} KiB {by}]\n"


def cap_output(output: dict, *, text_bytes: int, data_bytes: int, by: str) -> None:
    """Cap one output in place (see the module's rule); ``by`` names who cut it ("in the sandbox", "by the grader")."""
    kind = output.get("output_type")
    if kind == "stream":
        output["text"] = cut(_text(output.get("text")), text_bytes, by)
    elif kind == "error":
        output["evalue"] = cut(str(output.get("evalue", "")), text_bytes, by)
        output["traceback"] = [cut(str(line), text_bytes, by) for line in list(output.get("traceback") or [])[:TRACEBACK_LINES]]
    elif isinstance(output.get("data"), dict):
        data = output["data"]
        for key in list(data):
            value = data[key]
            value = _text(value) if isinstance(value, (str, list)) else json.dumps(value)
            if key.startswith("text/"):
                data[key] = cut(value, text_bytes, by)
            elif len(value) > data_bytes:
                del data[key]
                data["text/plain"] = f"[a {key} output of {len(value) // 1024} KiB was dropped {by}]"


def cap(nb: dict, *, text_bytes: int, data_bytes: int, by: str) -> None:
    """Cap every output of every code cell of ``nb`` (plain JSON data or a NotebookNode) in place."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            for output in cell.get("outputs", []):
                cap_output(output, text_bytes=text_bytes, data_bytes=data_bytes, by=by)
