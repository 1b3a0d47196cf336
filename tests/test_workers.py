"""The worker processes that read pages in a large pass end with the process that
started them, even when it is killed mid-pass (SIGKILL gives it no chance to stop them).

A real `lore index` runs on a generated vault large enough for readers (the threshold
lowered through LORE_READER_PASS_FILES), is killed once a reader is running, and every
process it started must be gone soon after. Its process group finds them: the command is
started in a session of its own, and the readers and the resource tracker stay in it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import environment
from lore_mcp.commands import readers
from lore_mcp.config import READER_PASS_FILES_ENV

PAGES = 3000
LORE = "from lore_mcp.cli import lore_main; lore_main()"
BOUND = 30.0  # seconds: generous; the readers notice at once


def group_members(group: int) -> dict[int, str]:
    """The live (not zombie) processes of the process group `group`: pid, command line."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # it ended meanwhile
            continue
        fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
        state, pgrp = fields[0], int(fields[2])
        if pgrp == group and state != "Z":
            found[int(entry.name)] = command.replace(b"\0", b" ").decode(errors="replace")
    return found


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
@pytest.mark.skipif(readers() < 1, reason="a single CPU: passes start no readers")
def test_readers_end_when_a_first_index_is_killed(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    for n in range(PAGES):
        folder = root / f"f{n % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"Page {n}.md").write_text(
            f"# Page {n}\n\nAbout [[Page {(n * 7) % PAGES}]] and [[Page {n + 1}]].\n" * 20,
            encoding="utf-8",
        )
    proc = subprocess.Popen(
        [sys.executable, "-c", LORE, "--vault", str(root), "index"],
        env=environment(**{READER_PASS_FILES_ENV: "100"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        group = proc.pid

        def reading() -> bool:
            return any("spawn_main" in c for p, c in group_members(group).items() if p != group)

        assert wait_for(reading, BOUND), "no reader process started"
        assert proc.poll() is None, "the index pass ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(BOUND)
        assert wait_for(lambda: not group_members(group), BOUND), (
            f"still running after the kill: {group_members(group)}"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in group_members(proc.pid):  # a failed run leaves nothing behind
            os.kill(pid, signal.SIGKILL)
