"""The index's schema: its version, its tables and indexes, making them afresh, and the
page count an index file holds, read without opening it for use."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing, suppress
from pathlib import Path

from lore_mcp.index.links import LINK_INDEXES, LINK_SCHEMA
from lore_mcp.index.pages import PAGE_INDEXES, PAGE_SCHEMA
from lore_mcp.index.search import SEARCH_SCHEMA, SEARCH_TABLES

SCHEMA_VERSION = 11
OWN_SCHEMA = """
CREATE TABLE changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, page TEXT NOT NULL);
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# The tables that hold rows of pages (all of them, but for the log of changes and meta).
PAGE_TABLES = ("pages", "aliases", "tags", "names", "names_text", "links", *SEARCH_TABLES)
TABLES = ("pages", "names", "names_text", "links", *SEARCH_TABLES, "changes", "meta")
# The indexes a write at a random place of their B-tree keeps up at each insert: a first
# index makes them once, at its end (see `Index.filling`).
LATER_INDEXES = PAGE_INDEXES | LINK_INDEXES


def last_page_count(path: Path) -> int | None:
    """How many real pages the index at `path` held when it was last written, read
    without opening it for use (no schema check, no write, no lock): None when there is
    no index there, or it is of another schema version or unreadable."""
    if not path.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1)) as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                return None
            sql = "SELECT count(*) FROM pages WHERE path IS NOT NULL"
            return int(conn.execute(sql).fetchone()[0])
    except sqlite3.Error:
        return None


def create_schema(conn: sqlite3.Connection) -> None:
    """Drop whatever tables there are and make empty ones, with a new epoch (which
    tells the other processes that everything they loaded is gone)."""
    _drop_all(conn)
    for schema in (PAGE_SCHEMA, LINK_SCHEMA, SEARCH_SCHEMA, OWN_SCHEMA):
        _run_script(conn, schema)
    make_indexes(conn)
    conn.execute("INSERT INTO meta(key, value) VALUES ('epoch', ?)", (uuid.uuid4().hex,))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def make_indexes(conn: sqlite3.Connection) -> None:
    for name, target in LATER_INDEXES.items():
        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")


def _run_script(conn: sqlite3.Connection, schema: str) -> None:
    # executescript() would commit the open transaction; run the statements one by one.
    statement = ""
    for piece in schema.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                conn.execute(statement)
            statement = ""


def _drop_all(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    for kind, name in rows:
        with suppress(sqlite3.OperationalError):  # shadow tables go with their FTS table
            conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
