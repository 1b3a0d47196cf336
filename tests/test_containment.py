"""Pages that a `git checkout` turns into symlinks out of the vault, through the real tools.

A vault is a git repository whose second branch has `f2/Page 2.md` as a symlink to a file
outside the vault and `f4/` as a symlink to a folder outside it. After the checkout, the
index still holds both pages as they were. Whatever looks next (a tool call on the stale
index, the watcher, the periodic check, the start-up pass), the outside files are never
read, searched, kept in the history or written, and both paths stop being pages.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, call, ok, page_slugs, text
from helpers import fails as refused
from lore_mcp import vault_ops
from lore_mcp.config import HISTORY_DIR, LORE_DIR
from lore_mcp.errors import LoreError
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState
from lore_mcp.watcher import start_watcher
from test_watcher import FAST, wait_until

pytestmark = pytest.mark.anyio

SECRET = "OUTSIDEWORD"  # in the outside files only; never in a result, an index or a history
PAGES = {
    "f1/Page 1.md": "One links [[Page 2]] and [[Page 4]].\n",
    "f2/Page 2.md": "Inside two.\n",
    "f3/Page 3.md": "Inside three, about Page 4.\n",
    "f4/Page 4.md": "Inside four.\n",
}


@dataclass
class Repo:
    """A vault under git, and the folder outside it that the `swap` branch leads to."""

    root: Path
    outside: Path

    def git(self, *args: str) -> None:
        subprocess.run(["git", "-C", str(self.root), *args], check=True, capture_output=True)

    def checkout(self, branch: str) -> None:
        self.git("checkout", "-q", branch)

    def outside_files(self) -> dict[str, bytes]:
        return {p.relative_to(self.outside).as_posix(): p.read_bytes() for p in self.files()}

    def files(self) -> list[Path]:
        return sorted(p for p in self.outside.rglob("*") if p.is_file())


@pytest.fixture
def repo(vault_dir: Path, tmp_path: Path) -> Repo:
    """The vault on branch `main`, with the `swap` branch committed beside it."""
    outside = tmp_path / "outside"
    write(outside, "secret.md", f"{SECRET} in a file outside the vault\n")
    write(outside, "folder/Page 4.md", f"{SECRET} in a folder outside the vault\n")
    found = Repo(vault_dir, outside)
    found.git("init", "-q", "-b", "main")
    found.git("config", "user.email", "test@example.com")
    found.git("config", "user.name", "test")
    (vault_dir / ".git" / "info" / "exclude").write_text(f"{LORE_DIR}/\n")
    for rel, body in PAGES.items():
        write(vault_dir, rel, body)
    found.git("add", "-A")
    found.git("commit", "-qm", "pages")
    found.git("checkout", "-qb", "swap")
    found.git("rm", "-q", "f2/Page 2.md", "f4/Page 4.md")
    (vault_dir / "f2").mkdir(exist_ok=True)
    (vault_dir / "f2" / "Page 2.md").symlink_to(outside / "secret.md")
    (vault_dir / "f4").symlink_to(outside / "folder", target_is_directory=True)
    found.git("add", "-A")
    found.git("commit", "-qm", "symlinks out")
    found.checkout("main")
    assert (vault_dir / "f4" / "Page 4.md").read_text() == PAGES["f4/Page 4.md"]
    return found


@pytest.fixture
async def served(repo: Repo) -> AsyncIterator[tuple[Client, AppState]]:
    """The vault indexed on `main` and served in memory, with no watcher."""
    state = vault_ops.open_vault(repo.root, scan=False)
    async with Client(build_server(state), mode="legacy") as client:
        assert (await ok(client, "read_page", slug="f4/Page 4"))["content"] == "Inside four.\n"
        await ok(client, "save_page", slug="f4/Page 4", content="Inside four, kept.\n")
        repo.git("commit", "-qam", "saved")
        yield client, state


def history_bytes(root: Path) -> list[bytes]:
    base = root / LORE_DIR / HISTORY_DIR
    return [p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()]


def assert_contained(repo: Repo, before: dict[str, bytes]) -> None:
    """Nothing outside was written, and the history holds no byte of it."""
    assert repo.outside_files() == before
    assert history_bytes(repo.root), "the history holds the inside version"
    assert not [data for data in history_bytes(repo.root) if SECRET.encode() in data]


async def test_a_stale_index_never_reads_or_writes_through_the_new_symlinks(
    repo: Repo, served: tuple[Client, AppState]
) -> None:
    client, state = served
    repo.checkout("swap")  # no watcher: the index still holds both pages
    outside = repo.outside_files()
    for name in ("f2/Page 2", "f4/Page 4"):
        assert "leads outside the vault" in await refused(client, "read_page", slug=name)
        result = await call(client, "read_page", slug=name)  # the next look: not a page
        assert SECRET not in text(result) and SECRET not in str(result.structured_content)
    for name in ("f2/Page 2", "f4/Page 4", "f4/New Page"):
        await refused(client, "save_page", slug=name, content="written through\n")
        await refused(client, "save_page", slug=name, content="more\n", mode="append")
    await refused(client, "delete_page", slug="f4/Page 4")
    mentions = await ok(client, "get_backlinks", slug="Page 4", include_unlinked=True)
    assert SECRET not in str(mentions)
    assert (await ok(client, "search", query=SECRET))["hits"] == []
    pages = {p["slug"] for p in (await ok(client, "list_pages"))["pages"]}
    assert pages == {"f1/page-1", "f3/page-3"}
    assert_contained(repo, outside)
    assert_matches_fresh(state)


async def test_the_start_up_pass_after_a_checkout_takes_neither_in(repo: Repo) -> None:
    vault_ops.open_vault(repo.root).close()  # indexed on main
    repo.checkout("swap")
    outside = repo.outside_files()
    state = vault_ops.open_vault(repo.root, scan=False)  # a restart
    async with Client(build_server(state), mode="legacy") as client:
        assert (await ok(client, "search", query=SECRET))["hits"] == []
        pages = {p["slug"] for p in (await ok(client, "list_pages"))["pages"]}
        assert pages == {"f1/page-1", "f3/page-3"}
        for name in ("f2/Page 2", "f4/Page 4"):
            result = await call(client, "read_page", slug=name)
            assert SECRET not in text(result) and SECRET not in str(result.structured_content)
            await refused(client, "save_page", slug=name, content="written through\n")
        doctor = vault_ops.doctor(state)
        assert {f.path: f.reason for f in doctor.unindexed} == {
            "f2/Page 2.md": "a symbolic link that leads outside the vault"
        }  # f4/ is a folder symlink, which is never followed
        assert_matches_fresh(state)
    assert repo.outside_files() == outside
    assert not [data for data in history_bytes(repo.root) if SECRET.encode() in data]


@pytest.fixture
def watched(repo: Repo) -> Iterator[AppState]:
    state = vault_ops.open_vault(repo.root)
    yield state
    state.close()


def test_the_watcher_drops_pages_that_a_checkout_made_symlinks_out(
    repo: Repo, watched: AppState
) -> None:
    start_watcher(watched, FAST)
    assert {"f2/page-2", "f4/page-4"} <= page_slugs(watched)
    repo.checkout("swap")
    assert wait_until(lambda: not {"f2/page-2", "f4/page-4"} & page_slugs(watched))

    assert vault_ops.search(watched, SECRET).hits == []
    assert_matches_fresh(watched)


def test_the_periodic_check_drops_pages_that_a_checkout_made_symlinks_out(
    repo: Repo, watched: AppState
) -> None:
    repo.checkout("swap")  # no event reaches the vault: only the minute's check looks
    assert vault_ops.changed_on_disk(watched) == ["f2/Page 2.md", "f4/Page 4.md"]
    vault_ops.apply_external_changes(watched, vault_ops.changed_on_disk(watched))
    assert not {"f2/page-2", "f4/page-4"} & set(watched.pages)
    assert vault_ops.changed_on_disk(watched) == []  # and it stays so: no ping-pong
    assert vault_ops.search(watched, SECRET).hits == []
    assert_matches_fresh(watched)


def test_a_rename_never_writes_through_a_folder_that_became_a_symlink_out(
    repo: Repo, watched: AppState
) -> None:
    repo.checkout("swap")
    outside = repo.outside_files()
    with pytest.raises(LoreError, match="outside the vault"):
        vault_ops.rename_page(watched, "f4/Page 4", "f3/Renamed")
    vault_ops.rename_page(watched, "f1/Page 1", "f1/First")  # its links lead to both
    assert repo.outside_files() == outside
    assert not [data for data in history_bytes(repo.root) if SECRET.encode() in data]
    vault_ops.resync(watched)  # f2/ was not looked at yet: the stale index still has it
    assert_matches_fresh(watched)
