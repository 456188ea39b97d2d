"""Answers that are correct but not optimized, for every lesson that grades speed or structure.

Each variant is the reference solution with text replaced in one solution cell. It must keep the
points of ``keeps`` and score 0 on ``loses``, on every grading run: the pipeline tests check this
once, and ``tfperf-lab flake --variants`` checks it many times, under load.
"""

from __future__ import annotations

import dataclasses
import json

from . import course


@dataclasses.dataclass(frozen=True)
class Variant:
    lesson: str
    name: str
    cell: str
    replace: tuple[tuple[str, str], ...]
    keeps: tuple[str, ...]
    loses: tuple[str, ...]

    def notebook(self) -> dict:
        """The reference solution with this variant's replacements applied."""
        notebook = course.read_notebook(course.lesson(self.lesson).source)
        for cell in notebook["cells"]:
            if cell.get("id") == self.cell:
                text = "".join(cell["source"])
                for old, new in self.replace:
                    if old not in text:
                        raise ValueError(f"variant {self.name}: {old!r} is not in cell {self.cell} of {self.lesson}")
                    text = text.replace(old, new)
                cell["source"] = text
        return json.loads(json.dumps(notebook))


_HANDLE = "    handle = sess._make_callable_from_options(options)\n"

VARIANTS = [
    Variant("01_callable_handles", "calls_sess_run", "make_callable_solution",
            ((_HANDLE, _HANDLE + "    def handle(*values):\n        return sess.run(fetch + target, dict(zip(feed, values)))[: len(fetch)]\n"),),
            keeps=("handle_matches_sess_run", "handle_rejects_bad_elements"), loses=("handle_built_once", "handle_is_faster")),
    Variant("01_callable_handles", "public_make_callable", "make_callable_solution",
            ((_HANDLE, "    public = sess.make_callable(fetch + target, feed_list=feed)\n"
                       "    def handle(*values):\n        return list(public(*values))[: len(fetch)]\n"),),
            keeps=("handle_matches_sess_run", "handle_rejects_bad_elements"), loses=("handle_built_once", "handle_is_faster")),
]


def for_lesson(lesson_id: str) -> list[Variant]:
    return [variant for variant in VARIANTS if variant.lesson == lesson_id]
