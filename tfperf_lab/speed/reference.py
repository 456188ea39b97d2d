"""The clean side of a graded speed check: the instructor's source, never a learner's code, serving the baselines.

``python -I -m tfperf_lab.speed.reference SOURCE.ipynb [--cpus 0,1]`` runs, in notebook order, the code cells of the instructor's source
tagged ``speed-fixture`` (setup, the lesson's support code, the reference answers a test cell needs) and every test cell
that runs a speed check, in an IPython shell of its own. `tfperf_lab.speed.judge` starts it for each graded submission with
``TFPERF_GRADER`` set, so each speed test cell's `tfperf.assert_speedup` serves its baseline to the judge and waits for
the verdict before the next cell runs. A failing cell is reported on stderr (the judge's log) and the run goes on.
"""

from __future__ import annotations

import os
import sys
import time


def cells(nb: dict) -> list[tuple[int, str]]:
    """(index, source) of the cells the reference runs: fixtures and speed test cells, up to the last speed test cell."""
    from ..course import notebook

    speed = set(notebook.speed_checks(nb))
    chosen = []
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        grade_id = notebook.nbgrader_meta(cell).get("grade_id")
        if notebook.FIXTURE_TAG in tags or grade_id in speed:
            chosen.append((index, notebook.source(cell)))
    last = max((i for i, cell in enumerate(nb["cells"]) if notebook.nbgrader_meta(cell).get("grade_id") in speed), default=-1)
    return [(index, body) for index, body in chosen if index <= last]


def main(argv: list[str] | None = None) -> int:
    from IPython.core.interactiveshell import InteractiveShell

    from ..course import notebook

    argv = sys.argv[1:] if argv is None else argv
    if "--cpus" in argv:  # the grading job's own cores: this process and every thread it starts stay on them
        os.sched_setaffinity(0, {int(core) for core in argv[argv.index("--cpus") + 1].split(",")})
    nb = notebook.read(argv[0])
    shell = InteractiveShell.instance()
    for index, body in cells(nb):
        began = time.monotonic()
        result = shell.run_cell(body, store_history=False, silent=False)
        status = "ok" if result.success else f"FAILED: {result.error_in_exec or result.error_before_exec!r}"
        print(f"[reference] cell {index}: {status} ({time.monotonic() - began:.1f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
