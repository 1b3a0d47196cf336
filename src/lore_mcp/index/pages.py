"""The pages table: one row per page file and per placeholder (a row with no path),
and the files passed over because another file holds their slug."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lore_mcp.index.batch import execute_in, select_in

PAGE_SCHEMA = """
CREATE TABLE pages(
    id INTEGER PRIMARY KEY,
    slug TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    path TEXT UNIQUE,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    hash TEXT NOT NULL DEFAULT '',
    bad_utf8 INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX pages_modified ON pages(mtime_ns);
CREATE TABLE shadowed(path TEXT PRIMARY KEY, slug TEXT NOT NULL);
CREATE TABLE aliases(slug TEXT NOT NULL, alias TEXT NOT NULL);
CREATE INDEX aliases_slug ON aliases(slug);
CREATE TABLE tags(slug TEXT NOT NULL, tag TEXT NOT NULL);
CREATE INDEX tags_slug ON tags(slug);
CREATE INDEX tags_tag ON tags(tag);
CREATE TABLE names(key TEXT NOT NULL, slug TEXT NOT NULL);
CREATE INDEX names_key ON names(key);
CREATE INDEX names_slug ON names(slug);
CREATE VIRTUAL TABLE names_text USING fts5(text, tokenize = 'trigram');
"""
_COLUMNS = "slug, title, path, size, mtime_ns, hash, bad_utf8"
_STAMP = "SELECT path, slug, size, mtime_ns, hash FROM pages"


@dataclass(frozen=True, slots=True)
class PageRow:
    """A page as the index knows it; `path` is None for a placeholder."""

    slug: str
    title: str
    path: str | None
    size: int = 0
    mtime_ns: int = 0
    hash: str = ""
    bad_utf8: bool = False

    @property
    def is_placeholder(self) -> bool:
        return self.path is None


class FileStamp(NamedTuple):
    """An indexed page file as a pass over the files compares it with the disk."""

    path: str
    slug: str
    size: int
    mtime_ns: int
    hash: str


def name_keys(row: PageRow, aliases: Sequence[str] = ()) -> set[str]:
    """What a page is found by in `search_titles`: its slug, the slug's last segment,
    its title and its aliases, lowercased."""
    return {row.slug, row.slug.rpartition("/")[2], row.title.lower(), *(a.lower() for a in aliases)}


def _row(row: Any) -> PageRow:
    slug, title, path, size, mtime_ns, hash_, bad = row
    return PageRow(slug, title, path, size, mtime_ns, hash_, bool(bad))


class PageTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def upsert(
        self,
        rows: Sequence[PageRow],
        aliases: Mapping[str, Sequence[str]] | None = None,
        tags: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, int]:
        """Insert or replace rows by slug, with their aliases and tags; their ids, by slug."""
        aliases, tags = aliases or {}, tags or {}
        self._conn.executemany(
            f"INSERT INTO pages({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(slug) DO UPDATE SET title=excluded.title, path=excluded.path, "
            "size=excluded.size, mtime_ns=excluded.mtime_ns, hash=excluded.hash, "
            "bad_utf8=excluded.bad_utf8",
            [(r.slug, r.title, r.path, r.size, r.mtime_ns, r.hash, int(r.bad_utf8)) for r in rows],
        )
        slugs = [row.slug for row in rows]
        self._replace("aliases", slugs, [(s, a) for s in slugs for a in aliases.get(s, ())])
        self._replace("tags", slugs, [(s, t.lower()) for s in slugs for t in tags.get(s, ())])
        names = {row.slug: name_keys(row, aliases.get(row.slug, ())) for row in rows}
        self._delete_slugs("names", slugs)
        self._conn.executemany(
            "INSERT INTO names(key, slug) VALUES (?, ?)",
            ((key, slug) for slug, keys in names.items() for key in sorted(keys)),
        )
        ids = self.ids(slugs)
        # The trigram table holds one row a page (its id): what substrings are found in.
        # FTS5 reads a text only up to a NUL, so a NUL is stored as a line break.
        ordered = sorted(
            (ids[slug], "\n".join(sorted(keys)).replace("\x00", "\n"))
            for slug, keys in names.items()
        )
        self._conn.executemany("DELETE FROM names_text WHERE rowid = ?", [(i,) for i, _ in ordered])
        self._conn.executemany("INSERT INTO names_text(rowid, text) VALUES (?, ?)", ordered)
        return ids

    def _replace(self, table: str, slugs: Sequence[str], rows: Sequence[tuple[str, str]]) -> None:
        """The rows of `slugs` in `table` (aliases or tags) become `rows`."""
        self._delete_slugs(table, slugs)
        self._conn.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)

    def _delete_slugs(self, table: str, slugs: Sequence[str]) -> None:
        execute_in(self._conn, f"DELETE FROM {table} WHERE slug IN ({{}})", slugs)

    def aliases(self) -> list[tuple[str, str]]:
        """(slug, alias) of every page's aliases."""
        return list(self._conn.execute("SELECT slug, alias FROM aliases ORDER BY rowid"))

    def aliases_of(self, slugs: Sequence[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {slug: [] for slug in slugs}
        sql = "SELECT slug, alias FROM aliases WHERE slug IN ({}) ORDER BY rowid"
        for slug, alias in select_in(self._conn, sql, slugs):
            found[slug].append(alias)
        return found

    def tags_of(self, slug: str) -> list[str]:
        return [
            row[0] for row in self._conn.execute("SELECT tag FROM tags WHERE slug = ?", (slug,))
        ]

    def tagged(self, tag: str) -> list[str]:
        """The pages with this tag (or a tag under it: `a` finds `a/b`), sorted."""
        tag = tag.lower().lstrip("#")
        sql = "SELECT DISTINCT slug FROM tags WHERE tag = ? OR (tag > ? AND tag < ?) ORDER BY slug"
        return [row[0] for row in self._conn.execute(sql, (tag, tag + "/", tag + "0"))]

    def ids(self, slugs: Sequence[str]) -> dict[str, int]:
        return dict(select_in(self._conn, "SELECT slug, id FROM pages WHERE slug IN ({})", slugs))

    def delete(self, slugs: Sequence[str]) -> None:
        ids = [(i,) for i in self.ids(slugs).values()]
        self._conn.executemany("DELETE FROM names_text WHERE rowid = ?", ids)
        for table in ("names", "aliases", "tags", "pages"):
            self._delete_slugs(table, slugs)

    # -- names ---------------------------------------------------------------------

    def named(self, key: str, limit: int) -> list[str]:
        """Slugs found by exactly this key, sorted."""
        sql = "SELECT DISTINCT slug FROM names WHERE key = ? ORDER BY slug LIMIT ?"
        return [row[0] for row in self._conn.execute(sql, (key, limit))]

    def named_starting(self, prefix: str, limit: int) -> list[str]:
        """Slugs with a key that starts with `prefix`, sorted (as search_titles shows
        them, so that its first `limit` are the first of all)."""
        sql = "SELECT DISTINCT slug FROM names WHERE key >= ? AND key < ? ORDER BY slug LIMIT ?"
        return [row[0] for row in self._conn.execute(sql, (prefix, prefix + "\U0010ffff", limit))]

    def named_containing(self, part: str, limit: int) -> list[str]:
        """Slugs with a key that holds `part`, by slug (of the first few hundred found)."""
        # The trigram index finds any part of three characters or more (FTS5 reads a
        # query only up to a NUL: those are looked for without it).
        if len(part) >= 3 and "\x00" not in part:
            sql = (
                "SELECT p.slug FROM names_text JOIN pages p ON p.id = names_text.rowid "
                "WHERE names_text MATCH ? LIMIT 500"
            )
            rows = self._conn.execute(sql, ('"' + part.replace('"', '""') + '"',))
        else:
            rows = self._conn.execute(
                "SELECT DISTINCT slug FROM names WHERE instr(key, ?) LIMIT 500", (part,)
            )
        return sorted(row[0] for row in rows)[:limit]

    def touch(self, slug: str, size: int, mtime_ns: int) -> None:
        """A file whose content is unchanged got a new size or modification time."""
        self._conn.execute(
            "UPDATE pages SET size = ?, mtime_ns = ? WHERE slug = ?", (size, mtime_ns, slug)
        )

    def get(self, slug: str) -> PageRow | None:
        row = self._conn.execute(f"SELECT {_COLUMNS} FROM pages WHERE slug = ?", (slug,))
        found = row.fetchone()
        return None if found is None else _row(found)

    def get_many(self, slugs: Sequence[str]) -> list[PageRow]:
        sql = f"SELECT {_COLUMNS} FROM pages WHERE slug IN ({{}})"
        return [_row(row) for row in select_in(self._conn, sql, slugs)]

    def all(self) -> list[PageRow]:
        return [_row(row) for row in self._conn.execute(f"SELECT {_COLUMNS} FROM pages")]

    def titles(self) -> list[tuple[str, str, bool]]:
        """(slug, title, is_placeholder) of every page and placeholder."""
        rows = self._conn.execute("SELECT slug, title, path IS NULL FROM pages")
        return [(slug, title, bool(placeholder)) for slug, title, placeholder in rows]

    def count(self) -> int:
        """Real pages (not placeholders)."""
        sql = "SELECT count(*) FROM pages WHERE path IS NOT NULL"
        return int(self._conn.execute(sql).fetchone()[0])

    def listing(
        self, prefix: str, placeholders: bool, offset: int, limit: int, newest: bool = False
    ) -> list[tuple[str, int]]:
        """(slug, mtime_ns) of the rows whose slug starts with `prefix`, a slice of them:
        by slug, or with `newest` the latest modified first (placeholders, time 0, last)."""
        where = "(? OR path IS NOT NULL)"
        args: list[object] = [placeholders]
        if prefix:  # the whole vault: no range, so the order can come from an index
            where += " AND slug >= ? AND slug < ?"
            args += [prefix, prefix + "\U0010ffff"]
        order = "mtime_ns DESC, slug" if newest else "slug"
        sql = f"SELECT slug, mtime_ns FROM pages WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
        rows = self._conn.execute(sql, (*args, limit, offset))
        return [(str(slug), int(mtime)) for slug, mtime in rows]

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

    def files_of(self, slugs: Sequence[str]) -> dict[str, FileStamp]:
        """The indexed page files holding these slugs, by path."""
        rows = select_in(self._conn, _STAMP + " WHERE path IS NOT NULL AND slug IN ({})", slugs)
        return {row[0]: FileStamp._make(row) for row in rows}

    # -- slug collisions ---------------------------------------------------------------

    def set_shadowed(self, path: str, slug: str) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO shadowed(path, slug) VALUES (?, ?)", (path, slug)
        )

    def unshadow(self, path: str) -> None:
        self._conn.execute("DELETE FROM shadowed WHERE path = ?", (path,))

    def shadowed(self) -> list[tuple[str, str]]:
        """(path, slug) of the files passed over because another file holds their slug."""
        rows = self._conn.execute("SELECT path, slug FROM shadowed ORDER BY path")
        return [(str(path), str(slug)) for path, slug in rows]
