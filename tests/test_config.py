"""One typed configuration (`tfperf_lab.course.config`): every default written once, every variable in the table."""

import re

from tfperf.env import KEEP_LOGS
from tfperf.link import GRADER_VARIABLE, ROLE_VARIABLE
from tfperf.report import RECORD_VARIABLE
from tfperf_lab.course import config
from tfperf_lab.grading import batch, execute
from tfperf_lab.isolation import sandbox
from tfperf_lab.publish import readme
from pipeline import COURSE, ROOT


def test_the_settings_block_of_the_instructor_guide_is_generated_from_the_configuration():
    assert readme.current(COURSE, "settings") == readme.generate(COURSE, "settings"), \
        "docs/instructor-guide.md's settings block is stale: run `tfperf-lab settings --docs`"


def test_the_sandbox_nbgrader_and_the_workers_take_their_defaults_from_the_configuration():
    limits, defaults = sandbox.Limits(), config.DEFAULTS
    assert (limits.cell_seconds, limits.startup_seconds, limits.memory_mb, limits.processes, limits.file_mb) == \
        (defaults.cell_seconds, defaults.startup_seconds, defaults.memory_mb, defaults.processes, defaults.file_mb)
    traits = execute.SandboxedExecute.class_traits()
    assert traits["timeout"].default_value == defaults.cell_seconds
    assert traits["startup_timeout"].default_value == defaults.startup_seconds
    assert traits["memory_mb"].default_value == defaults.memory_mb and traits["backend"].default_value == defaults.backend
    assert batch.DEFAULT_WORKERS == defaults.workers()
    assert [config.GradingConfig().workers(n) for n in (1, 2, 3, 4, 16)] == [1, 2, 2, 2, 8]


def test_a_default_is_written_once():
    """The cell limit's number appears in the configuration and nowhere else in the tool."""
    found = [str(path.relative_to(ROOT)) for path in (ROOT / "tfperf_lab").rglob("*.py")
             if path.name != "config.py" and re.search(r"(?<![\w.\[-])300(?![\w.\]])(?!\))", path.read_text(encoding="utf-8"))]
    assert not found, f"the cell limit's 300 is written again in {found}: take it from tfperf_lab.course.config.DEFAULTS"


def test_every_environment_variable_the_course_reads_is_in_the_table_under_the_learner_librarys_name():
    assert {KEEP_LOGS, GRADER_VARIABLE, ROLE_VARIABLE, RECORD_VARIABLE} <= set(config.ENVIRONMENT)
    used = set()
    for package in ("tfperf", "tfperf_lab"):
        for path in (ROOT / package).rglob("*.py"):
            used |= set(re.findall(r"\bTFPERF_[A-Z_]+\b", path.read_text(encoding="utf-8")))
    assert used <= set(config.ENVIRONMENT), f"variables read but not in the table: {sorted(used - set(config.ENVIRONMENT))}"
