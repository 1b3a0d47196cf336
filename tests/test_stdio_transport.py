"""The stdio transport (the SDK's) as a client meets it: `python -m lore_mcp` on pipes or
sockets that the test owns end to end, its stderr in a file. Large messages both ways,
junk that does no harm, stray output kept off the wire, the ways a session ends, and
stdin that is no pipe."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import environment
from lore_mcp.config import MAX_CONTENT_BYTES

PROTOCOL = "2025-11-25"
HANG_GUARD = 60  # seconds; only a broken server gets near it


def lore_mcp(vault: Path) -> list[str]:
    """The server, logging at INFO so that its closing the vault shows."""
    return [
        sys.executable,
        "-m",
        "lore_mcp",
        "--vault",
        str(vault),
        "--no-watch",
        "--log-level",
        "INFO",
    ]


def _channel(kind: str, server_reads: bool) -> tuple[int, int]:
    """Our end and the server's end of one direction, as descriptors."""
    if kind == "sockets":  # what a Node.js client (libuv) hands its child
        ours, theirs = socket.socketpair()
        return ours.detach(), theirs.detach()
    read_end, write_end = os.pipe()
    return (write_end, read_end) if server_reads else (read_end, write_end)


class Wire:
    """A server process on channels the test holds raw: no threads, no buffering, so
    either end can be closed at any moment."""

    def __init__(self, command: list[str], log: Path, kind: str = "pipes") -> None:
        self.log = log
        self.to_server, server_in = _channel(kind, server_reads=True)
        self.from_server, server_out = _channel(kind, server_reads=False)
        with log.open("wb") as stderr:
            self.proc = subprocess.Popen(
                command, stdin=server_in, stdout=server_out, stderr=stderr, env=environment()
            )
        os.close(server_in)
        os.close(server_out)
        self._pending = bytearray()
        self._next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message).encode("utf-8"))

    def send_line(self, line: bytes) -> None:
        view = memoryview(line + b"\n")
        while view:
            view = view[os.write(self.to_server, view) :]

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def read_line(self) -> bytes:
        """The next line from the server; EOFError once it has closed stdout."""
        deadline = time.monotonic() + HANG_GUARD
        while (end := self._pending.find(b"\n")) < 0:
            ready, _, _ = select.select([self.from_server], [], [], deadline - time.monotonic())
            if not ready:
                raise TimeoutError("the server wrote no line")
            chunk = os.read(self.from_server, 1 << 20)
            if not chunk:
                raise EOFError
            self._pending += chunk
        line = bytes(self._pending[:end])
        del self._pending[: end + 1]
        return line

    def reply(self, request_id: int) -> dict[str, Any]:
        """The reply to `request_id`; every line before it must be a message too."""
        while True:
            message = json.loads(self.read_line())
            assert message["jsonrpc"] == "2.0"
            if message.get("id") == request_id and "method" not in message:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result

    def initialize(self) -> None:
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "wire", "version": "0"},
        }
        assert self.reply(self.request("initialize", params))["protocolVersion"] == PROTOCOL
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call_tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.reply(self.request("tools/call", {"name": name, "arguments": arguments}))
        assert result["isError"] is False, result
        return result

    def close_input(self) -> None:
        os.close(self.to_server)
        self.to_server = -1

    def close_output(self) -> None:
        os.close(self.from_server)
        self.from_server = -1

    def rest(self) -> list[bytes]:
        """Every line still to come, up to the server closing stdout."""
        lines = []
        while True:
            try:
                lines.append(self.read_line())
            except EOFError:
                return lines

    def wait(self) -> tuple[int, str]:
        """The exit code and everything the server logged."""
        code = self.proc.wait(HANG_GUARD)
        return code, self.log.read_text(encoding="utf-8")

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(HANG_GUARD)
        for fd in (self.to_server, self.from_server):
            if fd >= 0:
                os.close(fd)


# Sockets are what a Node.js client hands its child; the slow run checks them too.
KINDS = ["pipes", pytest.param("sockets", marks=pytest.mark.slow)]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "stderr.log"


def closed_cleanly(code: int, logged: str) -> bool:
    return code == 0 and "closed the vault" in logged and "Traceback" not in logged


# -- large messages --------------------------------------------------------------------------


def big_page() -> str:
    """Just under the 1 MiB limit of UTF-8, but more than twice that as JSON."""
    line = '😀🐘🦓🦒 記憶の宮殿 "q" \\\t\n'
    body = line * ((MAX_CONTENT_BYTES - 100) // len(line.encode("utf-8")))
    return "# Big\n\nSee [[Slugs]].\n\n" + body


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_a_multi_megabyte_page_goes_in_and_comes_back_whole(
    brain_dir: Path, log: Path, kind: str
) -> None:
    content = big_page()
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "save_page", "arguments": {"slug": "Big Page", "content": content}},
    }
    line = json.dumps(request).encode("utf-8")
    assert len(line) > 2 * MAX_CONTENT_BYTES  # ASCII-escaped, as many clients send it
    wire = Wire(lore_mcp(brain_dir), log, kind)
    try:
        wire.initialize()
        wire.send_line(line)
        saved = wire.reply(7)
        assert saved["isError"] is False and saved["structuredContent"]["created"] is True
        page = wire.reply(wire.request("resources/read", {"uri": "lore://page/big-page"}))
        assert page["contents"][0]["text"] == content
        wire.close_input()
        assert closed_cleanly(*wire.wait())
    finally:
        wire.release()
    assert (brain_dir / "Big Page.md").read_text(encoding="utf-8") == content


@pytest.mark.slow
def test_a_huge_line_that_is_no_request_gets_its_error_and_serving_goes_on(
    brain_dir: Path, log: Path
) -> None:
    wire = Wire(lore_mcp(brain_dir), log)
    try:
        wire.initialize()
        junk = b'{"jsonrpc": "2.0", "id": 99, "x": "' + b"y" * (16 * MAX_CONTENT_BYTES) + b'"}'
        wire.send_line(junk)
        answer = json.loads(wire.read_line())
        assert (answer["id"], answer["error"]["code"]) == (99, -32600)
        assert wire.reply(wire.request("ping")) == {}
        page = wire.call_tool("read_page", slug="Slugs")
        assert "concepts/slugs" in page["content"][0]["text"]
        wire.close_input()
        code, logged = wire.wait()
    finally:
        wire.release()
    assert closed_cleanly(code, logged)


@pytest.mark.slow
def test_malformed_lines_are_logged_at_debug(brain_dir: Path, log: Path) -> None:
    command = [*lore_mcp(brain_dir)[:-1], "DEBUG"]
    wire = Wire(command, log)
    try:
        wire.initialize()
        wire.send_line(b'{"method": "notifications/initialized", "note": "no jsonrpc"}')
        wire.send_line(b'{"id": 5, "method": "ping", "note": "no jsonrpc"}')
        assert json.loads(wire.read_line())["error"]["code"] == -32600
        assert wire.reply(wire.request("ping")) == {}
        wire.close_input()
        code, logged = wire.wait()
    finally:
        wire.release()
    assert closed_cleanly(code, logged)
    dropped = [line for line in logged.splitlines() if "dropped a malformed notification" in line]
    assert len(dropped) == 1 and "DEBUG" in dropped[0]
    answered = [line for line in logged.splitlines() if "-32600" in line]
    assert len(answered) == 1 and "DEBUG" in answered[0]


# -- stray output ----------------------------------------------------------------------------

# The real server plus one tool that writes to stdout the ways careless code does. After
# the session it reports, on the restored fd 1, whether the pipes are blocking again.
NOISY_SERVER = """
import json, os, sys
from pathlib import Path
from lore_mcp import vault_ops
from lore_mcp.config import setup_logging
from lore_mcp.server import build_server, run_stdio

def shout() -> str:
    '''Write to stdout.'''
    print("stray print, flushed", flush=True)
    os.write(1, b"stray os.write\\n")
    print("stray print, left in the buffer")
    return "shouted"

setup_logging("INFO")
opened = vault_ops.open_vault(Path(sys.argv[1]), scan=False)
server = build_server(opened)
server.add_tool(shout)
run_stdio(server, opened)
after = {"after": True, "stdin_blocking": os.get_blocking(0), "stdout_blocking": os.get_blocking(1)}
os.write(1, json.dumps(after).encode() + b"\\n")
"""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_stray_output_goes_to_stderr_never_to_the_client(
    brain_dir: Path, log: Path, kind: str
) -> None:
    wire = Wire([sys.executable, "-c", NOISY_SERVER, str(brain_dir)], log, kind)
    try:
        wire.initialize()
        shouted = wire.reply(wire.request("tools/call", {"name": "shout", "arguments": {}}))
        assert shouted["content"][0]["text"] == "shouted"
        assert wire.reply(wire.request("ping")) == {}
        wire.close_input()
        after = wire.rest()
        code, logged = wire.wait()
    finally:
        wire.release()
    assert closed_cleanly(code, logged)
    # fd 1 is the wire again after the session, and the pipes are back in blocking mode.
    assert [json.loads(line) for line in after] == [
        {"after": True, "stdin_blocking": True, "stdout_blocking": True}
    ]
    for stray in ("stray print, flushed", "stray os.write", "stray print, left in the buffer"):
        assert stray in logged


# -- how a session ends ----------------------------------------------------------------------


@pytest.mark.slow  # the other tests end their sessions so too
@pytest.mark.parametrize("kind", ["pipes", "sockets"])
def test_end_of_input_ends_the_server_and_closes_the_vault(
    brain_dir: Path, log: Path, kind: str
) -> None:
    wire = Wire(lore_mcp(brain_dir), log, kind)
    try:
        wire.initialize()
        assert wire.call_tool("get_graph")["structuredContent"]["shape"]["pages"] == 18
        wire.close_input()
        assert wire.rest() == []
        code, logged = wire.wait()
    finally:
        wire.release()
    assert closed_cleanly(code, logged)
    assert not (brain_dir / ".lore" / "lore.db-wal").exists()  # SQLite closed cleanly


@pytest.mark.slow
def test_a_client_that_goes_away_mid_answer_ends_the_server_quietly(
    brain_dir: Path, log: Path
) -> None:
    """The client closes both ends (as when it crashes) while replies are still being
    written: the server stops, closes the vault and exits 0, with no traceback."""
    wire = Wire(lore_mcp(brain_dir), log)
    try:
        wire.initialize()
        for _ in range(20):
            wire.request("tools/call", {"name": "get_graph", "arguments": {}})
        wire.close_output()
        wire.close_input()
        code, logged = wire.wait()
    finally:
        wire.release()
    assert closed_cleanly(code, logged)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_ends_the_server_cleanly(
    brain_dir: Path, log: Path, sig: signal.Signals
) -> None:
    """Stdin stays open: the signal alone stops the server, which closes the vault and
    exits 0, with what it saved kept."""
    wire = Wire(lore_mcp(brain_dir), log)
    try:
        wire.initialize()
        wire.call_tool("save_page", slug="Before Stop", content="kept")
        wire.proc.send_signal(sig)
        code, logged = wire.wait()
    finally:
        wire.release()
    assert closed_cleanly(code, logged)
    assert f"stopping on {sig.name}" in logged
    assert (brain_dir / "Before Stop.md").read_text(encoding="utf-8") == "kept"
    assert not (brain_dir / ".lore" / "lore.db-wal").exists()  # SQLite closed cleanly


# -- stdin that is no pipe ----------------------------------------------------------------------


def test_requests_from_a_file_are_all_answered(brain_dir: Path, tmp_path: Path) -> None:
    """stdin redirected from a file: the end of the file comes while the first index
    still runs and every call waits for it, yet each request read gets its answer
    before the session ends; a cancelled one needs none."""
    requests = tmp_path / "requests.jsonl"
    init = {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "file", "version": "0"},
    }

    def call(n: int, tool: str, **arguments: Any) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        call(3, "search", query="links"),
        call(4, "read_page", slug="Index"),
        {"jsonrpc": "2.0", "id": "five", "method": "resources/list"},
        call(6, "get_graph"),
        call(7, "search_titles", query="slug"),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        call(8, "list_pages"),
    ]

    requests.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            lore_mcp(brain_dir),
            stdin=stdin,
            capture_output=True,
            env=environment(),
            timeout=HANG_GUARD,
            check=False,
        )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(map(str, (reply["id"] for reply in replies))) == sorted(
        str(m["id"]) for m in messages if "id" in m
    )
    assert replies[0]["result"]["protocolVersion"] == PROTOCOL
    assert all("error" not in reply for reply in replies)
    assert all(not reply["result"].get("isError") for reply in replies)

    assert closed_cleanly(done.returncode, done.stderr.decode("utf-8"))


@pytest.mark.slow
def test_stdin_from_the_null_device_ends_at_once(brain_dir: Path) -> None:
    done = subprocess.run(
        lore_mcp(brain_dir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=environment(),
        timeout=HANG_GUARD,
        check=False,
    )
    assert done.stdout == b""
    assert closed_cleanly(done.returncode, done.stderr.decode("utf-8"))
