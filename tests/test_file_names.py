"""File names that are not UTF-8 (bytes on a Linux file system) are pages, through the
real tools: shown with percent-escapes (`caf\\xe9 latin1.md` is `caf%E9 latin1.md`),
read and written by that name in the very file, and never a reason for a pass over the
vault to fail. A file that cannot be indexed is skipped, logged and reported by `doctor`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, ok
from lore_mcp import vault_ops
from lore_mcp.errors import LoreError
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState
from lore_mcp.watcher import start_watcher
from test_watcher import FAST, wait_until

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="file names are bytes on POSIX only"),
]

LATIN1 = b"f1/caf\xe9 latin1.md"  # "café" in latin-1: the byte 0xE9 is not UTF-8
SHOWN = "f1/caf%E9 latin1.md"


# The files are made and listed by bytes paths on purpose: `os`, not `pathlib`.


def put(root: Path, rel: bytes, data: bytes) -> None:
    """Write a file by its bytes name, as a program that is not UTF-8 would."""
    path = os.path.join(os.fsencode(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)  # noqa: PTH103, PTH120
    with open(path, "wb") as handle:
        handle.write(data)


def get(root: Path, rel: bytes) -> bytes:
    with open(os.path.join(os.fsencode(root), rel), "rb") as handle:
        return handle.read()


def names(root: Path, folder: bytes = b"") -> list[bytes]:
    return sorted(os.listdir(os.path.join(os.fsencode(root), folder)))  # noqa: PTH208


@pytest.fixture
async def latin(vault_dir: Path) -> AsyncIterator[tuple[Client, AppState]]:
    write(vault_dir, "f1/Page 1.md", "One, see [[Page 2]].\n")
    write(vault_dir, "f2/Page 2.md", "Two, back to [[Page 1]].\n")
    put(vault_dir, LATIN1, b"Latin words about the menu, see [[Page 1]].\n")
    put(vault_dir, b"f\xe9/Inner.md", b"A page in a folder whose name is latin-1.\n")
    state = vault_ops.open_vault(vault_dir, scan=False)
    async with Client(build_server(state), mode="legacy") as client:
        yield client, state


async def test_a_file_name_that_is_not_utf8_is_a_page(
    latin: tuple[Client, AppState], vault_dir: Path
) -> None:
    client, state = latin
    listing = await ok(client, "list_pages")
    titles = {p["slug"]: p["title"] for p in listing["pages"]}
    assert set(titles.values()) == {"Page 1", "Page 2", "caf%E9 latin1", "Inner"}
    slug = next(s for s, t in titles.items() if t == "caf%E9 latin1")
    page = await ok(client, "read_page", slug=slug)
    assert page["path"] == SHOWN
    assert page["content"] == "Latin words about the menu, see [[Page 1]].\n"
    assert (await ok(client, "read_page", slug=SHOWN))["path"] == SHOWN  # by its path too
    saved = await ok(client, "save_page", slug=SHOWN, content="More.\n", mode="append")
    assert (saved["path"], saved["created"]) == (SHOWN, False)
    assert get(vault_dir, LATIN1) == b"Latin words about the menu, see [[Page 1]].\nMore.\n"
    assert names(vault_dir, b"f1") == [b"Page 1.md", b"caf\xe9 latin1.md"]
    hits = (await ok(client, "search", query="menu"))["hits"]
    assert [h["slug"] for h in hits] == [slug]
    # The other pages are served as ever: no duplicate made beside them.
    assert (await ok(client, "read_page", slug="Page 1"))["path"] == "f1/Page 1.md"
    saved = await ok(client, "save_page", slug="Page 1", content="Also.\n", mode="append")
    assert (saved["path"], saved["created"]) == ("f1/Page 1.md", False)
    assert names(vault_dir) == [b".lore", b"f1", b"f2", b"f\xe9"]
    backlinks = await ok(client, "get_backlinks", slug="Page 1")
    assert {b["slug"] for b in backlinks["linked"]} == {"f2/page-2", slug}
    # A new page in the latin-1 folder, named as the folder shows, lands in that folder.
    inner = await ok(client, "read_page", slug="Inner")
    assert inner["path"] == "f%E9/Inner.md"
    new = await ok(client, "save_page", slug="f%E9/New", content="New here.\n")
    assert new["path"] == "f%E9/New.md"
    assert names(vault_dir, b"f\xe9") == [b"Inner.md", b"New.md"]
    renamed = await ok(client, "rename_page", slug=SHOWN, new_name="f1/Cafe")
    assert renamed["path"] == "f1/Cafe.md"
    assert names(vault_dir, b"f1") == [b"Cafe.md", b"Page 1.md"]
    assert_matches_fresh(state)


async def test_a_restart_serves_the_same_pages(
    latin: tuple[Client, AppState], vault_dir: Path
) -> None:
    client, _ = latin
    before = await ok(client, "list_pages")
    state = vault_ops.open_vault(vault_dir)
    try:
        assert vault_ops.list_pages(state).model_dump(mode="json") == before | {"vault": None}
        assert vault_ops.doctor(state).unindexed == []
    finally:
        state.close()


def test_a_name_shown_as_another_files_name_is_skipped_and_reported(vault_dir: Path) -> None:
    put(vault_dir, b"caf%E9.md", b"The file whose name is UTF-8.\n")
    put(vault_dir, b"caf\xe9.md", b"The latin-1 one.\n")
    state = vault_ops.open_vault(vault_dir)
    try:
        page = vault_ops.read_page(state, "caf%E9")
        assert page.content == "The file whose name is UTF-8.\n"
        vault_ops.save_page(state, "caf%E9", "Appended.\n", mode="append")
        assert get(vault_dir, b"caf%E9.md") == b"The file whose name is UTF-8.\nAppended.\n"
        assert get(vault_dir, b"caf\xe9.md") == b"The latin-1 one.\n"
        [skipped] = vault_ops.doctor(state).unindexed
        assert skipped.path == "caf%E9.md" and "another file" in skipped.reason
    finally:
        state.close()


def test_a_file_that_cannot_be_read_stops_no_pass(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(vault_dir, "Fine.md", "A page.\n")
    os.mkfifo(vault_dir / "Pipe.md")  # would block a reader for ever
    (vault_dir / "Loop.md").symlink_to(vault_dir / "Loop.md")  # resolves nowhere
    put(vault_dir, b"caf\xe9.md", b"Latin.\n")
    state = vault_ops.open_vault(vault_dir)
    try:
        assert sorted(state.pages) == ["Fine.md", "caf%E9.md"]
        assert "skipping Pipe.md: not a regular file" in caplog.text
        report = vault_ops.doctor(state)
        assert [(f.path, f.reason) for f in report.unindexed] == [
            ("Loop.md", "a symbolic link that leads outside the vault"),
            ("Pipe.md", "not a regular file"),
        ]
    finally:
        state.close()


def test_the_watcher_takes_in_a_name_that_is_not_utf8(state: AppState) -> None:
    start_watcher(state, FAST)
    put(state.root, LATIN1, b"Arrived from outside.\n")
    assert wait_until(lambda: "Arrived from outside.\n" in _content(state, SHOWN))
    (state.root / os.fsdecode(LATIN1)).unlink()
    assert wait_until(lambda: not state.pages)
    assert_matches_fresh(state)


def test_a_path_the_file_system_gives_is_shown_name_by_name(state: AppState) -> None:
    put(state.root, b"100% done/caf\xe9 100%.md", b"Escaped in its own name only.\n")
    vault_ops.apply_external_changes(state, [os.fsdecode(b"100% done/caf\xe9 100%.md")])
    [row] = state.index.pages.all()
    assert row.path == "100% done/caf%E9 100%25.md"
    assert vault_ops.read_page(state, row.path).content == "Escaped in its own name only.\n"
    assert_matches_fresh(state)


def _content(state: AppState, name: str) -> str:
    try:
        return vault_ops.read_page(state, name).content
    except LoreError:
        return ""


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(min_size=1, max_size=12))
def test_every_name_shows_as_text_that_leads_back_to_its_file(tmp_path: Path, name: bytes) -> None:
    stem = b"n" + name.replace(b"/", b"_").replace(b"\x00", b"_")
    root = tmp_path / f"vault-{stem.hex()}"
    root.mkdir(exist_ok=True)
    put(root, stem + b".md", b"found\n")
    found = vault_ops.open_vault(root)
    try:
        [row] = [r for r in found.index.pages.all() if r.path]
        assert row.path is not None
        row.path.encode("utf-8")  # text: SQLite and JSON carry it
        assert vault_ops.read_page(found, found.handle(row.key)).content == "found\n"
        assert vault_ops.read_page(found, row.path).content == "found\n"

    finally:
        found.close()
