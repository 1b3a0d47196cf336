"""Edits made outside the server (an editor, `git pull`, Obsidian) reach the index.

A watchdog observer collects the vault-relative paths of page files and folders that
were created, changed, deleted or moved. One worker thread waits until the events have
been quiet for `debounce` seconds (but no longer than `max_delay` after the first one)
and hands the whole batch to `apply_external_changes`, so a `git checkout`
touching hundreds of files costs one pass. That pass is idempotent by content hash, so
the server's own writes cost only a stat and a hash.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from watchdog import events
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver
from watchdog.utils import UnsupportedLibcError

from lore_mcp.vault import Vault, apply_external_changes

log = logging.getLogger(__name__)

Apply = Callable[[Vault, list[str]], object]
ObserverFactory = Callable[[], BaseObserver]
NATIVE_FIRST: tuple[ObserverFactory, ...] = (Observer, PollingObserver)
POLLING_ONLY: tuple[ObserverFactory, ...] = (PollingObserver,)

MAX_DELAY = 2.0
READY_POLL = 0.1
ATTEMPTS = 3
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
# `.lore/` included; handling those made a first index of 10k pages with the watcher on
# take 5.2 s instead of 3.2 s (in process; 3.9 s once they were not asked for).
EVENTS_ON_CLOSE = [e for e in EVENTS if e is not events.FileModifiedEvent]


def wanted(rel_path: str, is_directory: bool) -> bool:
    """True for page files and folders; False for dot-paths, temp files, other files."""
    parts = rel_path.split("/")
    if not rel_path or rel_path == "." or any(p.startswith(".") for p in parts):
        return False
    if is_directory:
        return True
    name = parts[-1]
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


class VaultWatcher:
    """A running watcher: an observer thread and one debouncing worker thread."""

    def __init__(self, vault: Vault, apply: Apply, debounce: float, max_delay: float):
        self._vault = vault
        self._apply = apply
        self._debounce = debounce
        self._max_delay = max(max_delay, debounce)
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._first = self._last = 0.0
        self._stopping = False
        self._failures = 0
        self._observer: BaseObserver | None = None
        self._worker = threading.Thread(target=self._run, name="lore-watcher", daemon=True)

    def add(self, paths: Iterable[str]) -> None:
        """Queue vault-relative paths for the next batch."""
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._first = now
            self._pending.update(paths)
            self._last = now
            self._cond.notify()

    def stop(self) -> None:
        """Stop the observer and the worker and wait for both; safe to call twice.
        Changes still pending are left to the next start-up's index pass."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join()
        if self._worker.is_alive() and self._worker is not threading.current_thread():
            self._worker.join()

    def start(self, factories: Sequence[ObserverFactory] = NATIVE_FIRST) -> None:
        """Start the worker, then the first of `factories` that starts."""
        self._worker.start()
        try:
            self._observer = _Handler(self._vault.root, self.add).observe(factories)
        except BaseException:
            self.stop()
            raise

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            if not self._wait_ready():
                return
            try:
                self._apply(self._vault, batch)
                self._failures = 0
            except Exception:
                self._failed(batch)

    def _failed(self, batch: list[str]) -> None:
        """Log the error; retry the batch with the next one, a few times at most."""
        self._failures += 1
        if self._failures < ATTEMPTS:
            log.exception("could not apply outside changes to %d paths; will retry", len(batch))
            self.add(batch)
            return
        log.exception("could not apply outside changes to %s; giving up", ", ".join(batch[:5]))
        self._failures = 0

    def _next_batch(self) -> list[str] | None:
        """Block until a batch is due; None once stopping."""
        with self._cond:
            while not self._stopping:
                if not self._pending:
                    self._cond.wait()
                    continue
                due = min(self._last + self._debounce, self._first + self._max_delay)
                left = due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                batch = collapse(self._pending)
                self._pending.clear()
                return batch
            return None

    def _wait_ready(self) -> bool:
        """Wait for the first index pass; False if asked to stop meanwhile."""
        while not self._vault.ready.wait(READY_POLL):
            with self._cond:
                if self._stopping:
                    return False
        return True


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


def _reporting_closes() -> tuple[type[BaseObserver], ...]:
    """The observers that report a file closed after writing: inotify's, on Linux."""
    try:
        from watchdog.observers.inotify import InotifyObserver
    except (ImportError, UnsupportedLibcError):  # not Linux
        return ()
    return (InotifyObserver,)


def start_watcher(
    vault: Vault,
    debounce: float = 0.5,
    *,
    max_delay: float = MAX_DELAY,
    apply: Apply = apply_external_changes,
    polling: bool = False,
) -> VaultWatcher:
    """Watch the vault and apply outside edits in debounced batches; sets
    `vault.watcher`. `polling` skips native file events (network drives)."""
    watcher = VaultWatcher(vault, apply, debounce, max_delay)
    watcher.start(POLLING_ONLY if polling else NATIVE_FIRST)
    vault.watcher = watcher
    return watcher
