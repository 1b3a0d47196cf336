"""Odd files on disk and a damaged index, through the real tools.

Files that are empty, not UTF-8, too large or symlinks out of the vault are indexed as
far as sensible or skipped with a log line, and never rewritten. The index is a cache:
however it is damaged, a server start rebuilds it from the files and loses nothing.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, ok, page_slugs, placeholder_slugs
from helpers import fails as refused
from lore_mcp import vault_ops
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR, MAX_FILE_BYTES
from lore_mcp.errors import LoreError, PageNotFoundError
from lore_mcp.index.schema import SCHEMA_VERSION
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

pytestmark = pytest.mark.anyio

BAD_UTF8 = b"caf\xe9 menu links [[Target]]\n\xff\xfe trailing bytes\n"


def files(root: Path) -> dict[str, bytes]:
    """Every file under the root but the index, symlinks as where they lead."""
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if LORE_DIR in rel.parts:
            continue
        if path.is_symlink():
            found[rel.as_posix()] = b"-> " + str(path.readlink()).encode()
        elif path.is_file():
            found[rel.as_posix()] = path.read_bytes()
    return found


@pytest.fixture
async def odd_vault(vault_dir: Path, tmp_path: Path) -> AsyncIterator[tuple[Client, AppState]]:
    """A vault holding every kind of odd file, served in memory."""
    write(vault_dir, "Target.md", "The target.\n")
    write(vault_dir, "Links.md", "To [[Empty]], [[Bom]], [[Huge]], [[Secret]] and [[Bad]].\n")
    (vault_dir / "Empty.md").write_bytes(b"")
    (vault_dir / "Bom.md").write_bytes(b"\xef\xbb\xbf")
    (vault_dir / "Bad.md").write_bytes(BAD_UTF8)
    with (vault_dir / "Huge.md").open("wb") as handle:  # sparse: costs no disk, never read
        handle.truncate(MAX_FILE_BYTES + 1)
    outside = tmp_path / "outside"
    write(outside, "Secret.md", "secret words outside the vault\n")
    write(outside, "Inner.md", "inner secret words\n")
    (vault_dir / "Secret.md").symlink_to(outside / "Secret.md")
    (vault_dir / "elsewhere").symlink_to(outside, target_is_directory=True)
    state = vault_ops.open_vault(vault_dir, scan=False)
    async with Client(build_server(state), mode="legacy") as client:
        await ok(client, "list_pages")  # waits for the first index pass
        yield client, state


async def test_odd_files_are_indexed_as_far_as_sensible(
    odd_vault: tuple[Client, AppState], tmp_path: Path
) -> None:
    client, state = odd_vault
    before = files(state.root) | files(tmp_path / "outside")
    listing = await ok(client, "list_pages", include_placeholders=True)
    kinds = {p["slug"]: p["is_placeholder"] for p in listing["pages"]}
    assert kinds == {
        "bad": False,
        "bom": False,
        "empty": False,
        "links": False,
        "target": False,
        "huge": True,  # skipped: only the link to it is known
        "secret": True,  # a symlink out of the vault is not a page
    }
    assert (await ok(client, "read_page", slug="Empty"))["content"] == ""
    assert (await ok(client, "read_page", slug="Bom"))["content"] == "\ufeff"
    bad = await ok(client, "read_page", slug="Bad")
    assert bad["content"] == BAD_UTF8.decode("utf-8", errors="replace")
    assert [link["slug"] for link in bad["links"]] == ["target"]
    assert [h["slug"] for h in (await ok(client, "search", query="menu"))["hits"]] == ["bad"]
    assert (await ok(client, "search", query='"secret words"'))["hits"] == []
    assert "No page named" in await refused(client, "read_page", slug="elsewhere/Inner")
    backlinks = await ok(client, "get_backlinks", slug="Target", include_unlinked=True)
    assert [b["slug"] for b in backlinks["linked"]] == ["bad"]
    await ok(client, "save_page", slug="Links", content="Now to [[Target]] only.\n")
    await ok(client, "rename_page", slug="Empty", new_name="Void")
    await ok(client, "delete_page", slug="Void")
    after = files(state.root) | files(tmp_path / "outside")
    assert after.pop("Links.md") == b"Now to [[Target]] only.\n"
    assert before.pop("Links.md") != b""
    assert before.pop("Empty.md") == b""
    assert after == before  # nothing odd was rewritten, inside or outside
    assert_matches_fresh(state)


def test_huge_files_are_skipped_with_a_log_line(
    state: AppState, vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lore_mcp")
    write(vault_dir, "Grows.md", "small for now, links [[Other]]\n")
    vault_ops.apply_external_changes(state, ["Grows.md"])
    assert "grows" in page_slugs(state)
    with (vault_dir / "Grows.md").open("r+b") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with (vault_dir / "Born Huge.md").open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 10)
    vault_ops.apply_external_changes(state, ["Grows.md", "Born Huge.md"])
    assert sorted(page_slugs(state)) == []
    assert "skipping Grows.md" in caplog.text and "skipping Born Huge.md" in caplog.text
    assert "over the 20971520 byte limit" in caplog.text
    assert (vault_dir / "Grows.md").stat().st_size == MAX_FILE_BYTES + 1
    assert_matches_fresh(state)


def test_a_file_vanishing_before_a_read(state: AppState, vault_dir: Path) -> None:
    write(vault_dir, "Here.md", "here, linking [[Gone Soon]]\n")
    write(vault_dir, "Gone Soon.md", "about to vanish\n")
    vault_ops.apply_external_changes(state, ["Here.md", "Gone Soon.md"])
    (vault_dir / "Gone Soon.md").unlink()  # behind the server's back: no watcher
    with pytest.raises(PageNotFoundError):
        vault_ops.read_page(state, "Gone Soon")
    assert "gone-soon" in placeholder_slugs(state)  # the read noticed, and the index agrees
    assert_matches_fresh(state)


# -- the index is a cache ------------------------------------------------------------------


def _db(root: Path) -> Path:
    return root / LORE_DIR / CACHE_DIR / DB_NAME


def _sql(root: Path, *statements: str) -> None:
    conn = sqlite3.connect(_db(root))
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _drop_wal(root: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{_db(root)}{suffix}").unlink(missing_ok=True)


def _replace_db(root: Path, data: bytes) -> None:
    _drop_wal(root)
    _db(root).write_bytes(data)


def _garbage_wal(root: Path) -> None:
    Path(f"{_db(root)}-wal").write_bytes(b"\xffwal junk" * 999)


def _db_as_folder(root: Path) -> None:
    shutil.rmtree(root / LORE_DIR)
    _db(root).mkdir(parents=True)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "deleted": lambda root: shutil.rmtree(root / LORE_DIR),
    "emptied": lambda root: _replace_db(root, b""),
    "garbage": lambda root: _replace_db(root, b"\x00junk" * 5000),
    "half": lambda root: _replace_db(root, _db(root).read_bytes()[: _db(root).stat().st_size // 2]),
    "garbage wal": _garbage_wal,
    "older schema": lambda root: _sql(root, f"PRAGMA user_version = {SCHEMA_VERSION - 1}"),
    "newer schema": lambda root: _sql(root, f"PRAGMA user_version = {SCHEMA_VERSION + 1}"),
    "table gone": lambda root: _sql(root, "DROP TABLE fts"),
    "links gone": lambda root: _sql(root, "DROP TABLE links"),
    "rows gone": lambda root: _sql(root, "DELETE FROM pages", "DELETE FROM links"),
    "a folder": _db_as_folder,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_a_damaged_index_is_rebuilt_on_start(
    brain_dir: Path, damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = vault_ops.open_vault(brain_dir)
    shape = vault_ops.get_graph(first).shape
    first.close()
    before = files(brain_dir)
    DAMAGE[damage](brain_dir)
    state = vault_ops.open_vault(brain_dir, scan=False)
    async with Client(build_server(state), mode="legacy") as client:
        assert shape is not None
        assert (await ok(client, "get_graph"))["shape"] == shape.model_dump(mode="json")
        page = await ok(client, "read_page", slug="Slugs")
        assert page["backlinks"] and page["links"]
        assert (await ok(client, "search", query="placeholder"))["hits"]
        assert_matches_fresh(state)
    assert files(brain_dir) == before


# -- writes never reach past the vault or past what the index holds ----------------------


async def test_a_save_never_writes_through_a_symlink_out(
    odd_vault: tuple[Client, AppState], tmp_path: Path
) -> None:
    client, state = odd_vault
    outside = files(tmp_path / "outside")
    assert "elsewhere/inner" not in page_slugs(state)
    message = await refused(client, "save_page", slug="elsewhere/Planted", content="x")
    assert "outside the vault" in message
    message = await refused(client, "rename_page", slug="Target", new_name="elsewhere/Moved")
    assert "outside the vault" in message
    assert files(tmp_path / "outside") == outside


async def test_a_save_never_replaces_a_skipped_file(odd_vault: tuple[Client, AppState]) -> None:
    client, state = odd_vault
    assert "huge" in placeholder_slugs(state)
    before = files(state.root)
    assert "not indexed" in await refused(client, "save_page", slug="Huge", content="x")
    assert "not indexed" in await refused(client, "save_page", slug="Secret", content="x")
    assert files(state.root) == before


async def test_a_rename_keeps_the_bytes_of_a_non_utf8_file(
    odd_vault: tuple[Client, AppState],
) -> None:
    client, state = odd_vault
    await ok(client, "rename_page", slug="Target", new_name="New Target")
    assert (state.root / "Bad.md").read_bytes() == BAD_UTF8.replace(
        b"[[Target]]", b"[[New Target]]"
    )


def test_a_source_vanishing_during_a_rename(state: AppState, vault_dir: Path) -> None:
    write(vault_dir, "Target.md", "target\n")
    write(vault_dir, "Source.md", "see [[Target]]\n")
    vault_ops.apply_external_changes(state, ["Target.md", "Source.md"])
    (vault_dir / "Source.md").unlink()  # behind the server's back: no watcher
    with contextlib.suppress(LoreError):
        vault_ops.rename_page(state, "Target", "New Target")
    assert_matches_fresh(state)
