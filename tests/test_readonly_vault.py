"""A vault folder this process cannot write to: reads work, writes fail with a clear
message, and nothing changes. The index, which cannot live in `<vault>/.lore/`, goes
to a per-user cache folder instead.

CI runs as root, which ignores file modes. So the server runs in a subprocess that,
when it is root, first drops the capabilities that let root write anywhere
(CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER) from its bounding set: after exec
it is still root, but file modes bind it like any owner.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import BRAIN
from helpers import call, text
from lore_mcp import vault_ops as engine
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR
from rawpipe import server_env

pytestmark = pytest.mark.anyio

# python -c DROP_WRITE_POWERS -m lore_mcp ... : the same command, without root's bypass.
DROP_WRITE_POWERS = """
import ctypes, os, sys
if os.geteuid() == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise SystemExit(f"cannot drop capability {cap}: errno {ctypes.get_errno()}")
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def set_writable(root: Path, writable: bool) -> None:
    for folder, _, names in os.walk(root):
        for name in names:
            (Path(folder) / name).chmod(0o644 if writable else 0o444)
        Path(folder).chmod(0o755 if writable else 0o555)


def write_is_refused(folder: Path) -> bool:
    """True when a process started the way the server is cannot create a file here."""
    probe = f"open({str(folder / 'probe.md')!r}, 'w')"
    done = subprocess.run(
        [sys.executable, "-c", DROP_WRITE_POWERS, "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if "cannot drop capability" in done.stderr:
        pytest.skip(f"running as root without CAP_SETPCAP: {done.stderr.strip()}")
    return done.returncode != 0 and "PermissionError" in done.stderr


@pytest.fixture(params=["fresh", pytest.param("indexed before", marks=pytest.mark.slow)])
def readonly_vault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A copy of brain/ nobody may write to; with "indexed before", it holds a `.lore/`
    from a time it was writable (read-only too now)."""
    vault = tmp_path / "vault"
    shutil.copytree(BRAIN, vault, ignore=shutil.ignore_patterns(".lore"))
    if request.param == "indexed before":
        engine.open_vault(vault).close()
        assert (vault / LORE_DIR / CACHE_DIR / DB_NAME).is_file()
    set_writable(vault, False)
    try:
        if not write_is_refused(vault):
            pytest.skip(
                "this process can write to a folder with mode 0555 (file modes bind no one)"
            )
        yield vault
    finally:
        set_writable(vault, True)


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
async def test_read_only_vault_serves_reads_and_refuses_writes(
    readonly_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    had_index = (readonly_vault / LORE_DIR).exists()
    before = files(readonly_vault)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", DROP_WRITE_POWERS, "-m", "lore_mcp", "--vault", str(readonly_vault)],
        env=server_env(XDG_CACHE_HOME=str(cache)),
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            page = await call(client, "read_page", slug="Slugs")
            assert page.is_error is False and "slug: concepts/slugs" in text(page)
            found = await call(client, "search", query="placeholder")
            assert found.is_error is False and found.structured_content
            assert found.structured_content["hits"]
            listing = await call(client, "list_pages")
            assert listing.structured_content and listing.structured_content["total"] == 18
            for tool, arguments in [
                ("save_page", {"slug": "New Page", "content": "x"}),
                ("save_page", {"slug": "Slugs", "content": "overwritten"}),
                ("save_page", {"slug": "concepts/New Page", "content": "x"}),
                ("delete_page", {"slug": "Slugs"}),
                ("rename_page", {"slug": "Slugs", "new_name": "Renamed"}),
            ]:
                refused = await call(client, tool, **arguments)
                assert refused.is_error is True, tool
                assert "Permission denied" in text(refused), text(refused)
            again = await call(client, "read_page", slug="Slugs")
            assert again.is_error is False and text(again) == text(page)
    assert files(readonly_vault) == before
    [index] = (cache / "lore-mcp").rglob(DB_NAME)  # one index, in the user's cache folder
    assert index.is_file()
    assert stat.S_IMODE(readonly_vault.stat().st_mode) == 0o555
    assert (readonly_vault / LORE_DIR).exists() is had_index
