"""Random bytes and randomly mutated JSON-RPC messages to a real stdio server: every
request that carries an id is answered exactly once, every line the server writes is a
JSON-RPC message, it keeps serving, and it exits 0 when stdin closes.

Seeded and bounded: a few hundred lines per seed. What counts as a request is decided
here, from the bytes sent, as a JSON parser reads them: an object (alone or in a batch)
with a string or integer id that is no response (one with a result or an error and no
method)."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import BRAIN
from rawpipe import RawServer

LINES = 300
DEEP = "\0deep\0"  # stands for a value nested deeper than any parser here reads
JSON_CHARS = '{}[]",:\\ \r0-.eE'

BASES: list[tuple[str, dict[str, Any] | None]] = [
    ("ping", None),
    ("tools/list", {}),
    ("resources/templates/list", None),
    ("prompts/list", {}),
    ("tools/call", {"name": "read_page", "arguments": {"slug": "Slugs"}}),
    ("tools/call", {"name": "search", "arguments": {"query": "link", "limit": 3}}),
    ("tools/call", {"name": "search_titles", "arguments": {"query": "sl"}}),
    ("tools/call", {"name": "list_pages", "arguments": {"limit": 5}}),
    ("tools/call", {"name": "get_graph", "arguments": {}}),
    ("tools/call", {"name": "get_backlinks", "arguments": {"slug": "Slugs"}}),
    ("tools/call", {"name": "save_page", "arguments": {"slug": "Fuzz", "content": "x"}}),
    ("resources/read", {"uri": "lore://page/concepts/slugs"}),
    ("notifications/initialized", None),
]


def base(rng: random.Random, number: int) -> dict[str, Any]:
    method, params = rng.choice(BASES)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if not method.startswith("notifications/"):
        message["id"] = number if rng.random() < 0.7 else f"req-{number}"
    if params is not None:
        message["params"] = json.loads(json.dumps(params))
    return message


def mutate(rng: random.Random, message: dict[str, Any], number: int) -> Any:
    """One random change to the message's structure; it may stop being an object."""
    choice = rng.randrange(10)
    if choice == 0 and message:
        del message[rng.choice(sorted(message))]
    elif choice == 1:
        message["jsonrpc"] = rng.choice(["1.0", 2, None, "2.0 "])
    elif choice == 2:
        message["id"] = rng.choice(
            [None, True, 1.5, {"a": number}, [number], -number, 10**30 + number, ""]
        )
    elif choice == 3:
        message["method"] = rng.choice([5, "", "tools/cal", "\ud800", None, ["ping"]])
    elif choice == 4:
        message["params"] = rng.choice(["x", 5, [1, 2], None, {"deep": DEEP}, True])
    elif choice == 5:
        arguments = message.get("params", {}).get("arguments")
        if isinstance(arguments, dict) and arguments:
            key = rng.choice(sorted(arguments))
            arguments[key] = rng.choice(["lone\ud800", "\udfff", DEEP, None, 10**400])
        else:
            message["params"] = {"x": "\udc00"}
    elif choice == 6:
        return [message] if rng.random() < 0.5 else [message, base(rng, -number), 3]
    elif choice == 7:
        return rng.choice([[], 0, "text", None, True])
    elif choice == 8:
        message["extra"] = {"nested": [1, {"a": "b"}]}
    return message


def mutate_text(rng: random.Random, text: str) -> str:
    """One random change to the line itself."""
    at = rng.randrange(len(text) + 1)
    choice = rng.randrange(4)
    if choice == 0:
        return text[:at]
    if choice == 1:
        return text[:at] + rng.choice(JSON_CHARS) + text[at:]
    if choice == 2:
        return text[:at] + text[at + 1 :]
    return text[:at] + chr(rng.randrange(0x20, 0x80)) + text[at + 1 :]


def random_bytes(rng: random.Random) -> bytes:
    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 120)))
    return junk.replace(b"\n", b"")


def encoded(message: Any, rng: random.Random) -> tuple[bytes, bytes]:
    """The line to send, and the same line with its deep values left as the marker
    string, for the test's own parser to read (deep values hold no ids)."""
    text = json.dumps(message)  # ASCII: a lone surrogate stays an escape
    if rng.random() < 0.3:
        text = mutate_text(rng, text)
    if rng.random() < 0.05:
        text = text.replace(",", ",\r", 1)  # a CR is JSON whitespace too
    depth = rng.choice([300, 5000])
    deep = text.replace(json.dumps(DEEP), "[" * depth + "]" * depth)
    return deep.encode(), text.encode()


def lines(seed: int) -> list[tuple[bytes, bytes]]:
    """What to send, each line with the form of it that the test reads."""
    rng = random.Random(seed)
    out = []
    for number in range(1, LINES + 1):
        roll = rng.random()
        if roll < 0.15:
            junk = random_bytes(rng)
            out.append((junk, junk))
            continue
        message: Any = base(rng, number)
        if roll < 0.75:
            message = mutate(rng, message, number)
        out.append(encoded(message, rng))
    return out


def canonical(value: Any) -> Any:
    """A request's id as the client matches answers to it, or None for no valid id."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value


def requests_in(line: bytes) -> list[Any]:
    """The ids of the requests `line` carries, as a JSON parser reads it."""
    try:
        value = json.loads(line.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return []
    items = value if isinstance(value, list) else [value]
    ids = [
        canonical(item["id"])
        for item in items
        if isinstance(item, dict)
        and "id" in item
        and ("method" in item or not ("result" in item or "error" in item))
    ]
    return [request_id for request_id in ids if request_id is not None]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(BRAIN, root, ignore=shutil.ignore_patterns(".lore"))
    return root


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_every_request_with_an_id_is_answered_exactly_once(vault: Path, seed: int) -> None:
    sent = lines(seed)
    expected: Counter[Any] = Counter(rid for _, read in sent for rid in requests_in(read))
    assert sum(expected.values()) > LINES // 3  # the fuzz still sends real requests
    answered: Counter[Any] = Counter()
    unmatched: list[dict[str, Any]] = []

    def take(message: dict[str, Any]) -> None:
        assert message["jsonrpc"] == "2.0", message
        if "method" in message:
            return  # a notification from the server
        assert set(message) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"})
        request_id = canonical(message["id"])
        if request_id is None:
            return  # an error about a line whose id could not be read
        answered[request_id] += 1
        if answered[request_id] > expected[request_id]:
            unmatched.append(message)

    with RawServer(vault, "--no-watch", "--log-level", "WARNING") as server:
        server.initialize()
        for line, _ in sent:
            server.send_line(line)
        while any(answered[rid] < count for rid, count in expected.items()):
            take(server.next_message(60))  # generous: only a lost answer gets near it
        final, before = server.wait_for(server.call_tool("read_page", slug="Slugs"), 60)
        for message in before:
            take(message)
        assert final["result"]["isError"] is False
        assert server.close() == 0
        while (rest := server.lines.get(timeout=10)) is not None:
            take(json.loads(rest))
    assert unmatched == []
    assert answered == expected
