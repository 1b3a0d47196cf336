"""What abandoned HTTP sessions cost, and whether their memory comes back:

    python bench/sessions.py [--sessions 2000] [--timeout 5] [--vault PATH]

Starts `lore-mcp --http` (no watcher) with `--session-timeout TIMEOUT` and room for
every session, opens SESSIONS sessions with a bare `initialize` each and abandons them,
waits until they have expired, then opens as many again. Prints the server's resident
memory (Linux: /proc/PID/status) after start, after each round and after each expiry.
When expired sessions are reclaimed, the second round costs what the first did, or less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[1]
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+/mcp)")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def initialize(http: httpx2.Client, url: str, token: str) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    return http.post(url, headers=headers, content=json.dumps(body)).status_code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--vault", type=Path, default=ROOT / "brain")
    args = parser.parse_args()
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(args.vault, vault, ignore=shutil.ignore_patterns(".lore"))
        err = Path(tmp) / "server.log"
        env = dict(os.environ, LORE_MCP_TOKEN=token)
        command = [sys.executable, "-m", "lore_mcp", "--vault", str(vault), "--http"]
        command += ["--port", "0", "--no-watch", "--session-timeout", f"{args.timeout}s"]
        command += ["--max-sessions", str(args.sessions * 2)]
        with err.open("wb") as log, subprocess.Popen(command, stderr=log, env=env) as proc:
            try:
                while not (found := LISTENING.search(err.read_text(errors="replace"))):
                    time.sleep(0.1)
                url = found[1]
                with httpx2.Client(timeout=30) as http:
                    time.sleep(1)
                    print(f"started: {rss_mb(proc.pid):.1f} MB")
                    for round_ in (1, 2):
                        started = time.monotonic()
                        codes = [initialize(http, url, token) for _ in range(args.sessions)]
                        took = time.monotonic() - started
                        assert set(codes) == {200}, set(codes)
                        print(
                            f"round {round_}: {args.sessions} sessions open in {took:.1f} s: "
                            f"{rss_mb(proc.pid):.1f} MB"
                        )
                        time.sleep(args.timeout + 3)
                        print(f"round {round_}: expired: {rss_mb(proc.pid):.1f} MB")
            finally:
                proc.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
