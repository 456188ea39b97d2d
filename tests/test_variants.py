"""The unoptimized answers used by the pipeline tests and `tfperf-lab flake` still apply to their lessons."""

import pytest

from autograder import course, variants


@pytest.mark.parametrize("variant", variants.VARIANTS, ids=lambda v: f"{v.lesson}:{v.name}")
def test_variant_applies_and_names_real_graded_cells(variant):
    notebook = variant.notebook()
    cells = {cell["id"] for cell in course.lesson(variant.lesson).grade_cells()}
    assert set(variant.keeps) <= cells and set(variant.loses) <= cells and not set(variant.keeps) & set(variant.loses)
    changed = next(cell for cell in notebook["cells"] if cell.get("id") == variant.cell)
    original = next(cell for cell in course.read_notebook(course.lesson(variant.lesson).source)["cells"] if cell.get("id") == variant.cell)
    assert "".join(changed["source"]) != "".join(original["source"])
