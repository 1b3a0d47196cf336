"""The history through the tools: read_page counts and reads kept versions, save_page
restores one, the history follows a page through renames, and expected_hash="" means
"only if the page does not exist yet". Everything through the real tools, in memory."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema  # no stubs (see pyproject.toml); the SDK depends on it
import pytest
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, call, fails, ok, text
from lore_mcp import vault_ops
from lore_mcp.cli import main as lore
from lore_mcp.config import MIN_RESULT_CHARS
from lore_mcp.errors import VaultError
from lore_mcp.server import build_server

pytestmark = pytest.mark.anyio

CRLF = b"\xef\xbb\xbffirst line\r\nsecond line\r\n"  # a byte-order mark and CRLF breaks
LATIN1 = b"caf\xe9, not UTF-8 \xff\n"  # no save_page can write these bytes: an outside edit
PLAIN = "plain text\n"
NOW = "now, the fourth\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def page_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.md"))
        if not p.relative_to(root).as_posix().startswith(".")
    }


def serve(root: Path, mode: str = "auto", **options: Any) -> Client:
    """A client of a server over the vault at `root`, in memory."""
    era: Any = mode
    return Client(build_server(vault_ops.open_vault(root, scan=False), **options), mode=era)


@pytest.fixture
async def client(vault_dir: Path) -> AsyncIterator[Client]:
    async with serve(vault_dir) as c:
        yield c


async def kept_three(client: Client, root: Path) -> None:
    """`Note.md` (not UTF-8, as an outside edit left it) through three saves, so that
    three versions are kept: 1 a plain text, 2 a BOM with CRLF breaks, 3 the bytes that
    no save_page can write."""
    (root / "Note.md").write_bytes(LATIN1)
    await ok(client, "save_page", slug="Note", content=CRLF.decode())
    await ok(client, "save_page", slug="Note", content=PLAIN)
    await ok(client, "save_page", slug="Note", content=NOW)
    assert (root / "Note.md").read_bytes() == NOW.encode()


KEPT = [(1, PLAIN.encode()), (2, CRLF), (3, LATIN1)]


def lore_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert lore([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# -- read_page counts and reads the kept versions -------------------------------------------


async def test_read_page_says_how_many_versions_are_kept(client: Client, vault_dir: Path) -> None:
    await ok(client, "save_page", slug="Other", content="one\n")
    fresh = await call(client, "read_page", slug="Other")
    assert fresh.structured_content is not None
    assert fresh.structured_content["kept_versions"] == 0
    assert "history: no kept versions" in text(fresh)
    await kept_three(client, vault_dir)
    read = await call(client, "read_page", slug="Note")
    assert read.structured_content is not None
    assert read.structured_content["kept_versions"] == 3
    assert read.structured_content["version"] is None
    assert "history: 3 kept versions; read one with version=1 (the newest) to 3" in text(read)


async def test_each_version_reads_and_restores_byte_for_byte(
    client: Client, vault_dir: Path
) -> None:
    await kept_three(client, vault_dir)
    for number, data in KEPT:
        read = await call(client, "read_page", slug="Note", version=number)
        view = read.structured_content
        assert view is not None and read.is_error is False
        assert view["content"] == data.decode("utf-8", errors="replace")  # CRLF and BOM kept
        assert view["hash"] == view["version"]["hash"] == sha(data)
        assert view["encoding_errors"] is (data == LATIN1)
        assert (view["version"]["number"], view["version"]["tool"]) == (number, "save_page")
        assert view["version"]["door"] == "mcp" and view["version"]["time"].endswith("Z")
        assert (vault_dir / view["version"]["kept"]).read_bytes() == data
        assert view["path"] == "Note.md" and view["kept_versions"] == 3
        assert f"version: {number} of 3 kept" in text(read)
        assert "replaced it" in text(read)
    for number, data in [(3, LATIN1), (3, CRLF), (3, PLAIN.encode())]:  # each one is kept
        restored = await call(client, "save_page", slug="Note", mode="restore", version=number)
        assert restored.structured_content is not None
        assert restored.structured_content["mode"] == "restore"
        assert restored.structured_content["hash"] == sha(data)
        assert "Saved note (Note.md): a kept version restored" in text(restored)
        assert (vault_dir / "Note.md").read_bytes() == data


def test_lore_read_version_prints_the_kept_bytes(
    vault_dir: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    (vault_dir / "Note.md").write_bytes(LATIN1)
    opened = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.save_page(opened, "Note", CRLF.decode())
        vault_ops.save_page(opened, "Note", PLAIN)
    finally:
        opened.close()
    for number, data in [(1, CRLF), (2, LATIN1)]:
        assert lore(["read", "Note", "--version", str(number), "--vault", str(vault_dir)]) == 0
        out, err = capsysbinary.readouterr()
        assert out == data
        assert f"version {number} of 2 of Note.md".encode() in err
    assert lore(["read", "Note", "--version", "3", "--vault", str(vault_dir)]) == 1
    assert b"'Note.md' has 2 kept versions" in capsysbinary.readouterr().err


async def test_a_restore_keeps_the_bytes_it_replaces_and_can_be_undone(
    client: Client, vault_dir: Path
) -> None:
    await kept_three(client, vault_dir)
    restored = await ok(client, "save_page", slug="Note", mode="restore", version=3)
    assert (vault_dir / "Note.md").read_bytes() == LATIN1
    assert (vault_dir / restored["history_path"]).read_bytes() == NOW.encode()
    newest = await ok(client, "read_page", slug="Note", version=1)
    assert (newest["version"]["tool"], newest["content"]) == ("restore_page", NOW)
    assert newest["kept_versions"] == 4
    undone = await ok(client, "save_page", slug="Note", mode="restore")  # version 1: undo
    assert (vault_dir / "Note.md").read_bytes() == NOW.encode()
    assert (vault_dir / undone["history_path"]).read_bytes() == LATIN1
    page = await ok(client, "read_page", slug="Note")
    assert (page["content"], page["kept_versions"]) == (NOW, 5)


async def test_a_deleted_page_is_read_and_restored_from_its_history(vault_dir: Path) -> None:
    write(vault_dir, "Hub.md", "see [[Gone]]\n")
    (vault_dir / "Gone.md").write_bytes(CRLF)
    (vault_dir / "Lone.md").write_bytes(LATIN1)
    async with serve(vault_dir) as client:
        await ok(client, "delete_page", slug="Gone")
        placeholder = await ok(client, "read_page", slug="Gone")
        assert placeholder["is_placeholder"] and placeholder["kept_versions"] == 1
        await ok(client, "delete_page", slug="Lone")
        await fails(client, "read_page", slug="Lone")  # no page, no placeholder
        kept = await ok(client, "read_page", slug="Lone", version=1)
        assert (kept["path"], kept["hash"]) == ("Lone.md", sha(LATIN1))
        for name, data in [("Gone", CRLF), ("Lone", LATIN1)]:
            await ok(client, "save_page", slug=name, mode="restore", version=1)
            assert (vault_dir / f"{name}.md").read_bytes() == data
        gone = await ok(client, "read_page", slug="Gone")
        assert gone["is_placeholder"] is False
        assert gone["backlinks"] == [{"slug": "hub", "title": "Hub"}]


async def test_a_long_version_is_read_in_parts_that_join_to_it(vault_dir: Path) -> None:
    lines = [f"line {n} of a long page, kept in the history\r\n" for n in range(400)]
    long = "".join(lines).encode()
    (vault_dir / "Long.md").write_bytes(long)
    async with serve(vault_dir, max_result_chars=MIN_RESULT_CHARS) as client:
        await ok(client, "save_page", slug="Long", content="short now\n")
        joined, at = "", {"offset": 0, "column": 0}
        for _ in range(100):
            part = await call(client, "read_page", slug="Long", version=1, **at)
            view = part.structured_content
            assert view is not None and part.is_error is False
            assert view["version"]["number"] == 1
            joined += view["content"]
            if view["next_offset"] is None:
                break
            assert "version=1" in (view["note"] or "")
            at = {"offset": view["next_offset"], "column": view["next_column"] or 0}
        assert view["parts"] == 1 and joined.encode() == long
        assert at["offset"] > 0  # it took several parts


# -- the history follows a page through renames ---------------------------------------------


async def test_the_history_follows_a_rename(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(vault_dir, "Hub.md", "see [[Draft]]\n")
    (vault_dir / "Draft.md").write_bytes(CRLF)
    async with serve(vault_dir) as client:
        await ok(client, "save_page", slug="Draft", content=PLAIN)
        await ok(client, "rename_page", slug="Draft", new_name="archive/Final")
        page = await ok(client, "read_page", slug="Final")
        assert (page["path"], page["kept_versions"]) == ("archive/Final.md", 1)
        kept = await ok(client, "read_page", slug="Final", version=1)
        assert kept["hash"] == sha(CRLF)
    history = lore_json(capsys, "history", "Final", "--vault", str(vault_dir))
    assert history["path"] == "archive/Final.md"
    assert [v["hash"] for v in history["versions"]] == [sha(CRLF)]
    assert lore(["history", "Draft", "--vault", str(vault_dir)]) == 1  # nothing kept there
    capsys.readouterr()
    assert lore(["read", "Final", "--version", "1", "--vault", str(vault_dir)]) == 0
    assert capsys.readouterr().out == CRLF.decode()  # stdout carries the bytes as kept
    async with serve(vault_dir) as client:
        await ok(client, "save_page", slug="Final", mode="restore", version=1)
        assert (vault_dir / "archive/Final.md").read_bytes() == CRLF
        assert (await ok(client, "read_page", slug="Final"))["kept_versions"] == 2
    assert page_files(vault_dir) == {"Hub.md": b"see [[Final]]\n", "archive/Final.md": CRLF}


async def test_what_a_rename_rewrites_in_the_page_itself_is_kept_in_its_new_history(
    vault_dir: Path,
) -> None:
    linking = b"see [[./Hub|the hub]]\r\n"  # a relative link: the move rewrites it
    write(vault_dir, "Hub.md", "hub\n")
    (vault_dir / "Draft.md").write_bytes(linking)
    async with serve(vault_dir) as client:
        await ok(client, "rename_page", slug="Draft", new_name="archive/Final")
        assert (vault_dir / "archive/Final.md").read_bytes() == b"see [[../Hub|the hub]]\r\n"
        kept = await ok(client, "read_page", slug="Final", version=1)
        assert (kept["version"]["tool"], kept["hash"]) == ("rename_page", sha(linking))
        assert kept["kept_versions"] == 1
    assert not (vault_dir / ".lore/history/Draft.md").exists()


async def test_the_history_comes_back_with_a_rename_and_back(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (vault_dir / "Draft.md").write_bytes(CRLF)
    async with serve(vault_dir) as client:
        await ok(client, "save_page", slug="Draft", content=PLAIN)  # keeps CRLF
        await ok(client, "rename_page", slug="Draft", new_name="Final")
        await ok(client, "save_page", slug="Final", content=NOW)  # keeps PLAIN, as Final
        await ok(client, "rename_page", slug="Final", new_name="Draft")
        page = await ok(client, "read_page", slug="Draft")
        assert page["kept_versions"] == 2
        for number, data in [(1, PLAIN.encode()), (2, CRLF)]:
            kept = await ok(client, "read_page", slug="Draft", version=number)
            assert kept["hash"] == sha(data)
        assert "No page named 'Final'" in await fails(client, "read_page", slug="Final", version=1)
    history = lore_json(capsys, "history", "Draft", "--vault", str(vault_dir))
    assert [v["hash"] for v in history["versions"]] == [sha(PLAIN.encode()), sha(CRLF)]
    assert lore(["history", "Final", "--vault", str(vault_dir)]) == 1
    assert lore(["restore", "Draft", "--version", "2", "--vault", str(vault_dir)]) == 0
    assert "Restored a kept version of draft (Draft.md)" in capsys.readouterr().out
    assert (vault_dir / "Draft.md").read_bytes() == CRLF
    assert sorted(p.name for p in (vault_dir / ".lore/history").iterdir()) == ["Draft.md"]


async def test_a_rename_that_cannot_take_the_history_along_changes_nothing(
    vault_dir: Path,
) -> None:
    """A rename whose page history cannot move (here a file stands where the history's
    new folder must go) fails before any page file changes; once the way is clear, the
    same rename takes the history along."""
    (vault_dir / "Draft.md").write_bytes(CRLF)
    opened = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.save_page(opened, "Draft", PLAIN)
        obstacle = vault_dir / ".lore/history/archive"
        obstacle.write_bytes(b"in the way")
        with pytest.raises(VaultError, match="Nothing was changed"):
            vault_ops.rename_page(opened, "Draft", "archive/Final")
        assert page_files(vault_dir) == {"Draft.md": PLAIN.encode()}
        assert len(vault_ops.page_history(opened, "Draft").versions) == 1
        obstacle.unlink()
        vault_ops.rename_page(opened, "Draft", "archive/Final")
        assert_matches_fresh(opened)
    finally:
        opened.close()
    async with serve(vault_dir) as client:
        kept = await ok(client, "read_page", slug="Final", version=1)
        assert (kept["path"], kept["hash"]) == ("archive/Final.md", sha(CRLF))
        assert "No page named 'Draft'" in await fails(client, "read_page", slug="Draft")
    assert not (vault_dir / ".lore/history/Draft.md").exists()


# -- expected_hash="" -----------------------------------------------------------------------


async def test_an_empty_expected_hash_only_creates(vault_dir: Path) -> None:
    write(vault_dir, "Hub.md", "see [[Wanted]]\n")
    write(vault_dir, "Taken.md", "taken\n")
    before = page_files(vault_dir)
    async with serve(vault_dir) as client:
        for mode in ("replace", "append", "prepend"):
            refused = await fails(
                client, "save_page", slug="Taken", content="mine\n", mode=mode, expected_hash=""
            )
            assert "'Taken.md' already exists" in refused and sha(b"taken\n") in refused
            assert "Nothing was written" in refused
        for tool, more in [("delete_page", {}), ("rename_page", {"new_name": "Moved"})]:
            assert "already exists" in await fails(
                client, tool, slug="Taken", expected_hash="", **more
            )
        assert page_files(vault_dir) == before
        assert (await ok(client, "read_page", slug="Taken"))["kept_versions"] == 0
        created = await ok(client, "save_page", slug="Fresh", content="new\n", expected_hash="")
        assert created["created"] and (vault_dir / "Fresh.md").read_bytes() == b"new\n"
        again = await fails(client, "save_page", slug="Fresh", content="2\n", expected_hash="")
        assert "already exists" in again and (vault_dir / "Fresh.md").read_bytes() == b"new\n"
        filled = await ok(client, "save_page", slug="Wanted", content="x\n", expected_hash="")
        assert filled["promoted"]
        await ok(client, "delete_page", slug="Fresh")
        await ok(client, "save_page", slug="Fresh", mode="restore", expected_hash="")
        assert (vault_dir / "Fresh.md").read_bytes() == b"new\n"
        await fails(client, "save_page", slug="Fresh", mode="restore", expected_hash="")


# -- what is refused ------------------------------------------------------------------------


async def test_unknown_versions_and_wrong_arguments_are_clear_errors(
    client: Client, vault_dir: Path
) -> None:
    await kept_three(client, vault_dir)
    before = page_files(vault_dir)
    asked: list[tuple[str, dict[str, Any]]] = [
        ("read_page", {"version": 4}),
        ("save_page", {"mode": "restore", "version": 4}),
    ]
    for tool, arguments in asked:
        message = await fails(client, tool, slug="Note", **arguments)
        assert "'Note.md' has 3 kept versions" in message
        assert "from 1 (the newest) to 3" in message and "no version 4" in message
    await ok(client, "save_page", slug="Other", content="other\n")
    before["Other.md"] = b"other\n"
    message = await fails(client, "read_page", slug="Other", version=1)
    assert "'Other.md' has no kept versions" in message
    message = await fails(client, "save_page", slug="Other", mode="restore", version=2)
    assert "'Other.md' has no kept versions" in message
    wrong: list[tuple[dict[str, Any], str]] = [
        ({"mode": "restore", "content": "text"}, "takes no content"),
        ({"mode": "restore", "version": 1, "heading": "H"}, "takes no content"),
        ({"content": "text", "version": 1}, "takes no version"),
        ({"mode": "append"}, "needs content"),
        ({}, "needs content"),
    ]
    for arguments, said in wrong:
        assert said in await fails(client, "save_page", slug="Note", **arguments)
    assert "greater than or equal to 1" in await fails(client, "read_page", slug="Note", version=0)
    assert page_files(vault_dir) == before


# -- the schemas ----------------------------------------------------------------------------


async def test_the_new_results_validate_against_the_listed_output_schemas(
    vault_dir: Path, mode: str
) -> None:
    async with serve(vault_dir, mode) as client:
        await _results_validate(client, vault_dir)


async def _results_validate(client: Client, vault_dir: Path) -> None:
    await kept_three(client, vault_dir)
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for listed in tools.values():
        jsonschema.Draft202012Validator.check_schema(listed.input_schema)
        assert listed.output_schema is not None
        jsonschema.Draft202012Validator.check_schema(listed.output_schema)
    version = tools["read_page"].input_schema["properties"]["version"]
    assert (version["type"], version["minimum"]) == ("integer", 1)

    assert "restore" in tools["save_page"].input_schema["properties"]["mode"]["enum"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_page", {"slug": "Note"}),
        ("read_page", {"slug": "Note", "version": 1}),
        ("save_page", {"slug": "Note", "mode": "restore", "version": 2}),
        ("save_page", {"slug": "Made", "content": "x\n", "expected_hash": ""}),
    ]
    for tool, arguments in calls:
        result = await call(client, tool, **arguments)
        assert result.is_error is False, text(result)
        jsonschema.validate(result.structured_content, tools[tool].output_schema)
