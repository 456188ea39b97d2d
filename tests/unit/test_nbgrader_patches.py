"""nbgrader is changed in one module only (`tfperf_lab.grading.nbgrader_patches`), each patch with its reason."""


def test_nbgrader_is_patched_in_one_module_only():
    """Issue 38: every assignment into nbgrader's modules lives in tfperf_lab/grading/nbgrader_patches.py, with its reason."""
    import pathlib
    import re as _re

    import nbgrader.api
    from nbgrader import utils

    from tfperf_lab.grading import nbgrader_patches, settings  # noqa: F401  (settings applies the patches)

    assert utils.setenv is nbgrader_patches.shared_setenv and nbgrader.api.get_alembic_version is nbgrader_patches.alembic_head
    root = pathlib.Path(nbgrader_patches.__file__).parents[1]
    writers = [str(path.relative_to(root)) for path in root.rglob("*.py")
               if _re.search(r"^\s*(nbgrader[\w.]*|utils)\.\w+\s*=", path.read_text(encoding="utf-8"), _re.M)]
    assert writers == ["grading/nbgrader_patches.py"], writers
