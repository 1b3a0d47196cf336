"""Crash safety: SIGKILL a real server in the middle of a stream of saves, many times.

Every page file is always exactly one of the contents sent for it (never empty, never
torn); the hidden temp files a killed write leaves behind are never pages; each
restart's index converges to the files; and after each restart the audit log agrees
with the files: each page's records chain from one content to the next, and the last
says what the file holds.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from helpers import assert_matches_fresh, page_slugs
from lore_mcp import audit, vault_ops
from lore_mcp.slugs import slug_from_path
from rawpipe import RawServer

SEED = 20260806
ROUNDS = 24
PAGES = 4


def content(rng: random.Random, tag: str) -> str:
    """50-200 KB of Markdown, unique to `tag`, with a few links."""
    lines = [f"# {tag}", ""]
    size = rng.randint(50_000, 200_000)
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(f"{tag} line {len(lines)} about [[Page {rng.randrange(PAGES)}]] " + "x" * 80)
    return "\n".join(lines) + "\n"


def stream_saves(raw: RawServer, rng: random.Random, tag: str, sent: dict[str, set[bytes]]) -> None:
    """Send saves without waiting for replies until the pipe breaks. A content goes into
    `sent` before any byte of its request does."""
    for n in range(10_000):
        page = rng.randrange(PAGES)
        text = content(rng, f"{tag} save {n}")
        sent[f"Page {page}.md"].add(text.encode("utf-8"))
        try:
            raw.call_tool("save_page", slug=f"Page {page}", content=text)
        except (OSError, ValueError):  # the server was killed; its pipe is broken or closed
            return


def page_files(vault: Path) -> dict[str, bytes]:
    return {
        p.relative_to(vault).as_posix(): p.read_bytes()
        for p in vault.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(vault).parts)
    }


def server(vault: Path) -> RawServer:
    return RawServer(vault, "--no-watch", "--log-level", "ERROR", prewarmed=True)


def one_round(raw: RawServer, rng: random.Random, tag: str, sent: dict[str, set[bytes]]) -> int:
    """Let the server start, stream saves into it, SIGKILL it at a random moment; how
    many saves it had answered."""
    with raw:
        raw.go()
        raw.initialize()
        writer = threading.Thread(target=stream_saves, args=(raw, rng, tag, sent))
        writer.start()
        answered = 0
        first = raw.next_message(timeout=30)  # the first save is through: writes are flowing
        assert first["result"]["isError"] is False, first
        deadline = time.monotonic() + rng.uniform(0.0, 0.4)
        while time.monotonic() < deadline:
            try:
                message = raw.next_message(timeout=max(deadline - time.monotonic(), 0.001))
            except Exception:
                break
            assert message["result"]["isError"] is False, message
            answered += 1
        raw.proc.kill()
        raw.proc.wait(10)
        writer.join(10)
        assert not writer.is_alive()
    return answered + 1


def assert_audit_agrees(root: Path, sent: dict[str, set[bytes]]) -> None:
    """Per page, the records chain (each one's `before` is the last one's `after`),
    each is a content that was sent, and the last is what the file holds."""
    last: dict[str, str | None] = {}
    for record in audit.read_log(root).records:
        assert record.tool == "save_page"
        assert record.before == last.get(record.path), f"a change to {record.path} unrecorded"
        assert record.after in {audit.data_hash(data) for data in sent[record.path]}
        last[record.path] = record.after
    for rel in sent:
        assert audit.file_hash(root / rel) == last.get(rel), f"{rel} differs from its record"


@pytest.mark.slow
def test_sigkill_mid_save_never_tears_a_page(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    root = tmp_path / "vault"
    root.mkdir()
    sent: dict[str, set[bytes]] = {f"Page {i}.md": set() for i in range(PAGES)}
    upcoming = server(root)
    for rounds in range(ROUNDS):
        current, upcoming = upcoming, server(root)  # the next one imports meanwhile
        try:
            one_round(current, rng, f"round {rounds}", sent)
        except BaseException:
            upcoming.__exit__()
            raise
        files = page_files(root)
        for rel, data in files.items():
            assert data, f"{rel} is empty after a kill"
            assert data in sent[rel], f"{rel} is torn: not one of the contents sent for it"
        leftovers = list(root.rglob(".lore-tmp-*"))
        state = vault_ops.open_vault(root)  # the restart: it finishes a write whose record went out
        try:
            files = page_files(root)
            for rel, data in files.items():
                assert data in sent[rel], f"{rel} is not one of the contents sent for it"
            assert sorted(page_slugs(state)) == sorted(slug_from_path(rel) for rel in files)

            assert not any(p.name in page_slugs(state) for p in leftovers)
            assert_matches_fresh(state)
            assert_audit_agrees(root, sent)
        finally:
            state.close()
    with upcoming:
        pass
    assert len(page_files(root)) == PAGES
