"""The index's upkeep: after a pass that wrote many pages the search index's segments
are merged into one, after a write the small ones among themselves, in the background,
in slices that let writes in between; a merge cut short is taken up at the next start;
searches find the same pages either way."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from conftest import write
from lore_mcp import vault_ops as ops
from lore_mcp.config import MERGE_AFTER_PAGES
from lore_mcp.index import upkeep
from lore_mcp.vault_ops import AppState

WORDS = [
    "amber",
    "basalt",
    "cobalt",
    "dune",
    "ember",
    "fjord",
    "glacier",
    "heath",
    "island",
    "juniper",
    "kelp",
    "lagoon",
]


def _page(i: int) -> str:
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 40))
    return f"# Note {i}\n\n{words} marker{i % 7}\n\nSee [[Note {(i + 1) % 50}]].\n"


def _left_to_merge(db: Path, table: str, pages: int = -1) -> bool:
    """FTS5's documented check: a `merge` that changes fewer than two rows found
    nothing to merge (this one writes a page at most when it does). A negative count
    looks for two segments anywhere, a positive one for `usermerge` in one level."""
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        before = conn.total_changes
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (pages,))
        return conn.total_changes - before >= 2


def _merge_called_for(db: Path) -> bool:
    with closing(sqlite3.connect(db)) as conn:
        return upkeep.merge_called_for(conn) is not None


@contextmanager
def _write_lock_held(db: Path) -> Iterator[None]:
    """Another process's write transaction, open until the block ends."""
    with closing(sqlite3.connect(db, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")


def _many_segments(vault: AppState, saves: int) -> None:
    """Saves of a page each, with FTS5's own merging off in this index and the merges
    after a write asking for more segments in a level than these saves make: each
    commit leaves a segment of its own."""
    with closing(sqlite3.connect(vault.index.path, isolation_level=None)) as conn:
        for table in upkeep.MERGED_TABLES:
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 0)")
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('usermerge', 16)")
    for i in range(saves):
        ops.save_page(vault, f"Extra {i}", _page(1000 + i))


def _hits(vault: AppState, query: str) -> list[str]:
    return [hit.slug for hit in ops.search(vault, query, limit=50).hits]


def test_a_first_index_of_many_pages_ends_with_its_segments_merged(vault_dir: Path) -> None:
    for i in range(MERGE_AFTER_PAGES):
        write(vault_dir, f"notes/{i % 20}/Note {i}.md", _page(i))
    vault = ops.open_vault(vault_dir)
    try:
        vault.index.upkeep_done()
        db = vault.index.path
        assert not _merge_called_for(db)
        assert not any(_left_to_merge(db, table) for table in upkeep.MERGED_TABLES)
        assert len(_hits(vault, "marker3")) == 50
        assert ops.read_page(vault, "Note 5").backlink_count == MERGE_AFTER_PAGES // 50
    finally:
        vault.close()


def test_a_small_change_calls_for_no_merge(brain: AppState) -> None:
    brain.index.upkeep_done()
    ops.save_page(brain, "Fresh", "# Fresh\n\nA page about [[Obsidian]].\n")
    assert not _merge_called_for(brain.index.path)


def test_writes_leave_no_level_of_segments_to_merge(brain: AppState) -> None:
    """Each save's segment is merged with the small ones before it: no level holds
    two segments once the upkeep is done (`usermerge` is 2)."""
    brain.index.upkeep_done()  # the start's
    for i in range(12):  # FTS5 alone would leave a segment each (it merges 16 at once)
        ops.save_page(brain, f"Extra {i}", _page(1000 + i))
    brain.index.upkeep_done()
    db = brain.index.path
    assert not _left_to_merge(db, "fts", 1) and not _left_to_merge(db, "names_text", 1)
    assert {f"extra-{i}" for i in range(12)} <= set(_hits(brain, "Extra"))


def test_closing_merges_the_segments_writes_left(brain_dir: Path) -> None:
    """Without waiting for a pause in writes, as a short session ends."""
    vault = ops.open_vault(brain_dir)
    vault.index.upkeep_done()
    for i in range(12):
        ops.save_page(vault, f"Extra {i}", _page(1000 + i))
    db = vault.index.path
    vault.close()
    assert not _left_to_merge(db, "fts", 1) and not _left_to_merge(db, "names_text", 1)


def test_a_merge_finds_the_same_pages(brain: AppState) -> None:
    _many_segments(brain, 12)
    db = brain.index.path
    queries = ["amber", "glacier heath", "marker2", "Extra", "vault", "lagoon kelp"]
    before = {q: _hits(brain, q) for q in queries}
    assert _left_to_merge(db, "fts")
    with brain.index.write():
        brain.index.merge_later()
    brain.index.upkeep_soon(after_pass=True)
    brain.index.upkeep_done()
    assert not _left_to_merge(db, "fts") and not _left_to_merge(db, "names_text")
    assert {q: _hits(brain, q) for q in queries} == before
    assert all(before[q] for q in ("amber", "marker2", "Extra"))


def test_a_merge_cut_short_is_taken_up_at_the_next_start(brain_dir: Path) -> None:
    vault = ops.open_vault(brain_dir)
    db = vault.index.path
    _many_segments(vault, 12)
    with vault.index.write():
        vault.index.merge_later()
    with _write_lock_held(db):  # each slice finds the lock taken: nothing merges
        vault.index.upkeep_soon(after_pass=True)
        vault.close()  # stops the upkeep without waiting for the lock
    assert _merge_called_for(db)
    assert _left_to_merge(db, "fts")
    again = ops.open_vault(brain_dir)
    try:
        again.index.upkeep_done()
        assert not _merge_called_for(db)
        assert not _left_to_merge(db, "fts")
        assert _hits(again, "Extra")
    finally:
        again.close()


def test_saves_and_searches_go_on_while_the_index_merges(brain: AppState) -> None:
    """The upkeep's connection holds the write lock for a slice at a time."""
    _many_segments(brain, 6)
    with brain.index.write():
        brain.index.merge_later()
    brain.index.upkeep_soon(after_pass=True)
    ops.save_page(brain, "During", "# During\n\nWritten while the zephyrine index merged.\n")
    assert _hits(brain, "zephyrine") == ["during"]
    brain.index.upkeep_done()
    assert not _merge_called_for(brain.index.path)
    assert _hits(brain, "zephyrine") == ["during"]
