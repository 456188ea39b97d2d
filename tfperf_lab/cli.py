"""``tfperf-lab``: release the lessons, check one notebook, grade a class, run the course report."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

from . import course


def cmd_release(args) -> int:
    """Stamp the shared cells into ``solutions/``, then regenerate ``lessons/`` (or ``--into``) with nbgrader."""
    from . import stamp

    chosen = [course.lesson(i) for i in args.lessons] if args.lessons else course.lessons()
    target = pathlib.Path(args.into).resolve() if args.into else course.LESSONS
    with tempfile.TemporaryDirectory(prefix="tfperf-release-") as work:
        for lesson in chosen:
            if stamp.stamp(lesson):
                print(f"stamped the shared cells (badges, setup, self-check) into {lesson.source.relative_to(course.ROOT)}")
            done = course.nbgrader(["generate_assignment", lesson.id, "--force"], work=pathlib.Path(work), release=target)
            if done.returncode != 0:
                print(done.output[-3000:], file=sys.stderr)
                print(f"release of {lesson.id} failed", file=sys.stderr)
                return 1
            print(f"released {lesson.id} -> {target / lesson.id}")
    return 0


def cmd_check(args) -> int:
    """Grade your own copy of a lesson: points per exercise, measured speedups, feedback."""
    from . import grading

    notebook = pathlib.Path(args.notebook)
    if not notebook.is_file():
        print(f"no such notebook: {notebook}", file=sys.stderr)
        return 2
    result = grading.check(notebook.resolve(), lesson_id=args.lesson, feedback_to=pathlib.Path(args.feedback) if args.feedback else None,
                           timeout=args.timeout)
    print("\n".join(result.lines()))
    return 1 if result.error else 0


def cmd_grade(args) -> int:
    """Autograde a folder of submissions (one sub-folder per student); write feedback and a CSV."""
    from . import grading

    work = pathlib.Path(args.work).resolve()
    results = grading.grade(pathlib.Path(args.folder).resolve(), work=work, csv_path=pathlib.Path(args.csv) if args.csv else None,
                            timeout=args.timeout, cell_timeout=args.cell_timeout, workers=args.workers or grading.DEFAULT_WORKERS,
                            force=args.force)
    for result in results:
        print("\n".join(result.lines()))
    print(f"grades: {pathlib.Path(args.csv) if args.csv else work / 'grades.csv'}; feedback: {work / 'feedback'}")
    return 0


def cmd_run(args) -> int:
    """The main job: run every lesson's reference solution here and write the course report."""
    from . import report

    os.environ["TFPERF_PROFILE"] = args.profile
    out = report.EXAMPLE if args.example else pathlib.Path(args.out)
    path, clean = report.run(args.lessons or None, out=out)
    print(path.read_text(encoding="utf-8"))
    print(f"report: {path}  plot: {path.with_suffix('.png')}")
    if args.example:
        report.update_readme(out)
        print("README.md: example report block regenerated")
    return 0 if clean else 1


def cmd_flake(args) -> int:
    """Grade reference solutions (and unoptimized answers) N times; print each speed check's pass rate."""
    from . import flake

    if args.readme:
        flake.update_readme()
        print(flake.readme_block())
        print(f"README.md: flake block regenerated from {flake.RECORDS}")
        return 0
    rows = flake.measure(args.lessons or None, runs=args.runs, hogs=args.hog, workers=args.workers, with_variants=args.variants)
    table = flake.render(rows, hogs=args.hog, workers=args.workers)
    print(table)
    if args.out:
        flake.record(rows, hogs=args.hog, workers=args.workers, runs=args.runs, path=pathlib.Path(args.out))
    bad = flake.wrong(rows)
    print(f"wrong outcomes: {bad} (false failures of the reference + false passes of unoptimized answers)")
    return 1 if bad else 0


def cmd_validate(args) -> int:
    """nbgrader's Validator: every test passes on the source, every visible test fails on the student version."""
    from nbgrader.validator import Validator
    from traitlets.config import Config

    os.environ.update(course.tool_environment())
    config = Config()
    config.Execute.timeout = 300
    problems = []
    for lesson in ([course.lesson(i) for i in args.lessons] if args.lessons else course.lessons()):
        checks = [(lesson.release, True)] + ([] if args.release_only else [(lesson.source, False)])
        for path, invert in checks:
            results = Validator(config=config, invert=invert).validate(str(path))
            wrong = results.get("passed" if invert else "failed", []) + results.get("changed", []) + results.get("type_changed", [])
            verdict = f"{len(wrong)} problem cells" if wrong else "ok"
            print(f"{path.relative_to(course.ROOT)} ({'every test must fail' if invert else 'every test must pass'}): {verdict}")
            problems += [f"{path.name}: {cell['source'].splitlines()[0] if cell['source'] else cell}" for cell in wrong]
    print("\n".join(problems))
    return 1 if problems else 0


def cmd_lint(args) -> int:
    """Check every source and student notebook against the course's notebook rules."""
    from . import lint

    paths = [p for lesson in course.lessons() for p in (lesson.source, lesson.release) if p.exists()]
    problems = [problem for path in paths for problem in lint.lint(path)]
    print("\n".join(problems) or f"{len(paths)} notebooks: no problems")
    return 1 if problems else 0


def lesson_table() -> str:
    """The README's lesson table, from the lessons' own metadata."""
    rows = ["| lesson | technique | source article | what is measured | run time on a 2-core CPU, at most (full / graded) |",
            "|---|---|---|---|---|"]
    for lesson in course.lessons():
        rows.append(f"| [{lesson.id}](lessons/{lesson.id}/{lesson.id}.ipynb): {lesson.title} | {lesson.technique} | "
                    f"{lesson.article} | {lesson.measures} | {lesson.minutes_full:g} min / {lesson.minutes_grading:g} min |")
    return "\n".join(rows)


def cmd_lessons(args) -> int:
    """Print the lesson table (the README's copy is checked against it)."""
    print(lesson_table())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["exchange"]:  # its own argument parser lives in autograder/exchange.py
        from . import exchange

        return exchange.main(argv[1:], prog="tfperf-lab exchange")
    parser = argparse.ArgumentParser(prog="tfperf-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    release = sub.add_parser("release", help=cmd_release.__doc__)
    release.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    release.add_argument("--into", help="release folder (default: lessons/)")
    release.set_defaults(func=cmd_release)

    check = sub.add_parser("check", help=cmd_check.__doc__)
    check.add_argument("notebook", help="your notebook, e.g. lessons/01_callable_handles/01_callable_handles.ipynb")
    check.add_argument("--lesson", help="lesson id, if the notebook's name and metadata do not say")
    check.add_argument("--feedback", help="where to write the HTML feedback (default: beside the notebook)")
    check.add_argument("--timeout", type=float, help="seconds the whole notebook may take (default: 3x its grading budget)")
    check.set_defaults(func=cmd_check)

    grade = sub.add_parser("grade", help=cmd_grade.__doc__)
    grade.add_argument("folder", help="FOLDER/<student>/<lesson>.ipynb")
    grade.add_argument("--work", default=str(course.WORK), help="work folder for gradebook, autograded copies, feedback")
    grade.add_argument("--csv", help="where to write the grades (default: WORK/grades.csv)")
    grade.add_argument("--timeout", type=float, help="seconds one notebook may take (default: 3x its grading budget)")
    grade.add_argument("--cell-timeout", type=int, help="seconds one cell may take (default: 300, from nbgrader_config.py)")
    grade.add_argument("--workers", type=int, default=None,
                       help="notebooks graded at once (default: one per core, at most 2, the count measured free of false "
                            "speed-check failures; see the README)")
    grade.add_argument("--force", action="store_true", help="grade again submissions already graded from the same file")
    grade.set_defaults(func=cmd_grade)

    run = sub.add_parser("run", help=cmd_run.__doc__)
    run.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    run.add_argument("--profile", choices=["reduced", "full"], default="reduced",
                     help="reduced: grading-size workloads (default); full: the learner's sizes")
    run.add_argument("--out", default="report", help="folder for course-report.md, .png and .json (default: report/)")
    run.add_argument("--example", action="store_true",
                     help="write to docs/example-report/ and regenerate the README's example block (commit both)")
    run.set_defaults(func=cmd_run)

    sub.add_parser("exchange", help="nbgrader's exchange on a JupyterHub: release, collect, grade and return a lesson "
                                    "(see docs/jupyterhub.md; `tfperf-lab exchange --help`)")

    flake = sub.add_parser("flake", help=cmd_flake.__doc__)
    flake.add_argument("lessons", nargs="*", help="lesson ids (default: all with speed checks)")
    flake.add_argument("--runs", type=int, default=20, help="gradings per answer (default 20)")
    flake.add_argument("--hog", type=int, default=0, metavar="N", help="keep N cores busy while grading")
    flake.add_argument("--workers", type=int, default=1, help="notebooks graded at once")
    flake.add_argument("--variants", action="store_true", help="also grade the correct-but-unoptimized answers")
    flake.add_argument("--out", help="write the rows as JSON (the README's figures come from docs/flake/*.json)")
    flake.add_argument("--readme", action="store_true", help="measure nothing: regenerate the README's flake block from docs/flake/")
    flake.set_defaults(func=cmd_flake)

    validate = sub.add_parser("validate", help=cmd_validate.__doc__)
    validate.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    validate.add_argument("--release-only", action="store_true", help="only check that the student versions fail")
    validate.set_defaults(func=cmd_validate)

    lessons = sub.add_parser("lessons", help=cmd_lessons.__doc__)
    lessons.set_defaults(func=cmd_lessons)

    lint = sub.add_parser("lint", help=cmd_lint.__doc__)
    lint.set_defaults(func=cmd_lint)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
