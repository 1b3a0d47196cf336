"""Edits made outside the server (an editor, `git pull`, Obsidian) reach the index.

A watchdog observer collects the vault-relative paths of page files and folders that
were created, changed, deleted or moved. One worker thread waits until the events have
been quiet for `debounce` seconds (but no longer than `max_delay` after the first one)
and hands the whole batch to `apply_external_changes`, so a `git checkout`
touching hundreds of files costs one pass. That pass is idempotent by content hash, so
the server's own writes cost only a stat and a hash.

Events can be lost: the kernel's queue overflows in a storm (watchdog only logs it),
an observer dies, a batch fails. Then the worker runs the pass a start-up runs
(`resync`: every file, a stat for those unchanged), and a batch too large to be worth
sorting is taken as a storm and gets the same pass. Every `check_every` seconds the
worker also compares the files' sizes and times with the index (`changed_on_disk`, a
stat per file and no write lock) and takes in whatever no event reported. Each change
taken in gets an audit record with door `outside` (see `vault_ops.outside`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from watchdog import events
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver
from watchdog.utils import UnsupportedLibcError

from lore_mcp.slugs import is_hidden
from lore_mcp.vault_ops import AppState, apply_external_changes, changed_on_disk, resync
from lore_mcp.vault_ops.ignore import is_ignore_file

log = logging.getLogger(__name__)

Apply = Callable[[AppState, list[str]], object]
Resync = Callable[[AppState], object]
ObserverFactory = Callable[[], BaseObserver]
NATIVE_FIRST: tuple[ObserverFactory, ...] = (Observer, PollingObserver)
POLLING_ONLY: tuple[ObserverFactory, ...] = (PollingObserver,)

MAX_DELAY = 2.0
CHECK_EVERY = 60.0  # seconds between two comparisons of the files with the index
CHECK_SHARE = 30  # the checks take at most about 1/30 of the worker's time
STORM = 2000  # paths in one batch past which a pass over every file is simpler
READY_POLL = 0.1
ATTEMPTS = 3  # a failed batch is tried again this often before a full pass takes over
MAX_BACKOFF = 30.0  # seconds, at most, between two passes after failures
OVERFLOW_LOGGER = "watchdog.observers.inotify_c"
TEMP_SUFFIXES = ("~", ".swp", ".swo", ".swx", ".tmp")
TEMP_NAMES = frozenset({"4913"})
# Folder "modified" events only say that an entry changed; the entry has its own event.
EVENTS: list[type[events.FileSystemEvent]] = [
    events.FileCreatedEvent,
    events.FileModifiedEvent,
    events.FileClosedEvent,
    events.FileDeletedEvent,
    events.FileMovedEvent,
    events.DirCreatedEvent,
    events.DirDeletedEvent,
    events.DirMovedEvent,
]
# Where a file written and closed is reported (Linux's inotify), "modified" is not asked
# for: it comes with every write() to any file under the vault, the index's own in
# `.lore/` included, and handling those slowed a first index with the watcher on.
EVENTS_ON_CLOSE = [e for e in EVENTS if e is not events.FileModifiedEvent]


def wanted(rel_path: str, is_directory: bool) -> bool:
    """True for page files, folders and ignore files (`.gitignore`, `.loreignore`);
    False for dot-paths, temp files, other files."""
    if is_ignore_file(rel_path) and not is_hidden(rel_path.rpartition("/")[0]):
        return not is_directory
    if not rel_path or is_hidden(rel_path):  # "." too
        return False

    if is_directory:
        return True
    name = rel_path.rpartition("/")[2]
    if name in TEMP_NAMES or name.endswith(TEMP_SUFFIXES) or name.startswith("#"):
        return False
    return name.lower().endswith(".md")


def collapse(paths: Iterable[str]) -> list[str]:
    """The paths sorted, without those inside a folder that is itself in the set."""
    unique = set(paths)
    return sorted(p for p in unique if not any(a in unique for a in _ancestors(p)))


def _ancestors(path: str) -> Iterator[str]:
    parts = path.split("/")
    for end in range(1, len(parts)):
        yield "/".join(parts[:end])


@dataclass(frozen=True)
class _Job:
    """What the worker does next: a batch of paths, a full pass, or the periodic check."""

    kind: Literal["batch", "full", "check"]
    paths: list[str] = field(default_factory=list)


class VaultWatcher:
    """A running watcher: an observer thread and one debouncing worker thread."""

    def __init__(
        self,
        vault: AppState,
        apply: Apply,
        debounce: float,
        max_delay: float,
        *,
        resync: Resync = resync,
        check_every: float = CHECK_EVERY,
        storm: int = STORM,
    ):
        self._vault = vault
        self._apply = apply
        self._resync = resync
        self._debounce = debounce
        self._max_delay = max(max_delay, debounce)
        self._check_every = check_every
        self._storm = storm
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._full = False  # a pass over every file is wanted
        self._first = self._last = 0.0
        self._not_before = 0.0  # after failures, the next pass waits until then
        self._next_check = time.monotonic() + check_every
        self._stopping = False
        self._failures = 0
        self._factories: Sequence[ObserverFactory] = NATIVE_FIRST
        self._observer: BaseObserver | None = None
        self._overflow = _OverflowSpotter(self)
        self._worker = threading.Thread(target=self._run, name="lore-watcher", daemon=True)

    def add(self, paths: Iterable[str]) -> None:
        """Queue vault-relative paths for the next batch."""
        with self._cond:
            self._queue(set(paths))

    def resync_soon(self, reason: str) -> None:
        """Ask for a pass over every file, debounced like a batch (events were lost)."""
        log.warning(
            "%s; every file of %s will be compared with the index", reason, self._vault.root
        )
        with self._cond:
            self._full = True
            self._queue(set())

    def _queue(self, paths: set[str]) -> None:
        now = time.monotonic()
        if not (self._pending or self._full) or not self._first:
            self._first = now
        self._pending |= paths
        self._last = now
        self._cond.notify()

    def stop(self) -> None:
        """Stop the observer and the worker and wait for both; safe to call twice.
        Changes still pending are left to the next start-up's index pass."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        logging.getLogger(OVERFLOW_LOGGER).removeHandler(self._overflow)
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join()
        if self._worker.is_alive() and self._worker is not threading.current_thread():
            self._worker.join()

    def start(self, factories: Sequence[ObserverFactory] = NATIVE_FIRST) -> None:
        """Start the worker, then the first of `factories` that starts."""
        self._factories = factories
        logging.getLogger(OVERFLOW_LOGGER).addHandler(self._overflow)
        self._worker.start()
        try:
            self._observer = _Handler(self._vault.root, self.add).observe(factories)
        except BaseException:
            self.stop()
            raise

    # -- the worker ---------------------------------------------------------------------

    def _run(self) -> None:
        while (job := self._next_job()) is not None:
            if not self._wait_ready():
                return
            try:
                self._do(job)
                self._failures = 0
            except Exception:
                self._failed(job)

    def _do(self, job: _Job) -> None:
        if job.kind == "check":
            started = time.monotonic()
            self._check()
            took = time.monotonic() - started
            with self._cond:  # on a vault so large that a check is slow, fewer checks
                self._next_check = time.monotonic() + max(self._check_every, took * CHECK_SHARE)
        elif job.kind == "full":
            self._resync(self._vault)
        else:
            self._apply(self._vault, job.paths)

    def _check(self) -> None:
        """The periodic look: a dead observer is started again (its events are lost, so
        every file is compared); files that changed unreported are taken in."""
        observer = self._observer
        if observer is not None and not observer.is_alive() and not self._stopping:
            log.warning("the file watcher of %s stopped; starting it again", self._vault.root)
            self._observer = started = _Handler(self._vault.root, self.add).observe(self._factories)
            if self._stopping:  # stop() came meanwhile and may have missed it
                started.stop()
                started.join()
                return
            self._resync(self._vault)
            return
        changed = changed_on_disk(self._vault)
        if len(changed) > self._storm:
            self._resync(self._vault)
        elif changed:
            log.info("%d files changed with no file event; taking them in", len(changed))
            self._apply(self._vault, changed)

    def _failed(self, job: _Job) -> None:
        """Log the error; try a batch again with the next one, a few times; after that
        (or when a pass over every file failed) make such a pass, later each time."""
        self._failures += 1
        what = f"{len(job.paths)} paths" if job.kind == "batch" else f"the {job.kind}"
        log.exception("could not take in outside changes (%s)", what)
        with self._cond:
            if job.kind == "batch" and self._failures < ATTEMPTS:
                self._queue(set(job.paths))
                return
            backoff = min(self._debounce * 2**self._failures, MAX_BACKOFF)
            self._not_before = time.monotonic() + backoff
            self._full = True
            self._queue(set())

    def _next_job(self) -> _Job | None:
        """Block until something is due; None once stopping."""
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                if self._pending or self._full:
                    due = min(self._last + self._debounce, self._first + self._max_delay)
                    due = max(due, self._not_before)
                    if now < due:
                        self._cond.wait(due - now)
                        continue
                    return self._take()
                if now >= self._next_check:
                    self._next_check = now + self._check_every
                    return _Job("check")
                self._cond.wait(self._next_check - now)
            return None

    def _take(self) -> _Job:
        """The pending work as one job (the lock is held)."""
        full = self._full or len(self._pending) > self._storm
        batch = collapse(self._pending)
        self._pending.clear()
        self._full = False
        self._first = 0.0
        if full:
            self._next_check = time.monotonic() + self._check_every  # this pass is one
            return _Job("full")
        return _Job("batch", batch)

    def _wait_ready(self) -> bool:
        """Wait for the first index pass; False if asked to stop meanwhile."""
        while not self._vault.ready.wait(READY_POLL):
            with self._cond:
                if self._stopping:
                    return False
        return True


class _OverflowSpotter(logging.Handler):
    """watchdog's inotify observer only logs that the kernel's event queue overflowed;
    seeing that line, the watcher makes a pass over every file."""

    def __init__(self, watcher: VaultWatcher) -> None:
        super().__init__(logging.WARNING)
        self._watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "queue overflowed" in record.getMessage():
            self._watcher.resync_soon("the kernel's queue of file events overflowed")


class _Handler(events.FileSystemEventHandler):
    """Turns watchdog events into vault-relative paths for the watcher."""

    def __init__(self, root: Path, add: Callable[[list[str]], None]):
        super().__init__()
        self._root = root
        self._add = add

    def on_any_event(self, event: events.FileSystemEvent) -> None:
        try:
            raw = [event.src_path, event.dest_path]
            rels = [self._relative(os.fsdecode(p)) for p in raw if p]
            paths = [r for r in rels if r is not None and wanted(r, event.is_directory)]
            if paths:
                self._add(paths)
        except Exception:  # an exception here would end the observer thread
            log.exception("could not handle file event %r", event)

    def observe(self, factories: Sequence[ObserverFactory]) -> BaseObserver:
        """Start the first of `factories` that starts; an OSError (the inotify watch
        limit, most likely) moves on to the next, normally polling."""
        *fallible, last = factories
        for factory in fallible:
            try:
                return self._observe(factory())
            except OSError as exc:
                log.warning("cannot get file events for %s (%s); polling instead", self._root, exc)
        return self._observe(last())

    def _observe(self, observer: BaseObserver) -> BaseObserver:
        observer.name = "lore-watcher-observer"
        watched = EVENTS_ON_CLOSE if isinstance(observer, _reporting_closes()) else EVENTS
        observer.schedule(self, str(self._root), recursive=True, event_filter=watched)
        observer.start()
        return observer

    def _relative(self, path: str) -> str | None:
        try:
            return Path(path).relative_to(self._root).as_posix()
        except ValueError:
            return None


class _EventsAtStop(logging.Filter):
    """Drops watchdog's ERROR "InotifyEmitter.queue_events() called when the thread is
    inactive". Its inotify emitter logs it when a file event is read in the instant the
    emitter is being stopped (watchdog clears the emitter's watch group before the
    emitter's thread has seen the stop), so any file written as the watcher stops (an
    editor saving, a page a tool has just written) could print it. The event is dropped,
    which is what stopping means here: changes not applied yet are left to the next
    start-up's index pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_EventsAtStop())
# watchdog 7.1's inotify thread warns (RuntimeWarning) when a folder is copied or moved in
# right after it was made: it finds the folder's watch a second time. The events that
# follow are right, and the warning's text holds the whole table of watches, kilobytes on
# one line of stderr for each such folder.
warnings.filterwarnings(
    "ignore", message="Callback with id", category=RuntimeWarning, module="watchdog"
)


def _reporting_closes() -> tuple[type[BaseObserver], ...]:
    """The observers that report a file closed after writing: inotify's, on Linux."""
    try:
        from watchdog.observers.inotify import InotifyObserver
    except (ImportError, UnsupportedLibcError):  # not Linux
        return ()
    return (InotifyObserver,)


def start_watcher(
    vault: AppState,
    debounce: float = 0.5,
    *,
    max_delay: float = MAX_DELAY,
    apply: Apply = apply_external_changes,
    resync: Resync = resync,
    check_every: float = CHECK_EVERY,
    polling: bool = False,
) -> VaultWatcher:
    """Watch the vault and apply outside edits in debounced batches, with a pass over
    every file when events were lost and a look at every file's stamp each
    `check_every` seconds; sets `vault.watcher`. `polling` skips native file events
    (network drives)."""
    watcher = VaultWatcher(
        vault, apply, debounce, max_delay, resync=resync, check_every=check_every
    )
    watcher.start(POLLING_ONLY if polling else NATIVE_FIRST)
    vault.watcher = watcher
    return watcher
