"""A bare JSON-RPC client for the stdio server: one line out, read lines until the answer.

It does no schema validation and no model building, so a round trip through it is the
server's work plus the pipe. Next to the SDK client's figures it shows how much of a
round trip the client itself spends. `bench/spy.py` drives profiled servers with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

PROTOCOL_VERSION = "2025-11-25"


def server_command(vault: Path) -> list[str]:
    return [sys.executable, "-m", "lore_mcp", "--vault", str(vault), "--no-watch"]


class RawServer:
    """A server process spoken to line by line (blocking; one request at a time)."""

    def __init__(self, command: list[str], env: dict[str, str], stderr: IO[str] | int) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its `result`; a JSON-RPC error raises RuntimeError."""
        self._next_id += 1
        wanted = self._next_id
        self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            line = stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its output (exit {self.process.poll()})")
            if not line.lstrip().startswith(b"{"):
                continue  # not a message (py-spy, wrapping a server, prints to stdout)
            message = json.loads(line)
            if message.get("id") != wanted:
                continue  # a notification
            if "error" in message:
                raise RuntimeError(f"{method} failed: {message['error']}")
            result: dict[str, Any] = message["result"]
            return result

    def initialize(self) -> dict[str, Any]:
        result = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "lore-bench", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def timed_call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Milliseconds of one `tools/call` round trip, and its result."""
        began = time.perf_counter()
        result = self.call(tool, arguments)
        return (time.perf_counter() - began) * 1000, result

    def close(self, timeout: float | None = 60.0) -> int:
        """Close stdin (the server's cue to exit) and wait for it."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code
