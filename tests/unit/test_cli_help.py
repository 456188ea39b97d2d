"""The command line a newcomer meets: every command's --help works (in or out of a course, with or without the grader's
packages) and ends with the one example `tfperf_lab.cli.EXAMPLES` gives it, a command line its own parser accepts.

The commands are walked from the parsers themselves (`cli.parser()`'s subcommands, and the exchange's, which
`tfperf-lab exchange` hands to `tfperf_lab.grading.exchange.parser` with `cli.example`), never from a list typed here.
"""

import argparse
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from tfperf_lab import cli
from tfperf_lab.grading import exchange

FORMATS = re.compile(r"%%|%\(\w+\)[a-z]")  # what argparse's %-formatting of help reads: "%%", "%(default)s"; any other % fails


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the tool by its command words: () for `tfperf-lab`, ("grade",), ("exchange", "grade") ... The
    exchange's entry in `cli.parser()` only lists it: `tfperf-lab exchange ...` is parsed by the exchange's parser."""
    found = {(): cli.parser()}
    for name, sub in _subcommands(found[()]).items():
        found[(name,)] = exchange.parser(example=cli.example) if name == "exchange" else sub
    for words, parser in list(found.items()):
        if words:
            found.update({(*words, name): sub for name, sub in _subcommands(parser).items()})
    return found


PARSERS = _parsers()
COMMANDS = [words for words in PARSERS if words]


def _help(argv: list[str], capsys) -> tuple[int, str]:
    """Run ``tfperf-lab ARGV`` through `cli.main`: (exit code, what it printed)."""
    try:
        code = cli.main(argv)
    except SystemExit as stop:
        code = stop.code
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def test_the_walk_finds_every_command_and_the_exchange_steps():
    assert {"grade", "check", "release", "exchange", "margins"} <= {words[0] for words in COMMANDS}
    assert {("exchange", step) for step in exchange.STEPS} <= set(COMMANDS)


def test_the_top_level_help_lists_the_commands(capsys):
    code, printed = _help(["--help"], capsys)
    assert code == 0, printed
    assert "usage: tfperf-lab" in printed and all(words[0] in printed for words in COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_each_command_help_works_and_ends_with_its_example(words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside any course: --help needs none
    monkeypatch.delenv("TFPERF_COURSE", raising=False)
    code, printed = _help([*words, "--help"], capsys)
    assert code == 0, printed
    assert f"usage: tfperf-lab {' '.join(words)}" in printed
    assert printed.count("example:") == 1, printed
    assert f"example:\n  {cli.EXAMPLES[' '.join(words)]}\n" in printed


def test_there_is_one_example_per_command_and_no_other():
    assert set(cli.EXAMPLES) == {" ".join(words) for words in COMMANDS}


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_each_example_is_a_command_line_its_parser_accepts(words):
    typed = shlex.split(cli.EXAMPLES[" ".join(words)])
    assert typed[:1 + len(words)] == ["tfperf-lab", *words]
    if words[0] == "exchange":
        args = exchange.parser().parse_args(typed[2:])
        assert list(words[1:]) in ([], [args.step])
    else:
        args = cli.parser().parse_args(typed[1:])
        assert args.command == words[0]


def test_no_help_string_has_a_lone_percent_sign():
    """argparse formats every help string with %: a lone % ("its lower 10%)") makes --help raise ValueError."""
    lone = []
    for words, parser in PARSERS.items():
        for action in parser._actions:
            choices = action._choices_actions if isinstance(action, argparse._SubParsersAction) else []
            for item in [action, *choices]:
                if item.help and item.help is not argparse.SUPPRESS and "%" in FORMATS.sub("", item.help):
                    lone.append(f"tfperf-lab {' '.join(words)} {'/'.join(item.option_strings) or item.dest}: {item.help!r}")
    assert not lone, "escape % as %% (tfperf_lab.course.config.escape_help):\n" + "\n".join(lone)


@pytest.mark.parametrize("words", [(), *COMMANDS], ids=lambda words: " ".join(words) or "tfperf-lab")
def test_help_works_without_the_grader_packages(words, capsys, monkeypatch):
    """A learner's install has no nbgrader: every --help still answers (the exchange's with its entry in the list)."""
    for name in cli.GRADER_PACKAGES:
        monkeypatch.setitem(sys.modules, name, None)  # importlib.util.find_spec now says: not installed
    code, printed = _help([*words, "--help"], capsys)
    assert code == 0, printed
    assert "usage: tfperf-lab" in printed
    assert "example:" in printed or not words


def test_without_the_grader_packages_a_command_says_what_to_install(capsys, monkeypatch):
    for name in cli.GRADER_PACKAGES:
        monkeypatch.setitem(sys.modules, name, None)
    code, printed = _help(["grade", "submissions/"], capsys)
    assert code == 2 and "pip install" in printed


def test_the_installed_console_script_answers_help(tmp_path):
    script = pathlib.Path(sys.executable).parent / "tfperf-lab"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tfperf_lab"]
    env = {key: value for key, value in os.environ.items() if key != "TFPERF_COURSE"}
    done = subprocess.run([*command, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage: tfperf-lab" in done.stdout and "grade" in done.stdout
