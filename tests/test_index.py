"""The SQLite index: schema versions, corruption, FTS escaping and CJK search; index
passes applied in batches."""

from __future__ import annotations

import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write
from helpers import assert_matches_fresh
from lore_mcp import checkpoints, indexing
from lore_mcp import vault_ops as ops
from lore_mcp.index import SCHEMA_VERSION, SNIPPET_MAX_BYTES, Index, PageRow, fts_query, fts_text
from lore_mcp.state import DB_NAME, LORE_DIR


def test_fts_query_quotes_every_term() -> None:
    assert fts_query("hello world") == '"hello" "world"*'
    assert fts_query('say "exact phrase" NOT this') == '"say" "exact phrase" "NOT" "this"*'
    assert fts_query("  ***  ") is None
    assert fts_query("長期記憶") == '"\x1f長\x1f期\x1f記\x1f憶\x1f"*'


def test_fts_text_splits_only_cjk() -> None:
    assert fts_text("plain text") == "plain text"
    assert fts_text("a記b") == "a\x1f記\x1fb"
    assert fts_text("記憶 x") == "\x1f記\x1f憶\x1f x"


@settings(max_examples=300, deadline=None)
@given(query=st.text(max_size=60))
def test_any_query_is_safe(query: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        index = Index(Path(folder) / "lore.db")
        with index.write():
            index.upsert_pages([(PageRow("a", "Alpha", "a.md"), "some text AND or NOT near 記憶")])
        index.search(query, 5)
        index.pages_matching(query, 5)
        index.close()


def test_page_files_found_by_path_folder_and_slug(tmp_path: Path) -> None:
    index = Index(tmp_path / "lore.db")
    paths = ["a.md", "a/b.md", "a/c/d.md", "a-b/e.md", "a.b/f.md", "ab/g.md", "é/h.md"]
    with index.write():
        rows = [(PageRow(p[:-3].replace("/", "-"), p, p, size=i), "") for i, p in enumerate(paths)]
        index.upsert_pages([*rows, (PageRow("ghost", "Ghost", None), "")])
    assert sorted(index.files_under("a")) == ["a/b.md", "a/c/d.md"]
    assert sorted(index.files_under("a/c")) == ["a/c/d.md"]
    assert sorted(index.files_under("é")) == ["é/h.md"]
    assert index.files_under("a/b.md") == {}
    assert sorted(index.files_at(["a.md", "ab/g.md", "nowhere.md"])) == ["a.md", "ab/g.md"]
    found = index.files_of(["a-b-e", "ghost", "nobody"])
    assert list(found) == ["a-b/e.md"] and found["a-b/e.md"].slug == "a-b-e"
    assert index.stamps() == {(p, i, 0) for i, p in enumerate(paths)}
    index.close()


def test_title_weighs_more_than_body(vault_dir: Path) -> None:
    write(vault_dir, "Gardening.md", "Notes on soil.\n")
    write(vault_dir, "Cooking.md", "Gardening gardening gardening in the kitchen.\n")
    state = ops.open_vault(vault_dir)
    try:
        assert [h.slug for h in ops.search(state, "gardening").hits] == ["gardening", "cooking"]
    finally:
        state.close()


def test_chinese_and_japanese_words_inside_runs(vault_dir: Path) -> None:
    write(vault_dir, "zh.md", "记忆保存在文件里，不在上下文里。\n")
    write(vault_dir, "ja.md", "長期記憶の話をしよう。\n")
    state = ops.open_vault(vault_dir)
    try:
        assert [h.slug for h in ops.search(state, "文件").hits] == ["zh"]
        assert [h.slug for h in ops.search(state, "記憶").hits] == ["ja"]
        assert [h.slug for h in ops.search(state, "憶").hits] == ["ja"]
        hit = ops.search(state, "上下文").hits[0]
        assert "**上下文**" in hit.snippet.replace("** **", "").replace("****", "")
        assert "\x1f" not in hit.snippet
    finally:
        state.close()


def test_long_pages_get_a_plain_snippet_at_the_first_hit(vault_dir: Path) -> None:
    # FTS5's snippet() is quadratic in a page's hits: pages over SNIPPET_MAX_BYTES get
    # the engine's own, around the first place a query word starts a word.
    filler = "Nothing to see in this line at all.\n" * (SNIPPET_MAX_BYTES // 30)
    write(vault_dir, "Long.md", filler + "The Palaces stood here. " + "palace " * 30_000)
    write(vault_dir, "Short.md", "One palace only.\n")
    write(vault_dir, "Kana.md", filler + "長期記憶の話をしよう。\n")
    state = ops.open_vault(vault_dir)
    try:
        hits = {h.slug: h.snippet for h in ops.search(state, "palace").hits}
        assert hits["short"] == "One **palace** only."
        assert hits["long"].startswith("…")
        first_hit = "…this line at all. The **Palaces** stood here. **palace** **palace**"
        assert first_hit in hits["long"]
        assert hits["long"].endswith("…")
        kana = ops.search(state, "記憶").hits[0].snippet
        assert "長期**記憶の話をしよう**" in kana and "\x1f" not in kana
    finally:
        state.close()


def _db(root: Path) -> Path:
    return root / LORE_DIR / DB_NAME


def _pages_in_the_file(db: Path) -> int:
    """Pages in the database file itself, not counting what is still in its log."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])
    finally:
        conn.close()


def _pages(prefix: str, count: int = 1500) -> list[tuple[PageRow, str | None]]:
    # 1500 of them are about 6 MB: past the 4 MB of log at which SQLite's commits would
    # copy the log into the file themselves.
    return [(PageRow(f"{prefix}{i}", "T", f"{prefix}{i}.md"), "x " * 2000) for i in range(count)]


def _copied_into_the_file(db: Path, pages: int, timeout_s: float = 10.0) -> bool:
    """Whether the database file itself comes to hold `pages` pages within the time."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if _pages_in_the_file(db) == pages:
                return True
        except sqlite3.DatabaseError:
            pass  # read in the middle of a checkpoint's writes: the file is half copied
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def test_a_deferred_checkpoint_leaves_commits_in_the_log_until_asked(vault_dir: Path) -> None:
    index = Index(vault_dir / "index.db")
    index.checkpoint()  # the empty schema, into the file
    with index.checkpoint_deferred(), index.write():
        index.upsert_pages(_pages("p"))
    time.sleep(5 * checkpoints.DELAY_S)  # long past the checkpointer's delay
    assert _pages_in_the_file(index.path) == 0
    index.checkpoint()
    assert _pages_in_the_file(index.path) == 1500
    with index.write():  # after the block, the checkpointer copies commits again
        index.upsert_pages(_pages("q"))
    assert _copied_into_the_file(index.path, 3000)
    index.close()


def test_a_commit_leaves_the_copy_into_the_file_to_the_checkpointer(vault_dir: Path) -> None:
    """However much a commit logs, it returns without copying the log into the file;
    the checkpointer does that a moment later, in its own thread."""

    def checkpointers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "lore-checkpoint"}

    before = checkpointers()
    slow = Index(vault_dir / "index.db", checkpoint_delay_s=3600)
    slow.checkpoint()
    with slow.write():
        slow.upsert_pages(_pages("p"))
    assert _pages_in_the_file(slow.path) == 0
    (mine,) = checkpointers() - before
    slow.close()  # stops the checkpointer at once; the log is not lost
    assert not mine.is_alive()
    index = Index(vault_dir / "index.db")
    assert index.count_pages() == 1500
    with index.write():
        index.upsert_pages(_pages("q", 10))
    assert _copied_into_the_file(index.path, 1510)
    index.close()


def test_the_index_pass_leaves_its_pages_in_the_database_file(brain_dir: Path) -> None:
    state = ops.open_vault(brain_dir)
    try:
        assert _pages_in_the_file(_db(brain_dir)) == len(state.pages) + len(state.placeholders)
    finally:
        state.close()


def test_deleting_the_index_loses_nothing(brain_dir: Path) -> None:
    first = ops.open_vault(brain_dir)
    before = ops.get_graph(first).shape
    first.close()
    for path in (brain_dir / LORE_DIR).iterdir():
        path.unlink()
    (brain_dir / LORE_DIR).rmdir()
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


def test_a_file_gone_during_a_pass_in_batches_is_not_indexed(vault_dir: Path) -> None:
    write(vault_dir, "Hub.md", "[[Alpha]] [[Beta]] [[Gamma]]\n")
    state = ops.open_vault(vault_dir)
    try:
        assert sorted(state.placeholders) == ["alpha", "beta", "gamma"]
        for name in ("Alpha", "Beta", "Gamma"):
            write(vault_dir, f"{name}.md", "[[Hub]]\n")

        def delete_gamma(done: int, total: int) -> None:  # after Alpha.md is read
            (vault_dir / "Gamma.md").unlink(missing_ok=True)

        with state.lock, state.index.write():
            report = indexing.sync(state, progress=delete_gamma, batch_size=1)
        assert (report.added, report.removed, report.pages) == (2, 0, 3)
        assert sorted(state.placeholders) == ["gamma"]
        assert ops.read_page(state, "Hub").links[2].exists is False
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_pass_in_batches_reports_like_one_pass(brain_dir: Path) -> None:
    batched = ops.open_vault(brain_dir, scan=False)
    try:
        with batched.lock, batched.index.write():
            indexing.load(batched)
            report = indexing.sync(batched, batch_size=4)
        assert (report.pages, report.added, report.updated, report.removed) == (18, 18, 0, 0)
        assert report.placeholders == 1
        assert_matches_fresh(batched)
    finally:
        batched.close()


def test_a_first_index_keeps_the_links_indexes(brain_dir: Path) -> None:
    # A first index in batches drops them while it loads, so it must build them again.
    schema = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'links'"
    state = ops.open_vault(brain_dir, scan=False)
    try:
        before = sorted(state.index._conn.execute(schema).fetchall())
        with state.lock, state.index.write():
            indexing.load(state)
            indexing.sync(state, batch_size=4)
        assert sorted(state.index._conn.execute(schema).fetchall()) == before
        assert len(before) == 3
        plan = state.index._conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM links WHERE resolved = 'concepts/slugs'"
        ).fetchall()
        assert "links_resolved" in str(plan)
    finally:
        state.close()


def test_indexes_come_back_when_a_first_index_fails(vault_dir: Path) -> None:
    state = ops.open_vault(vault_dir, scan=False)
    schema = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'links'"
    try:
        for i in range(6):
            write(vault_dir, f"p{i}.md", f"[[p{i + 1}]]\n")

        def fail(done: int, total: int) -> None:
            if done == 3:
                raise OSError("the disk went away")

        with pytest.raises(OSError), state.lock, state.index.write():
            indexing.sync(state, progress=fail, batch_size=2)
        assert state.index._conn.execute(schema).fetchone()[0] == 3
    finally:
        state.close()


def test_a_pass_that_fails_halfway_leaves_no_half_applied_pages(vault_dir: Path) -> None:
    state = ops.open_vault(vault_dir)
    try:
        for i in range(5):
            write(vault_dir, f"p{i}.md", f"[[p{i + 1}]]\n")

        def fail_on_the_fourth(done: int, total: int) -> None:
            if done == 4:
                raise OSError("the disk went away")

        with pytest.raises(OSError), state.lock, state.index.write():
            indexing.sync(state, progress=fail_on_the_fourth, batch_size=2)
        # The index rolled back; operations must not see the batches applied before.
        assert ops.list_pages(state, include_placeholders=True).total == 0
        ops.apply_external_changes(state, [f"p{i}.md" for i in range(5)])
        assert ops.list_pages(state).total == 5
        assert_matches_fresh(state)
    finally:
        state.close()


def test_closing_right_after_commits_never_hangs(vault_dir: Path) -> None:
    """Whenever close() comes in the checkpointer's cycle (waiting, about to checkpoint,
    checkpointing), it stops the thread: closing 100 indexes at varied moments after a
    commit finishes. (A wake lost between the delay and the clear once hung a close.)"""

    def cycles() -> None:
        for i in range(100):
            index = Index(vault_dir / "index.db", checkpoint_delay_s=0.01)
            with index.write():
                index.upsert_pages(_pages(f"p{i}-", 1))
            time.sleep(0.01 * (i % 7) / 3)
            index.close()

    closer = threading.Thread(target=cycles, daemon=True)
    closer.start()
    closer.join(timeout=120)  # a hang, not a speed limit: the cycles take about 2 s
    assert not closer.is_alive(), "an Index.close() never returned"
