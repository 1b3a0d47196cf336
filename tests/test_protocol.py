"""Malformed protocol input over a real stdio subprocess: the process keeps serving.

Lines that are not JSON-RPC at all get no reply (the SDK drops what it cannot parse,
including JSON whose strings hold lone surrogates); requests it can parse get an error
reply. Either way the next valid call is answered correctly. One process serves every
case in this file, so each case also proves the ones before it did no harm.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import BRAIN
from rawpipe import RawServer, tool_text


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("protocol") / "vault"
    shutil.copytree(BRAIN, root, ignore=shutil.ignore_patterns(".lore"))
    return root


@pytest.fixture(scope="module")
def server(vault: Path) -> Iterator[RawServer]:
    with RawServer(vault, "--no-watch", "--log-level", "WARNING") as raw:
        assert raw.initialize()["result"]["serverInfo"]["name"] == "lore-mcp"
        yield raw


def still_serving(raw: RawServer) -> list[dict[str, Any]]:
    """A valid call answers correctly; the messages that arrived before its reply."""
    reply, before = raw.wait_for(raw.call_tool("read_page", slug="Slugs"))
    assert reply["result"]["isError"] is False
    assert tool_text(reply).startswith("<page-info>\ntitle: Slugs\nslug: concepts/slugs\n")
    return before


def page_files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def line(request_id: int, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


UNPARSEABLE = [
    b"{not json",
    b"[]",
    b"42",
    b'"a string"',
    b"null",
    b"",
    b"   ",
    b"\xff\xfe\x00 not utf-8",
    b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
    b'{"id": 1}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "save_page", '
    b'"arguments": {"slug": "lone\\ud800", "content": "x"}}}',
    b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',  # batches were removed in 2025-06-18
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "not an object"}',
]


@pytest.mark.parametrize("garbage", UNPARSEABLE, ids=repr)
def test_unparseable_lines_are_dropped(server: RawServer, vault: Path, garbage: bytes) -> None:
    server.send_line(garbage)
    before = still_serving(server)
    # Anything the server said about the bad line must be an error, never a result.
    assert all("result" not in m for m in before), before
    assert not list(vault.glob("lone*"))


ERRORS: list[tuple[str, Any, int]] = [
    ("no/such/method", None, -32601),
    ("tools/call", None, -32602),
    ("tools/call", {"arguments": {}}, -32602),
    ("tools/call", {"name": "read_page", "arguments": "not an object"}, -32602),
]


@pytest.mark.parametrize(("method", "params", "code"), ERRORS, ids=repr)
def test_bad_requests_get_protocol_errors(
    server: RawServer, method: str, params: Any, code: int
) -> None:
    reply, _ = server.wait_for(server.request(method, params))
    assert reply["error"]["code"] == code
    still_serving(server)


TOOL_ERRORS: list[tuple[str, dict[str, Any], str]] = [
    ("no_such_tool", {}, "Unknown tool"),
    ("read_page", {"slug": 42}, "valid string"),
    ("read_page", {}, "Field required"),
    ("read_page", {"slug": ["a", "b"]}, "valid string"),
    ("list_pages", {"limit": "lots"}, "valid integer"),
    ("list_pages", {"limit": 0}, "greater than or equal to 1"),
    ("get_graph", {"slug": "index", "depth": 2.5}, "valid integer"),
    ("search", {"query": None}, "valid string"),
    ("get_backlinks", {"slug": "index", "include_unlinked": "maybe"}, "valid boolean"),
    ("save_page", {"slug": "../../etc/x", "content": "x"}, "leaves the vault"),
    ("save_page", {"slug": "big", "content": "x" * (3 * 1024 * 1024)}, "at most 1048576"),
    ("save_page", {"slug": "nul", "content": "a\x00b"}, "NUL"),
    ("save_page", {"slug": "nul\x00name", "content": "x"}, "NUL"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), TOOL_ERRORS, ids=repr)
def test_bad_tool_calls_are_error_results(
    server: RawServer, tool: str, arguments: dict[str, Any], message: str
) -> None:
    reply, _ = server.wait_for(server.request("tools/call", {"name": tool, "arguments": arguments}))
    assert reply["result"]["isError"] is True
    assert message in tool_text(reply)
    assert "pydantic" not in tool_text(reply)  # plain sentences, no validator dump or URL
    still_serving(server)


def test_a_burst_of_garbage_then_a_clean_exit(server: RawServer, vault: Path) -> None:
    for garbage in UNPARSEABLE:
        server.send_line(garbage)
    for method, params, _ in ERRORS:
        server.send_line(line(1, method, params))
    for tool, arguments, _ in TOOL_ERRORS:
        server.send_line(line(1, "tools/call", {"name": tool, "arguments": arguments}))
    server.send_line(line(1, "ping"))  # a reused id is answered too
    saved, replies = server.wait_for(server.call_tool("save_page", slug="After", content="ok"))
    assert saved["result"]["isError"] is False
    expected = len(ERRORS) + len(TOOL_ERRORS) + 1
    while len(replies) < expected:  # requests run concurrently: a reply may come later
        replies.append(server.next_message(15))
    assert all(m.get("id") == 1 for m in replies)
    assert len(replies) == expected
    still_serving(server)
    assert server.close() == 0
    assert (vault / "After.md").read_text(encoding="utf-8") == "ok"
    assert page_files(vault) == page_files(BRAIN) | {"After.md"}


def test_garbage_before_initialize(tmp_path: Path) -> None:
    with RawServer(tmp_path, "--no-watch", "--log-level", "WARNING") as raw:
        raw.send_line(b"{not json")
        raw.send_line(b"[]")
        assert raw.initialize()["result"]["protocolVersion"] == "2025-11-25"
        reply, _ = raw.wait_for(raw.call_tool("list_pages"))
        assert reply["result"]["structuredContent"]["total"] == 0
        assert raw.close() == 0
