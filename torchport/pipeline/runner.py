"""Migrate many files in memory: read them, skip what no rule can match, reuse the cache, parse the rest
in worker processes. Nothing is written here.

Parsing happens in worker processes, never in the caller's: LibCST's native parser can crash the
process on pathological input, and a worker that dies costs only the file it was working on (the
files still pending are retried one per process, so the culprit is found and reported).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import NamedTuple

from torchport.config import DEFAULT, Settings
from torchport.pipeline import cache as cache_module
from torchport.pipeline import programs, project
from torchport.pipeline.engine import (
    migrate_source,
    needs_parse,
    read_file,
    read_source,
)
from torchport.pipeline.files import Found, naming_files_key
from torchport.pipeline.notebooks import NotebookResult, is_notebook, not_writable, read_notebook
from torchport.results import AVOID_BEFORE, AVOID_IN_MAIN, IMPORTED, KEPT, OWN, PORTED_FLAG, FileResult
from torchport.style import style_for

# progress(total) -> a context manager giving advance(); see report.progress_bar.
Progress = Callable[[int], AbstractContextManager[Callable[[], None]]]


class Directive(NamedTuple):
    """What the project pass tells a file, for its second migration (see `torchport.pipeline.engine.migrate_source`)."""

    hold: str | None = None
    avoid_mps: str | None = None
    gates: frozenset[str] = frozenset()
    reached: bool = False  # a ported program reaches the file: its DDP ids and devices are ported, named CUDA or not
    unused: frozenset[str] = frozenset()  # its top-level definitions no program of the project runs


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _context() -> multiprocessing.context.BaseContext:
    # fork is cheap (the parent has already imported LibCST) and the parent is single-threaded
    # when the workers start; elsewhere keep the platform's default (spawn on macOS and Windows).
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


# Blocked while the workers are forked, until each has set its handlers (`_worker_init`): a worker the parent ends
# before that would otherwise run the parent's SIGTERM handler, which raises KeyboardInterrupt (a traceback).
_STOPPING = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}


def _worker_init() -> None:
    # Ctrl-C in a terminal reaches the whole process group: the parent alone handles it, and
    # ends the workers with SIGTERM, which must kill them whatever handler the parent had when
    # it forked them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)


def _failed(result: FileResult, reason: str) -> FileResult:
    result.migrated = None
    result.error = f"internal error: {reason}; file left unchanged"
    return result


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel what has not started and end the workers (Ctrl-C must not wait)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # no public API before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        if process.is_alive():
            process.terminate()
    for process in workers:
        process.join(timeout=5)


def run(
    found: Sequence[Found],
    settings: Settings = DEFAULT,
    *,
    jobs: int = 0,
    cache: cache_module.Cache | None = None,
    progress: Progress | None = None,
) -> list[FileResult]:
    """Migrate every file of ``found`` in memory; one result each, in the same order.

    Args:
        found: the files, as `torchport.pipeline.files.discover` yields them.
        settings: the run's settings; per-file ignores are applied per file.
        jobs: worker processes (0: one per core).
        cache: results to reuse and to fill; None for no cache.
        progress: shows how many of the files to parse are done (None: nothing shown).

    A file's failure is its result's ``error``. This function raises only what interrupts the run
    (KeyboardInterrupt, or what the caller's signal handlers raise), after stopping the workers.
    """
    with project.fewer_collections():
        return _run(found, settings, jobs, cache, progress)


def _run(found: Sequence[Found], settings: Settings, jobs: int, cache: cache_module.Cache | None,
         progress: Progress | None) -> list[FileResult]:
    results: list[FileResult] = []
    keys: dict[int, str | None] = {}  # index -> cache key, for the files to parse
    entries: dict[int, str] = {}  # index -> cache key, for every file read
    for index, item in enumerate(found):
        if item.problem:
            results.append(FileResult(path=item.path, display=item.display, error=item.problem))
            continue
        result, data = read_notebook(item.path, item.display) if is_notebook(item.path) else read_file(
            item.path, item.display)
        results.append(result)
        if data is None:
            continue
        entry = None
        if cache is not None:
            entry = cache_module.key(data, settings.for_file(item.path), style_for(item.path))
            entries[index] = entry
        if cache is not None and entry is not None and cache.get(entry, result):
            continue
        if not needs_parse(data):
            if cache is not None and entry is not None:  # remembered, so that a warm run loads no rule at all
                cache.put(entry, result)
            continue
        if isinstance(result, NotebookResult) and (problem := not_writable(result)) is not None:
            result.error = problem  # `--apply` could not write it back: every mode says so (not cached)
            continue
        keys[index] = entry

    _migrate(keys, results, settings, jobs, _storing(results, keys, cache), progress)
    # what the decisions read beyond the run's files (configs naming modules, C++ sources): one walk for the keys
    # below
    texts = naming_files_key([r.path for r in results]) if cache is not None else ""
    _project_pass(results, settings, jobs, cache, entries, texts)
    _leave(results, cache, entries, f"programs{texts}", programs.left_whole, programs.CUDA_ONLY_LIBRARY_TAG)
    _leave(results, cache, entries, f"fakes{texts}", programs.faked_by_tests, programs.FAKES_CUDA_TAG)
    _leave(results, cache, entries, f"amp{texts}", programs.cpu_only_amp, programs.CUDA_ONLY_TAG)
    _leave(results, cache, entries, f"follow{texts}", programs.kept_off_accelerators, programs.CUDA_ONLY_TAG)
    named = {i for i, item in enumerate(found) if item.named}  # a file the user names is ported, reached or not

    def unreached(results: list[FileResult]) -> dict[int, str]:
        from torchport.pipeline.unused import unreached_modules  # here: a warm run reads the decisions

        return unreached_modules(results, named)

    _leave(results, cache, entries, f"unreached{sorted(named)}{texts}", unreached, programs.UNREACHED_TAG)
    return results


def _leave(results: list[FileResult], cache: cache_module.Cache | None, entries: dict[int, str], kind: str,
           decide: Callable[[list[FileResult]], Mapping[int, str]], tag: str) -> None:
    """Leave as written the files ``decide`` names (`torchport.pipeline.programs.leave`, citing ``tag``); the
    decision reads every file of the run, so it is cached under the keys of all of them (a warm run reads none)."""
    project_key = _project_key(results, entries, kind) if cache is not None else None
    if cache is not None and project_key is not None:
        cached = cache.get_decisions(project_key)
        if cached is not None:
            by_display = {r.display: i for i, r in enumerate(results)}
            programs.leave(results, {by_display[d]: why for d, why in cached.items() if d in by_display}, tag)
            return
    left = decide(results)
    if cache is not None and project_key is not None:
        cache.put_decisions(project_key, {results[i].display: why for i, why in left.items()})
    programs.leave(results, left, tag)


def _project_pass(results: list[FileResult], settings: Settings, jobs: int, cache: cache_module.Cache | None,
                  entries: dict[int, str], texts: str = "") -> None:
    """Migrate again, each with what the project tells it, the files that use CUDA gates other modules define
    (`torchport.codemods.analysis.gates`), the files whose device choices other files decide
    (`torchport.pipeline.project`) and the entry points of programs that MPS cannot run
    (`torchport.pipeline.programs`); each step reads what the one before made. A file's result depends only on its
    final directive, so a warm run of an unchanged project reads the directives and every result from the cache.
    ``texts``: `naming_files_key` of the run, which the dynamic lookups read, for the cache key."""
    project_key = _project_key(results, entries, f"directives{texts}")
    if cache is not None and project_key is not None:
        cached = cache.get_decisions(project_key)
        if cached is not None:
            by_display = {r.display: i for i, r in enumerate(results)}
            told = {by_display[d]: _directive(text) for d, text in cached.items() if d in by_display}
            _again(results, told, settings, jobs, cache)
            return
    gates = programs.gate_users(results)
    for index, names in programs.storage_gates(results).items():  # `.cuda()` on a storage another module hands on
        gates[index] = gates.get(index, frozenset()) | names
    for index, names in programs.ported_flags(results).items():  # `args.use_gpu = torch.cuda.is_available() ...`
        gates[index] = gates.get(index, frozenset()) | {f"{PORTED_FLAG}{name}" for name in names}
    from torchport.pipeline.unused import imported_scripts, own_scripts  # here: a warm run reads the directives

    for index in imported_scripts(results):  # calls of other modules reach its functions' defaults
        gates[index] = gates.get(index, frozenset()) | {IMPORTED}
    _again(results, {index: Directive(gates=names) for index, names in gates.items()}, settings, jobs, cache)

    own = own_scripts(results)
    for index in own:  # only its own code calls a script's functions: told with the next directive it gets
        gates[index] = gates.get(index, frozenset()) | {OWN}
    holds = project.holds(results)
    _again(results, {index: Directive(reason, None, gates.get(index, frozenset())) for index, reason in holds.items()},
           settings, jobs, cache)
    avoids, demos = programs.avoid_mps(results)
    # a script whose own text gave it the call (Bag-of-Tricks-for-AT's train_cifar.py: DataParallel) too
    called = {i for i, r in enumerate(results) if r.rewrites.get("TP019")} - avoids.keys()
    picked = programs.picked_on_import(results, avoids.keys() | called)
    for index, line in picked.items():  # `tp.avoid_mps` goes above that import
        gates[index] = gates.get(index, frozenset()) | {f"{AVOID_BEFORE}{line}"}
    for index in demos:  # a module with a demo `__main__` block: the call goes first in that block
        gates[index] = gates.get(index, frozenset()) | {AVOID_IN_MAIN}
    kept = programs.kept_cuda_or_cpu(results, avoids)
    for index, why in kept.items():  # only programs kept CUDA-or-CPU reach it: its AMP and idioms stay CUDA's
        gates[index] = gates.get(index, frozenset()) | {f"{KEPT}{why}"}
    _again(results, {index: Directive(holds.get(index), avoids.get(index), gates.get(index, frozenset()))
                     for index in {*avoids, *kept, *(picked.keys() & called)}}, settings, jobs, cache)
    retold = {*holds, *avoids, *kept, *(picked.keys() & called)}  # the modules told something again
    if kept or own & avoids.keys():  # a keep whose program the port now changes nowhere else (a choice now kept
        # too, a device read only where CUDA runs): the program runs as written, CUDA-or-CPU
        dropped = programs.lone_keeps(results, avoids)
        for index in dropped:
            del avoids[index]
        _again(results, {index: Directive(holds.get(index), None, gates.get(index, frozenset())) for index in dropped},
               settings, jobs, cache)
    reached = programs.unnamed_reached(results)
    retold |= reached
    _again(results, {index: Directive(holds.get(index), avoids.get(index), gates.get(index, frozenset()), True)
                     for index in reached}, settings, jobs, cache)
    # imported here: a warm run reads the directives
    from torchport.pipeline.unused import passed_defaults, unread_globals, unused_definitions, unused_methods

    unused = unused_definitions(results)
    for more in (unread_globals(results), passed_defaults(results), unused_methods(results)):
        for index, names in more.items():
            unused[index] = unused.get(index, frozenset()) | names
    for index in own - retold:  # not yet told it is its own
        unused.setdefault(index, frozenset())
    _again(results, {index: Directive(holds.get(index), avoids.get(index), gates.get(index, frozenset()),
                                      index in reached, names) for index, names in unused.items()},
           settings, jobs, cache)
    idle = programs.lone_keeps(results, avoids, every=True)  # the steps since left all else of its program
    for index in idle:
        del avoids[index]
    _again(results, {index: Directive(holds.get(index), None, gates.get(index, frozenset()), index in reached,
                                      unused.get(index, frozenset())) for index in idle}, settings, jobs, cache)
    if cache is not None and project_key is not None:
        final = {i: Directive(holds.get(i), avoids.get(i), gates.get(i, frozenset()), i in reached,
                              unused.get(i, frozenset()))
                 for i in {*gates, *holds, *avoids, *reached, *unused}}
        cache.put_decisions(project_key, {results[i].display: json.dumps([d.hold, d.avoid_mps, sorted(d.gates),
                                                                          d.reached, sorted(d.unused)])
                                          for i, d in final.items()})


def _directive(text: str) -> Directive:
    hold, avoid, gates, reached, unused = json.loads(text)
    return Directive(hold, avoid, frozenset(gates), reached, frozenset(unused))


def _project_key(results: list[FileResult], entries: dict[int, str], kind: str) -> str | None:
    """A key for a decision that reads every file of the run (None when some file has no cache entry)."""
    if len(entries) != sum(r.original is not None for r in results):
        return None
    joined = "\0".join(f"{results[i].display}\0{entries[i]}" for i in sorted(entries))
    return hashlib.sha256(f"{kind}\0{joined}".encode()).hexdigest()


def _again(results: list[FileResult], directives: Mapping[int, Directive], settings: Settings, jobs: int,
           cache: cache_module.Cache | None) -> None:
    """Migrate the files of ``directives`` again, each with what the project pass tells it; cached under a key
    that holds the directive, so that a warm run parses none of them."""
    keys: dict[int, str | None] = {}
    for index, (hold, avoid, gates, reached, unused) in directives.items():
        result = results[index]
        entry = None
        if cache is not None:
            told = f"{hold}\0{avoid}\0{sorted(gates)}" + ("\0reached" if reached else "") + (
                f"\0unused {sorted(unused)}" if unused else "")
            entry = cache_module.key(f"{told}\0{result.original}".encode(), settings.for_file(result.path),
                                     style_for(result.path))
            if cache.get(entry, result):
                result.hold, result.avoid_mps, result.gates = hold, avoid, gates
                continue
        keys[index] = entry

    _migrate(keys, results, settings, jobs, _storing(results, keys, cache), None, directives)


def _storing(results: list[FileResult], keys: Mapping[int, str | None],
             cache: cache_module.Cache | None) -> Callable[[int, FileResult], None]:
    """What to do with each migrated file: put it in ``results``, and in the cache under its key."""
    def done(index: int, result: FileResult) -> None:
        results[index] = result
        entry = keys[index]
        if cache is not None and entry is not None:
            cache.put(entry, result)

    return done


def _migrate(
    keys: dict[int, str | None],
    results: list[FileResult],
    settings: Settings,
    jobs: int,
    done: Callable[[int, FileResult], None],
    progress: Progress | None,
    directives: Mapping[int, Directive] | None = None,
) -> None:
    """Migrate ``results[i]`` for each index of ``keys`` in worker processes, one retry each after a crash."""
    if not keys:
        return
    # Biggest files first, so that no worker is left with a big one at the end.
    todo = sorted(keys, key=lambda index: -len(results[index].original or ""))
    workers = max(1, min(jobs or default_jobs(), len(todo)))
    crashed = _in_pool(todo, results, settings, workers, done, progress(len(todo)) if progress else None,
                       directives)
    for index in crashed:  # one file per process: a crash now is that file's own
        if _in_pool([index], results, settings, 1, done, None, directives):
            done(index, _failed(results[index], "the worker process died while migrating this file"))


def run_bytes(data: bytes, path: Path, display: str, settings: Settings = DEFAULT) -> FileResult:
    """Migrate one file given as bytes (standard input): ``path`` decides its settings and whether it is
    a notebook; nothing is read from disk or cached. Parsed in a worker process, as `run` does."""
    if is_notebook(path):
        result: FileResult
        result, source = read_notebook(path, display, data=data)
    else:
        result, source = FileResult(path=path, display=display), data
        try:
            text, result.encoding = read_source(data)
            result.original = result.migrated = text
        except (SyntaxError, UnicodeDecodeError) as exc:
            result.error, source = f"cannot decode: {exc}", None
    if source is None or not needs_parse(source):
        return result
    results = [result]

    def done(index: int, new: FileResult) -> None:
        results[index] = new

    if _in_pool([0], results, settings, 1, done, None):
        return _failed(result, "the worker process died while migrating this file")
    return results[0]


def _in_pool(
    indices: Sequence[int],
    results: list[FileResult],
    settings: Settings,
    workers: int,
    done: Callable[[int, FileResult], None],
    bar: AbstractContextManager[Callable[[], None]] | None,
    directives: Mapping[int, Directive] | None = None,
) -> list[int]:
    """Migrate ``results[i]`` for each index in a pool of ``workers``; the indices whose worker died."""
    crashed: list[int] = []
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_worker_init)
    try:
        futures: dict[Future[FileResult], int] = {}
        masked = hasattr(signal, "pthread_sigmask")
        before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING) if masked else set()
        try:
            for index in indices:  # with fork, the workers start here, before the bar's thread does
                try:
                    told = (directives or {}).get(index, Directive())
                    futures[pool.submit(migrate_source, results[index], settings, *told)] = index
                except BrokenProcessPool:
                    crashed.append(index)
        finally:
            if masked:  # a Ctrl-C that came meanwhile is delivered here
                signal.pthread_sigmask(signal.SIG_SETMASK, before)
        with bar or nullcontext(lambda: None) as advance:
            for future in as_completed(futures):
                index = futures[future]
                try:
                    result = future.result()
                except BrokenProcessPool:
                    crashed.append(index)
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                    result = _failed(results[index], f"{type(exc).__name__}: {exc}")
                done(index, result)
                advance()
    except BaseException:
        _terminate(pool)
        raise
    pool.shutdown(wait=True)
    return crashed
