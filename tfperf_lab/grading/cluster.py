"""Grading beyond one machine: each staged submission's sandbox run (`tfperf_lab.grading.job.Job`) on a Dask cluster.

``tfperf-lab grade FOLDER --cluster tcp://SCHEDULER:8786`` stages every submission here, then sends each one's job
to a worker of a Dask distributed cluster (`distributed`; deploy it on Slurm or PBS with ``dask-jobqueue``, on
Kubernetes with ``dask-kubernetes``, beside a JupyterHub with ``dask-gateway``). A worker runs the same sandbox and
judge as a local grading, on its own cores, with the course folder at the same path as here (a shared file system, or
the same clone) and bubblewrap installed; it sends back the executed notebook and the grader's verdicts, and only this
machine writes the gradebook, the CSV and the feedback. A worker that dies while it grades loses nothing: the scheduler
runs the job again on another worker, and the submission's row says it was graded again.
"""

from __future__ import annotations

import dataclasses
import socket
import uuid

from .job import Job, JobDone, run_job


def _on_worker(job: Job) -> JobDone:
    """The job as a worker runs it: in a scratch folder of its own, named for where it ran."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tfperf-job-") as scratch:
        done = run_job(dataclasses.replace(job, scratch=scratch))
    done.where = socket.gethostname()
    return done


def _deaths(dask_scheduler, key: str) -> int:
    """How many workers died while running this task (the scheduler's count), 0 when it is gone."""
    task = dask_scheduler.tasks.get(key)
    return int(getattr(task, "suspicious", 0) or 0) if task is not None else 0


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be used (no ``distributed``, or no scheduler answering): nothing was graded."""


class DaskExecutor:
    """Jobs sent to a Dask cluster; `tfperf_lab.grading.job.executor` puts it in place for a grading run."""

    def __init__(self, address: str, *, timeout: float = 30.0):
        try:
            from distributed import Client
        except ImportError:
            raise ClusterUnavailable("grading on a cluster needs the 'distributed' package: pip install -e '.[cluster]'") from None
        self.address = address
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            raise ClusterUnavailable(f"no Dask scheduler answered at {address} within {timeout:g} s ({type(error).__name__}: "
                                     f"{error}); nothing was graded") from None

    @property
    def slots(self) -> int:
        """Jobs the cluster runs at once: its workers' threads."""
        return max(1, sum(self.client.nthreads().values()))

    def run(self, job: Job) -> JobDone:
        future = self.client.submit(_on_worker, job, key=f"tfperf-{job.student}-{job.lesson_id}-{uuid.uuid4().hex[:8]}", pure=False)
        try:
            done = future.result()
            deaths = self.client.run_on_scheduler(_deaths, key=future.key)
        finally:
            future.release()
        done.attempts = 1 + deaths
        return done

    def close(self) -> None:
        self.client.close()
