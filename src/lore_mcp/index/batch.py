"""Statements over many values, a few hundred at a time (SQLite limits a statement's
parameters): queries, and inserts of many rows a statement."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

CHUNK = 500
INSERT_ROWS = 512  # rows an `insert_at_once` statement holds at most


def select_in(
    conn: sqlite3.Connection, sql: str, values: Sequence[Any], prefix: Sequence[Any] = ()
) -> Iterator[Any]:
    """The rows of `sql`, whose `{}` becomes one `?` per value, asked in chunks; the
    parameters in `prefix` go before them."""
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), (*prefix, *chunk))


def execute_in(conn: sqlite3.Connection, sql: str, values: Sequence[Any]) -> None:
    """`select_in` for a statement that returns no rows (a DELETE)."""
    for _ in select_in(conn, sql, values):
        pass


def insert_at_once(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Insert `rows` into `table` a few hundred at a time, each few hundred one statement
    with a row of values each. `executemany` runs a statement a row and takes Python's
    global lock back between any two of them; this holds it only to bind the values,
    so that a thread inserting many rows runs beside the others (see `fill`).

    A statement holds a power of two of rows, so that few of them are made and kept in
    the connection's cache of statements (each holds its program, which grows with its
    rows, and the last values bound to it)."""
    width = len(columns)
    most = min(INSERT_ROWS, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
    head = f"INSERT INTO {table}({', '.join(columns)}) VALUES "
    row = f"({', '.join('?' * width)})"
    start = 0
    while start < len(rows):
        size = 1 << (min(len(rows) - start, max(1, most)).bit_length() - 1)
        chunk = rows[start : start + size]
        conn.execute(head + ", ".join([row] * size), list(chain.from_iterable(chunk)))
        start += size
