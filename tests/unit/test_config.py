"""One typed configuration (`tfperf_lab.course.config`): every default written once, every variable in the table."""

import re

from tfperf.env import KEEP_LOGS
from tfperf.link import GRADER_VARIABLE, ROLE_VARIABLE
from tfperf.report import RECORD_VARIABLE
from tfperf_lab.course import config
from tfperf_lab.grading import batch, execute
from tfperf_lab.isolation import contract
from tfperf_lab.publish import readme
from pipeline import COURSE, ROOT


def test_the_settings_block_of_the_instructor_guide_is_generated_from_the_configuration():
    assert readme.current(COURSE, "settings") == readme.generate(COURSE, "settings"), \
        "docs/instructor-guide.md's settings block is stale: run `tfperf-lab settings --docs`"


def test_the_sandbox_nbgrader_and_the_workers_take_their_defaults_from_the_configuration():
    limits, defaults = contract.Limits(), config.DEFAULTS
    assert (limits.cell_seconds, limits.startup_seconds, limits.memory_mb, limits.processes, limits.file_mb) == \
        (defaults.cell_seconds, defaults.startup_seconds, defaults.memory_mb, defaults.processes, defaults.file_mb)
    traits = execute.SandboxedExecute.class_traits()
    assert traits["cell_seconds"].default_value == defaults.cell_seconds
    assert traits["startup_seconds"].default_value == defaults.startup_seconds
    assert traits["memory_mb"].default_value == defaults.memory_mb and traits["backend"].default_value == defaults.backend
    assert batch.DEFAULT_WORKERS == defaults.workers()
    assert [config.GradingConfig().workers(n) for n in (1, 2, 3, 4, 16)] == [1, 2, 2, 2, 8]


def test_one_configuration_travels_from_the_command_line_to_the_runner_under_one_name_per_limit(tmp_path, monkeypatch):
    """`--cell-seconds 17` becomes the config's cell_seconds, nbgrader's SandboxedExecute.cell_seconds, the preprocessor's
    config again, the sandbox's Limits and the runner's --limits: the same number under the same name at every step."""
    import nbformat
    from traitlets.config import Config

    from tfperf_lab import cli
    from tfperf_lab.isolation import runner

    args = cli.parser().parse_args(["grade", "some/folder", "--cell-seconds", "17", "--notebook-seconds", "900", "--no-sandbox"])
    given = config.GradingConfig.from_options(args)
    assert (given.cell_seconds, given.notebook_seconds, given.backend) == (17, 900.0, "none")
    assert given.overrides() == {"SandboxedExecute.cell_seconds": 17, "SandboxedExecute.notebook_seconds": 900.0,
                                 "SandboxedExecute.backend": "none"}, "only what the run changed goes to nbgrader"
    nb_config = Config()
    for key, value in given.overrides().items():
        owner, name = key.split(".")
        setattr(nb_config[owner], name, value)
    preprocessor = execute.SandboxedExecute(config=nb_config)
    assert config.GradingConfig.of_traits(preprocessor) == given
    limits = contract.Limits.of(config.GradingConfig.of_traits(preprocessor), wall_seconds=given.notebook_limit(None), cpus=(0, 1))
    assert (limits.cell_seconds, limits.wall_seconds, limits.cpus) == (17, 900.0, (0, 1))
    assert contract.Limits.from_json(limits.to_json()) == limits
    notebook = tmp_path / "in.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    seen = {}
    monkeypatch.setattr(runner, "execute", lambda nb, **given: seen.update(given) or 0)
    assert runner.main([str(notebook), str(tmp_path / "out.ipynb"), "--limits", limits.to_json()]) == 0
    assert seen.get("limits") == limits, "the runner must hand nbclient the job's own Limits"


def test_every_option_and_trait_is_named_after_its_field():
    for field in config.dataclasses.fields(config.GradingConfig):
        if field.metadata.get("option") is True:
            assert config.option(field.name) == "--" + field.name.replace("_", "-")
        if "trait" in field.metadata:
            owner = {"SandboxedExecute": execute.SandboxedExecute}.get(field.metadata["trait"])
            if owner is not None:
                assert field.name in owner.class_traits(config=True), f"{field.name}: no trait of that name"


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


def _name_literals(package: str) -> dict[str, list[str]]:
    """Every ``"TFPERF_..."`` string literal in a package's code: name -> the files writing it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in re.findall(r"""["'](TFPERF_[A-Z_]+)["']""", path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def test_each_environment_variables_name_is_written_once_in_each_package_and_both_agree():
    """Code reads a variable through its constant, never a second literal beside it. The learner library and the tool
    each define the names once (the sandbox's launcher cannot import the learner library: NumPy's half second)."""
    from tfperf import data, env

    tool, learner = _name_literals("tfperf_lab"), _name_literals("tfperf")
    assert {name: files for name, files in tool.items() if files != ["tfperf_lab/course/config.py"]} == {}
    assert {name: files for name, files in learner.items() if len(files) != 1} == {}
    assert set(tool) == set(config.ENVIRONMENT) and set(learner) <= set(tool)
    assert (data.DATA_VARIABLE, data.OFFLINE_VARIABLE, env.PROFILE_VARIABLE, KEEP_LOGS, RECORD_VARIABLE, GRADER_VARIABLE, ROLE_VARIABLE) == \
        (config.DATA_VARIABLE, config.OFFLINE_VARIABLE, config.PROFILE_VARIABLE, config.LOGS_VARIABLE, config.RECORD_VARIABLE,
         config.GRADER_VARIABLE, config.ROLE_VARIABLE)


def test_the_statistics_defaults_are_written_once():
    """The level of every interval and decision, the stopping tolerance and a check's defaults: one definition each
    (`tfperf.stats.CONFIDENCE`, `tfperf.timing.TOLERANCE`, `tfperf.timing.CheckOptions`), the rest refer to them."""
    import inspect

    from tfperf import checks, stats, timing
    from tfperf_lab.speed import replay

    for literal in ("0.95", "0.05"):
        written = [str(path.relative_to(ROOT)) for package in ("tfperf", "tfperf_lab") for path in (ROOT / package).rglob("*.py")
                   for line in path.read_text(encoding="utf-8").splitlines()
                   if re.search(rf"=\s*{re.escape(literal)}(?![\w])", line.split("#")[0])]
        assert len(written) == 1, f"{literal} is written as a default in {written}"
    assert "0.05" not in (ROOT / "tfperf_lab" / "speed" / "timer.py").read_text(encoding="utf-8")  # the tolerance it records
    options = timing.CheckOptions(threshold=1.0)
    for function in (timing.paired_rounds, timing.compare):
        defaults = {name: p.default for name, p in inspect.signature(function).parameters.items() if p.default is not p.empty}
        assert {key: defaults[key] for key in ("min_rounds", "max_rounds", "budget", "confidence") if key in defaults} == \
            {key: getattr(options, key) for key in ("min_rounds", "max_rounds", "budget", "confidence") if key in defaults}
    assert replay.Check(threshold=1.0).confidence == options.confidence == stats.CONFIDENCE
    assert inspect.signature(checks.assert_speedup).parameters["rtol"].default == options.rtol
