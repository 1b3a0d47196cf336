"""save_page's modes: the pure text edits, then every mode and failure through the real
tool, then the `lore` commands that match them."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from conftest import write
from helpers import assert_matches_fresh, call, text
from lore_mcp import edits
from lore_mcp import vault_ops as engine
from lore_mcp.cli import main
from lore_mcp.errors import InvalidArgumentError
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

pytestmark = pytest.mark.anyio

PAGE = """---
tags: [plan]
---
# Plans

Intro line.

## Decisions

We chose SQLite.
It is a cache.

### Details

Small print.

## Next

Ship it.
"""


# -- the text edits -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "addition", "new"),
    [
        ("a\nb\n", "c\n", "a\nb\nc\n"),
        ("a\nb", "c", "a\nb\nc"),
        ("a\r\nb", "c", "a\r\nb\r\nc"),
        ("a\n\n", "\nc", "a\n\n\nc"),
        ("", "c", "c"),
        ("\ufeff", "c", "\ufeffc"),
        ("a", "", "a"),
    ],
)
def test_append_puts_one_line_break_between(old: str, addition: str, new: str) -> None:
    assert edits.append(old, addition) == new


@pytest.mark.parametrize(
    ("old", "addition", "new"),
    [
        ("body\n", "top", "top\nbody\n"),
        ("---\na: 1\n---\nbody\n", "top\n", "---\na: 1\n---\ntop\nbody\n"),
        ("---\na: 1\n---", "top", "---\na: 1\n---\ntop"),
        ("\ufeffbody", "top", "\ufefftop\nbody"),
        ("a\r\nb", "top", "top\r\na\r\nb"),
        ("", "top", "top"),
    ],
)
def test_prepend_goes_after_the_frontmatter(old: str, addition: str, new: str) -> None:
    assert edits.prepend(old, addition) == new


@settings(max_examples=40, deadline=None)
@given(
    st.text(alphabet="ab \n\r\ufeff-#", max_size=30),
    st.text(alphabet="xy \n\r", min_size=1, max_size=10),
)
def test_append_and_prepend_keep_every_old_character(old: str, addition: str) -> None:
    appended = edits.append(old, addition)
    assert appended.startswith(old) and appended.endswith(addition)
    assert appended[len(old) : len(appended) - len(addition)] in ("", "\n", "\r\n", "\r")
    prepended = edits.prepend(old, addition)
    at = edits.body_start(old)
    assert prepended.startswith(old[:at]) and prepended.endswith(old[at:])
    assert addition in prepended


def test_edit_replaces_the_one_occurrence() -> None:
    assert edits.replace_once(PAGE, "SQLite", "Postgres").count("Postgres") == 1
    assert edits.replace_once("a\r\nb\r\nc", "b\nc", "x\ny") == "a\r\nx\r\ny"
    assert edits.replace_once("keep", "keep", "") == ""


def test_edit_refuses_none_or_several() -> None:
    with pytest.raises(InvalidArgumentError, match="was not found") as missing:
        edits.replace_once(PAGE, "We chose SQLite.\nIt is a database.", "x")
    assert "Its first line, 'We chose SQLite.', is on line 10" in str(missing.value)
    with pytest.raises(InvalidArgumentError, match=r"occurs 8 times .*lines 4, 8, 13, 17\)"):
        edits.replace_once(PAGE, "#", "x")
    with pytest.raises(InvalidArgumentError, match="occurs 2 times"):
        edits.replace_once("aaa", "aa", "b")  # overlapping occurrences count


def test_section_replaces_the_body_and_its_subsections() -> None:
    new = edits.replace_section(PAGE, "## Decisions", "We chose files.")
    assert "## Decisions\n\nWe chose files.\n\n## Next\n" in new
    assert "Small print" not in new and new.startswith(PAGE[: PAGE.index("## Decisions")])
    assert edits.replace_section(PAGE, "decisions", "x") == new.replace("We chose files.", "x")
    assert edits.replace_section(PAGE, "Details", "y\n").endswith(
        "### Details\n\ny\n\n## Next\n\nShip it.\n"
    )
    assert edits.replace_section(PAGE, "Next", "Wait.").endswith("## Next\n\nWait.\n")
    whole = edits.replace_section(PAGE, "Decisions", "## Decisions\nNew.\n")
    assert "## Decisions\nNew.\n\n## Next" in whole


def test_sections_are_found_by_markdown_structure() -> None:
    page = "Title\n=====\nold\n```\n## Fenced\n```\n> ## Quoted\nSub\n---\nx\n# Last"
    assert edits.replace_section(page, "Title", "new") == "Title\n=====\nnew\n# Last"
    assert edits.replace_section(page, "## Sub", "y") == page.replace(
        "Sub\n---\nx\n", "Sub\n---\ny\n"
    )
    with pytest.raises(InvalidArgumentError, match=r"no heading 'Fenced'.*# Title \(line 1\)"):
        edits.replace_section(page, "Fenced", "z")


def test_section_refuses_unknown_or_ambiguous_headings() -> None:
    page = "# A\n## Notes\nx\n# B\n## Notes\ny\n"
    with pytest.raises(
        InvalidArgumentError,
        match=r"matches 2 headings \(on lines 2, 5\).*Its headings: # A \(line 1\)",
    ):
        edits.replace_section(page, "Notes", "z")
    with pytest.raises(InvalidArgumentError, match="no heading '### A'"):
        edits.replace_section(page, "### A", "z")
    with pytest.raises(InvalidArgumentError, match="has no headings"):
        edits.replace_section("plain\n", "A", "z")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"mode": "append", "old_text": "x"}, "old_text goes with mode='edit'"),
        ({"mode": "edit", "heading": "x", "old_text": "y"}, "heading goes with mode='section'"),
        ({"mode": "edit"}, "needs old_text"),
        ({"mode": "section", "heading": "## "}, "needs heading"),
    ],
)
def test_arguments_that_do_not_go_together(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        edits.Edit(content="c", **arguments)


# -- through the tool -----------------------------------------------------------------------


@pytest.fixture
async def served(vault_dir: Path) -> AsyncIterator[tuple[Client, AppState]]:
    state = engine.open_vault(vault_dir)
    async with Client(build_server(state)) as client:
        yield client, state


async def saved(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await call(client, "save_page", **arguments)
    assert result.is_error is False, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: Client, **arguments: Any) -> str:
    result = await call(client, "save_page", **arguments)
    assert result.is_error is True
    return text(result)


def audit_modes(root: Path) -> list[str | None]:
    log = (root / ".lore" / "audit.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line).get("mode") for line in log]


async def test_every_mode_writes_reindexes_and_keeps_history(
    served: tuple[Client, AppState],
) -> None:
    client, state = served
    await saved(client, slug="Plans", content=PAGE)
    steps: list[dict[str, Any]] = [
        {"mode": "append", "content": "See [[Later]]."},
        {"mode": "prepend", "content": "Read [[First]]."},
        {"mode": "edit", "old_text": "SQLite", "content": "[[SQLite]]"},
        {"mode": "section", "heading": "Next", "content": "Ask [[Someone]]."},
    ]
    expected = PAGE
    for step in steps:
        before = await call(client, "read_page", slug="Plans")
        assert isinstance(before.structured_content, dict)
        result = await saved(
            client, slug="Plans", expected_hash=before.structured_content["hash"], **step
        )
        extra = {k: v for k, v in step.items() if k != "mode"}
        expected = edits.apply(edits.Edit(step["mode"], **extra), expected)
        assert (state.root / "Plans.md").read_text("utf-8") == expected
        assert result["mode"] == step["mode"] and result["history_path"]
        assert result["placeholders_created"]
    assert {link["slug"] for link in result["links"]} == {"first", "sqlite", "someone"}
    assert audit_modes(state.root) == ["replace", "append", "prepend", "edit", "section"]
    history = engine.page_history(state, "Plans")
    assert [v.tool for v in history.versions] == ["save_page"] * 4
    assert_matches_fresh(state)


async def test_append_and_prepend_create_a_missing_page_or_fill_a_placeholder(
    served: tuple[Client, AppState],
) -> None:
    client, state = served
    created = await saved(client, slug="Journal", content="- first\n", mode="append")
    assert created["created"] is True and created["mode"] == "append"
    await saved(client, slug="Hub", content="[[Someday Idea]]\n")
    promoted = await saved(client, slug="someday-idea", content="Top.", mode="prepend")
    assert promoted["promoted"] is True
    assert (state.root / "Someday Idea.md").read_text("utf-8") == "Top."
    assert_matches_fresh(state)


async def test_failures_write_nothing(served: tuple[Client, AppState]) -> None:
    client, state = served
    await saved(client, slug="Plans", content=PAGE)
    await saved(client, slug="Hub", content="[[Ghost]]\n")
    page = state.root / "Plans.md"
    for arguments, message in [
        ({"mode": "edit", "old_text": "Postgres"}, "old_text was not found in the page"),
        ({"mode": "edit", "old_text": "Ship"}, None),  # found once: the control
        ({"mode": "edit", "old_text": "e"}, "occurs "),
        ({"mode": "section", "heading": "Risks"}, "Its headings: # Plans (line 4); ## Decisions"),
        ({"mode": "append", "expected_hash": "0" * 64}, "changed since you read it"),
        ({"mode": "append", "old_text": "x"}, "old_text goes with mode='edit'"),
    ]:
        before = page.read_bytes()
        if message is None:
            await saved(client, slug="Plans", content="Launch", **arguments)
            continue
        assert message in await refused(client, slug="Plans", content="new", **arguments)
        assert page.read_bytes() == before
    for missing in ("Nowhere", "Ghost"):
        message = await refused(client, slug=missing, content="x", mode="edit", old_text="a")
        assert "does not exist yet" in message and "mode='replace'" in message
        message = await refused(client, slug=missing, content="x", mode="section", heading="A")
        assert "does not exist yet" in message
    assert not (state.root / "Nowhere.md").exists() and not (state.root / "Ghost.md").exists()
    assert audit_modes(state.root) == ["replace", "replace", "edit"]


async def test_a_file_that_is_not_utf8(served: tuple[Client, AppState]) -> None:
    client, state = served
    bad = b"# Caf\xe9\n\nOld [[Link]].\n"
    (state.root / "Latin.md").write_bytes(bad)
    engine.apply_external_changes(state, ["Latin.md"])
    read = await call(client, "read_page", slug="Latin")
    assert isinstance(read.structured_content, dict)
    assert read.structured_content["encoding_errors"] is True
    assert "\ufffd" in read.structured_content["content"]
    assert "encoding: not valid UTF-8" in text(read)
    for step in ({"mode": "append"}, {"mode": "edit", "old_text": "Old"}):
        message = await refused(client, slug="Latin", content="x", **step)
        assert "not valid UTF-8 (the byte at offset 5" in message and "mode='replace'" in message
    assert (state.root / "Latin.md").read_bytes() == bad
    fixed = await saved(client, slug="Latin", content="# Café\n")
    assert (state.root / fixed["history_path"]).read_bytes() == bad
    again = await call(client, "read_page", slug="Latin")
    assert isinstance(again.structured_content, dict)
    assert again.structured_content["encoding_errors"] is False


async def test_the_tool_says_what_its_modes_do(served: tuple[Client, AppState]) -> None:
    client, _ = served
    tool = next(t for t in (await client.list_tools()).tools if t.name == "save_page")
    properties = tool.input_schema["properties"]
    assert properties["mode"]["enum"] == [*edits.MODES, "restore"]
    assert properties["mode"]["default"] == "replace"
    assert {"old_text", "heading", "version"} <= properties.keys()
    assert tool.input_schema["required"] == ["slug"]  # a restore sends no content
    assert tool.description and "the only idempotent one" in tool.description
    assert tool.annotations is not None and tool.annotations.idempotent_hint is False


# -- the commands ---------------------------------------------------------------------------


def feed(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def lore(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, str]:
    code = main(["--vault", str(root), *argv])
    return code, capsys.readouterr().err


def test_the_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, vault_dir: Path
) -> None:
    monkeypatch.delenv("LORE_VAULT", raising=False)
    page = vault_dir / "Plans.md"
    write(vault_dir, "Plans.md", PAGE)
    expected = PAGE
    for argv, content, step in [
        (["append", "Plans"], "- one more\n", edits.Edit("append", "- one more\n")),
        (["prepend", "Plans"], "Top.\n", edits.Edit("prepend", "Top.\n")),
        (["edit", "Plans", "--old", "SQLite"], "files", edits.Edit("edit", "files", "SQLite")),
        (
            ["save", "Plans", "--section", "## Next"],
            "Later.\n",
            edits.Edit("section", "Later.\n", heading="## Next"),
        ),
    ]:
        feed(monkeypatch, content.encode())
        code, err = lore(capsys, vault_dir, *argv)
        assert code == 0, err
        expected = edits.apply(step, expected)
        assert page.read_text("utf-8") == expected
    feed(monkeypatch, b"x")
    code, err = lore(capsys, vault_dir, "edit", "Plans", "--old", "nowhere")
    assert code == 1 and "old_text was not found" in err
    assert page.read_text("utf-8") == expected


def test_lore_read_prints_the_file_byte_for_byte(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch, vault_dir: Path
) -> None:
    monkeypatch.delenv("LORE_VAULT", raising=False)
    for name, data in [
        ("Bom", "\ufeff# Hi\r\nthere".encode()),
        ("Latin", b"caf\xe9 [[x]]\n"),
    ]:
        (vault_dir / f"{name}.md").write_bytes(data)
        assert main(["--vault", str(vault_dir), "read", name]) == 0
        out, err = capsysbinary.readouterr()
        assert out == data
        assert (b"not valid UTF-8" in err) is (name == "Latin")
    feed(monkeypatch, "\ufeff# Hi\r\nthere".encode())
    assert main(["--vault", str(vault_dir), "save", "Bom"]) == 0
    assert "unchanged" in capsysbinary.readouterr().out.decode().lower()
