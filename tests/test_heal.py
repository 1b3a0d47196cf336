"""The index heals itself: random bytes over one page of a real `lore.db`, or a file cut
short under a running server, and every tool still answers as a fresh index of the same
files would; `lore index`, `lore doctor` and `lore search` too, and a new server answers
`initialize` at once.

Each case is run twice, on a damaged vault and on an untouched copy of the same files,
through the real tool layer, and the answers compared.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from helpers import assert_matches_fresh, environment, ok, page_slugs
from lore_mcp import audit
from lore_mcp import vault_ops as ops
from lore_mcp.cli import main
from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR
from lore_mcp.server import build_server
from lore_mcp.vault_ops.pagefile import content_hash
from rawpipe import RawServer, tool_text

PAGE = 4096
# Seeds whose damaged page broke some or all tools, at open or at a later call (odd
# ones write first, even ones read first); and some that broke the index pass at open.
SEEDS = [2, 3, 5, 9, 12, 26]
OPEN_SEEDS = [5, 6, 10]
APPENDED = "\nAppended once, see [[Link Resolution]].\n"
WRITTEN = "written by the test"


def db_path(root: Path) -> Path:
    return root / LORE_DIR / CACHE_DIR / DB_NAME


def indexed_copy(source: Path, name: str) -> Path:
    """A copy of the files of `source` (times kept), indexed and closed, so that the
    whole index is in `lore.db` (no write-ahead log)."""
    root = source.parent / name
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(LORE_DIR))
    ops.open_vault(root).close()
    return root


def damage_page(root: Path, seed: int) -> int:
    """Random bytes over one whole page of the index, past the first; its number."""
    path = db_path(root)
    rng = random.Random(seed)
    page = rng.randrange(1, path.stat().st_size // PAGE)
    with path.open("r+b") as handle:
        handle.seek(page * PAGE)
        handle.write(rng.randbytes(PAGE))
    return page


@asynccontextmanager
async def serving(root: Path) -> AsyncIterator[Client]:
    """An in-memory client of a server over the vault at `root`, as `lore-mcp` opens it."""
    state = ops.open_vault(root, scan=False)
    async with Client(build_server(state)) as client:
        yield client


def without_history(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer minus where its history version went (the name holds the time)."""
    return {key: value for key, value in answer.items() if key != "history_path"}


def comparable(answers: list[dict[str, Any]], since: str) -> list[dict[str, Any]]:
    """Answers with the modification times of files written since `since` (at other
    seconds in the two vaults) and the vaults' names (their folders') left out."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: WRITTEN if key == "modified" and (item or "") >= since else plain(item)
                for key, item in value.items()
                if key != "vault"
            }
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value

    return [plain(answer) for answer in answers]


def now() -> str:
    """The time as list_pages writes it, a second ago."""
    return (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def hash_of(root: Path, rel: str) -> str:
    return content_hash((root / rel).read_bytes())


async def reads(client: Client) -> list[dict[str, Any]]:
    """The six read tools, a few ways each."""
    return [
        await ok(client, "read_page", slug="Slugs"),
        await ok(client, "read_page", slug="concepts/link-resolution"),
        await ok(client, "search", query="placeholder links", limit=20),
        await ok(client, "search", query="rename", limit=20),
        await ok(client, "search_titles", query="link"),
        await ok(client, "get_backlinks", slug="Slugs", include_unlinked=True),
        await ok(client, "get_graph"),
        await ok(client, "get_graph", slug="Slugs", depth=2),
        await ok(client, "list_pages", include_placeholders=True),
    ]


async def writes(client: Client, root: Path) -> list[dict[str, Any]]:
    """The three write tools; the append carries the hash the untouched file has."""
    expected = hash_of(root, "concepts/Slugs.md")
    answers = [
        await ok(
            client,
            "save_page",
            slug="Slugs",
            content=APPENDED,
            mode="append",
            expected_hash=expected,
        ),
        await ok(
            client, "save_page", slug="Fresh Page", content="About [[Slugs]] and [[Nowhere]]."
        ),
        await ok(client, "rename_page", slug="Agent Habits", new_name="notes/Habits Of Agents"),
        await ok(client, "delete_page", slug="Open Questions"),
    ]
    return [without_history(answer) for answer in answers]


Script = Callable[[Client, Path], Any]


async def reads_then_writes(client: Client, root: Path) -> list[dict[str, Any]]:
    return [*await reads(client), *await writes(client, root), *await reads(client)]


async def writes_then_reads(client: Client, root: Path) -> list[dict[str, Any]]:
    return [*await writes(client, root), *await reads(client)]


def page_files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*.md"))
        if LORE_DIR not in path.relative_to(root).parts
    }


def check_vault(root: Path, untouched: Path) -> None:
    """The damaged vault's files ended as the untouched one's, the index equals a fresh
    one, and each write is in the audit log once."""
    assert page_files(root) == page_files(untouched)
    assert (root / "concepts/Slugs.md").read_text(encoding="utf-8").count("Appended once") == 1
    logged = [(r.tool, r.slug) for r in audit.read_log(root).records]
    assert logged == [(r.tool, r.slug) for r in audit.read_log(untouched).records]
    state = ops.open_vault(root)
    try:
        assert_matches_fresh(state)
    finally:
        state.close()


# -- one damaged page, no server holding the index -------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("seed", SEEDS)
async def test_every_tool_answers_after_a_page_of_the_index_is_damaged(
    brain_dir: Path, seed: int
) -> None:
    script: Script = writes_then_reads if seed % 2 else reads_then_writes
    since = now()
    untouched = indexed_copy(brain_dir, "untouched")
    damaged = indexed_copy(brain_dir, "damaged")
    async with serving(untouched) as client:
        expected = comparable(await script(client, untouched), since)
    damage_page(damaged, seed)
    async with serving(damaged) as client:
        assert comparable(await script(client, damaged), since) == expected
    check_vault(damaged, untouched)


# -- one damaged page under a running server ---------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.slow
async def test_a_page_damaged_under_a_running_server_heals_both_servers(
    brain_dir: Path, seed: int
) -> None:
    since = now()
    untouched = indexed_copy(brain_dir, "untouched")
    damaged = indexed_copy(brain_dir, "damaged")
    async with serving(untouched) as client:
        before = await reads(client)
        expected = comparable(await writes_then_reads(client, untouched), since)
    async with serving(damaged) as live:
        assert comparable(await reads(live), since) == comparable(before, since)  # serving
        damage_page(damaged, seed)
        async with serving(damaged) as second:
            assert comparable(await writes_then_reads(second, damaged), since) == expected
        assert comparable(await reads(live), since) == expected[-len(before) :]
    check_vault(damaged, untouched)


def server_process(root: Path) -> StdioServerParameters:
    """`lore-mcp --vault ROOT` as a client spawns it."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lore_mcp", "--vault", str(root), "--log-level", "ERROR"],
        env=environment(),
    )


@pytest.mark.slow  # two server processes
@pytest.mark.anyio
@pytest.mark.parametrize("seed", SEEDS[3:5])
async def test_a_page_damaged_under_a_running_server_process(brain_dir: Path, seed: int) -> None:
    """As above, with both servers real processes: the second finds the damage and
    heals the index; the first takes in the rebuilt index and answers alike."""
    since = now()
    untouched = indexed_copy(brain_dir, "untouched")
    damaged = indexed_copy(brain_dir, "damaged")
    async with serving(untouched) as client:
        expected = comparable(await writes_then_reads(client, untouched), since)
    async with Client(server_process(damaged)) as live:
        await ok(live, "list_pages")  # indexed and serving
        damage_page(damaged, seed)
        async with Client(server_process(damaged)) as second:
            assert comparable(await writes_then_reads(second, damaged), since) == expected
        answers = await reads(live)
        assert comparable(answers, since) == expected[-len(answers) :]
    check_vault(damaged, untouched)


def test_damage_found_during_a_write_changes_nothing_and_it_runs_again(
    brain_dir: Path,
) -> None:
    """The full-text index damaged: an append reads nothing of it until it takes the
    page in, before its commit point. Nothing is changed, the index is rebuilt, and
    the append made once."""
    root = indexed_copy(brain_dir, "damaged")
    state = ops.open_vault(root)
    try:
        with closing(sqlite3.connect(db_path(root))) as conn:
            (root_page,) = conn.execute(
                "SELECT rootpage FROM sqlite_master WHERE name = 'fts_data'"
            ).fetchone()
        with db_path(root).open("r+b") as handle:
            handle.seek((root_page - 1) * PAGE)
            handle.write(random.Random(1).randbytes(PAGE))
        with closing(sqlite3.connect(db_path(root))) as conn, conn:  # a commit elsewhere
            conn.execute("INSERT INTO meta(key, value) VALUES ('elsewhere', '')")
            conn.execute("DELETE FROM meta WHERE key = 'elsewhere'")
        before = (root / "concepts/Slugs.md").read_bytes()
        saved = ops.save_page(
            state,
            "Slugs",
            APPENDED,
            mode="append",
            expected_hash=content_hash(before),
        )
        assert (root / "concepts/Slugs.md").read_bytes() == before + APPENDED.encode()
        assert saved.history_path is not None and saved.links
        assert len(ops.page_history(state, "Slugs").versions) == 1  # the first try's went

        assert [r.tool for r in audit.read_log(root).records] == ["save_page"]
        assert state.index.heals == 1
        assert_matches_fresh(state)
    finally:
        state.close()


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", OPEN_SEEDS)
@pytest.mark.parametrize(
    "command", [["index"], ["doctor"], ["search", "placeholder links", "--limit", "20"]]
)
def test_lore_commands_heal_a_damaged_index(
    brain_dir: Path, seed: int, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    untouched = indexed_copy(brain_dir, "untouched")
    damaged = indexed_copy(brain_dir, "damaged")
    assert main(["--vault", str(untouched), "--json", *command]) == 0
    expected = json.loads(capsys.readouterr().out)
    damage_page(damaged, seed)
    assert main(["--vault", str(damaged), "--json", *command]) == 0
    answer = json.loads(capsys.readouterr().out)
    if command == ["index"]:  # what the pass did differs; what it found may not
        assert answer["pages"] == expected["pages"] and answer["links"] == expected["links"]
    else:
        assert answer | {"vault": "the vault"} == expected | {"vault": "the vault"}


# -- an index cut short under a running server ------------------------------------------------


def read_reply(server: RawServer, slug: str) -> str:
    reply, _ = server.wait_for(server.call_tool("read_page", slug=slug), timeout=60)
    assert not reply["result"].get("isError"), tool_text(reply)
    return tool_text(reply)


@pytest.mark.slow  # a server process, and a second one started beside it
@pytest.mark.parametrize("size", [0, 1000])
def test_a_truncated_index_under_a_running_server(brain_dir: Path, size: int) -> None:
    """`lore.db` cut short while a server has it open: a new server answers `initialize`
    (it used to wait 30 s for a lock and exit), serves every page, and the running
    server goes on serving too."""
    root = indexed_copy(brain_dir, "truncated")
    titles = sorted(path.stem for path in root.rglob("*.md"))
    with RawServer(root) as first:
        first.initialize()
        expected = read_reply(first, "Slugs")
        os.truncate(db_path(root), size)
        with RawServer(root) as second:
            reply = second.initialize()  # waits on the reply itself, generously
            assert "'truncated'" in reply["result"]["instructions"]
            assert read_reply(second, "Slugs") == expected
            listed, _ = second.wait_for(second.call_tool("list_pages", limit=100), timeout=60)
            pages = listed["result"]["structuredContent"]["pages"]
            assert sorted(page["title"] for page in pages) == titles
            assert second.close() == 0
        assert read_reply(first, "Slugs") == expected
        assert first.close() == 0


@pytest.mark.slow
def test_a_running_server_heals_an_index_emptied_under_it(brain_dir: Path) -> None:
    """`lore.db` emptied while a server has it open and no other comes: its next calls
    rebuild the index and answer (a read used to wait for ever on its own lock)."""
    root = indexed_copy(brain_dir, "emptied")
    with RawServer(root, "--no-watch") as server:
        server.initialize()
        expected = read_reply(server, "Slugs")
        os.truncate(db_path(root), 0)
        saved, _ = server.wait_for(
            server.call_tool("save_page", slug="After", content="See [[Slugs]]."), timeout=60
        )
        assert not saved["result"].get("isError"), tool_text(saved)
        assert read_reply(server, "Slugs") == expected.replace(
            "backlinks (6): ", "backlinks (7): after, "
        )
        assert server.close() == 0
    state = ops.open_vault(root)
    try:
        assert "after" in page_slugs(state)
        assert_matches_fresh(state)
    finally:
        state.close()
