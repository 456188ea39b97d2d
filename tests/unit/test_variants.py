"""The one registry of unoptimized answers (`tfperf_lab.course.variants`) still applies to its lessons."""

import pytest

from tfperf_lab.course import notebook, variants
from pipeline import COURSE


@pytest.mark.parametrize("variant", variants.VARIANTS, ids=lambda v: f"{v.lesson}:{v.name}")
def test_variant_applies_and_names_real_graded_cells(variant):
    lesson = COURSE.lesson(variant.lesson)
    changed = {cell.get("id"): notebook.source(cell) for cell in variant.notebook(lesson)["cells"]}
    original = {cell.get("id"): notebook.source(cell) for cell in lesson.source_notebook()["cells"]}
    cells = {cell["id"] for cell in lesson.grade_cells()}
    assert set(variant.keeps) <= cells and set(variant.loses) <= cells and not set(variant.keeps) & set(variant.loses)
    assert variant.cells and all(changed[cell] != original[cell] for cell in variant.cells)


def test_a_variant_whose_text_is_gone_says_which_cell():
    lesson = COURSE.lesson("01_callable_handles")
    broken = variants.Variant(lesson.id, "stale", (("make_callable_solution", (("no such text", ""),)),), keeps=(), loses=())
    with pytest.raises(ValueError, match="variant stale: 'no such text' is not in cell make_callable_solution"):
        broken.notebook(lesson)
