"""The only places the tool changes nbgrader's own behaviour: two patches, each with its reason and nbgrader's issue.

`apply` installs both, once (idempotent); `tfperf_lab.grading.settings` calls it when it is imported, which every
grading path does first (the tool's in-process grading, ``autograder/nbgrader_config.py`` for the formgrader and plain
``nbgrader`` commands, the exchange). No other module of the tool assigns into nbgrader (a test greps for it).

1. ``nbgrader.utils.setenv``: nbgrader sets ``NBGRADER_EXECUTION`` around each execution and deletes it afterwards
   (introduced by nbgrader PR #1425). Two autogrades overlapping in threads of one process, as the tool grades two
   workers at once, delete it twice (KeyError). nbgrader does not autograde in parallel itself (issue #174, open since
   2015), so nothing upstream covers this; `shared_setenv` lets the first to enter set it and the last to leave restore
   it. No kernel starts in this process (the sandbox gives its kernel an environment of its own), so the shared value
   reaches no student code.
2. ``nbgrader.api.get_alembic_version``: when nbgrader creates a gradebook it asks the ``alembic`` command for the
   schema's revision (nbgrader PR #764 introduced alembic migrations): a subprocess of about 0.4 s that fails unless
   the environment's ``bin`` folder is on PATH (a venv used without activating it, as the README's commands do).
   `alembic_head` answers once, in-process, from alembic's Python API. No nbgrader issue asks for this yet.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

_ENVIRONMENT = threading.Lock()
_SETTERS: dict[str, list] = {}
_APPLIED = threading.Event()


@contextlib.contextmanager
def shared_setenv(**values: str):
    """nbgrader's ``utils.setenv``, safe when several autogrades run in threads of one process (patch 1 above)."""
    with _ENVIRONMENT:
        for key, value in values.items():
            users = _SETTERS.setdefault(key, [0, os.environ.get(key)])
            if users[0] == 0:
                users[1] = os.environ.get(key)
                os.environ[key] = value
            users[0] += 1
    try:
        yield
    finally:
        with _ENVIRONMENT:
            for key in values:
                users = _SETTERS[key]
                users[0] -= 1
                if users[0] == 0:
                    if users[1] is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = users[1]


@functools.cache
def alembic_head() -> str:
    """The gradebook schema's alembic revision, from alembic's Python API (patch 2 above)."""
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:///:memory:") as ini:
        return ScriptDirectory.from_config(AlembicConfig(ini)).get_current_head()


def apply() -> None:
    """Install both patches (once)."""
    if _APPLIED.is_set():
        return
    import nbgrader.api
    from nbgrader import utils

    utils.setenv = shared_setenv
    nbgrader.api.get_alembic_version = alembic_head
    _APPLIED.set()
