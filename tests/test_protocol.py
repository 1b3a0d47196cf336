"""Malformed protocol input over a real stdio subprocess: the process keeps serving.

Every request that carries an id gets an answer: what the SDK cannot parse (no JSON, no
request object, a batch, params it cannot read, a lone surrogate, deep nesting) gets the
JSON-RPC error for it from the line filter in front of the SDK; what it parses, its own
error. Malformed notifications get nothing. Either way the next valid call is answered.
One process serves every case in this file, so each case also proves the ones before it
did no harm.
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


def deep(depth: int, *, closed: bool = True) -> bytes:
    """A tools/call whose argument nests `depth` arrays deep."""
    value = b"[" * depth + (b"]" * depth if closed else b"")
    return (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_page", '
        b'"arguments": {"slug": ' + value + b"}}}"
    )


PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

# What the SDK cannot read, and the one error each line gets: (the line, the id the
# answer carries, its code). The id is null where it cannot be read.
MALFORMED: list[tuple[bytes, int | None, int]] = [
    (b"{not json", None, PARSE_ERROR),
    (b"\xff\xfe\x00 not utf-8", None, PARSE_ERROR),
    (b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}', None, PARSE_ERROR),
    (b"[" * 100_000, None, PARSE_ERROR),
    (b"[]", None, INVALID_REQUEST),
    (b"42", None, INVALID_REQUEST),
    (b'"a string"', None, INVALID_REQUEST),
    (b"null", None, INVALID_REQUEST),
    (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', 1, INVALID_REQUEST),
    (b'{"id": 1, "method": "ping"}', 1, INVALID_REQUEST),
    (b'{"id": 1}', 1, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', 1, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', None, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', None, INVALID_REQUEST),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', 1, INVALID_REQUEST),  # no batches
    (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "not an object"}',
        1,
        INVALID_REQUEST,
    ),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}', 1, INVALID_PARAMS),
    (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "save_page", '
        b'"arguments": {"slug": "lone\\ud800", "content": "x"}}}',
        1,
        INVALID_PARAMS,
    ),
    (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "save_page", '
        b'"arguments": {"slug": "lone", "content": "\\udc00x"}}}',
        1,
        INVALID_PARAMS,
    ),
    (deep(500), 1, INVALID_PARAMS),  # more than the SDK parses
    (deep(100_000), 1, INVALID_PARAMS),  # more than Python parses
]

# Malformed too, but no request: a notification, a response, a blank line get nothing.
UNANSWERED = [
    b"",
    b"   ",
    b'{"method": "notifications/initialized"}',
    b'{"jsonrpc": "2.0", "method": "notifications/initialized", "params": "x"}',
    b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"x": "\\ud800"}}',
    b'{"jsonrpc": "2.0", "id": 1, "result": "no such request"}',
    b'[{"jsonrpc": "2.0", "method": "notifications/initialized"}]',
]


@pytest.mark.parametrize(("garbage", "answer_id", "code"), MALFORMED, ids=repr)
def test_malformed_requests_get_their_error_and_serving_goes_on(
    server: RawServer, vault: Path, garbage: bytes, answer_id: int | None, code: int
) -> None:
    server.send_line(garbage)
    before = still_serving(server)
    assert [(m["id"], m["error"]["code"]) for m in before] == [(answer_id, code)], before
    assert set(before[0]) == {"jsonrpc", "id", "error"}
    assert not list(vault.glob("lone*"))


@pytest.mark.parametrize("garbage", UNANSWERED, ids=repr)
def test_malformed_notifications_are_dropped(server: RawServer, garbage: bytes) -> None:
    server.send_line(garbage)
    assert still_serving(server) == []


def test_each_request_of_a_batch_gets_its_error(server: RawServer) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "first", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        17,
    ]
    server.send_line(json.dumps(batch).encode())
    before = still_serving(server)
    assert [(m["id"], m["error"]["code"]) for m in before] == [
        ("first", INVALID_REQUEST),
        (2, INVALID_REQUEST),
        (None, INVALID_REQUEST),
    ]


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
    for garbage in [line for line, _, _ in MALFORMED] + UNANSWERED:
        server.send_line(garbage)
    for method, params, _ in ERRORS:
        server.send_line(line(1, method, params))
    for tool, arguments, _ in TOOL_ERRORS:
        server.send_line(line(1, "tools/call", {"name": tool, "arguments": arguments}))
    server.send_line(line(1, "ping"))  # a reused id is answered too
    saved, replies = server.wait_for(server.call_tool("save_page", slug="After", content="ok"))
    assert saved["result"]["isError"] is False
    expected = len(MALFORMED) + len(ERRORS) + len(TOOL_ERRORS) + 1
    while len(replies) < expected:  # requests run concurrently: a reply may come later
        replies.append(server.next_message(15))
    assert all(m.get("id") in (1, None) for m in replies)
    assert len(replies) == expected
    still_serving(server)
    assert server.close() == 0
    assert (vault / "After.md").read_text(encoding="utf-8") == "ok"
    assert page_files(vault) == page_files(BRAIN) | {"After.md"}


@pytest.mark.slow
def test_garbage_before_initialize(tmp_path: Path) -> None:
    with RawServer(tmp_path, "--no-watch", "--log-level", "WARNING") as raw:
        raw.send_line(b"{not json")
        raw.send_line(b"[]")
        assert raw.initialize()["result"]["protocolVersion"] == "2025-11-25"
        reply, _ = raw.wait_for(raw.call_tool("list_pages"))
        assert reply["result"]["structuredContent"]["total"] == 0
        assert raw.close() == 0
