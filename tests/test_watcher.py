"""The watcher against a real observer on a temporary vault: after each kind of outside
edit, the index and the graph converge to what a fresh index of the files builds."""

from __future__ import annotations

import logging
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from conftest import write
from helpers import page_slugs, placeholder_slugs
from lore_mcp import vault_ops as engine
from lore_mcp.models import SyncReport
from lore_mcp.vault_ops import AppState
from lore_mcp.watcher import (
    ATTEMPTS,
    MAX_DELAY,
    POLLING_ONLY,
    VaultWatcher,
    collapse,
    start_watcher,
    wanted,
)

# watchdog 7.1 warns (RuntimeWarning, from its inotify thread) when a folder is moved
# into a folder created an instant before: it finds the moved folder's existing inotify
# watch a second time. The events that follow are right, but under `-W error` the
# warning would kill watchdog's shared inotify thread for the rest of the session.
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

FAST = 0.05

Snapshot = tuple[object, ...]


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll `predicate` until it holds or `timeout` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def snapshot(state: AppState) -> Snapshot:
    """What the index and the in-memory graph hold, minus sizes and times."""
    with state.lock:
        pages = sorted((r.key, r.title, r.path is None) for r in state.index.pages.all())
        nodes = sorted((n.key, n.title, n.is_placeholder) for n in state.graph.nodes())
        links = sorted(
            (k.source, k.target, k.line, k.resolved, k.ambiguous) for k in state.index.links.all()
        )
        return (
            pages,
            nodes,
            sorted(page_slugs(state)),
            sorted(placeholder_slugs(state)),
            sorted(state.graph.edges()),
            sorted(state.index.links.edges()),
            links,
        )


def fresh_snapshot(root: Path, scratch: Path) -> Snapshot:
    """The snapshot of a fresh index built from a copy of the vault's files."""
    copy = scratch / f"fresh-{time.monotonic_ns()}"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".lore"))
    state = engine.open_vault(copy)
    try:
        return snapshot(state)
    finally:
        state.close()


@dataclass
class Recorder:
    """An `apply` that records each batch, then applies it for real."""

    batches: list[list[str]] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)

    def __call__(self, state: AppState, paths: list[str]) -> SyncReport:
        self.batches.append(list(paths))
        report = engine.apply_external_changes(state, paths)
        self.reports.append(report)
        return report

    def paths(self) -> set[str]:
        return {p for batch in self.batches for p in batch}


@dataclass
class Watched:
    root: Path
    state: AppState
    recorder: Recorder
    watcher: VaultWatcher
    scratch: Path

    def converge(self) -> None:
        """Wait until index and graph equal a fresh index of the files."""
        expected = fresh_snapshot(self.root, self.scratch)
        wait_until(lambda: snapshot(self.state) == expected)
        assert snapshot(self.state) == expected


Start = Callable[..., Watched]


@pytest.fixture
def watch(vault_dir: Path, tmp_path: Path) -> Iterator[Start]:
    """Seed the vault, open it and start a watcher that records its batches."""
    opened: list[AppState] = []

    def start(
        seed: dict[str, str] | None = None, debounce: float = FAST, max_delay: float = MAX_DELAY
    ) -> Watched:
        for rel, text in (seed or {}).items():
            write(vault_dir, rel, text)
        state = engine.open_vault(vault_dir)
        opened.append(state)
        recorder = Recorder()
        watcher = start_watcher(state, debounce, max_delay=max_delay, apply=recorder)
        assert state.watcher is watcher
        return Watched(vault_dir, state, recorder, watcher, tmp_path)

    yield start
    for state in opened:
        state.close()


SEED = {
    "Home.md": "# Home\n\nSee [[Alpha]], [[Beta]] and [[notes/Gamma]].\n",
    "Alpha.md": "Alpha links [[Beta]] and [[Missing]].\n",
    "Beta.md": "Beta links back to [[Home]].\n",
    "notes/Gamma.md": "Gamma links [[Alpha]] and [[Delta]].\n",
    "notes/Delta.md": "Delta links [[Gamma]].\n",
    "notes/deep/Epsilon.md": "Epsilon links [[Home]].\n",
}


# -- pure helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "is_dir", "expected"),
    [
        ("Page.md", False, True),
        ("notes/Page.MD", False, True),
        ("notes", True, True),
        ("notes.tmp", True, True),
        (".lore/lore.db", False, False),
        (".lore", True, False),
        (".git/HEAD", False, False),
        ("notes/.hidden/Page.md", False, False),
        (".Page.md", False, False),
        (".lore-tmp-x1y2.md~", False, False),
        ("Page.md~", False, False),
        ("notes/.Page.md.swp", False, False),
        ("Page.md.swp", False, False),
        ("4913", False, False),
        ("Page.md.tmp", False, False),
        ("#Page.md#", False, False),
        ("picture.png", False, False),
        ("", True, False),
        (".", True, False),
    ],
)
def test_wanted(rel: str, is_dir: bool, expected: bool) -> None:
    assert wanted(rel, is_dir) is expected


def test_collapse_drops_paths_inside_other_paths() -> None:
    paths = ["b/x.md", "a", "a/b.md", "a/c/d.md", "ab.md", "b/x.md", "a b/c.md"]
    assert collapse(paths) == ["a", "a b/c.md", "ab.md", "b/x.md"]


# -- outside edits ---------------------------------------------------------------------------


def test_created_page_is_indexed_and_promotes_placeholder(watch: Start) -> None:
    w = watch(SEED)
    assert "missing" in placeholder_slugs(w.state)
    write(w.root, "Missing.md", "Now it exists and links [[Home]].\n")
    w.converge()
    assert "missing" in page_slugs(w.state)


def test_edited_page_changes_links(watch: Start) -> None:
    w = watch(SEED)
    write(w.root, "Alpha.md", "Alpha now links [[notes/Delta]] and [[Brand New]].\n")
    w.converge()
    assert "missing" not in placeholder_slugs(w.state)
    assert "brand-new" in placeholder_slugs(w.state)


@pytest.mark.skipif(sys.platform != "linux", reason="inotify reports a file closed")
def test_a_page_being_written_is_taken_in_once_closed(watch: Start) -> None:
    w = watch(SEED)
    with (w.root / "Alpha.md").open("w", encoding="utf-8") as page:
        page.write("Alpha, half written, links [[Half")
        page.flush()
        time.sleep(FAST * 4)  # a writer that pauses longer than the debounce
        assert w.recorder.batches == []
        page.write(" Done]].\n")
    w.converge()
    assert "half-done" in placeholder_slugs(w.state)


@pytest.mark.slow  # polling looks once a second
def test_polling_takes_in_an_edit_in_place(watch: Start) -> None:
    w = watch(SEED)
    w.watcher.stop()
    w.watcher = start_watcher(w.state, FAST, apply=w.recorder, polling=True)
    with (w.root / "Beta.md").open("a", encoding="utf-8") as page:
        page.write("And now [[Polled]].\n")
    w.converge()
    assert "polled" in placeholder_slugs(w.state)


def test_deleted_page_becomes_placeholder(watch: Start) -> None:
    w = watch(SEED)
    (w.root / "Beta.md").unlink()
    w.converge()
    assert "beta" in placeholder_slugs(w.state)


def test_renamed_page(watch: Start) -> None:
    w = watch(SEED)
    (w.root / "Alpha.md").rename(w.root / "Aleph.md")
    w.converge()
    assert {"Alpha.md", "Aleph.md"} <= w.recorder.paths()
    assert "aleph" in page_slugs(w.state)
    assert "alpha" in placeholder_slugs(w.state)


@pytest.mark.slow
def test_moved_folder(watch: Start) -> None:
    w = watch(SEED)
    (w.root / "archive").mkdir()
    (w.root / "notes").rename(w.root / "archive" / "notes")
    w.converge()
    assert "archive/notes/deep/epsilon" in page_slugs(w.state)
    assert "notes" in w.recorder.paths()


def test_deleted_folder(watch: Start) -> None:
    w = watch(SEED)
    shutil.rmtree(w.root / "notes")
    w.converge()
    assert not [s for s in page_slugs(w.state) if s.startswith("notes/")]


@pytest.mark.slow
def test_folder_moved_in_and_out(watch: Start, tmp_path: Path) -> None:
    w = watch(SEED)
    outside = tmp_path / "outside"
    write(outside, "Zeta.md", "Zeta links [[Home]] and [[Eta]].\n")
    write(outside, "sub/Eta.md", "Eta.\n")
    outside.rename(w.root / "incoming")
    w.converge()
    assert "incoming/sub/eta" in page_slugs(w.state)
    (w.root / "notes").rename(tmp_path / "gone")
    w.converge()
    assert "notes/gamma" in placeholder_slugs(w.state)


def test_editor_atomic_replace(watch: Start) -> None:
    w = watch(SEED)
    tmp = w.root / "Beta.md.tmp"
    tmp.write_text("Beta was replaced and links [[Alpha]].\n", encoding="utf-8")
    tmp.replace(w.root / "Beta.md")
    w.converge()
    assert "Beta.md" in w.recorder.paths()
    assert "Beta.md.tmp" not in w.recorder.paths()


def test_vim_style_backup_and_rewrite(watch: Start) -> None:
    w = watch(SEED)
    (w.root / "Beta.md").rename(w.root / "Beta.md~")
    write(w.root, "4913", "")
    (w.root / "4913").unlink()
    write(w.root, "Beta.md", "Rewritten with [[notes/Delta]].\n")
    (w.root / "Beta.md~").unlink()
    w.converge()
    assert w.recorder.paths() == {"Beta.md"}


def test_burst_is_applied_in_few_batches(watch: Start) -> None:
    w = watch(SEED, debounce=0.5)
    for i in range(200):
        write(w.root, f"burst/Page {i}.md", f"Page {i} links [[Page {(i + 1) % 200}]].\n")
    w.converge()
    assert len(w.state.pages) == len(SEED) + 200
    assert 1 <= len(w.recorder.batches) <= 3, [len(b) for b in w.recorder.batches]


@pytest.mark.slow
def test_continuous_stream_is_applied_before_it_ends(watch: Start) -> None:
    """Files change more often than the debounce lets a batch wait: one is applied
    anyway, `max_delay` after the first change, while the stream goes on."""
    w = watch(SEED, debounce=0.5, max_delay=0.8)
    for count in range(600):  # 30 s of changes at most; a batch comes long before
        if w.recorder.batches:
            break
        write(w.root, f"stream/Note {count}.md", f"Note {count}.\n")
        time.sleep(0.05)
    assert w.recorder.batches, "nothing was applied while files kept changing"
    w.converge()


def test_ignores_dot_folders_and_other_files(watch: Start) -> None:
    w = watch(SEED)
    for rel in (".lore/Junk.md", ".git/Refs.md", ".hidden/Secret.md", "notes/.Dot.md"):
        write(w.root, rel, "[[Home]]\n")
    write(w.root, "picture.png", "not a page")
    write(w.root, "Marker.md", "Marker.\n")
    assert wait_until(lambda: "marker" in page_slugs(w.state))
    assert w.recorder.batches == [["Marker.md"]]
    w.converge()


def test_own_writes_cost_no_reindex(watch: Start) -> None:
    w = watch(SEED)
    engine.save_page(w.state, "Alpha", "Alpha, saved by the server, links [[Home]].\n")
    assert wait_until(lambda: bool(w.recorder.reports))
    assert w.recorder.paths() == {"Alpha.md"}
    report = w.recorder.reports[0]
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    w.converge()


def test_events_before_first_index_pass_are_applied_after(vault_dir: Path, tmp_path: Path) -> None:
    write(vault_dir, "Home.md", "[[Away]]\n")
    state = engine.open_vault(vault_dir, scan=False)
    recorder = Recorder()
    watcher = start_watcher(state, FAST, apply=recorder)
    try:
        write(vault_dir, "Away.md", "Away.\n")
        assert wait_until(lambda: "Away.md" in recorder.paths(), timeout=FAST * 5) is False
        engine.index_vault(state)
        Watched(vault_dir, state, recorder, watcher, tmp_path).converge()
        assert "away" in page_slugs(state)
    finally:
        state.close()


# -- failures and fallbacks -----------------------------------------------------------------


def test_apply_errors_are_logged_and_retried(
    watch: Start, caplog: pytest.LogCaptureFixture
) -> None:
    w = watch(SEED)
    real = w.recorder
    calls: list[list[str]] = []

    def flaky(state: AppState, paths: list[str]) -> SyncReport:
        calls.append(paths)
        if len(calls) == 1:
            raise OSError("disk on fire")
        return real(state, paths)

    w.watcher.stop()
    w.watcher = start_watcher(w.state, FAST, apply=flaky)
    write(w.root, "Theta.md", "Theta links [[Home]].\n")
    w.converge()
    assert len(calls) >= 2
    assert "disk on fire" in caplog.text


@pytest.mark.slow
def test_persistent_errors_end_in_a_full_pass(
    state: AppState, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch that keeps failing is tried a few times, then a pass over every file
    takes it in; the worker lives on for the next batch."""
    calls: list[list[str]] = []
    passes: list[SyncReport] = []

    def broken(_state: AppState, paths: list[str]) -> None:
        calls.append(paths)
        raise RuntimeError("always broken")

    def resync(opened: AppState) -> SyncReport:
        passes.append(engine.resync(opened))
        return passes[-1]

    start_watcher(state, 0.05, apply=broken, resync=resync)
    write(state.root, "One.md", "one\n")
    assert wait_until(lambda: len(calls) >= ATTEMPTS)
    assert wait_until(lambda: bool(passes))
    assert passes[0].added == 1 and "one" in page_slugs(state)
    assert "always broken" in caplog.text
    write(state.root, "Two.md", "two\n")
    assert wait_until(lambda: ["Two.md"] in calls)


@pytest.mark.slow
def test_falls_back_to_polling(watch: Start, caplog: pytest.LogCaptureFixture) -> None:
    def no_inotify() -> NoReturn:
        raise OSError(28, "inotify watch limit reached")

    w = watch(SEED)
    w.watcher.stop()
    watcher = VaultWatcher(w.state, w.recorder, FAST, 2.0)
    with caplog.at_level(logging.WARNING, logger="lore_mcp.watcher"):
        watcher.start((no_inotify, *POLLING_ONLY))
    w.state.watcher = w.watcher = watcher
    assert "inotify watch limit" in caplog.text
    write(w.root, "Iota.md", "Iota links [[Alpha]].\n")
    (w.root / "notes").rename(w.root / "moved")
    w.converge()
    assert "moved/gamma" in page_slugs(w.state)


# -- events that never come ----------------------------------------------------------------


def opened_with_an_unreported_edit(root: Path) -> AppState:
    """The seeded vault, indexed, then a page edited before any watcher looks."""
    for rel, text in SEED.items():
        write(root, rel, text)
    state = engine.open_vault(root)
    write(root, "Alpha.md", "Alpha now links [[Unreported]].\n")
    return state


@dataclass
class Passes:
    """A `resync` that records each pass over every file."""

    reports: list[SyncReport] = field(default_factory=list)

    def __call__(self, state: AppState) -> SyncReport:
        self.reports.append(engine.resync(state))
        return self.reports[-1]


def test_an_overflow_makes_a_full_pass(vault_dir: Path, tmp_path: Path) -> None:
    state = opened_with_an_unreported_edit(vault_dir)
    passes, recorder = Passes(), Recorder()
    watcher = start_watcher(state, FAST, apply=recorder, resync=passes, check_every=3600)
    try:
        # What watchdog's inotify observer logs, and all it does, when events were lost.
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        Watched(vault_dir, state, recorder, watcher, tmp_path).converge()
        # The index matches once the pass commits, a moment before it returns its report.
        assert wait_until(lambda: bool(passes.reports))
        assert [r.updated for r in passes.reports] == [1] and recorder.batches == []
        assert "unreported" in placeholder_slugs(state)
    finally:
        state.close()


def test_the_periodic_check_takes_in_what_no_event_reported(
    vault_dir: Path, tmp_path: Path
) -> None:
    state = opened_with_an_unreported_edit(vault_dir)
    recorder = Recorder()
    watcher = start_watcher(state, FAST, apply=recorder, check_every=0.1)
    try:
        Watched(vault_dir, state, recorder, watcher, tmp_path).converge()
        assert recorder.batches[0] == ["Alpha.md"]
        assert "unreported" in placeholder_slugs(state)
    finally:
        state.close()


def test_a_storm_of_events_gets_one_full_pass(vault_dir: Path, tmp_path: Path) -> None:
    state = engine.open_vault(vault_dir)
    passes, recorder = Passes(), Recorder()
    watcher = VaultWatcher(state, recorder, FAST, 2.0, resync=passes, check_every=3600, storm=10)
    watcher.start()
    state.watcher = watcher
    try:
        for i in range(40):
            write(vault_dir, f"Storm {i}.md", f"Storm {i} links [[Storm {i + 1}]].\n")
        Watched(vault_dir, state, recorder, watcher, tmp_path).converge()
        assert wait_until(lambda: bool(passes.reports))
        assert all(len(batch) <= 10 for batch in recorder.batches)
    finally:
        state.close()


def test_a_dead_observer_is_started_again(vault_dir: Path, tmp_path: Path) -> None:
    state = opened_with_an_unreported_edit(vault_dir)
    made: list[BaseObserver] = []

    def observer() -> BaseObserver:
        made.append(Observer())
        return made[-1]

    passes, recorder = Passes(), Recorder()
    watcher = VaultWatcher(state, recorder, FAST, 2.0, resync=passes, check_every=0.1)
    watcher.start((observer,))
    state.watcher = watcher
    try:
        made[0].stop()
        made[0].join()
        assert wait_until(lambda: len(made) == 2 and bool(passes.reports))
        assert made[1].is_alive()
        Watched(vault_dir, state, recorder, watcher, tmp_path).converge()
    finally:
        state.close()


# -- stopping ---------------------------------------------------------------------------------


def new_threads(before: Iterable[threading.Thread]) -> list[str]:
    old = set(before)
    return [t.name for t in threading.enumerate() if t not in old and t.is_alive()]


def test_stop_leaves_no_thread_and_is_idempotent(state: AppState) -> None:
    before = threading.enumerate()
    watcher = start_watcher(state, FAST)
    assert new_threads(before)
    write(state.root, "Pending.md", "pending\n")
    watcher.stop()
    watcher.stop()
    assert new_threads(before) == []


def test_close_stops_the_watcher(vault_dir: Path) -> None:
    before = threading.enumerate()
    state = engine.open_vault(vault_dir)
    start_watcher(state, FAST)
    state.close()
    assert state.watcher is None
    assert new_threads(before) == []


class WaitedOn(threading.Event):
    """An event that says when someone first waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


def test_stop_does_not_wait_for_the_first_index_pass(vault_dir: Path) -> None:
    before = threading.enumerate()
    state = engine.open_vault(vault_dir, scan=False)
    state.ready = ready = WaitedOn()
    calls: list[list[str]] = []
    watcher = start_watcher(state, 0.01, apply=lambda _s, p: calls.append(p))
    write(vault_dir, "Early.md", "early\n")
    assert ready.waited.wait(30)  # the worker took the batch and waits for the first pass
    stopping = threading.Thread(target=watcher.stop)
    stopping.start()
    stopping.join(30)
    assert not stopping.is_alive(), "stop() waited for an index pass that never came"
    assert calls == []
    assert new_threads(before) == []
    state.ready.set()
    state.close()


@pytest.mark.slow
def test_stopping_while_files_change_logs_no_error(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Files written in the instant the watcher stops: watchdog's inotify emitter reads
    an event after its watch group is gone, and logs an ERROR ("queue_events() called
    when the thread is inactive") that a user would see on stderr at every such stop."""
    done = threading.Event()

    def editor() -> None:
        i = 0
        while not done.is_set():
            write(vault_dir, f"Busy {i % 20}.md", f"edit {i}\n")
            i += 1

    typing = threading.Thread(target=editor)
    typing.start()
    try:
        with caplog.at_level(logging.DEBUG, logger="watchdog"):
            for _ in range(80):  # without the fix, about one stop in ten logged it
                opened = engine.open_vault(vault_dir, scan=False)
                start_watcher(opened, 0.01)
                time.sleep(0.005)
                opened.ready.set()
                opened.close()
    finally:
        done.set()
        typing.join()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
