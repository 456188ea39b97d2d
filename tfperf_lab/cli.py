"""``tfperf-lab``: release the lessons, check one notebook, grade a class, run the course report.

The only layer that turns exceptions into exit codes and messages: the library raises (an unknown lesson, no course
folder, no sandbox), this module prints and returns 1 or 2. It imports nothing beyond the standard library until a
command runs, so a learner's install without the instructor's packages gets a message, not a traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import pathlib
import sys
import tempfile
import time

from .course.config import GradingConfig, add_options, escape_help

GRADER_PACKAGES = ("nbgrader", "nbclient", "nbconvert", "tqdm")
MISSING = ("tfperf-lab is the instructor's and grader's tool; it needs {missing}, which this install lacks (a learner's "
           "`pip install --no-deps` brings only the tfperf library). Install the tool with: pip install \"tfperf[grader]\" "
           "(from a clone of the course: pip install -e \".[grader]\"). Learners on Colab or Kaggle do not need it: the "
           "self-check summary at the end of each lesson reports the visible tests.")


def _course(args):
    from .course import Course

    return Course.find(args.course)


def _work(args, course):
    from .course import WorkFolder

    return WorkFolder(pathlib.Path(args.work)) if getattr(args, "work", None) else course.default_work


def cmd_release(args) -> int:
    """Stamp the shared cells into ``solutions/``, then regenerate ``lessons/`` (or ``--into``) with nbgrader."""
    from .grading import settings
    from .course import figures, stamp, WorkFolder

    course = _course(args)
    target = pathlib.Path(args.into).resolve() if args.into else course.releases
    with tempfile.TemporaryDirectory(prefix="tfperf-release-") as work:
        for lesson in course.select(args.lessons):
            if stamp.stamp(course, lesson):
                print(f"stamped the shared cells (badges, setup, self-check) into {lesson.source.relative_to(course.root)}")
            try:
                if figures.render_lesson(lesson):
                    print(f"rendered the recorded figures into {lesson.source.relative_to(course.root)}")
            except figures.FigureError as error:
                print(f"release of {lesson.id} failed: {error}", file=sys.stderr)
                return 1
            done = settings.nbgrader(course, WorkFolder(pathlib.Path(work)), ["generate_assignment", lesson.id, "--force"], release=target)
            if done.returncode != 0:
                print(done.output[-3000:], file=sys.stderr)
                print(f"release of {lesson.id} failed", file=sys.stderr)
                return 1
            print(f"released {lesson.id} -> {target / lesson.id}")
    try:
        if (course.root / "README.md").exists() and figures.render_markdown(course.root / "README.md"):
            print("rendered the recorded figures into README.md")
    except figures.FigureError as error:
        print(f"README.md: {error}", file=sys.stderr)
        return 1
    return 0


def cmd_check(args) -> int:
    """Grade your own copy of a lesson: points per exercise, measured speedups, feedback."""
    from .grading import batch

    notebook = pathlib.Path(args.notebook)
    if not notebook.is_file():
        print(f"no such notebook: {notebook}", file=sys.stderr)
        return 2
    result = batch.check(_course(args), notebook.resolve(), lesson_id=args.lesson,
                         feedback_to=pathlib.Path(args.feedback) if args.feedback else None,
                         config=GradingConfig.from_options(args))
    print("\n".join(result.lines()))
    return 1 if result.error or result.machine else 0


def cmd_collect(args) -> int:
    """Turn a platform's bulk download into SUBMISSIONS/<student>/<lesson>.ipynb, each with the time it was handed in:
    Canvas's Download Submissions zip, Gradescope's Export Submissions (zip or folder), nbgrader's exchange (its inbound
    folder). The latest copy of a student's lesson wins; every file not placed is named with the reason (exit code 1)."""
    from .grading import intake, roster

    course = _course(args)
    try:
        lesson = course.lesson(args.lesson).id if args.lesson else None
        into = pathlib.Path(args.into) if args.into else course.root / "submissions"
        done = intake.collect(course, pathlib.Path(args.source), into, lesson=lesson,
                              roster=intake.load_roster(course, pathlib.Path(args.roster) if args.roster else None,
                                                        pathlib.Path(args.mapping) if args.mapping else None))
    except (intake.IntakeError, roster.RosterError) as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2
    print("\n".join(done.lines()))
    return 1 if done.unplaced else 0


def cmd_grade(args) -> int:
    """Autograde a folder of submissions (one sub-folder per student); write feedback and a CSV."""
    from .grading import batch, roster, semester, store

    course = _course(args)
    work = _work(args, course)
    from .grading.cluster import ClusterUnavailable

    from tfperf import env as tf_env

    from .speed import doctor

    before = tf_env.cpu_times()
    time.sleep(0.5)
    state = tf_env.machine_state(before)
    said = doctor.warning(state)
    if said:
        print(said, file=sys.stderr)
    config = GradingConfig.from_options(args)
    told = batch.Told()
    try:
        results = batch.grade(course, pathlib.Path(args.folder).resolve(), work=work, csv_path=pathlib.Path(args.csv) if args.csv else None,
                              config=config, workers=args.workers or batch.DEFAULT_WORKERS,
                              force=args.force, cluster=args.cluster, cluster_timeout=args.cluster_timeout,
                              only=course.lesson(args.only).id if args.only else None, told=told,
                              roster=roster.read(pathlib.Path(args.roster), pathlib.Path(args.mapping) if args.mapping else None)
                              if args.roster else None)
    except (ClusterUnavailable, roster.RosterError, semester.SemesterError) as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2
    for result in results:
        print("\n".join(result.lines()))
    for student, path in told.left:
        print(f"{path.name} ({student}): not graded now (--only {args.only}); the next plain `tfperf-lab grade` grades it")
    if told.stale:
        print(f"graded again against the lesson's current tests (their grades were stale): {len(told.stale)} submission(s): "
              + ", ".join(f"{student}/{lesson}" for student, lesson in told.stale))
    if config.backend == "none":
        print("WARNING: graded without a sandbox (--no-sandbox): student code ran as you, beside the gradebook; the CSV says so")
    print(f"grades: {pathlib.Path(args.csv) if args.csv else work.grades_csv}; feedback: {work.root / 'feedback'}; "
          f"class page: {work.root / 'class' / 'index.html'}")
    faulty = [result for result in results if result.machine]
    twice = [result for result in faulty if any(line.startswith(store.TWICE) for line in result.machine)]
    if twice:
        print(f"tfperf-lab: {store.TWICE} on {len(twice)} submission(s): " + ", ".join(f"{r.student}/{r.lesson}" for r in twice)
              + "; `tfperf-lab review` lists them for a person", file=sys.stderr)
    if faulty:
        print(f"tfperf-lab: {len(faulty)} submission(s) not graded by the grading machine's fault (the rows say why); fix the "
              "machine and run the same command again: it grades only those", file=sys.stderr)
        return 3
    return 0


def cmd_review(args) -> int:
    """List the review list with each finding in context, or settle one submission: --accept pays what the grader
    measured for its withheld cells, --reject keeps them at 0 (nothing runs again)."""
    from .course import WorkFolder
    from .grading import batch, decisions, store

    course = _course(args)
    work = WorkFolder(pathlib.Path(args.work)) if args.work else course.default_work
    if not (work.root / "state").is_dir() and not (work.root / "faults").is_dir():
        print(f"tfperf-lab: nothing was graded in {work.root} (grade first: tfperf-lab grade FOLDER --work {work.root})", file=sys.stderr)
        return 2
    chosen = args.accept or args.reject
    if not chosen:
        print("\n".join(decisions.listing(course, work)))
        for student, lesson_id, what in store.grader_failures(work):
            print(f"{lesson_id} ({student}): {store.TWICE}: {what}. Open {work.submitted(student, lesson_id)} to see "
                  "why; the file is kept as handed in, and the next `tfperf-lab grade` tries it again")
        return 0
    try:
        _, said = decisions.decide(course, work, chosen[0], chosen[1], "accepted" if args.accept else "rejected", by=args.by,
                                   csv_path=pathlib.Path(args.csv) if args.csv else None, render=batch.feedback)
    except decisions.ReviewError as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 1
    print("\n".join(said))
    return 0


def cmd_page(args) -> int:
    """Draw the class page again from the stored results, grading nothing: WORK/class/index.html, or with --anonymous
    a page for a lecture (stable pseudonyms, no student id, no feedback link) in WORK/class-anonymous/."""
    from .course import WorkFolder
    from .grading import classpage, roster, semester, store

    course = _course(args)
    work = WorkFolder(pathlib.Path(args.work)) if args.work else course.default_work
    if not (work.root / "state").is_dir() and not (work.root / "faults").is_dir():
        print(f"tfperf-lab: nothing was graded in {work.root} (grade first: tfperf-lab grade FOLDER --work {work.root})", file=sys.stderr)
        return 2
    try:
        rows = store.rows(work, course)
    except (roster.RosterError, semester.SemesterError) as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out) if args.out else classpage.folder(work, anonymous=args.anonymous)
    page = classpage.write(rows, out, course=course, work=work, anonymous=args.anonymous,
                           csv=None if args.anonymous or not work.grades_csv.exists() else work.grades_csv)
    print(f"class page{' (anonymous)' if args.anonymous else ''}: {page}")
    return 0


def cmd_regrade(args) -> int:
    """Judge one graded submission's speed checks N more times (an appeal): every verdict, its raw rounds and the
    machine's state go to WORK/appeals/STUDENT/LESSON/; no grade changes."""
    from .grading import appeal

    course = _course(args)
    work = _work(args, course)
    try:
        lesson_id = course.lesson(args.lesson).id
        folder = appeal.regrade(course, work, args.student, lesson_id, runs=args.runs, check=args.check,
                                config=GradingConfig.from_options(args))
    except (appeal.AppealError, LookupError) as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2
    print((folder / "appeal.md").read_text(encoding="utf-8"))
    print(f"appeal bundle: {folder}")
    return 0


def cmd_export(args) -> int:
    """Write a graded work folder's grades as the files Canvas, Gradescope or PrairieLearn import (nothing runs again),
    or the autograder Gradescope grades each submission with (--to gradescope-autograder)."""
    from .grading import exports

    course = _course(args)
    work = _work(args, course)
    try:
        written = exports.export(course, work, args.to, out=pathlib.Path(args.out) if args.out else None,
                                 roster=pathlib.Path(args.roster) if args.roster else None,
                                 mapping=pathlib.Path(args.mapping) if args.mapping else None)
    except exports.ExportError as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2
    for note in written.notes:
        print(f"note: {note}")
    print(written.summary())
    return 0


def cmd_run(args) -> int:
    """The main job: run every lesson's reference solution here and write the course report."""
    from .publish import readme, report

    course = _course(args)
    if args.runs < 1 or (args.runs > 1 and not args.keep_run):
        print("--runs N (N >= 1) repeats the run to keep N of them: use it with --keep-run", file=sys.stderr)
        return 2
    out = readme.example_folder(course) if args.example else pathlib.Path(args.out)
    if args.profile == "both" and not args.keep_run:
        print("--profile both records runs for the lessons' figures: use it with --keep-run", file=sys.stderr)
        return 2
    failed = 0
    profiles = ["full", "reduced"] if args.profile == "both" else [args.profile]
    for number, profile in ((n, p) for n in range(1, args.runs + 1) for p in profiles):
        if args.runs > 1 or len(profiles) > 1:
            print(f"run {number} of {args.runs} ({profile} profile)", flush=True)
        path, clean = report.run(course, args.lessons or None, out=out, profile=profile)
        print(path.read_text(encoding="utf-8"))
        print(f"report: {path}  plot: {path.with_suffix('.png')}")
        if args.example:
            readme.update(course, "report")
            print(f"{readme.PAGES['report']}: example report block regenerated")
        if args.keep_run and clean:
            from .publish import ranges

            print(f"kept the run in {ranges.keep(course, path.with_suffix('.json'))}; ranges rebuilt in {ranges.write(course)}")
            for block in ("versions", "hosted"):
                readme.update(course, block)
        if not clean:
            failed += 1
            print("some lessons failed or recorded nothing: see the errors in the report" + (" (this run is not kept)" if args.keep_run else ""),
                  file=sys.stderr)
    return 0 if not failed else 1


def cmd_ranges(args) -> int:
    """Rebuild tfperf/ranges.json (the speedup ranges lessons quote) from the runs kept in docs/runs/, and the README's and
    docs/benchmarks.md's blocks on what ran on which TensorFlow."""
    from .publish import ranges, readme

    course = _course(args)
    print(f"wrote {ranges.write(course)}")
    for block in ("versions", "hosted"):
        print(f"{readme.PAGES[block]}: block {block!r} regenerated")
        readme.update(course, block)
    return 0


def cmd_margins(args) -> int:
    """Each speed check's reference margin on every machine that graded it, and whether its threshold is kept (the
    slowest machine's reference clears it by 1.5x at its lower 10%)."""
    from .publish import margins, readme

    course = _course(args)
    if args.docs:
        print(readme.update(course, "margins"))
        print(f"{readme.PAGES['margins']}: margins block regenerated from {', '.join(str(f) for f in margins.folders(course))}")
        return 0
    print(margins.block(course))
    return 1 if margins.not_kept(margins.collect(course)) else 0


def cmd_replay(args) -> int:
    """Decide the recorded flake campaigns again under a rule and thresholds, and simulate 10,000 more gradings of each
    check, answer and load from their rounds (blocks of consecutive rounds, so bursts stay bursts). --calibrate tests the
    rule itself: each reference's rounds moved onto its threshold, where at most 2.5% may pass (exit 1 where more do)."""
    from .publish import campaigns, readme
    from .speed import replay

    course = _course(args)
    if args.docs:
        for block in ("replay", "calibration"):
            print(readme.update(course, block))
            print(f"{readme.PAGES[block]}: {block} block regenerated from {readme.flake_folder(course)}")
        return 0
    from tfperf import stats, units

    rule = args.rule or stats.RULE
    if rule not in replay.RULES:
        print(f"unknown rule {rule!r}: one of {', '.join(replay.RULES)}", file=sys.stderr)
        return 2
    thresholds = {}
    for item in args.threshold:
        name, _, value = item.partition("=")
        thresholds[name] = float(value)
    chosen = {lesson.id for lesson in course.select(args.lessons or None)}
    found = [c | {"rows": [r for r in c["rows"] if r["lesson"] in chosen]} for c in campaigns.load_campaigns(readme.flake_folder(course))]
    sources = {lesson.id: lesson.source_notebook() for lesson in course.lessons if lesson.id in chosen}
    if args.calibrate:
        measured = replay.calibrate(found, sources, rule=rule, virtual=args.virtual or 2_000)
        if not measured:
            print("no campaign in docs/flake/ kept a reference's rounds for these lessons", file=sys.stderr)
            return 1
        print("\n".join(replay.calibration_table(measured) + [""] + replay.summary_lines(measured)))
        return 1 if any(r.over(mode) for r in measured for mode in r.passes) else 0
    rows = replay.replay(found, sources, rule=rule, thresholds=thresholds, virtual=args.virtual or 10_000, block=args.block)
    if not rows:
        print("no campaign in docs/flake/ kept its rounds for these lessons: record one with `tfperf-lab flake ... --out`", file=sys.stderr)
        return 1
    print("\n".join(replay.table(rows)))
    worst = max(rows, key=lambda r: r.wrong_upper)
    print(f"rule {rule}: worst upper bound {units.upper(worst.wrong_upper, '.3%')} ({worst.lesson[:2]} {worst.name}, {worst.answer}, "
          f"{worst.load})")
    return 0


def cmd_doctor(args) -> int:
    """Measure this machine's timing noise for about 20 seconds and say, check by check, whether it can grade speed
    reliably here (the recorded effects through the shipped rule, 10,000 virtual gradings each)."""
    import json

    from .publish import campaigns, readme
    from .speed import doctor

    course = _course(args)
    print(f"measuring this machine's noise for {args.seconds:g} s (keep it as it will be when it grades) ...", flush=True)
    noise = doctor.measure(args.seconds)
    found = doctor.verdicts(course, campaigns.load_campaigns(readme.flake_folder(course)), noise)
    print("\n".join(doctor.report(noise, found)))
    if args.json:
        data = {"state": noise.state, "spread": noise.spread, "worst": noise.worst, "rounds": len(noise.ratios),
                "disturbed": int((~noise.kept).sum()),
                "checks": [{"lesson": v.lesson, "name": v.name, "threshold": v.threshold, "false_fail": list(v.false_fail),
                            "false_pass": list(v.false_pass) if v.false_pass else None, "reliable": v.reliable} for v in found]}
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0 if all(v.reliable for v in found) else 1


def cmd_flake(args) -> int:
    """Grade reference solutions (and unoptimized answers) N times; print each speed check's pass rate."""
    from .grading import flake
    from .publish import campaigns, readme

    course = _course(args)
    if args.docs:
        print(readme.update(course, "flake"))
        readme.update(course, "checks")
        print(f"{readme.PAGES['flake']}: flake block, {readme.PAGES['checks']}: checks block, regenerated from {readme.flake_folder(course)}")
        return 0
    rows = flake.measure(course, args.lessons or None, runs=args.runs, hogs=args.hog, workers=args.workers, with_variants=args.variants,
                         bursts=args.burst)
    print(campaigns.render(rows, hogs=args.hog, workers=args.workers, bursts=args.burst))
    if args.out:
        from .isolation import backends

        campaigns.record(rows, hogs=args.hog, workers=args.workers, runs=args.runs, path=pathlib.Path(args.out),
                         sandbox=backends.backend().name, bursts=args.burst, machine_name=args.machine)
    bad = campaigns.wrong(rows)
    print(f"wrong outcomes: {bad} (false failures of the reference + false passes of unoptimized answers)")
    return 1 if bad else 0


def cmd_validate(args) -> int:
    """Run each lesson as written: every test passes on the source, every autograded test fails on the student version."""
    import os

    from .course import notebook
    from .course.config import DATA_VARIABLE, DEFAULTS
    from .isolation import backends, sandbox
    from .isolation.contract import Limits
    from .grading import score

    course = _course(args)
    data = os.environ.get(DATA_VARIABLE)
    problems = []
    with tempfile.TemporaryDirectory(prefix="tfperf-validate-") as scratch:
        for lesson in course.select(args.lessons):
            tests = [cell["id"] for cell in lesson.grade_cells() if cell["kind"] == "auto"]
            checks = [(lesson.release, True)] + ([] if args.release_only else [(lesson.source, False)])
            for path, invert in checks:
                # the course's own notebooks: trusted, so no isolation, but the same clean environment as grading
                outcome = sandbox.run(notebook.read(path), limits=Limits(wall_seconds=DEFAULTS.course_notebook_seconds),
                                      chosen=backends.NoSandbox(),
                                      scratch=pathlib.Path(scratch), data=pathlib.Path(data) if data else None)
                if outcome.problem:
                    wrong = [f"did not run: {outcome.problem}"]
                else:
                    outcomes = score.cell_outcomes(outcome.notebook)
                    wrong = [f"{cell}: {outcomes.get(cell, ('missing', ''))[0]} {outcomes.get(cell, ('', ''))[1]}".strip()
                             for cell in tests if (outcomes.get(cell, ("missing", ""))[0] == "passed") == invert]
                verdict = f"{len(wrong)} problem cells" if wrong else "ok"
                print(f"{path.relative_to(course.root)} ({'every test must fail' if invert else 'every test must pass'}): {verdict}")
                problems += [f"{path.name}: {item}" for item in wrong]
    print("\n".join(problems))
    return 1 if problems else 0


def cmd_lint(args) -> int:
    """Check every source and student notebook against the course's notebook rules."""
    from .course import lint

    course = _course(args)
    paths = [p for lesson in course.lessons for p in (lesson.source, lesson.release) if p.exists()]
    problems = [problem for path in paths for problem in lint.lint(course, path)]
    print("\n".join(problems) or f"{len(paths)} notebooks: no problems")
    return 1 if problems else 0


def cmd_lessons(args) -> int:
    """Print the lesson table (the README's copy is checked against it); ``--readme`` writes it there."""
    from .publish import readme

    course = _course(args)
    print(readme.update(course, "lessons") if args.readme else readme.lesson_table(course))
    return 0


def cmd_settings(args) -> int:
    """Print the settings a grading run may change (defaults, options, nbgrader traits) and the environment variables;
    ``--docs`` writes them into docs/instructor-guide.md."""
    from .course import config
    from .publish import readme

    print(readme.update(_course(args), "settings") if args.docs else config.table())
    return 0


# One example per command, shown at the end of its --help (the exchange's steps too: main() hands `example` to
# tfperf_lab/grading/exchange.py's parser). A test parses each with the command's own parser.
EXAMPLES = {
    "release": "tfperf-lab release 01",
    "check": "tfperf-lab check my-work/01_callable_handles/01_callable_handles.ipynb",
    "grade": "tfperf-lab grade submissions/ --workers 2",
    "collect": "tfperf-lab collect submissions.zip --into submissions/ --roster canvas-gradebook.csv --lesson 01",
    "review": "tfperf-lab review --accept alice 03",
    "page": "tfperf-lab page --anonymous",
    "export": "tfperf-lab export --to canvas --roster canvas-gradebook.csv",
    "regrade": "tfperf-lab regrade alice 03 --runs 5",
    "run": "tfperf-lab run 03 --out report/",
    "ranges": "tfperf-lab ranges",
    "exchange": "tfperf-lab exchange release 01 --root /srv/nbgrader/exchange",
    "exchange release": "tfperf-lab exchange release 01 --root /srv/nbgrader/exchange",
    "exchange collect": "tfperf-lab exchange collect 01 --root /srv/nbgrader/exchange",
    "exchange grade": "tfperf-lab exchange grade 01 --root /srv/nbgrader/exchange --workers 2",
    "exchange return": "tfperf-lab exchange return 01 --root /srv/nbgrader/exchange",
    "flake": "tfperf-lab flake 01 --runs 20 --hog 1 --workers 2 --variants",
    "margins": "tfperf-lab margins",
    "replay": "tfperf-lab replay 03 --threshold train_step_is_faster=4",
    "doctor": "tfperf-lab doctor --json doctor.json",
    "validate": "tfperf-lab validate 03",
    "lessons": "tfperf-lab lessons",
    "settings": "tfperf-lab settings --docs",
    "lint": "tfperf-lab lint",
}


def example(command: str) -> str:
    """The epilog of ``command``'s --help (``"grade"``, ``"exchange grade"``): its one example."""
    return f"example:\n  {EXAMPLES[command]}"


def subcommand(sub, name: str, text: str) -> argparse.ArgumentParser:
    """Add the command ``name`` to ``sub`` (an ``add_subparsers`` action): ``text`` (a docstring) is its line in the
    list of commands and heads its own --help, which ends with its example."""
    text = inspect.cleandoc(text).replace("``", "`")  # the docstring's reStructuredText literals, as Markdown's
    return sub.add_parser(name, help=escape_help(text), description=text, epilog=example(name),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def parser() -> argparse.ArgumentParser:

    top = argparse.ArgumentParser(prog="tfperf-lab", description=__doc__.splitlines()[0].replace("``", "`"),
                                  epilog="`tfperf-lab COMMAND --help` shows a command's options and an example.")
    top.add_argument("--course", help="the course folder (default: the working directory or a parent holding autograder/ and "
                                      "solutions/ or lessons/; or $TFPERF_COURSE)")
    sub = top.add_subparsers(dest="command", required=True)

    release = subcommand(sub, "release", cmd_release.__doc__)
    release.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    release.add_argument("--into", help="release folder (default: lessons/)")
    release.set_defaults(func=cmd_release)

    check = subcommand(sub, "check", cmd_check.__doc__)
    check.add_argument("notebook", help="your notebook, e.g. lessons/01_callable_handles/01_callable_handles.ipynb")
    check.add_argument("--lesson", help="lesson id, if the notebook's name and metadata do not say")
    check.add_argument("--feedback", help="where to write the HTML feedback (default: beside the notebook)")
    add_options(check, "notebook_seconds", "cell_seconds", "backend")
    check.set_defaults(func=cmd_check)

    grade = subcommand(sub, "grade", cmd_grade.__doc__)
    grade.add_argument("folder", help="FOLDER/<student>/<lesson>.ipynb")
    grade.add_argument("--work", help="work folder for gradebook, autograded copies, feedback (default: the course's .work/)")
    grade.add_argument("--csv", help="where to write the grades (default: WORK/grades.csv)")
    add_options(grade, "notebook_seconds", "cell_seconds")
    grade.add_argument("--workers", type=int, default=None,
                       help="notebooks graded at once, each job on two cores of its own from 4 cores up (default: two on 2-3 cores, then one per "
                            "two cores; see docs/benchmarks.md)")
    grade.add_argument("--force", action="store_true", help="grade again submissions already graded from the same file")
    grade.add_argument("--roster", metavar="FILE", help="the class list (default: autograder/roster.csv if there): a CSV with "
                       "student,name,email,sis_id,section, or Canvas's gradebook export; every student gets a row, 'not submitted' when nothing came")
    grade.add_argument("--mapping", metavar="FILE", help="with --roster: folder,student lines for submission folders no roster column names")
    grade.add_argument("--only", metavar="LESSON", help="grade this lesson's submissions again (after fixing one of its tests) and "
                                                        "keep every other row as it stands; review decisions and manual scores survive")
    grade.add_argument("--cluster", metavar="ADDRESS", help="run each submission on a worker of this Dask cluster (tcp://host:8786; "
                                                            "see docs/instructor-guide.md); this machine scores and writes")
    grade.add_argument("--cluster-timeout", type=float, default=30.0, metavar="SECONDS",
                       help="how long to wait for the cluster's scheduler to answer before grading nothing (default: 30)")
    add_options(grade, "backend")  # --no-sandbox: student code runs without isolation, as you (the CSV and report say so)
    grade.set_defaults(func=cmd_grade)

    collect = subcommand(sub, "collect", cmd_collect.__doc__)
    collect.add_argument("source", help="Canvas's submissions .zip, Gradescope's export (.zip or folder), or nbgrader's exchange "
                                        "(the exchange root, <root>/<course> or its inbound/ folder); never written")
    collect.add_argument("--into", metavar="SUBMISSIONS", help="where to place them (default: the course's submissions/)")
    collect.add_argument("--roster", metavar="FILE", help="the class list (default: autograder/roster.csv if there): Canvas's "
                         "gradebook export gives Canvas's user ids; the course's CSV matches Gradescope's e-mail or SID")
    collect.add_argument("--mapping", metavar="FILE", help="folder,student lines: a platform's name for a student (Canvas user "
                         "id, e-mail, SID, hub user name) -> the student's folder, where the roster does not say")
    collect.add_argument("--lesson", metavar="LESSON", help="the lesson of every file (default: from each file's name, a lesson id "
                         "or its two-digit number); for the exchange: collect only this lesson")
    collect.set_defaults(func=cmd_collect)

    review = subcommand(sub, "review", cmd_review.__doc__)
    review.add_argument("work", nargs="?", help="the work folder `tfperf-lab grade --work` wrote (default: the course's .work/)")
    decision = review.add_mutually_exclusive_group()
    decision.add_argument("--accept", nargs=2, metavar=("STUDENT", "LESSON"),
                          help="pay the withheld cells what their tests earned and the grader measured")
    decision.add_argument("--reject", nargs=2, metavar=("STUDENT", "LESSON"), help="keep the withheld cells at 0")
    review.add_argument("--by", help="who decides (default: your user name)")
    review.add_argument("--csv", help="the grades CSV to rewrite (default: WORK/grades.csv)")
    review.set_defaults(func=cmd_review)

    page = subcommand(sub, "page", cmd_page.__doc__)
    page.add_argument("work", nargs="?", help="the work folder `tfperf-lab grade --work` wrote (default: the course's .work/)")
    page.add_argument("--anonymous", action="store_true", help="pseudonyms instead of student ids (stable: keyed by "
                      "WORK/class/.pseudonym-key, made once), no feedback or grades link: a page to show in a lecture")
    page.add_argument("--out", metavar="DIR", help="where to write it (default: WORK/class/, with --anonymous WORK/class-anonymous/)")
    page.set_defaults(func=cmd_page)

    export = subcommand(sub, "export", cmd_export.__doc__)
    export.add_argument("work", nargs="?", help="the work folder `tfperf-lab grade --work` wrote (default: the course's .work/)")
    from .grading import exports  # the registry: one module per platform (tfperf_lab/grading/exports/), standard library only

    export.add_argument("--to", required=True, choices=exports.PLATFORMS,
                        help="; ".join(f"{name}: {exports.REGISTRY[name].help}" for name in exports.PLATFORMS).replace("%", "%%"))
    export.add_argument("--out", help="where to write (default: WORK/exports)")
    export.add_argument("--roster", metavar="FILE", help="the class list (default: autograder/roster.csv if there): the course's "
                        "CSV (student,name,email,sis_id,section) or Canvas's gradebook export (Grades > Export), which also "
                        "gives Canvas's ids and assignment columns; every roster student gets a row")
    export.add_argument("--mapping", metavar="FILE", help="folder,student lines for submission folders no roster column names")
    export.set_defaults(func=cmd_export)

    regrade = subcommand(sub, "regrade", cmd_regrade.__doc__)
    regrade.add_argument("student", help="the student's folder name, as in the CSV")
    regrade.add_argument("lesson", help="the lesson id (or its number)")
    regrade.add_argument("--runs", type=int, default=5, help="how many more times to grade it (default 5)")
    regrade.add_argument("--check", help="report only this speed check (the notebook runs whole every time)")
    regrade.add_argument("--work", help="the work folder the class was graded into (default: the course's .work/)")
    add_options(regrade, "backend")
    regrade.set_defaults(func=cmd_regrade)

    run = subcommand(sub, "run", cmd_run.__doc__)
    run.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    run.add_argument("--profile", choices=["reduced", "full", "both"], default="reduced",
                     help="reduced: grading-size workloads (default); full: the learner's sizes; both (with --keep-run): "
                          "each run records the two, one after the other")
    run.add_argument("--out", default="report", help="folder for course-report.md, .png and .json (default: report/ here)")
    run.add_argument("--example", action="store_true",
                     help="write to docs/example-report/ and regenerate the example block of docs/benchmarks.md (commit both)")
    run.add_argument("--keep-run", action="store_true",
                     help="keep this run's speedups in docs/runs/<profile>/ and rebuild tfperf/ranges.json (the ranges lessons quote)")
    run.add_argument("--runs", type=int, default=1,
                     help="with --keep-run: run and keep this many times (lessons quote figures from 5 current runs a profile: "
                          "`tfperf-lab run --profile both --keep-run --runs 5`)")
    run.set_defaults(func=cmd_run)

    ranges = subcommand(sub, "ranges", cmd_ranges.__doc__)
    ranges.set_defaults(func=cmd_ranges)

    # `tfperf-lab exchange ...` goes to the exchange's own parser (main()); this entry lists it, and answers its --help
    # where the grader's packages are missing
    subcommand(sub, "exchange", "nbgrader's exchange on a JupyterHub: release, collect, grade and return a lesson "
                                "(see docs/jupyterhub.md; `tfperf-lab exchange --help`)")

    flake = subcommand(sub, "flake", cmd_flake.__doc__)
    flake.add_argument("lessons", nargs="*", help="lesson ids (default: all with speed checks)")
    flake.add_argument("--runs", type=int, default=20, help="gradings per answer (default 20)")
    flake.add_argument("--hog", type=int, default=0, metavar="N", help="keep N cores busy while grading")
    flake.add_argument("--burst", type=int, default=0, metavar="N", help="N neighbours that spin in bursts (10-200 ms on, 10-200 ms off)")
    flake.add_argument("--workers", type=int, default=1, help="notebooks graded at once")
    flake.add_argument("--variants", action="store_true", help="also grade the correct-but-unoptimized answers")
    flake.add_argument("--out", help="write the rows as JSON (docs/flake-campaigns.md's figures come from docs/flake/*.json)")
    flake.add_argument("--machine", help="the name this machine goes by in the margins table (default: its CPU model and cores); "
                                         "another machine's record goes to docs/machines/")
    flake.add_argument("--docs", "--readme", dest="docs", action="store_true",
                       help="measure nothing: regenerate docs/flake-campaigns.md's block from docs/flake/")
    flake.set_defaults(func=cmd_flake)

    margins_ = subcommand(sub, "margins", cmd_margins.__doc__)
    margins_.add_argument("--docs", action="store_true", help="regenerate docs/flake-campaigns.md's margins block")
    margins_.set_defaults(func=cmd_margins)

    replay_ = subcommand(sub, "replay", cmd_replay.__doc__)
    replay_.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    replay_.add_argument("--rule", default=None, help="the decision rule (default: the shipped one; also: one-look)")
    replay_.add_argument("--threshold", action="append", default=[], metavar="CHECK=X",
                         help="try threshold X for a check (its name or its cell id); repeatable")
    replay_.add_argument("--virtual", type=int, default=None,
                         help="virtual gradings per check, answer and load (default 10000; with --calibrate 2000 per way)")
    replay_.add_argument("--calibrate", action="store_true",
                         help="move each reference's rounds onto its threshold and count the false passes, four ways of resampling")
    replay_.add_argument("--block", type=int, default=5, help="consecutive rounds drawn together (default 5)")
    replay_.add_argument("--docs", action="store_true", help="regenerate docs/flake-campaigns.md's replay and calibration blocks")
    replay_.set_defaults(func=cmd_replay)

    doctor_ = subcommand(sub, "doctor", cmd_doctor.__doc__)
    doctor_.add_argument("--seconds", type=float, default=20.0, help="how long to measure the noise (default 20)")
    doctor_.add_argument("--json", metavar="FILE", help="also write the findings as JSON")
    doctor_.set_defaults(func=cmd_doctor)

    validate = subcommand(sub, "validate", cmd_validate.__doc__)
    validate.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    validate.add_argument("--release-only", action="store_true", help="only check that the student versions fail")
    validate.set_defaults(func=cmd_validate)

    lessons = subcommand(sub, "lessons", cmd_lessons.__doc__)
    lessons.add_argument("--readme", action="store_true", help="also write the table into the README")
    lessons.set_defaults(func=cmd_lessons)

    settings = subcommand(sub, "settings", cmd_settings.__doc__)
    settings.add_argument("--docs", action="store_true", help="write the tables into docs/instructor-guide.md")
    settings.set_defaults(func=cmd_settings)

    lint = subcommand(sub, "lint", cmd_lint.__doc__)
    lint.set_defaults(func=cmd_lint)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    asks_help = bool({"-h", "--help"} & set(argv))  # --help works anywhere: without the grader's packages, outside a course
    missing = [name for name in GRADER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing and not asks_help:
        print(MISSING.format(missing=", ".join(missing)), file=sys.stderr)
        return 2
    from .course import CourseNotFound, UnknownLesson
    from .isolation.backends import SandboxUnavailable

    try:
        if "exchange" in argv[:3] and not missing:  # its own argument parser lives in tfperf_lab/grading/exchange.py
            from .grading import exchange

            position = argv.index("exchange")
            course_args = argv[:position]
            named = course_args[1] if course_args[:1] == ["--course"] else None
            course = None if asks_help else _course(argparse.Namespace(course=named))  # --help needs no course
            return exchange.main(argv[position + 1:], prog="tfperf-lab exchange", course=course, example=example)
        args = parser().parse_args(argv)
        return args.func(args)
    except (CourseNotFound, UnknownLesson, SandboxUnavailable, FileNotFoundError) as error:
        print(f"tfperf-lab: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
