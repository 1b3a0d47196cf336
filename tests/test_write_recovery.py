"""A write cut short by SIGKILL, at the moments that matter, and the next start.

A real child process makes the write and kills itself at an exact point of it: before
its audit record goes out (the next start undoes the write: nothing changed), or
after, part-way through moving files (the next start finishes it, and the record says
what the files hold). A vault opened read-only changes no file meanwhile and reports
the unfinished write, in its log and in `lore doctor`.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write
from helpers import assert_matches_fresh, environment
from lore_mcp import audit, vault_ops
from lore_mcp.config import JOURNAL_FILE, LEGACY_JOURNAL_FILE, LORE_DIR
from lore_mcp.vault_ops.files import STALE_TEMP_SECONDS

# The child: it opens the vault, arms a SIGKILL at one function of the write, and renames.
CHILD = """
import os, signal, sys
from lore_mcp import vault_ops
from lore_mcp.vault_ops import plan
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
module, name = sys.argv[2].rsplit(".", 1)
setattr(plan if module == "plan" else plan.audit, name, die)
vault = vault_ops.open_vault(sys.argv[1])
vault_ops.rename_page(vault, "Note", "moved/Renamed Note")
"""


def lore(*args: str) -> subprocess.CompletedProcess[str]:
    """The `lore` command line, as a child process, to its end."""
    command = "from lore_mcp.cli import lore_main; lore_main()"
    return subprocess.run(
        [sys.executable, "-c", command, *args],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def killed_renaming(root: Path, at: str) -> None:
    """Rename `Note` in a child process that is SIGKILLed when it reaches `at`."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), at],
        env=environment(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr.decode()


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every page file and folder outside `.lore/`, with its bytes and modification time."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith(LORE_DIR):
            found[rel] = (path.read_bytes() if path.is_file() else b"", path.stat().st_mtime_ns)
    return found


def seed(root: Path) -> None:
    write(root, "Note.md", "# Note\n")
    write(root, "Hub.md", "To [[Note]] and [[Note#Note|the note]].\n")
    write(root, "Other.md", "Also [[Note]].\n")
    vault_ops.open_vault(root).close()


def test_killed_before_its_record_a_rename_is_undone(vault_dir: Path) -> None:
    seed(vault_dir)
    before = files(vault_dir)
    killed_renaming(vault_dir, "audit.append_line")
    assert (vault_dir / LORE_DIR / JOURNAL_FILE).exists()
    state = vault_ops.open_vault(vault_dir)
    try:
        assert files(vault_dir) == before
        assert not list(vault_dir.rglob(".lore-tmp-*"))
        assert not (vault_dir / LORE_DIR / JOURNAL_FILE).exists()
        assert vault_ops.page_history(state, "Hub").versions == []  # taken back too
        assert audit.read_log(vault_dir).records == []
        assert_matches_fresh(state)
    finally:
        state.close()


@pytest.mark.slow
def test_read_only_leaves_an_interrupted_rename_and_reports_it(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seed(vault_dir)
    killed_renaming(vault_dir, "plan._merge")  # the page moved, no link rewritten
    assert (vault_dir / "moved/Renamed Note.md").exists()
    assert "[[Note]]" in (vault_dir / "Hub.md").read_text()
    temps = list(vault_dir.rglob(".lore-tmp-*"))  # the new bytes, to be put in place
    assert len(temps) == 2  # Hub.md and Other.md; Note.md itself moves
    for temp in temps:  # old enough to look abandoned: kept all the same, for the journal
        os.utime(temp, (time.time() - 2 * STALE_TEMP_SECONDS,) * 2)
    half = files(vault_dir)
    with caplog.at_level(logging.WARNING, logger="lore_mcp"):
        state = vault_ops.open_vault(vault_dir, read_only=True)  # as --read-only opens it
        try:
            report = vault_ops.doctor(state)
        finally:
            state.close()
    assert "an interrupted write (Note.md -> moved/Renamed Note.md)" in caplog.text
    assert report.unfinished_write is not None and report.errors == 1
    assert "Note.md -> moved/Renamed Note.md" in report.unfinished_write
    doctor = lore("doctor", "--vault", str(vault_dir))  # a door that only reads
    assert doctor.returncode == 1 and "interrupted write" in doctor.stdout, doctor.stdout
    assert files(vault_dir) == half  # not a byte, not a time changed
    assert (vault_dir / LORE_DIR / JOURNAL_FILE).exists()

    state = vault_ops.open_vault(vault_dir)  # the next start that may write finishes it
    try:
        assert not (vault_dir / LORE_DIR / JOURNAL_FILE).exists()
        assert (vault_dir / "Hub.md").read_text() == (
            "To [[Renamed Note]] and [[Renamed Note#Note|the note]].\n"
        )
        [record] = audit.read_log(vault_dir).records
        assert (record.tool, record.old_path, record.path) == (
            "rename_page",
            "Note.md",
            "moved/Renamed Note.md",
        )
        pages = [(record.path, record.after), *((p.path, p.after) for p in record.rewritten)]
        assert sorted(rel for rel, _ in pages) == ["Hub.md", "Other.md", "moved/Renamed Note.md"]
        for rel, after in pages:
            assert audit.file_hash(vault_dir / rel) == after
        assert not list(vault_dir.rglob(".lore-tmp-*"))
        assert vault_ops.doctor(state).unfinished_write is None
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_rename_left_by_an_older_version_is_finished_with_its_record(vault_dir: Path) -> None:
    """A journal as 0.2 wrote it (the new bytes inside): read-only leaves it, a writable
    start finishes it and records it."""
    seed(vault_dir)
    legacy = {
        "moves": [["Note.md", "Renamed.md"]],
        "folders": [],
        "writes": {"Hub.md": base64.b64encode(b"To [[Renamed]].\n").decode()},
    }
    (vault_dir / LORE_DIR / LEGACY_JOURNAL_FILE).write_text(json.dumps(legacy))
    before = files(vault_dir)
    vault_ops.open_vault(vault_dir, read_only=True).close()
    assert files(vault_dir) == before
    state = vault_ops.open_vault(vault_dir)
    try:
        assert (vault_dir / "Hub.md").read_bytes() == b"To [[Renamed]].\n"
        assert not (vault_dir / "Note.md").exists() and (vault_dir / "Renamed.md").exists()
        [record] = audit.read_log(vault_dir).records
        assert (record.door, record.tool, record.old_path, record.path) == (
            "recovery",
            "rename_page",
            "Note.md",
            "Renamed.md",
        )
        assert [(p.path, p.after) for p in record.rewritten] == [
            ("Hub.md", audit.data_hash(b"To [[Renamed]].\n"))
        ]
        assert_matches_fresh(state)
    finally:
        state.close()


def test_a_page_moved_and_rewritten_keeps_its_mode(state: vault_ops.AppState) -> None:
    page = write(state.root, "Note.md", "I am [[Note]].\n")
    page.chmod(0o600)
    vault_ops.index_vault(state)
    vault_ops.rename_page(state, "Note", "moved/Renamed")
    moved = state.root / "moved/Renamed.md"
    assert moved.read_text() == "I am [[Renamed]].\n"
    assert moved.stat().st_mode & 0o777 == 0o600
