"""A first index written by a thread of its own (`lore_mcp.index.fill`): it writes what
the page-by-page path writes, in every table, and a failure on either side leaves
nothing half-written."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from conftest import write
from lore_mcp import vault_ops as ops
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR
from lore_mcp.index import Index, batch, fill
from lore_mcp.vault_ops import apply, sync
from lore_mcp.vault_ops import readers as readers_module


def _messy_vault(root: Path, pages: int = 40) -> None:
    """Pages with aliases, tags, symbol words, several languages, links of every kind,
    and NUL characters in a text and in a link's line."""
    for n in range(pages):
        folder = ("", "notes/", "notes/deep/", "日本/")[n % 4]
        body = (
            f"---\naliases: [Alias {n}, 'C# {n}']\ntags: [topic/{n % 3}, Shared]\n---\n"
            f"# Heading {n}\n\nSee [[Page {(n + 1) % pages}]] and [[Missing {n % 5}]], "
            f"[a link](Page%20{(n + 2) % pages}.md) #inline-{n % 2}\n\n"
            "Die gelöschten Seiten werden gelöscht. C++ and node.js v1.10 で検索する。\n"
            "```\n[[not a link]]\n```\n"
        )
        if n % 7 == 0:
            body += f"A NUL \x00 here, then [[Page {n // 2}]] after it.\n"
        write(root, f"{folder}Page {n}.md", body)


def _contents(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table that holds pages, with ids replaced by page keys; the
    stray row `_stray` leaves is left out."""
    db = root / LORE_DIR / CACHE_DIR / DB_NAME
    with closing(sqlite3.connect(db)) as conn:
        key = dict(conn.execute("SELECT id, key FROM pages"))

        def rows(sql: str, *id_columns: int) -> list[tuple[Any, ...]]:
            found = []
            for row in conn.execute(sql):
                values = list(row)
                for column in id_columns:
                    values[column] = key[values[column]]
                found.append(tuple(values))
            return sorted(found, key=repr)

        return {
            "pages": rows(
                "SELECT key, slug, title, path, size, mtime_ns, hash, bad_utf8, inode FROM pages"
            ),
            "aliases": rows("SELECT page, alias FROM aliases"),
            "tags": rows("SELECT page, tag FROM tags WHERE page != 'stray'"),
            "names": rows("SELECT name, page FROM names"),
            "names_text": rows("SELECT rowid, text FROM names_text", 0),
            "fts": rows("SELECT rowid, names, headings, body, stems FROM fts", 0),
            "symbols": rows("SELECT word, page, count, named FROM symbols", 1),
            "links": rows(
                "SELECT source, target, line, context, key, exact, fold, resolved, ambiguous, "
                "loose FROM links"
            ),
        }


def _stray(root: Path) -> None:
    """Leave a row of no page in a new index, as a damaged one has: the next first index
    is not `fresh`, and writes page by page."""
    index = Index(root / LORE_DIR / CACHE_DIR / DB_NAME)
    index.close()
    with closing(sqlite3.connect(index.path)) as conn, conn:
        conn.execute("INSERT INTO tags VALUES ('stray', 'nothing')")


@pytest.fixture
def fillers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """A True for each filler made from now on."""
    made: list[bool] = []
    real = fill.Filler

    class Counted(real):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__()
            made.append(True)

    monkeypatch.setattr(fill, "Filler", Counted)
    return made


@pytest.mark.parametrize("readers", [0, 1], ids=["read here", "read by a worker process"])
def test_a_first_index_writes_what_page_by_page_writes(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, fillers: list[bool], readers: int
) -> None:
    _messy_vault(vault_dir)
    # Many batches, and statements of a few rows each: every seam is crossed.
    monkeypatch.setattr(apply, "BATCH", 7)
    monkeypatch.setattr(batch, "INSERT_ROWS", 3)
    monkeypatch.setattr(readers_module, "READER_PASS_FILES", 10)
    ops.open_vault(vault_dir, readers=readers).close()
    # A thread writes unless worker processes keep the second core busy.
    assert fillers == ([True] if readers == 0 else [])
    filled = _contents(vault_dir)

    shutil.rmtree(vault_dir / LORE_DIR)
    _stray(vault_dir)
    ops.open_vault(vault_dir).close()
    assert fillers == ([True] if readers == 0 else [])  # the second: page by page
    one_by_one = _contents(vault_dir)

    for table, rows in filled.items():
        assert rows == one_by_one[table], f"{table} differs"
    assert len(filled["pages"]) == 40 + 5  # and five placeholders
    assert any("\x00" in row[3] for row in filled["links"])  # a line kept whole


def test_a_first_index_that_fails_leaves_nothing_and_the_next_start_fills_it(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, fillers: list[bool]
) -> None:
    _messy_vault(vault_dir, pages=30)
    monkeypatch.setattr(apply, "BATCH", 4)
    state = ops.open_vault(vault_dir, scan=False)
    try:

        def fail_midway(done: int, total: int) -> None:
            if done == 17:  # batches are with the filler, one is being written
                raise OSError("the disk went away")

        with pytest.raises(OSError, match="went away"), state.lock, state.index.write():
            apply.load(state)
            sync.sync(state, progress=fail_midway)
        assert fillers == [True]
        assert not any(t.name == fill.THREAD_NAME for t in threading.enumerate())
        assert state.index.pages.count() == 0
        assert state.index.links.count() == 0
    finally:
        state.close()
    again = ops.open_vault(vault_dir)
    try:
        assert again.index.pages.count() == 30
        assert ops.read_page(again, "Page 3").links
    finally:
        again.close()


def test_a_failed_write_stops_the_filler_and_reaches_the_pass() -> None:
    done: list[int] = []
    filler = fill.Filler()
    filler.submit(lambda: done.append(1))
    filler.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):  # at the latest when the pass finishes
        for n in range(100):
            filler.submit(partial(done.append, n))
        filler.finish()
    assert done == [1]  # nothing after the failure was written


def test_an_abandoned_filler_drops_what_waits() -> None:
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def slow() -> None:
        started.set()
        release.wait(10)
        done.append("slow")

    filler = fill.Filler()
    filler.submit(slow)
    started.wait(10)
    filler.submit(lambda: done.append("waiting"))
    threading.Timer(0.05, release.set).start()
    filler.abandon()  # waits for the write under way, drops the one behind it
    assert done == ["slow"]


def test_rows_at_once_in_statements_within_the_parameter_limit() -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 7)  # two rows of three a statement
        conn.execute("CREATE TABLE t(a, b, c)")
        rows = [(n, f"text {n}\x00after", None if n % 2 else n * 1.5) for n in range(11)]
        batch.insert_at_once(conn, "t", ("a", "b", "c"), rows)
        batch.insert_at_once(conn, "t", ("a", "b", "c"), [])
        assert conn.execute("SELECT a, b, c FROM t ORDER BY a").fetchall() == rows
