"""Queries over many values, a few hundred at a time (SQLite limits a query's parameters)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

CHUNK = 500


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
