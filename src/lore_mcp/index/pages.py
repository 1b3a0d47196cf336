"""The pages table: one row per page file, keyed by its path, and per placeholder (a
row with no path), keyed by its link key; with their aliases, tags and names. A page
file's row holds what a pass compares with the disk: its size, modification time, inode
and status-change time (ctime), and the hash of its bytes."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lore_mcp.index.batch import execute_in, insert_at_once, select_in
from lore_mcp.slugs import path_key, slug_from_path

# Indexes made once at the end of a first index (see `Index.filling`), kept up at each
# write after: by name, what they index.
PAGE_INDEXES = {
    "pages_modified": "pages(mtime_ns)",
    "pages_slug": "pages(slug, key)",
    "tags_tag": "tags(tag)",
    "names_name": "names(name)",
}
PAGE_SCHEMA = """
CREATE TABLE pages(
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    path TEXT UNIQUE,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    hash TEXT NOT NULL DEFAULT '',
    bad_utf8 INTEGER NOT NULL DEFAULT 0,
    inode INTEGER NOT NULL DEFAULT 0,
    ctime_ns INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE aliases(page TEXT NOT NULL, alias TEXT NOT NULL);
CREATE INDEX aliases_page ON aliases(page);
CREATE TABLE tags(page TEXT NOT NULL, tag TEXT NOT NULL);
CREATE INDEX tags_page ON tags(page);
CREATE TABLE names(name TEXT NOT NULL, page TEXT NOT NULL);
CREATE INDEX names_page ON names(page);
CREATE VIRTUAL TABLE names_text USING fts5(text, tokenize = 'trigram');
INSERT INTO names_text(names_text, rank) VALUES ('usermerge', 2);
"""
_COLUMNS = "key, title, path, size, mtime_ns, hash, bad_utf8, inode, ctime_ns"
_STAMP = "SELECT path, key, size, mtime_ns, hash, inode, ctime_ns FROM pages"


@dataclass(frozen=True, slots=True)
class PageRow:
    """A page as the index knows it: `key` is its path, or for a placeholder (whose
    `path` is None) the key its links share."""

    key: str
    title: str
    path: str | None
    size: int = 0
    mtime_ns: int = 0
    hash: str = ""
    bad_utf8: bool = False
    inode: int = 0
    ctime_ns: int = 0

    @property
    def is_placeholder(self) -> bool:
        return self.path is None


class FileStamp(NamedTuple):
    """An indexed page file as a pass over the files compares it with the disk."""

    path: str
    key: str
    size: int
    mtime_ns: int
    hash: str
    inode: int
    ctime_ns: int


def name_keys(row: PageRow, aliases: Sequence[str] = ()) -> set[str]:
    """What a page is found by in `search_titles`, lowercased: its slug and the slug's
    last segment, its path, its title and its aliases."""
    slug = slug_from_path(row.key)
    names = {slug, slug.rpartition("/")[2], path_key(row.key), row.title.lower()}
    return (names | {alias.lower() for alias in aliases}) - {""}


def _slug(row: PageRow) -> str:
    """What pages are listed by: the slug, or for a name with no slug, the key."""
    return slug_from_path(row.key) or row.key


def _values(row: PageRow) -> tuple[str | int | None, ...]:
    """A row's values in the order of `_COLUMNS`, then its slug."""
    return (
        row.key,
        row.title,
        row.path,
        row.size,
        row.mtime_ns,
        row.hash,
        int(row.bad_utf8),
        row.inode,
        row.ctime_ns,
        _slug(row),
    )


class _Found:
    """The rows of the tables pages are found by, for these pages with these ids: their
    aliases, tags (lowercased), names (`name_keys`) and the trigram table's text."""

    def __init__(
        self,
        rows: Sequence[PageRow],
        aliases: Mapping[str, Sequence[str]],
        tags: Mapping[str, Sequence[str]],
        ids: Mapping[str, int],
    ) -> None:
        keys = [row.key for row in rows]
        self.aliases = [(k, a) for k in keys for a in aliases.get(k, ())]
        self.tags = [(k, t.lower()) for k in keys for t in tags.get(k, ())]
        names = {row.key: sorted(name_keys(row, aliases.get(row.key, ()))) for row in rows}
        self.names = [(name, key) for key, found in names.items() for name in found]
        # The trigram table holds one row a page (its id): what substrings are found in.
        # FTS5 reads a text only up to a NUL, so a NUL is stored as a line break.
        self.trigrams = sorted(
            (ids[key], "\n".join(found).replace("\x00", "\n")) for key, found in names.items()
        )


def _row(row: Any) -> PageRow:
    key, title, path, size, mtime_ns, hash_, bad, inode, ctime_ns = row
    return PageRow(key, title, path, size, mtime_ns, hash_, bool(bad), inode, ctime_ns)


class PageTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def upsert(
        self,
        rows: Sequence[PageRow],
        aliases: Mapping[str, Sequence[str]] | None = None,
        tags: Mapping[str, Sequence[str]] | None = None,
        *,
        fresh: bool = False,
    ) -> dict[str, int]:
        """Insert or replace rows by key, with their aliases and tags; their ids, by key.
        `fresh` says none of these pages is in the table yet (nothing to delete first)."""
        aliases, tags = aliases or {}, tags or {}
        self._conn.executemany(
            f"INSERT INTO pages({_COLUMNS}, slug) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET title=excluded.title, path=excluded.path, "
            "size=excluded.size, mtime_ns=excluded.mtime_ns, hash=excluded.hash, "
            "bad_utf8=excluded.bad_utf8, inode=excluded.inode, ctime_ns=excluded.ctime_ns",
            [_values(row) for row in rows],
        )
        keys = [row.key for row in rows]
        if not fresh:
            for table in ("aliases", "tags", "names"):
                self._delete_pages(table, keys)
        ids = self.ids(keys)
        found = _Found(rows, aliases, tags, ids)
        self._conn.executemany("INSERT INTO aliases VALUES (?, ?)", found.aliases)
        self._conn.executemany("INSERT INTO tags VALUES (?, ?)", found.tags)
        self._conn.executemany("INSERT INTO names(name, page) VALUES (?, ?)", found.names)
        if not fresh:
            self._conn.executemany(
                "DELETE FROM names_text WHERE rowid = ?", [(i,) for i, _ in found.trigrams]
            )
        self._conn.executemany("INSERT INTO names_text(rowid, text) VALUES (?, ?)", found.trigrams)
        return ids

    def insert_new(
        self,
        rows: Sequence[PageRow],
        aliases: Mapping[str, Sequence[str]],
        tags: Mapping[str, Sequence[str]],
        first_id: int,
    ) -> dict[str, int]:
        """Insert rows that are new to every table, with their aliases and tags, a few
        statements in all (see `batch.insert_at_once`); their ids, from `first_id` on in
        the order given."""
        ids = {row.key: first_id + n for n, row in enumerate(rows)}
        found = _Found(rows, aliases, tags, ids)
        columns = ("id", *_COLUMNS.split(", "), "slug")
        insert_at_once(self._conn, "pages", columns, [(ids[r.key], *_values(r)) for r in rows])
        insert_at_once(self._conn, "aliases", ("page", "alias"), found.aliases)
        insert_at_once(self._conn, "tags", ("page", "tag"), found.tags)
        insert_at_once(self._conn, "names", ("name", "page"), found.names)
        insert_at_once(self._conn, "names_text", ("rowid", "text"), found.trigrams)
        return ids

    def _delete_pages(self, table: str, keys: Sequence[str]) -> None:
        execute_in(self._conn, f"DELETE FROM {table} WHERE page IN ({{}})", keys)

    def aliases(self) -> list[tuple[str, str]]:
        """(page, alias) of every page's aliases."""
        return list(self._conn.execute("SELECT page, alias FROM aliases ORDER BY rowid"))

    def aliases_of(self, keys: Sequence[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {key: [] for key in keys}
        sql = "SELECT page, alias FROM aliases WHERE page IN ({}) ORDER BY rowid"
        for key, alias in select_in(self._conn, sql, keys):
            found[key].append(alias)
        return found

    def tags_of(self, key: str) -> list[str]:
        sql = "SELECT tag FROM tags WHERE page = ?"
        return [row[0] for row in self._conn.execute(sql, (key,))]

    def tagged(self, tag: str) -> list[str]:
        """The pages with this tag (or a tag under it: `a` finds `a/b`), sorted."""
        tag = tag.lower().lstrip("#")
        sql = "SELECT DISTINCT page FROM tags WHERE tag = ? OR (tag > ? AND tag < ?) ORDER BY page"
        return [row[0] for row in self._conn.execute(sql, (tag, tag + "/", tag + "0"))]

    def ids(self, keys: Sequence[str]) -> dict[str, int]:
        return dict(select_in(self._conn, "SELECT key, id FROM pages WHERE key IN ({})", keys))

    def delete(self, keys: Sequence[str]) -> None:
        ids = [(i,) for i in self.ids(keys).values()]
        self._conn.executemany("DELETE FROM names_text WHERE rowid = ?", ids)
        for table in ("names", "aliases", "tags"):
            self._delete_pages(table, keys)
        execute_in(self._conn, "DELETE FROM pages WHERE key IN ({})", keys)

    # -- names ---------------------------------------------------------------------

    def named(self, name: str, limit: int) -> list[str]:
        """Pages found by exactly this name, by slug."""
        sql = (
            "SELECT DISTINCT n.page, p.slug FROM names n JOIN pages p ON p.key = n.page "
            "WHERE n.name = ? ORDER BY p.slug, n.page LIMIT ?"
        )
        return [row[0] for row in self._conn.execute(sql, (name, limit))]

    def named_starting(self, prefix: str, limit: int) -> list[str]:
        """Pages with a name that starts with `prefix`, by slug (as search_titles shows
        them, so that its first `limit` are the first of all)."""
        sql = (
            "SELECT DISTINCT n.page, p.slug FROM names n JOIN pages p ON p.key = n.page "
            "WHERE n.name >= ? AND n.name < ? ORDER BY p.slug, n.page LIMIT ?"
        )
        return [row[0] for row in self._conn.execute(sql, (prefix, prefix + "\U0010ffff", limit))]

    def named_containing(self, part: str, limit: int) -> list[str]:
        """Pages with a name that holds `part`, by slug (of the first few hundred found)."""
        # The trigram index finds any part of three characters or more (FTS5 reads a
        # query only up to a NUL: those are looked for without it).
        if len(part) >= 3 and "\x00" not in part:
            sql = (
                "SELECT p.key, p.slug FROM names_text JOIN pages p ON p.id = names_text.rowid "
                "WHERE names_text MATCH ? LIMIT 500"
            )
            rows = self._conn.execute(sql, ('"' + part.replace('"', '""') + '"',))
        else:
            sql = (
                "SELECT DISTINCT n.page, p.slug FROM names n JOIN pages p ON p.key = n.page "
                "WHERE instr(n.name, ?) LIMIT 500"
            )
            rows = self._conn.execute(sql, (part,))
        return [key for key, _ in sorted(rows, key=lambda row: (row[1], row[0]))][:limit]

    def touch(self, key: str, size: int, mtime_ns: int, inode: int, ctime_ns: int) -> None:
        """A file whose content is unchanged got a new size, time or inode."""
        self._conn.execute(
            "UPDATE pages SET size = ?, mtime_ns = ?, inode = ?, ctime_ns = ? WHERE key = ?",
            (size, mtime_ns, inode, ctime_ns, key),
        )

    def get(self, key: str) -> PageRow | None:
        row = self._conn.execute(f"SELECT {_COLUMNS} FROM pages WHERE key = ?", (key,))
        found = row.fetchone()
        return None if found is None else _row(found)

    def get_many(self, keys: Sequence[str]) -> list[PageRow]:
        sql = f"SELECT {_COLUMNS} FROM pages WHERE key IN ({{}})"
        return [_row(row) for row in select_in(self._conn, sql, keys)]

    def all(self) -> list[PageRow]:
        return [_row(row) for row in self._conn.execute(f"SELECT {_COLUMNS} FROM pages")]

    def titles(self) -> list[tuple[str, str, bool]]:
        """(key, title, is_placeholder) of every page and placeholder."""
        rows = self._conn.execute("SELECT key, title, path IS NULL FROM pages")
        return [(key, title, bool(placeholder)) for key, title, placeholder in rows]

    def count(self) -> int:
        """Real pages (not placeholders)."""
        sql = "SELECT count(*) FROM pages WHERE path IS NOT NULL"
        return int(self._conn.execute(sql).fetchone()[0])

    def listing(
        self, prefix: str, placeholders: bool, offset: int, limit: int, newest: bool = False
    ) -> list[tuple[str, int]]:
        """(key, mtime_ns) of the rows whose slug starts with `prefix`, a slice of them:
        by slug, or with `newest` the latest modified first (placeholders, time 0, last)."""
        where = "(? OR path IS NOT NULL)"
        args: list[object] = [placeholders]
        if prefix:  # the whole vault: no range, so the order can come from an index
            where += " AND slug >= ? AND slug < ?"
            args += [prefix, prefix + "\U0010ffff"]
        order = "mtime_ns DESC, slug, key" if newest else "slug, key"
        sql = f"SELECT key, mtime_ns FROM pages WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
        rows = self._conn.execute(sql, (*args, limit, offset))
        return [(str(key), int(mtime)) for key, mtime in rows]

    def count_under(self, prefix: str, placeholders: bool) -> int:
        sql = "SELECT count(*) FROM pages WHERE slug >= ? AND slug < ? AND (? OR path IS NOT NULL)"
        args = (prefix, prefix + "\U0010ffff", placeholders)
        return int(self._conn.execute(sql, args).fetchone()[0])

    # -- files ---------------------------------------------------------------------

    def stamps(self) -> dict[str, FileStamp]:
        """Every indexed page file, by path."""
        rows = self._conn.execute(_STAMP + " WHERE path IS NOT NULL")
        return {row[0]: FileStamp._make(row) for row in rows}

    def files_at(self, paths: Sequence[str]) -> dict[str, FileStamp]:
        """The indexed page files at these paths, by path."""
        rows = select_in(self._conn, _STAMP + " WHERE path IN ({})", paths)
        return {row[0]: FileStamp._make(row) for row in rows}

    def files_under(self, folder: str) -> dict[str, FileStamp]:
        """The indexed page files inside `folder` (at any depth), by path."""
        # Paths inside sort from "folder/" up to, not including, "folder0" ("0" follows "/").
        rows = self._conn.execute(
            _STAMP + " WHERE path >= ? AND path < ?", (folder + "/", folder + "0")
        )
        return {row[0]: FileStamp._make(row) for row in rows}
