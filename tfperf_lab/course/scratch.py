"""Scratch folders named for the process that made them, and the sweep that removes those of processes that are gone.

A grading process makes folders under the temporary directory (a judge's sockets, ``tfperf-judge-<pid>-XXXX``; a
cluster worker's job, ``tfperf-job-<pid>-XXXX``) and removes them when it is done. One that is killed (SIGKILL, the OOM
killer, a cluster worker lost) leaves them; the next one of its kind sweeps those whose process is dead (`sweep`).
Folders of live processes (another grading run on this machine) and other users' folders are never touched.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile


def make(prefix: str, root: str | None = None) -> pathlib.Path:
    """A new folder ``<prefix><pid>-XXXX`` under ``root`` (default: the temporary directory)."""
    return pathlib.Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


def sweep(prefix: str, root: pathlib.Path | str | None = None) -> list[pathlib.Path]:
    """Remove the folders ``<prefix><pid>-*`` under ``root`` that this user owns and whose process is gone; returns
    those removed."""
    root = pathlib.Path(root or tempfile.gettempdir())
    removed = []
    for folder in sorted(root.glob(f"{prefix}*-*")):
        pid = folder.name[len(prefix):].split("-", 1)[0]
        try:
            owned = folder.is_dir() and not folder.is_symlink() and folder.lstat().st_uid == os.geteuid()
        except OSError:
            continue
        if not owned or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its process is alive
        except PermissionError:
            continue  # alive, another user's
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
