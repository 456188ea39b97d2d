"""The ways a job's command line runs isolated: bubblewrap (the default on Linux) or none (``--no-sandbox``).

A backend is a small object (`Backend`): ``problem()`` says why it cannot run here (None when it can) and ``command()``
wraps the runner's command line. `tfperf_lab.isolation.sandbox.run` puts its launcher in front of that command line, so
the job's first process joins the job's cgroup (`tfperf_lab.isolation.cgroups`) whatever the backend; a container
engine fits the same interface (docs/layout.md, "Adding a sandbox backend", says what it takes). Inside an isolated
backend the job's folder is at `INSIDE`.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

INSIDE = pathlib.PurePosixPath("/job")


class SandboxUnavailable(RuntimeError):
    """No sandbox backend works on this machine (the message says why and what to install)."""


def _python_paths() -> list[pathlib.Path]:
    """Folders the runner's Python needs: the interpreter, the environment, and the learner library and tool if installed editable."""
    import tfperf
    import tfperf_lab

    paths = {pathlib.Path(sys.base_prefix).resolve(), pathlib.Path(sys.prefix).resolve(),
             pathlib.Path(tfperf.__file__).resolve().parent, pathlib.Path(tfperf_lab.__file__).resolve().parent}
    executable = pathlib.Path(sys.executable).resolve()
    paths.add(executable.parent.parent)
    # an editable package's folder lies beside the course; everything under the environment is covered by it
    roots = sorted(paths, key=lambda p: len(p.parts))
    return [p for i, p in enumerate(roots) if not any(p.is_relative_to(q) for q in roots[:i])]


class Backend:
    """A way to run a command in isolation; see the module docstring."""

    name = "base"
    isolated = True

    def problem(self) -> str | None:
        raise NotImplementedError

    def command(self, job: pathlib.Path, inner: list[str], env: dict[str, str], data: pathlib.Path | None,
                binds: tuple[tuple[pathlib.Path, str], ...] = ()) -> list[str]:
        """The command line running ``inner`` isolated; ``binds`` are (host folder, path inside) mounted read-only."""
        raise NotImplementedError


class Bubblewrap(Backend):
    """bubblewrap (Debian/Ubuntu package ``bubblewrap``): unprivileged Linux namespaces, no daemon, ~10 ms to start."""

    name = "bubblewrap"

    def problem(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return "bubblewrap needs Linux"
        binary = shutil.which("bwrap")
        if binary is None:
            return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        probe = subprocess.run([binary, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"], capture_output=True,
                               text=True)
        if probe.returncode != 0:
            return f"bubblewrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
        return None

    def command(self, job: pathlib.Path, inner: list[str], env: dict[str, str], data: pathlib.Path | None,
                binds: tuple[tuple[pathlib.Path, str], ...] = ()) -> list[str]:
        # no capabilities inside, even for root: the kernel cannot trace the runner, mount, or change its limits
        args = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
                "--tmpfs", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for name in ("usr", "bin", "lib", "lib32", "lib64", "sbin"):
            top = pathlib.Path("/") / name
            if top.is_symlink():
                args += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                args += ["--ro-bind", str(top), str(top)]
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "fonts"):
            if (pathlib.Path("/etc") / name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind", str(job / "etc" / "passwd"), "/etc/passwd", "--ro-bind", str(job / "etc" / "group"), "/etc/group"]
        for path in _python_paths():
            args += ["--ro-bind", str(path), str(path)]
        if data is not None:
            args += ["--ro-bind", str(data), "/data"]
        for host, inside in binds:
            args += ["--ro-bind", str(host), inside]
        args += ["--ro-bind", str(job / "in"), str(INSIDE / "in"), "--bind", str(job / "out"), str(INSIDE / "out"),
                 "--bind", str(job / "home"), str(INSIDE / "home"), "--chdir", str(INSIDE / "home" / "lesson")]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args + ["--", *inner]


class NoSandbox(Backend):
    """No isolation (``--no-sandbox``, stated in the report and the CSV): a clean environment and its own job folder only."""

    name = "none"
    isolated = False

    def problem(self) -> str | None:
        return None

    def command(self, job: pathlib.Path, inner: list[str], env: dict[str, str], data: pathlib.Path | None,
                binds: tuple[tuple[pathlib.Path, str], ...] = ()) -> list[str]:
        return inner


BACKENDS = {"bubblewrap": Bubblewrap, "none": NoSandbox}


def backend(name: str = "auto") -> Backend:
    """The named backend, or for ``auto`` the first that works here.

    Raises:
        SandboxUnavailable: when none works, with each backend's reason and the way out.
    """
    if name != "auto":
        chosen = BACKENDS[name]()
        reason = chosen.problem()
        if reason:
            raise SandboxUnavailable(f"the {name} sandbox cannot run here: {reason}")
        return chosen
    reasons = []
    for candidate in (Bubblewrap(),):
        reason = candidate.problem()
        if reason is None:
            return candidate
        reasons.append(reason)
    raise SandboxUnavailable("no sandbox for student code works here (" + "; ".join(reasons) + "). Install one, or grade without "
                             "isolation with --no-sandbox (the report and the CSV then say so)")
