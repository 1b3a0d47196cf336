"""The floor for comparison: what the same pages cost with nothing but the basics.

Reading every file, inserting every page into a bare SQLite FTS5 table in one
transaction, writing every page's bytes to a fresh folder, one atomic write (temp file,
fsync, rename, fsync of the folder) of a 2 KB page, timed many times, and the start of an
empty MCPServer (no tools, no vault): spawn to its answer to `initialize`, which no
server built on the SDK can beat.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.rawrpc import RawServer
from lore_mcp.index.search import SEARCH_SCHEMA
from lore_mcp.index.terms import fts_text

EMPTY_SERVER = "from mcp.server.mcpserver import MCPServer; MCPServer('floor').run('stdio')"


def _engine_fts_options() -> str:
    """The options of the engine's own FTS5 table, read from its schema."""
    found = re.search(r"fts USING fts5\((.*?)\);", SEARCH_SCHEMA, re.S)
    options = [part.strip() for part in found.group(1).split(",") if "=" in part] if found else []
    if not options:
        raise RuntimeError("cannot find the FTS5 table's options in the engine's schema")
    return ", ".join(options)


ENGINE_FTS_OPTIONS = _engine_fts_options()


def read_all(root: Path, pages: list[str]) -> tuple[float, list[tuple[str, bytes]]]:
    """Seconds to read every page, and the pages as (relative path, bytes)."""
    began = time.perf_counter()
    base = str(root)
    loaded = []
    for rel in pages:
        with open(f"{base}/{rel}", "rb") as handle:
            loaded.append((rel, handle.read()))
    return time.perf_counter() - began, loaded


def fts5_insert(pages: list[tuple[str, bytes]], options: str = "", engine: bool = False) -> float:
    """Seconds to decode and insert every page (title, body) into a new FTS5 table in a
    temp database, in one transaction, commit included. With `engine`, the text goes in
    as the engine stores it (`fts_text`: CJK split into single characters), in rowid
    order as the engine writes it."""
    prepare = fts_text if engine else str
    with tempfile.TemporaryDirectory(prefix="lore-bench-fts-") as tmp:
        db = sqlite3.connect(os.path.join(tmp, "floor.db"), isolation_level=None)
        try:
            extra = f", {options}" if options else ""
            db.execute(f"CREATE VIRTUAL TABLE fts USING fts5(title, body{extra})")
            began = time.perf_counter()
            db.execute("BEGIN")
            db.executemany(
                "INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)",
                (
                    (n, prepare(Path(rel).stem), prepare(data.decode("utf-8")))
                    for n, (rel, data) in enumerate(pages, 1)
                ),
            )
            db.execute("COMMIT")
            return time.perf_counter() - began
        finally:
            db.close()


def plain_write(pages: list[tuple[str, bytes]]) -> float:
    """Seconds to write every page's bytes under a new temp folder (no fsync), folders
    created first and not timed."""
    with tempfile.TemporaryDirectory(prefix="lore-bench-write-") as tmp:
        for folder in sorted({Path(rel).parent for rel, _ in pages}):
            (Path(tmp) / folder).mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        for rel, data in pages:
            with open(f"{tmp}/{rel}", "wb") as out:
                out.write(data)
        return time.perf_counter() - began


def atomic_writes_ms(count: int, data: bytes) -> list[float]:
    """Milliseconds of each of `count` atomic writes of `data` (what one save must do)."""
    samples = []
    with tempfile.TemporaryDirectory(prefix="lore-bench-atomic-") as tmp:
        target = os.path.join(tmp, "page.md")
        for _ in range(count):
            began = time.perf_counter()
            fd, temp = tempfile.mkstemp(dir=tmp, suffix=".tmp")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            Path(temp).replace(target)
            folder = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
            samples.append((time.perf_counter() - began) * 1000)
    return samples


def empty_server_start_s(env: dict[str, str]) -> float:
    """Seconds from spawning a bare MCPServer over stdio to its `initialize` answer."""
    began = time.perf_counter()
    server = RawServer([sys.executable, "-c", EMPTY_SERVER], env, subprocess.DEVNULL)
    try:
        server.initialize()
        return time.perf_counter() - began
    finally:
        server.close()
