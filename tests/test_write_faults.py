"""A write is all or nothing as the agent sees it, on a real full disk.

The vault sits on a small tmpfs that is filled to the last page (or only its index
does); every write tool either succeeds fully or fails with a message that says what
was done, and when it says nothing was changed, nothing was: the pages, the history and
the audit log are as they were, and the same call with the same expected_hash works
once there is space again. Mounting needs root (CI runs as root); without it the tests
skip.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, call, text
from lore_mcp import audit, vault_ops
from lore_mcp.config import CACHE_DIR, LORE_DIR
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where`, unmounted however the test ends."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    """Fill the file system of `folder` to its last page; the filler, to delete."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as handle:
        for chunk in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    handle.write(b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    return filler


def state_of(root: Path) -> dict[str, bytes]:
    """Every file and folder of the vault, its history and audit log too, but not the
    index cache."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(f"{LORE_DIR}/{CACHE_DIR}") or rel == "filler":
            continue
        found[rel] = path.read_bytes() if path.is_file() else b"(a folder)"
    return found


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


NOTE = b"# Note\n\nLinks to [[Hub]] and [[Missing]].\n"
# Each write tool, as a call that carries the expected_hash of the page it changes.
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "save": ("save_page", {"slug": "Note", "content": "replaced, see [[New Place]]\n"}),
    "append": ("save_page", {"slug": "Note", "content": "one more line\n", "mode": "append"}),
    "create": ("save_page", {"slug": "deep/er/Fresh", "content": "new\n", "expected_hash": ""}),
    "delete": ("delete_page", {"slug": "Note"}),
    "rename": ("rename_page", {"slug": "Note", "new_name": "moved/Renamed Note"}),
    "restore": ("save_page", {"slug": "Note", "mode": "restore", "version": 1}),
}


def seed(root: Path, *, linked: bool = False) -> None:
    """Three pages, `Note` saved once (a version to restore); with `linked`, `Note.md`
    has a second name, so the history must copy its bytes (it cannot link them)."""
    write(root, "Hub.md", "The hub: [[Note]], [[Note#Note|the note]].\n")
    write(root, "Other.md", "Also [[Note]].\n")
    (root / "Note.md").write_bytes(b"first version\n")
    state = vault_ops.open_vault(root)
    try:
        vault_ops.save_page(state, "Note", NOTE.decode())
    finally:
        state.close()  # the next open starts with an empty write-ahead log
    if linked:
        os.link(root / "Note.md", root / ".twin")


def arguments(name: str) -> tuple[str, dict[str, Any]]:
    tool, given = CALLS[name]
    return tool, given if name == "create" else given | {"expected_hash": sha(NOTE)}


@contextlib.contextmanager
def full_disk(root: Path) -> Iterator[None]:
    """The file system `root`'s parent is mounted at, filled while inside."""
    filler = fill(root.parent)
    try:
        yield
    finally:
        filler.unlink()


@contextlib.contextmanager
def audit_unwritable(root: Path) -> Iterator[None]:
    """The audit log cannot be written while inside: a folder stands at its path."""
    log = audit.log_path(root)
    log.rename(log.with_suffix(".aside"))
    log.mkdir()
    try:
        yield
    finally:
        log.rmdir()
        log.with_suffix(".aside").rename(log)


async def attempt(
    root: Path, name: str, fault: Callable[[Path], AbstractContextManager[None]]
) -> None:
    """Make the call while `fault` holds: it must fail saying nothing was changed, and
    have changed nothing. Then make the same call again once the fault is gone: it
    succeeds, and its audit record says what the files hold."""
    tool, given = arguments(name)
    state = vault_ops.open_vault(root, scan=False)
    async with Client(build_server(state), mode="legacy") as client:
        await call(client, "list_pages")  # the first pass is done before the fault
        before = state_of(root)
        with fault(root):
            result = await call(client, tool, **given)
        message = text(result)
        assert result.is_error and "Nothing was changed" in message, message
        now = state_of(root)
        assert now == before, (message, set(now.items()) ^ set(before.items()))
        await call(client, "list_pages")
        assert_matches_fresh(state)
        result = await call(client, tool, **given)  # the retry, with the same expected_hash
        assert result.is_error is False, text(result)
        records = audit.read_log(root).records
        assert len(records) == 2  # the seed's save, then this one
        last = records[-1]
        for rel, after in [(last.path, last.after), *((p.path, p.after) for p in last.rewritten)]:
            assert audit.file_hash(root / rel) == after  # the record says what the files hold
        assert not list(root.rglob(".lore-tmp-*"))
        assert not (root / LORE_DIR / "journal.json").exists()
        await call(client, "list_pages")
        assert_matches_fresh(state)


@pytest.mark.parametrize(
    "linked",
    [False, pytest.param(True, marks=pytest.mark.slow)],  # the default run keeps to its time
    ids=["history links", "history copies"],
)
@pytest.mark.parametrize("name", sorted(CALLS))
async def test_a_write_on_a_full_vault_disk_changes_nothing(
    tmp_path: Path, name: str, linked: bool
) -> None:
    with tmpfs(tmp_path / "disk", "2m") as disk:
        root = disk / "vault"
        root.mkdir()
        seed(root, linked=linked)
        await attempt(root, name, full_disk)


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_a_write_whose_audit_record_cannot_be_written_changes_nothing(
    vault_dir: Path, name: str
) -> None:
    seed(vault_dir)
    await attempt(vault_dir, name, audit_unwritable)


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_a_write_with_a_full_index_disk_says_what_it_did(tmp_path: Path, name: str) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    cache = root / LORE_DIR / CACHE_DIR
    with tmpfs(cache, "1m"):
        seed(root)
        tool, given = arguments(name)
        state = vault_ops.open_vault(root, scan=False)
        async with Client(build_server(state), mode="legacy") as client:
            await call(client, "list_pages")
            filler = fill(cache)
            result = await call(client, tool, **given)
            message = text(result)
            assert result.is_error, message  # the index had no room for the change
            # The files changed with their record, before the index's commit failed: the
            # message says so, and that the change is taken in later.
            assert "recorded in the audit log" in message and "Do not repeat" in message
            assert "Internal error" not in message
            last = audit.read_log(root).records[-1]
            for rel, after in [
                (last.path, last.after),
                *((c.path, c.after) for c in last.rewritten),
            ]:
                assert audit.file_hash(root / rel) == after
            assert not (root / LORE_DIR / "journal.json").exists()
            filler.unlink()
            await call(client, "save_page", slug="Later", content="a later write\n")
            assert_matches_fresh(state)


@pytest.mark.parametrize("tool", ["read_page", "delete_page"])
async def test_a_file_vanishing_while_the_index_disk_is_full(tmp_path: Path, tool: str) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    cache = root / LORE_DIR / CACHE_DIR
    with tmpfs(cache, "1m"):
        seed(root)
        state = vault_ops.open_vault(root, scan=False)
        async with Client(build_server(state), mode="legacy") as client:
            await call(client, "list_pages")
            filler = fill(cache)
            (root / "Note.md").unlink()  # behind the server's back
            result = await call(client, tool, slug="Note")
            assert result.is_error and "disappeared from disk" in text(result), text(result)
            filler.unlink()
            await call(client, "save_page", slug="Later", content="a later write\n")
            assert_matches_fresh(state)
