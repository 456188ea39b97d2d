"""Grading beyond one machine: each staged submission's sandbox run (`tfperf_lab.grading.job.Job`) on a Dask cluster.

``tfperf-lab grade FOLDER --cluster tcp://SCHEDULER:8786`` stages every submission here, then sends each one's job
to a worker of a Dask distributed cluster (`distributed`; deploy it on Slurm or PBS with ``dask-jobqueue``, on
Kubernetes with ``dask-kubernetes``, beside a JupyterHub with ``dask-gateway``). A worker runs the same sandbox and
judge as a local grading, on its own cores, with the course folder at the same path as here (a shared file system, or
the same clone) and bubblewrap installed; it sends back the executed notebook and the grader's verdicts, and only this
machine writes the gradebook, the CSV and the feedback. A worker that dies while it grades loses nothing: the scheduler
runs the job again on another worker, and the submission's row says it was graded again; the scratch folder it left is
swept by the next job on that machine.

Every worker is checked before it is given a job (`check_worker`: the course at the same path, its solutions, a working
sandbox, a cgroup freezer, the data folder ``TFPERF_DATA`` names): a worker that fails is refused, named with its
reasons on the grader's output, and never used; a worker that joins later is checked when it is first seen. When no
worker passes, every job fails as the grading machine's fault (its row says so, nothing is saved as finished, the
command exits non-zero), and the same command grades them once the workers are fixed.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import socket
import sys
import uuid

from ..course import scratch
from ..course.config import DATA_VARIABLE
from .job import Job, JobDone, run_job

SCRATCH_PREFIX = "tfperf-job-"


def _on_worker(job: Job) -> JobDone:
    """The job as a worker runs it: in a scratch folder of its own (named for the worker's pid, so a killed worker's
    folder is swept by the next job), its result named for where it ran."""
    scratch.sweep(SCRATCH_PREFIX)
    folder = scratch.make(SCRATCH_PREFIX)
    try:
        done = run_job(dataclasses.replace(job, scratch=str(folder)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    done.where = socket.gethostname()
    return done


def check_worker(course_root: str, backend: str = "auto") -> list[str]:
    """What this machine lacks to grade the course at ``course_root`` with ``backend`` (empty: nothing): run on each
    worker by `DaskExecutor` before it gets a job."""
    from ..course import Course, CourseNotFound
    from ..isolation import backends, cgroups

    try:
        course = Course.find(course_root)
    except CourseNotFound as error:
        return [f"course: {error} (start the worker where the course is at the same path: a shared file system or the same clone)"]
    problems = []
    if not course.sources.is_dir():
        problems.append(f"solutions: no {course.sources} here (the reference process runs the instructor's source)")
    try:
        backends.backend(backend)
    except backends.SandboxUnavailable as error:
        problems.append(f"sandbox: {error}")
    frozen = cgroups.freezer_problem() if sys.platform.startswith("linux") else "no cgroups outside Linux"
    if frozen:
        problems.append(f"freezer: {frozen} (run the worker as root, or in a cgroup delegated to it, e.g. systemd-run --user --scope -p Delegate=yes)")
    data = os.environ.get(DATA_VARIABLE)
    if data and not pathlib.Path(data).is_dir():
        problems.append(f"data: TFPERF_DATA names {data}, which is not a folder here")
    return problems


def _deaths(dask_scheduler, key: str) -> int:
    """How many workers died while running this task (the scheduler's count), 0 when it is gone."""
    task = dask_scheduler.tasks.get(key)
    return int(getattr(task, "suspicious", 0) or 0) if task is not None else 0


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be used (no ``distributed``, no scheduler answering, or no worker that passed its check)."""


class DaskExecutor:
    """Jobs sent to a Dask cluster: a grading run hands it to every job (`tfperf_lab.grading.job.run`, through
    `SandboxedExecute.executor`)."""

    def __deepcopy__(self, memo) -> "DaskExecutor":  # a handle on the cluster, not a value: traitlets copies config values
        return self

    def __init__(self, address: str, *, timeout: float = 30.0):
        try:
            from distributed import Client
        except ImportError:
            raise ClusterUnavailable("grading on a cluster needs the 'distributed' package: pip install -e '.[cluster]'") from None
        self.address = address
        self.checked: dict[str, list[str]] = {}  # worker address -> what it lacks (empty: it may grade)
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            raise ClusterUnavailable(f"no Dask scheduler answered at {address} within {timeout:g} s ({type(error).__name__}: "
                                     f"{error}); nothing was graded") from None

    @property
    def slots(self) -> int:
        """Jobs the cluster runs at once: its workers' threads."""
        return max(1, sum(self.client.nthreads().values()))

    def healthy(self, job: Job) -> list[str]:
        """The workers that passed `check_worker` for ``job``'s course and backend; a worker not seen before is checked
        now, and one that fails is named on stderr once. Raises `ClusterUnavailable` when none passed."""
        workers = list(self.client.scheduler_info().get("workers", {}))
        new = [address for address in workers if address not in self.checked]
        if new:
            found = self.client.run(check_worker, job.course_root, job.backend, workers=new, on_error="return")
            for address in new:
                answer = found.get(address, ["did not answer its check"])
                problems = answer if isinstance(answer, list) else [f"its check failed: {type(answer).__name__}: {answer}"]
                self.checked[address] = problems
                if problems:
                    print(f"tfperf-lab: refused grading worker {address}: " + "; ".join(problems), file=sys.stderr)
        ready = [address for address in workers if not self.checked.get(address)]
        if not ready:
            reasons = sorted({problem for address in workers for problem in self.checked.get(address, [])})
            raise ClusterUnavailable(f"no worker of the cluster at {self.address} can grade: " + ("; ".join(reasons) or "it has no worker"))
        return ready

    def run(self, job: Job) -> JobDone:
        ready = self.healthy(job)
        future = self.client.submit(_on_worker, job, key=f"tfperf-{job.student}-{job.lesson_id}-{uuid.uuid4().hex[:8]}", pure=False,
                                    workers=ready, allow_other_workers=False)
        try:
            done = future.result()
            deaths = self.client.run_on_scheduler(_deaths, key=future.key)
        finally:
            future.release()
        done.attempts = 1 + deaths
        return done

    def close(self) -> None:
        self.client.close()
