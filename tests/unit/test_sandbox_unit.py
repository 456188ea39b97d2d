"""The sandbox itself on tiny notebooks (seconds, no TensorFlow): what a kernel inside sees, and how a run ends."""

import json
import os

import nbformat
import pytest

from pipeline import COURSE
from tfperf_lab.isolation import backends, cgroups, sandbox
from tfperf_lab.isolation.contract import Limits

needs_bwrap = pytest.mark.skipif(backends.Bubblewrap().problem() is not None, reason="bubblewrap cannot run here")


def _cgroups() -> bool:
    """Whether a cgroup limits memory here (where none does, the sandbox's RLIMIT_AS stand-in fails differently)."""
    probe = cgroups.Cgroup("probe", Limits())
    limited = probe.memory_limited
    probe.remove()
    return limited


def _run(tmp_path, *sources, **limits):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return sandbox.run(json.loads(nbformat.writes(nb)), limits=Limits(**{"wall_seconds": 60, **limits}),
                       chosen=backends.Bubblewrap(), scratch=tmp_path / "scratch")


def _printed(outcome) -> str:
    return "".join(o.get("text", "") for c in outcome.notebook["cells"] for o in c["outputs"] if o["output_type"] == "stream")


@needs_bwrap
def test_a_kernel_sees_a_clean_environment_no_network_and_its_own_cores(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "secret")
    outcome = _run(tmp_path, "import os, socket\nprint(sorted(os.environ.get(k, '-') for k in ['JUPYTERHUB_API_TOKEN']))\n"
                             "print(os.sched_getaffinity(0))\n"
                             "try:\n    socket.create_connection(('pypi.org', 443), timeout=3)\n    print('network')\n"
                             "except OSError:\n    print('no network')\nprint(os.getpid() < 100)", cpus=(0,))
    assert outcome.problem is None, outcome.log
    assert _printed(outcome).split() == ["['-']", "{0}", "no", "network", "True"]
    assert not list((tmp_path / "scratch").iterdir()), "the job folder is removed afterwards"


@needs_bwrap
def test_a_notebook_over_its_wall_time_is_stopped_and_said_so(tmp_path):
    """The runner holds the notebook's limit itself: the cell is stopped and named, and the notebook comes back (the
    host's hard kill is the backstop: tests/grading/test_time_limits.py)."""
    outcome = _run(tmp_path, "import time\ntime.sleep(60)", wall_seconds=8)
    assert not outcome.timed_out and outcome.notebook is not None and outcome.problem is None
    assert "time limit ran out in cell" in (outcome.stopped or ""), outcome.stopped
    assert outcome.seconds < 8


@needs_bwrap
def test_files_the_kernel_writes_are_capped_in_size(tmp_path):
    outcome = _run(tmp_path, "try:\n    open('f', 'wb').write(b'0' * 3 * 2**20)\nexcept OSError as e:\n    print('refused', e.errno)",
                   file_mb=1)
    assert "refused 27" in _printed(outcome)  # EFBIG


def test_no_backend_is_refused_with_the_way_out(monkeypatch):
    monkeypatch.setattr(backends.Bubblewrap, "problem", lambda self: "bubblewrap is not installed")
    with pytest.raises(backends.SandboxUnavailable, match="bubblewrap is not installed.*--no-sandbox"):
        backends.backend("auto")
    assert backends.backend("none").isolated is False


@pytest.mark.parametrize("count,pinned", [(2, False), (4, True)])
def test_a_job_claims_cores_of_its_own_where_it_runs_when_that_machine_has_room(monkeypatch, tmp_path, count, pinned):
    """On the machine that runs it (here, or a cluster worker): two cores of its own from 4 cores up, none below."""
    from tfperf_lab.grading import job as job_module
    from tfperf_lab.isolation import contract, cores

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(count)))
    monkeypatch.setattr(cores, "folder", lambda: tmp_path / "locks")
    seen = {}

    def fake_run(nb, *, limits, **kwargs):
        seen["cpus"] = limits.cpus
        return contract.Outcome({"cells": []}, "", 0.0, 0)

    monkeypatch.setattr(job_module.sandbox, "run", fake_run)
    job = job_module.Job(course_root=str(COURSE.root), lesson_id="no_such_lesson", student="s", notebook={"cells": []},
                         limits=contract.Limits(wall_seconds=60), backend="none", scratch=str(tmp_path / "scratch"))
    job_module.run_job(job)
    assert seen["cpus"] in ([(0, 1), (2, 3)] if pinned else [None]), seen


@needs_bwrap
def test_a_cell_over_its_time_limit_is_interrupted_and_the_next_cell_runs(tmp_path):
    outcome = _run(tmp_path, "while True:\n    pass", "print('after')", cell_seconds=3)
    first, second = outcome.notebook["cells"]
    assert [o.get("ename") for o in first["outputs"] if o["output_type"] == "error"][:1] in (["CellTimeoutError"], ["KeyboardInterrupt"])
    assert "after" in "".join(o.get("text", "") for o in second["outputs"])


@needs_bwrap
@pytest.mark.skipif(not _cgroups(), reason="no writable cgroup for memory limits here")
def test_a_notebook_over_its_memory_is_stopped_and_said_so(tmp_path):
    outcome = _run(tmp_path, "block = bytearray(1536 * 2**20)\nblock[::4096] = b'x' * len(block[::4096])", memory_mb=512)
    assert outcome.notebook is None and "more than its 512 MiB of memory" in (outcome.problem or ""), (outcome.problem, outcome.log[-500:])


def test_the_runner_waits_a_cells_limit_for_its_outputs_not_nbclients_four_seconds(monkeypatch):
    """CI, 2026-12-01: a slow lesson-10 answer was NOT GRADED because one cell's outputs came more than 4 s after its
    reply (nbclient's default IOPub wait) while the machine was busy; the whole notebook failed."""
    import nbclient
    import nbformat

    from tfperf_lab.isolation import runner

    made = {}

    class Client:
        def __init__(self, nb, **options):
            made.update(options)

        def execute(self, **_):
            return None

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    assert runner.execute(nbformat.v4.new_notebook(), limits=Limits(startup_seconds=60), cwd=".") == 0
    assert made["raise_on_iopub_timeout"] and made["iopub_timeout"] == made["timeout"] == 300, made
