"""A `lore-mcp` subprocess spoken to line by line, for tests that need the raw wire:
garbage lines, requests streamed without waiting, a SIGKILL at any moment."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PASS_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH")
PROTOCOL = "2025-11-25"
# `python -m lore_mcp` with its slow imports (the mcp SDK, about a second) done ahead:
# the process imports, then waits for one byte on stdin before it opens the vault and
# serves, so a test can start the next server while the current one still runs.
PREWARMED = (
    "import os, sys\n"
    "import lore_mcp.cli, lore_mcp.server, lore_mcp.vault_ops\n"
    "os.read(0, 1)\n"
    "lore_mcp.cli.mcp_main(sys.argv[1:])\n"
)


def server_env(**extra: str) -> dict[str, str]:
    """What a server process needs from ours; nothing else leaks in (no LORE_VAULT)."""
    env = {name: os.environ[name] for name in PASS_THROUGH if name in os.environ}
    env["PYTHONIOENCODING"] = "utf-8"
    return env | extra


class RawServer:
    """`python -m lore_mcp --vault V` with pipes; a thread collects stdout lines."""

    def __init__(self, vault: Path, *args: str, prewarmed: bool = False) -> None:
        """With `prewarmed`, the server waits for `go()` before it opens the vault."""
        start = ["-c", PREWARMED] if prewarmed else ["-m", "lore_mcp"]
        self.proc = subprocess.Popen(
            [sys.executable, *start, "--vault", str(vault), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(),
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 1000

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def go(self) -> None:
        """Let a prewarmed server open its vault and serve."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"!")
        self.proc.stdin.flush()

    def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.rstrip(b"\n") + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message).encode("utf-8"))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request(self, method: str, params: Any = None) -> int:
        """Send a request; its id."""
        request_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def call_tool(self, name: str, **arguments: Any) -> int:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def next_message(self, timeout: float) -> dict[str, Any]:
        """The next line from stdout, parsed; every line must be one JSON-RPC message."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError("the server closed stdout")
        message = json.loads(line)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line
        return message

    def wait_for(
        self, request_id: int, timeout: float = 15
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The reply to `request_id`, and every other message that came before it."""
        deadline = time.monotonic() + timeout
        others: list[dict[str, Any]] = []
        while True:
            message = self.next_message(max(deadline - time.monotonic(), 0.001))
            if message.get("id") == request_id and "method" not in message:
                return message, others
            others.append(message)

    def initialize(self) -> dict[str, Any]:
        """The legacy handshake: initialize, then the initialized notification."""
        reply, _ = self.wait_for(
            self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "rawpipe", "version": "0"},
                },
            ),
            timeout=30,
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self, timeout: float = 15) -> int:
        """Close stdin and wait for a clean exit; its exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        self._release()
        return code

    def kill(self) -> None:
        """SIGKILL, then release the pipes."""
        self.proc.kill()
        self.proc.wait(10)
        self._release()

    def _release(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        self._reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()
        else:
            self._release()


def tool_text(reply: dict[str, Any]) -> str:
    """The text of a tools/call result."""
    return str(reply["result"]["content"][0]["text"])
