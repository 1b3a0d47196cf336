"""The SQLite index: schema versions, corruption, index passes applied in batches.
Search has its own tests (test_search.py)."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from conftest import write
from helpers import assert_matches_fresh, placeholder_slugs
from lore_mcp import vault_ops as ops
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR
from lore_mcp.errors import PageNotFoundError
from lore_mcp.index import Index, PageRow, search_text
from lore_mcp.index.moves import MOVES_KEEP
from lore_mcp.index.schema import SCHEMA_VERSION
from lore_mcp.vault_ops import apply, sync
from test_watcher import wait_until


def test_page_files_found_by_path_and_folder(tmp_path: Path) -> None:
    index = Index(tmp_path / "lore.db")
    paths = ["a.md", "a/b.md", "a/c/d.md", "a-b/e.md", "a.b/f.md", "ab/g.md", "é/h.md"]
    with index.write():
        rows = [
            (PageRow(p[:-3].replace("/", "-"), p, p, size=i), search_text(p, (), ""))
            for i, p in enumerate(paths)
        ]
        index.put_pages([*rows, (PageRow("ghost", "Ghost", None), None)])
    table = index.pages
    assert sorted(table.files_under("a")) == ["a/b.md", "a/c/d.md"]
    assert sorted(table.files_under("a/c")) == ["a/c/d.md"]
    assert sorted(table.files_under("é")) == ["é/h.md"]
    assert table.files_under("a/b.md") == {}
    assert sorted(table.files_at(["a.md", "ab/g.md", "nowhere.md"])) == ["a.md", "ab/g.md"]
    stamps = {(s.path, s.size, s.mtime_ns) for s in table.stamps().values()}
    assert stamps == {(p, i, 0) for i, p in enumerate(paths)}
    assert (table.count(), len(table.all())) == (len(paths), len(paths) + 1)
    index.close()


def _db(root: Path) -> Path:
    return root / LORE_DIR / CACHE_DIR / DB_NAME


def test_deleting_the_index_loses_nothing(brain_dir: Path) -> None:
    first = ops.open_vault(brain_dir)
    before = ops.get_graph(first).shape
    first.close()
    shutil.rmtree(brain_dir / LORE_DIR)
    again = ops.open_vault(brain_dir)
    assert ops.get_graph(again).shape == before
    again.close()


def test_outdated_schema_is_rebuilt(brain_dir: Path) -> None:
    ops.open_vault(brain_dir).close()
    conn = sqlite3.connect(_db(brain_dir))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    state = ops.open_vault(brain_dir)
    assert state.index.rebuilt and len(state.pages) == 18
    state.close()


def test_corrupt_index_is_rebuilt(brain_dir: Path) -> None:
    ops.open_vault(brain_dir).close()
    _db(brain_dir).write_bytes(b"this is not a database" * 100)
    state = ops.open_vault(brain_dir)
    assert state.index.rebuilt and len(state.pages) == 18
    state.close()


def test_truncated_index_is_rebuilt(brain_dir: Path) -> None:
    ops.open_vault(brain_dir).close()
    data = _db(brain_dir).read_bytes()
    _db(brain_dir).write_bytes(data[: len(data) // 3])
    for suffix in ("-wal", "-shm"):
        Path(f"{_db(brain_dir)}{suffix}").unlink(missing_ok=True)
    state = ops.open_vault(brain_dir)
    assert len(state.pages) == 18
    state.close()


def test_a_file_gone_during_a_pass_in_batches_is_not_indexed(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(vault_dir, "Hub.md", "[[Alpha]] [[Beta]] [[Gamma]]\n")
    state = ops.open_vault(vault_dir)
    try:
        assert sorted(placeholder_slugs(state)) == ["alpha", "beta", "gamma"]
        for name in ("Alpha", "Beta", "Gamma"):
            write(vault_dir, f"{name}.md", "[[Hub]]\n")

        def delete_gamma(done: int, total: int) -> None:  # after Alpha.md is read
            (vault_dir / "Gamma.md").unlink(missing_ok=True)

        monkeypatch.setattr(apply, "BATCH", 1)
        with state.lock, state.index.write():
            report = sync.sync(state, progress=delete_gamma)
        assert (report.added, report.removed, report.pages) == (2, 0, 3)
        assert sorted(placeholder_slugs(state)) == ["gamma"]
        assert ops.read_page(state, "Hub").links[2].exists is False
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_pass_in_batches_reports_like_one_pass(
    brain_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply, "BATCH", 4)
    batched = ops.open_vault(brain_dir, scan=False)
    try:
        with batched.lock, batched.index.write():
            apply.load(batched)
            report = sync.sync(batched)
        assert (report.pages, report.added, report.updated, report.removed) == (18, 18, 0, 0)
        assert report.placeholders == 1
        assert_matches_fresh(batched)
    finally:
        batched.close()


def test_a_first_index_keeps_the_links_indexes(
    brain_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Backlinks and resolution look links up by these: a first index must leave them.
    monkeypatch.setattr(apply, "BATCH", 4)
    schema = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'links'"
    state = ops.open_vault(brain_dir, scan=False)
    try:
        before = sorted(state.index._conn.execute(schema).fetchall())
        with state.lock, state.index.write():
            apply.load(state)
            sync.sync(state)
        assert sorted(state.index._conn.execute(schema).fetchall()) == before
        assert len(before) == 4
        plan = state.index._conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM links WHERE resolved = 'concepts/slugs'"
        ).fetchall()
        assert "links_resolved" in str(plan)
    finally:
        state.close()


def test_indexes_come_back_when_a_first_index_fails(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply, "BATCH", 2)
    state = ops.open_vault(vault_dir, scan=False)
    schema = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'links'"
    try:
        for i in range(6):
            write(vault_dir, f"p{i}.md", f"[[p{i + 1}]]\n")

        def fail(done: int, total: int) -> None:
            if done == 3:
                raise OSError("the disk went away")

        with pytest.raises(OSError), state.lock, state.index.write():
            sync.sync(state, progress=fail)
        assert state.index._conn.execute(schema).fetchone()[0] == 4
    finally:
        state.close()


def test_a_pass_that_fails_halfway_leaves_no_half_applied_pages(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply, "BATCH", 2)
    state = ops.open_vault(vault_dir)
    try:
        for i in range(5):
            write(vault_dir, f"p{i}.md", f"[[p{i + 1}]]\n")

        def fail_on_the_fourth(done: int, total: int) -> None:
            if done == 4:
                raise OSError("the disk went away")

        with pytest.raises(OSError), state.lock, state.index.write():
            sync.sync(state, progress=fail_on_the_fourth)
        # The index rolled back; operations must not see the batches applied before.
        assert ops.list_pages(state, include_placeholders=True).total == 0
        ops.apply_external_changes(state, [f"p{i}.md" for i in range(5)])
        assert ops.list_pages(state).total == 5
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_file_indexed_before_and_gone_during_a_pass_is_reported_removed(
    vault_dir: Path,
) -> None:
    write(vault_dir, "Hub.md", "[[Alpha]]\n")
    write(vault_dir, "Alpha.md", "one\n")
    state = ops.open_vault(vault_dir)
    try:
        write(vault_dir, "Alpha.md", "two, longer\n")  # to be read again
        write(vault_dir, "Aardvark.md", "new\n")  # read first

        def delete_alpha(done: int, total: int) -> None:
            (vault_dir / "Alpha.md").unlink(missing_ok=True)

        report = ops.index_vault(state, progress=delete_alpha)
        assert (report.added, report.updated, report.removed) == (1, 0, 1)
        assert sorted(placeholder_slugs(state)) == ["alpha"]
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_first_index_that_fails_halfway_leaves_no_half_applied_pages(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's background index pass fails (a disk error): what it applied before
    rolls back, and operations see the index as it is, not the graph of the pass."""
    monkeypatch.setattr(apply, "BATCH", 2)
    for i in range(5):
        write(vault_dir, f"p{i}.md", f"[[p{i + 1}]]\n")
    state = ops.open_vault(vault_dir, scan=False)
    try:

        def fail_on_the_fourth(done: int, total: int) -> None:
            if done == 4:
                raise OSError("the disk went away")

        with pytest.raises(OSError):
            ops.index_vault(state, progress=fail_on_the_fourth)
        assert state.ready.is_set()  # operations do not wait forever
        listing = ops.list_pages(state, include_placeholders=True)
        assert (listing.total, listing.pages) == (0, [])
        with pytest.raises(PageNotFoundError):
            ops.read_page(state, "p1")
        report = ops.index_vault(state)  # the next pass does it all
        assert (report.added, report.pages, report.placeholders) == (5, 5, 1)
        assert_matches_fresh(state)
    finally:
        state.close()


def test_renames_are_remembered_boundedly(tmp_path: Path) -> None:
    """The index remembers where pages were renamed to (the latest MOVES_KEEP), for a
    later write by an old name, until a page is at that name again."""
    index = Index(tmp_path / "lore.db")
    try:
        with index.write():
            for i in range(MOVES_KEEP + 5):
                index.moves.record(f"draft {i}", f"Final {i}.md")
            index.moves.record("draft 7", "Other.md")  # the latest rename of a name wins
            index.forget_moves(["draft 8", "never renamed"])
        assert index.moves.moved_to("draft 0") is None  # among the oldest, forgotten
        assert index.moves.moved_to(f"draft {MOVES_KEEP + 4}") == f"Final {MOVES_KEEP + 4}.md"
        assert index.moves.moved_to("draft 7") == "Other.md"
        assert index.moves.moved_to("draft 8") is None
        kept = index._conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'moved:%'")
        assert kept.fetchone()[0] <= MOVES_KEEP
    finally:
        index.close()


def test_a_first_index_reaches_the_database_file_without_waiting_for_a_later_write(
    tmp_path: Path,
) -> None:
    # Its commit leaves the pages in the write-ahead log; a checkpoint of its own copies
    # them into the database file soon after, while the vault stays open.
    for n in range(300):
        write(tmp_path, f"f{n % 7}/Page {n}.md", f"Page {n} of many [[Page {n + 1}]]. " * 30)
    state = ops.open_vault(tmp_path)
    try:
        db = tmp_path / LORE_DIR / CACHE_DIR / DB_NAME
        assert wait_until(lambda: db.stat().st_size > 300 * 1000)
        assert ops.search(state, "many").hits
    finally:
        state.close()


def _indexes(db: Path) -> list[str]:
    with closing(sqlite3.connect(db)) as conn:
        sql = "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        return sorted(str(row[0]) for row in conn.execute(sql))


def test_a_first_index_leaves_the_tables_indexed_as_a_new_index_is(tmp_path: Path) -> None:
    # A first index makes some indexes once at its end, not at each insert.
    vault, empty = tmp_path / "vault", tmp_path / "empty"
    for n in range(40):
        write(vault, f"Page {n}.md", f"[[Page {n + 1}]] [[Missing {n % 3}]]\n")
    empty.mkdir()
    ops.open_vault(empty).close()
    state = ops.open_vault(vault)
    try:
        linked = ops.get_backlinks(state, "Missing 1").linked
        assert sorted(link.title for link in linked) == sorted(f"Page {n}" for n in range(1, 40, 3))
    finally:
        state.close()
    found = _indexes(vault / LORE_DIR / CACHE_DIR / DB_NAME)
    assert found == _indexes(empty / LORE_DIR / CACHE_DIR / DB_NAME)
    assert "CREATE INDEX links_fold ON links(fold)" in found
    assert "CREATE INDEX names_name ON names(name)" in found
