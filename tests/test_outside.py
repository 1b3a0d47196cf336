"""Edits made outside lore: found however they were made, and on the record.

An edit that keeps a file's size and modification time (`cp -p`, `rsync -t`) is found by
the periodic check, the watcher's events and a restart, through the inode and ctime the
index keeps for each file and a hash of the bytes of a file whose stamp says only that.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import write
from lore_mcp import audit
from lore_mcp import vault_ops as engine
from lore_mcp.cli import main
from lore_mcp.vault_ops import AppState
from lore_mcp.watcher import start_watcher
from test_write_recovery import killed_renaming, seed


def copy_keeping_size_and_mtime(path: Path, text: str, scratch: Path) -> None:
    """Put `text` (as long as the file's bytes) in the file as `cp -p` does: the bytes
    written in place, then the source's times set on it, which are the file's own."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    source = scratch / "source.md"
    source.write_text(text, encoding="utf-8")
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    shutil.copy2(source, path)
    # The kernel's clock for ctime is coarse: within one tick, set the times once more.
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        time.sleep(0.01)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def content(state: AppState, name: str) -> str:
    return engine.read_page(state, name).content


def test_the_periodic_check_finds_an_edit_that_kept_size_and_mtime(
    vault_dir: Path, tmp_path: Path
) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    state = engine.open_vault(vault_dir)
    try:
        copy_keeping_size_and_mtime(page, "links [[Omega]]\n", tmp_path)
        assert engine.changed_on_disk(state) == ["Page.md"]
        report = engine.apply_external_changes(state, engine.changed_on_disk(state))
        assert report.updated == 1
        assert content(state, "Page") == "links [[Omega]]\n"
        assert [hit.slug for hit in engine.search(state, "omega").hits] == ["page"]
        assert engine.changed_on_disk(state) == []  # stamped anew: a stat finds it the same
    finally:
        state.close()


def test_a_restart_finds_an_edit_that_kept_size_and_mtime(vault_dir: Path, tmp_path: Path) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    engine.open_vault(vault_dir).close()
    copy_keeping_size_and_mtime(page, "links [[Omega]]\n", tmp_path)
    state = engine.open_vault(vault_dir)
    try:
        assert content(state, "Page") == "links [[Omega]]\n"
        assert "omega" in {state.handle(key) for key in state.placeholders}
    finally:
        state.close()


def test_the_watcher_takes_in_a_copy_that_kept_size_and_mtime(
    vault_dir: Path, tmp_path: Path
) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    state = engine.open_vault(vault_dir)
    try:
        start_watcher(state, 0.05, check_every=3600)  # file events only
        copy_keeping_size_and_mtime(page, "links [[Omega]]\n", tmp_path)
        deadline = time.monotonic() + 10
        while content(state, "Page") != "links [[Omega]]\n" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert content(state, "Page") == "links [[Omega]]\n"
    finally:
        state.close()


def test_a_new_ctime_with_the_same_bytes_costs_a_hash_once(vault_dir: Path) -> None:
    page = write(vault_dir, "Page.md", "links [[Alpha]]\n")
    state = engine.open_vault(vault_dir)
    try:
        before = page.stat().st_ctime_ns
        while page.stat().st_ctime_ns == before:  # chmod: a new ctime, the same bytes
            time.sleep(0.01)
            page.chmod(0o600 if page.stat().st_mode & 0o077 else 0o644)
        assert engine.changed_on_disk(state) == ["Page.md"]
        report = engine.apply_external_changes(state, ["Page.md"])
        assert (report.updated, report.unchanged) == (0, 1)
        assert engine.changed_on_disk(state) == []
    finally:
        state.close()


# -- on the record --------------------------------------------------------------------------


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def records(root: Path) -> list[audit.AuditRecord]:
    return audit.read_log(root).records


def replace_as_an_editor(path: Path, text: str) -> None:
    """Write a new file beside the page and rename it over the page, as editors do."""
    temp = path.with_name(path.name + ".swp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(path)


def test_an_outside_edit_of_what_an_agent_wrote_is_logged_and_kept(vault_dir: Path) -> None:
    state = engine.open_vault(vault_dir)
    try:
        start_watcher(state, 0.05, check_every=3600)
        engine.save_page(state, "Page", "the agent's words\n")  # its own event: no record
        replace_as_an_editor(vault_dir / "Page.md", "edited outside\n")
        deadline = time.monotonic() + 10
        while len(records(vault_dir)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        saved, edited = records(vault_dir)
        assert (saved.door, saved.tool) == ("api", "save_page")
        assert (edited.door, edited.tool, edited.slug, edited.path) == (
            "outside",
            "edit",
            "page",
            "Page.md",
        )
        assert (edited.before, edited.after) == (saved.after, sha(b"edited outside\n"))
        assert edited.kept is True and edited.history_path is not None
        assert (vault_dir / edited.history_path).read_bytes() == b"the agent's words\n"
        kept = engine.read_version(state, "Page", 1)
        assert (kept.content, kept.version and kept.version.door) == (
            "the agent's words\n",
            "outside",
        )
        engine.restore_page(state, "Page", 1)  # and it comes back through the tools
        assert (vault_dir / "Page.md").read_bytes() == b"the agent's words\n"
    finally:
        state.close()


def test_a_version_no_tool_wrote_is_not_kept_and_the_record_says_so(vault_dir: Path) -> None:
    page = write(vault_dir, "Page.md", "written outside\n")
    state = engine.open_vault(vault_dir)  # a first index: nothing to compare, no record
    try:
        assert records(vault_dir) == []
        page.write_text("edited outside\n", encoding="utf-8")
        engine.apply_external_changes(state, ["Page.md"])
        (edited,) = records(vault_dir)
        assert (edited.door, edited.tool, edited.before, edited.after) == (
            "outside",
            "edit",
            sha(b"written outside\n"),
            sha(b"edited outside\n"),
        )
        assert (edited.kept, edited.history_path) == (False, None)
        assert engine.page_history(state, "Page").versions == []
    finally:
        state.close()


def test_outside_creates_and_deletes_are_logged(vault_dir: Path) -> None:
    state = engine.open_vault(vault_dir)
    try:
        engine.save_page(state, "Gone", "links [[New]]\n")
        (vault_dir / "Gone.md").unlink()
        write(vault_dir, "New.md", "new\n")
        assert engine.changed_on_disk(state) == ["Gone.md", "New.md"]  # the periodic check
        engine.apply_external_changes(state, engine.changed_on_disk(state))
        _, *found = records(vault_dir)
        by_tool = {r.tool: r for r in found}
        assert sorted(by_tool) == ["create", "delete"] and len(found) == 2
        created, deleted = by_tool["create"], by_tool["delete"]
        assert (created.path, created.before, created.after, created.kept) == (
            "New.md",
            None,
            sha(b"new\n"),
            None,
        )
        assert (deleted.path, deleted.after, deleted.kept) == ("Gone.md", None, True)
        assert engine.read_version(state, "Gone", 1).content == "links [[New]]\n"
    finally:
        state.close()


def test_a_start_up_pass_records_what_changed_while_no_server_ran(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = engine.open_vault(vault_dir)
    engine.save_page(state, "Page", "the agent's words\n")
    state.close()
    replace_as_an_editor(vault_dir / "Page.md", "edited outside\n")
    state = engine.open_vault(vault_dir)
    state.close()
    engine.open_vault(vault_dir).close()  # once only
    _, edited = records(vault_dir)
    assert (edited.door, edited.tool, edited.kept) == ("outside", "edit", True)
    assert main(["--vault", str(vault_dir), "log"]) == 0
    out = capsys.readouterr().out
    assert "outside" in out and "edit" in out and "what it replaced is kept in" in out


def test_a_rename_lore_finishes_at_start_is_not_an_outside_change(vault_dir: Path) -> None:
    """A rename killed part-way through its moves (after its record) is finished by the
    next start, read-only or not: lore's own change, never logged as an outside one."""
    seed(vault_dir)
    killed_renaming(vault_dir, "plan._merge")  # the page moved, no link rewritten
    engine.open_vault(vault_dir, read_only=True).close()  # reports it, finishes nothing
    engine.open_vault(vault_dir).close()  # finishes it
    assert [(r.door, r.tool) for r in records(vault_dir)] == [("api", "rename_page")]
    assert "[[Renamed Note]]" in (vault_dir / "Hub.md").read_text()


def test_after_a_rename_an_outside_edit_still_keeps_what_the_tools_wrote(vault_dir: Path) -> None:
    state = engine.open_vault(vault_dir)
    try:
        engine.save_page(state, "Draft", "the agent's words\n")
        engine.rename_page(state, "Draft", "Final")
        replace_as_an_editor(vault_dir / "Final.md", "edited outside\n")
        engine.apply_external_changes(state, ["Final.md"])
        edited = records(vault_dir)[-1]
        assert (edited.door, edited.tool, edited.path, edited.kept) == (
            "outside",
            "edit",
            "Final.md",
            True,
        )
        assert engine.read_version(state, "Final", 1).content == "the agent's words\n"
    finally:
        state.close()
