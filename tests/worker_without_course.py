"""Preloaded into a Dask worker by tests/grading/test_cluster.py (``dask worker --preload``): a worker started where the course is
not, as on a node whose file system lacks the course's path."""

from tfperf_lab.course import Course, CourseNotFound


def _nowhere(cls, start=None):
    raise CourseNotFound(f"no TF Performance Lab course in {start} or its parents")


Course.find = classmethod(_nowhere)
