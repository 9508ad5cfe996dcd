"""Run a Python command line in a fresh process forked from one that has already imported torch.

``run([...], cwd=..., env=...)`` stands for ``subprocess.run([sys.executable, ...], capture_output=True,
text=True)`` in tests that need a fresh process for what it runs (import side effects, ``__main__``, exit
codes, environment variables read by torchport), not for ``import torch`` itself: ``import torch`` costs
about 2 CPU-seconds per interpreter, and a child forked from a multiprocessing fork server that preloaded it
costs a few milliseconds. The child sees what ``python ARGS`` would see: ``sys.argv``, ``sys.path`` (the
script's folder or the working folder, then ``PYTHONPATH``, then the interpreter's default path; a
``sitecustomize`` on ``PYTHONPATH`` runs first), the environment, warning filters (``-W``,
``PYTHONWARNINGS``), ``__main__``, atexit handlers, and the exit code of ``SystemExit`` or of an uncaught
exception. Not for code that must see torch imported after something
else (an environment variable torch reads at import), nor for interpreter options other than -W and -u.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
import traceback
import warnings
from functools import cache
from pathlib import Path


@cache
def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", __name__])
    atexit.register(_stop_server)
    return context


def _stop_server() -> None:
    """Reap the fork server at exit, so that the CPU time of its runs counts in this process's children."""
    from multiprocessing import forkserver

    forkserver._forkserver._stop()  # type: ignore[attr-defined]


@cache
def _default_path() -> tuple[str, ...]:
    """``sys.path`` of a fresh interpreter, less its first entry (the script's folder) and PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import sys; print(repr(sys.path[1:]))"], cwd="/",
                          capture_output=True, text=True, check=True, env=env)
    return tuple(eval(done.stdout))  # noqa: S307 - our own interpreter's repr of a list of str


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(args: list[str], cwd: str, env: dict[str, str], out: str, err: str, base_path: tuple[str, ...]) -> None:
    """The forked process: set up what ``python ARGS`` would see, run it, and leave with its exit code."""
    for fd, name in ((1, out), (2, err)):
        opened = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the process's own stdout, left open at exit
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    atexit._clear()  # the fork server's handlers are not this program's
    args = list(args)
    options = [o for o in env.get("PYTHONWARNINGS", "").split(",") if o]
    while args and args[0] in ("-W", "-u"):
        if args.pop(0) == "-W":
            options.append(args.pop(0))
    warnings._processoptions(options)  # type: ignore[attr-defined] - what the interpreter does with -W
    sys.path[:] = [*(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p), *base_path]
    code = 0
    try:
        if importlib.util.find_spec("sitecustomize") is not None:  # a PYTHONPATH's: site imports it at start-up
            importlib.import_module("sitecustomize")
        if args[0] == "-c":
            sys.argv = ["-c", *args[2:]]
            sys.path.insert(0, os.getcwd())
            main = type(sys)("__main__")
            sys.modules["__main__"] = main
            exec(compile(args[1], "<string>", "exec"), vars(main))  # noqa: S102 - the test's own program
        elif args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            sys.path.insert(0, str(Path(args[0]).resolve().parent))
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def run(args: list[str], *, cwd: str | Path, env: dict[str, str],
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)``, forked.

    ``args``: ``-c CODE ...``, ``-m MODULE ...`` or ``SCRIPT ...``, after any ``-W ACTION`` or ``-u``.
    ``timeout`` in seconds: the child is killed and ``subprocess.TimeoutExpired`` raised past it.
    """
    return start(args, cwd=cwd, env=env).wait(timeout)


class Started:
    """A forked run under way; ``wait()`` gives its CompletedProcess."""

    def __init__(self, args: list[str], *, cwd: str | Path, env: dict[str, str]) -> None:
        self.args = [sys.executable, *args]
        self._folder = tempfile.TemporaryDirectory(prefix="forkrun-")
        self._out, self._err = (os.path.join(self._folder.name, name) for name in ("out", "err"))
        self._process = _context().Process(
            target=_child, args=(args, str(cwd), dict(env), self._out, self._err, _default_path()))
        self._process.start()
        self._done: subprocess.CompletedProcess[str] | None = None

    def wait(self, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        if self._done is None:
            self._process.join(timeout)
            if self._process.exitcode is None:
                self._process.kill()
                self._process.join()
                self._folder.cleanup()
                raise subprocess.TimeoutExpired(self.args, timeout)
            out, err = (Path(name).read_text(errors="replace") for name in (self._out, self._err))
            self._done = subprocess.CompletedProcess(self.args, self._process.exitcode, out, err)
            self._process.close()
            self._folder.cleanup()
        return self._done

    def kill(self) -> None:
        if self._done is None and self._process.exitcode is None:
            self._process.kill()


def start(args: list[str], *, cwd: str | Path, env: dict[str, str]) -> Started:
    """Start ``run(args, ...)`` and return at once; ``.wait(timeout)`` collects it."""
    return Started(args, cwd=cwd, env=env)
