"""What hostile pages cost: parsing them, indexing them, and the write lock they hold.

    python bench/pathological.py

For each input (a YAML alias bomb, 1 MiB and 4 MiB of `[a](`, 200 000 `[[a]]`, a 4 MiB
page of prose and links) it prints the seconds `pagefile.parse` takes, the seconds to
take the file in as the watcher does (`apply_external_changes`) and, for the bomb and
the 200 000 links, to read and save it through the engine. While each of those runs,
a second SQLite connection (as another process's save would) tries to take the
index's write lock every millisecond; the longest stretch it could not is printed as
"lock". The time bounds of issue 29 (a pathological page costs seconds at most and
never holds the write lock for long) are checked here, not in the tests.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from lore_mcp import vault_ops  # noqa: E402
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR  # noqa: E402
from lore_mcp.vault_ops import AppState, pagefile  # noqa: E402

MIB = 1024 * 1024


def alias_bomb() -> str:
    """A "billion laughs" in 333 bytes: nine levels of nine aliases of the level before."""
    names = "abcdefghi"
    lines = [f"a: &a [{','.join(['x'] * 9)}]"]
    for before, name in pairwise(names):
        lines.append(f"{name}: &{name} [{','.join([f'*{before}'] * 9)}]")
    return "---\n" + "\n".join(lines) + "\n---\nbody [[Target]]\n"


def prose(size: int) -> str:
    """A big ordinary page: paragraphs, headings, lists, links and code."""
    rng = random.Random(4)
    words = ["memory", "vault", "page", "link", "graph", "index", "search", "agent", "note"]
    pieces: list[str] = []
    length = 0
    while length < size:
        kind = rng.random()
        if kind < 0.05:
            piece = f"## {rng.choice(words).title()} {len(pieces)}\n\n"
        elif kind < 0.15:
            piece = f"- item [[{rng.choice(words).title()} {rng.randrange(500)}]]\n"
        elif kind < 0.18:
            piece = "```\ncode [[not a link]]\n```\n\n"
        else:
            sentence = " ".join(rng.choice(words) for _ in range(12))
            piece = f"{sentence} [[{rng.choice(words)}]] and [t](notes/{rng.randrange(99)}.md).\n\n"
        pieces.append(piece)
        length += len(piece)
    return "".join(pieces)


class LockProbe:
    """Another connection that tries to take the write lock every millisecond, and
    remembers the longest stretch it could not."""

    def __init__(self, db: Path) -> None:
        self._db = db
        self._stop = threading.Event()
        self.longest = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = sqlite3.connect(self._db, timeout=0, isolation_level=None)
        locked_since: float | None = None
        while not self._stop.is_set():
            now = time.perf_counter()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                if locked_since is not None:
                    self.longest = max(self.longest, now - locked_since)
                locked_since = None
            except sqlite3.OperationalError:
                locked_since = now if locked_since is None else locked_since
            time.sleep(0.001)
        if locked_since is not None:
            self.longest = max(self.longest, time.perf_counter() - locked_since)
        conn.close()

    def __enter__(self) -> LockProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def vault() -> Iterator[AppState]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        (root / "Target.md").write_text("the target\n")
        state = vault_ops.open_vault(root)
        try:
            yield state
        finally:
            state.close()


def timed(state: AppState, work: Callable[[], object]) -> tuple[float, float]:
    """Seconds `work` took, and the longest the write lock was held meanwhile."""
    with LockProbe(state.root / LORE_DIR / CACHE_DIR / DB_NAME) as probe:
        started = time.perf_counter()
        work()
        seconds = time.perf_counter() - started
    return seconds, probe.longest


def row(name: str, what: str, seconds: float, lock: float | None = None) -> None:
    held = "" if lock is None else f"   lock {lock:6.2f} s"
    print(f"{name:24s} {what:26s} {seconds:6.2f} s{held}", flush=True)


def measure(name: str, text: str) -> None:
    data = text.encode()
    started = time.perf_counter()
    pagefile.parse("Page.md", data, len(data), 0)
    row(name, f"parse ({len(data):,} bytes)", time.perf_counter() - started)
    with vault() as state:
        (state.root / "Page.md").write_bytes(data)
        row(name, "taken in (watcher)", *timed(state, lambda: state_changed(state)))
        row(name, "read_page", *timed(state, lambda: vault_ops.read_page(state, "Page")))


def state_changed(state: AppState) -> None:
    vault_ops.apply_external_changes(state, ["Page.md"])


def save_links(count: int) -> None:
    name = f"{count:,} [[a]] (save)"
    with vault() as state:
        (state.root / "Page.md").write_text("start\n")
        vault_ops.resync(state)

        def append() -> None:
            vault_ops.save_page(state, "Page", "[[a]]" * count, mode="append")

        row(name, "save_page(mode=append)", *timed(state, append))


def main() -> None:
    measure("YAML alias bomb", alias_bomb())
    measure("1 MiB of [a](", "[a](" * (MIB // 4))
    measure("4 MiB of [a](", "[a](" * (4 * MIB // 4))
    measure("200,000 [[a]]", "[[a]]" * 200_000)
    save_links(200_000)
    measure("4 MiB page of prose", prose(4 * MIB))


if __name__ == "__main__":
    main()
