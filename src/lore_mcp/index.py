"""The SQLite index in `<vault>/.lore/lore.db`: pages, links, full-text search.

It is a cache of the files. It carries a schema version (`PRAGMA user_version`); a
missing, outdated or corrupt database is replaced by an empty one and rebuilt from the
files by the caller. Several processes share it: WAL, short write transactions taken
with `BEGIN IMMEDIATE`, a busy timeout, and a change log so each process can bring its
in-memory graph up to date with what the others committed. Commits never copy the log
into the database file themselves; a thread does it after them (see `checkpoints`).
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from lore_mcp import checkpoints

log = logging.getLogger(__name__)

SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 30_000
CHANGELOG_KEEP = 20_000
SNIPPET_MAX_BYTES = 16_384  # longer pages get `_long_snippet` (see `search`)
_CHUNK = 500
_STAMP = "SELECT path, slug, size, mtime_ns, hash FROM pages"  # a `FileStamp` per row

_SCHEMA = """
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
CREATE TABLE links(
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    line INTEGER NOT NULL,
    context TEXT NOT NULL,
    key TEXT NOT NULL,
    exact INTEGER NOT NULL,
    resolved TEXT NOT NULL,
    ambiguous INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX links_source ON links(source);
CREATE INDEX links_resolved ON links(resolved);
CREATE INDEX links_key ON links(key);
CREATE TABLE shadowed(path TEXT PRIMARY KEY, slug TEXT NOT NULL);
CREATE TABLE changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, slug TEXT NOT NULL);
CREATE VIRTUAL TABLE fts USING fts5(
    title, body, tokenize = 'unicode61 remove_diacritics 2'
);
"""

# Scripts written without spaces between words. Each of their characters becomes its
# own FTS token (separated by U+001F, which the tokenizer treats as a separator and
# which never occurs in text), and a query term in them becomes a phrase of its
# characters: "記憶" matches inside "長期記憶の話". Bigram or trigram tokenizers would
# miss one-character words or need a second index; this needs neither.
_CJK = (
    "\u2e80-\u2fdf\u3005\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_CJK_CHAR = re.compile(f"[{_CJK}]+")
_SEP = "\x1f"
_QUERY_TERM = re.compile(r'"([^"]*)"|([^\s"]+)')
_WORD = re.compile(r"\w+")
_NON_SPACE = re.compile(r"\S+")


def fts_text(text: str) -> str:
    """Text as stored in the FTS table: CJK characters split into single tokens."""
    if text.isascii():  # most pages: no regex scan needed
        return text
    return _CJK_CHAR.sub(_split_cjk, text) if _CJK_CHAR.search(text) else text


def _split_cjk(match: re.Match[str]) -> str:
    return _SEP + _SEP.join(match.group()) + _SEP


def fts_query(user_query: str) -> str | None:
    """Turn any user string into a safe FTS5 MATCH expression, or None if it has no words.

    Every word becomes a quoted string, so FTS operators (AND, OR, NOT, NEAR, `*`, `^`,
    `:`, parentheses) are plain text; `"quoted phrases"` stay phrases; the last term
    matches as a prefix. All terms must match.
    """
    terms: list[str] = []
    for phrase, bare in _QUERY_TERM.findall(user_query.replace("\x00", " ")):
        words = _WORD.findall(phrase if phrase else bare)
        if words:
            terms.append(" ".join(fts_text(w) for w in words))
    if not terms:
        return None
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
    quoted[-1] += "*"
    return " ".join(quoted)


def _clean_snippet(snippet: str) -> str:
    return " ".join(snippet.replace(_SEP, "").split())


@dataclass(frozen=True, slots=True)
class PageRow:
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


@dataclass(frozen=True, slots=True)
class LinkRow:
    source: str
    target: str
    line: int
    context: str
    key: str
    exact: bool
    resolved: str
    ambiguous: bool = False
    id: int = 0


class NewLink(NamedTuple):
    """A link as `add_links` writes it: the table's columns, in order, without the id."""

    source: str
    target: str
    line: int
    context: str
    key: str
    exact: bool
    resolved: str
    ambiguous: bool


@dataclass(frozen=True, slots=True)
class SearchRow:
    slug: str
    title: str
    snippet: str
    score: float


_PAGE_COLS = "slug, title, path, size, mtime_ns, hash, bad_utf8"
_LINK_COLS = "source, target, line, context, key, exact, resolved, ambiguous, id"


def _page(row: Any) -> PageRow:
    slug, title, path, size, mtime_ns, hash_, bad = row
    return PageRow(slug, title, path, size, mtime_ns, hash_, bool(bad))


def _link(row: Any) -> LinkRow:
    source, target, line, context, key, exact, resolved, ambiguous, id_ = row
    return LinkRow(source, target, line, context, key, bool(exact), resolved, bool(ambiguous), id_)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _marks(count: int) -> str:
    return ",".join("?" * count)


class Index:
    """One connection to the vault's index database."""

    def __init__(self, db_path: Path, checkpoint_delay_s: float = checkpoints.DELAY_S) -> None:
        self.path = db_path
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.rebuilt = False
        self._checkpointer = checkpoints.Checkpointer(
            db_path, BUSY_TIMEOUT_MS / 1000, checkpoint_delay_s
        )
        self._deferred = False
        try:
            self._conn = self._connect()
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            log.warning("index %s is unreadable (%s); rebuilding it from the files", db_path, exc)
            broken = getattr(self, "_conn", None)
            if broken is not None:
                with suppress(sqlite3.Error):
                    broken.close()
            self._discard_files()
            self._conn = self._connect()
            self._ensure_schema()
        self._last_seq = self.last_change()

    # -- connection and schema -------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
        return conn

    def _discard_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _ensure_schema(self) -> None:
        """Check the schema version (and that the file reads); recreate it when it differs."""
        self._begin_immediate()
        try:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                # Reading every row is what finds a truncated or damaged file early.
                self._conn.execute("SELECT count(*) FROM pages").fetchone()
                self._conn.execute("SELECT count(*) FROM fts").fetchone()
            else:
                if version != 0:
                    log.info("index schema %s is not %s; rebuilding", version, SCHEMA_VERSION)
                self._drop_all()
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self.rebuilt = True
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _drop_all(self) -> None:
        rows = self._conn.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'fts_%'"
        ).fetchall()
        for kind, name in rows:
            self._conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')

    def close(self) -> None:
        self._checkpointer.close()
        self._conn.close()

    # -- transactions and change tracking --------------------------------------------

    @contextmanager
    def write(self) -> Iterator[None]:
        """A write transaction; it takes the database's write lock at once."""
        if self._conn.in_transaction:
            yield
            return
        self._begin_immediate()
        start_seq = self.last_change()
        try:
            yield
            # When everything before this transaction was seen, what it added is our own.
            seen = self.last_change() if self._last_seq >= start_seq else self._last_seq
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        self._last_seq = seen
        if not self._deferred:
            self._checkpointer.due()

    def _begin_immediate(self) -> None:
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    @contextmanager
    def links_unindexed(self) -> Iterator[None]:
        """Within a write transaction: drop the links table's indexes, and build them
        again on the way out. Loading many links into an empty table is several times
        faster so; meanwhile a lookup of links by source, key or target scans the table."""
        if not self._conn.in_transaction:
            raise RuntimeError("links_unindexed needs a write transaction")
        indexes = self._conn.execute(
            "SELECT name, sql FROM sqlite_master "
            "WHERE type = 'index' AND tbl_name = 'links' AND sql IS NOT NULL"
        ).fetchall()
        for name, _ in indexes:
            self._conn.execute(f'DROP INDEX "{name}"')
        try:
            yield
        finally:
            for _, sql in indexes:
                self._conn.execute(sql)

    @contextmanager
    def checkpoint_deferred(self) -> Iterator[None]:
        """Commits made within leave their pages in the write-ahead log, for `checkpoint`
        to copy into the database file later, instead of the checkpointer copying them
        while more are written. A first index of 100k pages commits about 750 MB of log;
        copying it took 5 of the 60 seconds before the first answer."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database file, from a connection of its own:
        this one stays free for calls meanwhile (readers and writers do not wait for a
        checkpoint in WAL mode). Never raises; a checkpoint left undone is done by the
        next commit or at close."""
        self._checkpointer.now()

    def data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def last_change(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM changes").fetchone()
        return int(row[0] or 0)

    def changes_since_seen(self) -> list[str] | None:
        """Slugs other connections changed since this one last looked; None if too many
        to list (the log was pruned past our mark), meaning: reload everything."""
        first = self._conn.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if first is not None and first > self._last_seq + 1:
            self._last_seq = self.last_change()
            return None
        rows = self._conn.execute(
            "SELECT seq, slug FROM changes WHERE seq > ? ORDER BY seq", (self._last_seq,)
        ).fetchall()
        if rows:
            self._last_seq = int(rows[-1][0])
        return list(dict.fromkeys(str(slug) for _, slug in rows))

    def record_changes(self, slugs: Iterable[str]) -> None:
        self._conn.executemany("INSERT INTO changes(slug) VALUES (?)", ((s,) for s in slugs))
        # Two subqueries: SQLite answers a lone min() or max() from the key, both at once
        # only by scanning the table.
        first, last = self._conn.execute(
            "SELECT (SELECT min(seq) FROM changes), (SELECT max(seq) FROM changes)"
        ).fetchone()
        if first is not None and last - first > 2 * CHANGELOG_KEEP:
            self._conn.execute("DELETE FROM changes WHERE seq <= ?", (last - CHANGELOG_KEEP,))

    # -- pages -----------------------------------------------------------------------

    def upsert_pages(self, pages: Sequence[tuple[PageRow, str | None]]) -> None:
        """Insert or replace page rows; a body (real pages) replaces the row's FTS text."""
        if not pages:
            return
        self._conn.executemany(
            f"INSERT INTO pages({_PAGE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(slug) DO UPDATE SET title=excluded.title, path=excluded.path, "
            "size=excluded.size, mtime_ns=excluded.mtime_ns, hash=excluded.hash, "
            "bad_utf8=excluded.bad_utf8",
            [
                (r.slug, r.title, r.path, r.size, r.mtime_ns, r.hash, int(r.bad_utf8))
                for r, _ in pages
            ],
        )
        ids = self._ids([row.slug for row, _ in pages])
        # In rowid order: FTS5 flushes its pending terms whenever a rowid is lower than
        # the one written before, and many small flushes make the index slow to build.
        ordered = sorted(pages, key=lambda page: ids[page[0].slug])
        self._conn.executemany(
            "DELETE FROM fts WHERE rowid = ?", [(ids[row.slug],) for row, _ in ordered]
        )
        self._conn.executemany(
            "INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)",
            (
                (ids[row.slug], fts_text(row.title), fts_text(body))
                for row, body in ordered
                if body is not None
            ),
        )

    def _where_in(self, sql: str, values: Sequence[str]) -> Iterator[Any]:
        """Rows of `sql`, whose `{}` becomes `?` marks for `values`, asked in chunks so no
        query exceeds SQLite's limit on parameters."""
        for chunk in _chunks(values):
            yield from self._conn.execute(sql.format(_marks(len(chunk))), tuple(chunk))

    def _ids(self, slugs: Sequence[str]) -> dict[str, int]:
        return dict(self._where_in("SELECT slug, id FROM pages WHERE slug IN ({})", slugs))

    def touch_page(self, slug: str, size: int, mtime_ns: int) -> None:
        self._conn.execute(
            "UPDATE pages SET size = ?, mtime_ns = ? WHERE slug = ?", (size, mtime_ns, slug)
        )

    def delete_pages(self, slugs: Sequence[str]) -> None:
        ids = [(page_id,) for page_id in self._ids(slugs).values()]
        self._conn.executemany("DELETE FROM fts WHERE rowid = ?", ids)
        self._conn.executemany("DELETE FROM pages WHERE id = ?", ids)

    def get_page(self, slug: str) -> PageRow | None:
        row = self._conn.execute(
            f"SELECT {_PAGE_COLS} FROM pages WHERE slug = ?", (slug,)
        ).fetchone()
        return None if row is None else _page(row)

    def get_pages(self, slugs: Sequence[str]) -> list[PageRow]:
        sql = f"SELECT {_PAGE_COLS} FROM pages WHERE slug IN ({{}})"
        return [_page(row) for row in self._where_in(sql, slugs)]

    def all_pages(self) -> list[PageRow]:
        return [_page(r) for r in self._conn.execute(f"SELECT {_PAGE_COLS} FROM pages")]

    def titles(self) -> list[tuple[str, str, bool]]:
        """(slug, title, is_placeholder) of every page and placeholder."""
        rows = self._conn.execute("SELECT slug, title, path IS NULL FROM pages")
        return [(slug, title, bool(placeholder)) for slug, title, placeholder in rows]

    def stamps(self) -> set[tuple[str, int, int]]:
        """(path, size, mtime_ns) of every indexed page file, as the plain rows SQLite
        gives, for comparing with the files on disk as sets."""
        rows = self._conn.execute("SELECT path, size, mtime_ns FROM pages WHERE path IS NOT NULL")
        return set(rows)

    def files_at(self, paths: Sequence[str]) -> dict[str, FileStamp]:
        """The indexed page files at these paths, by path."""
        rows = self._where_in(_STAMP + " WHERE path IN ({})", paths)
        return {row[0]: FileStamp._make(row) for row in rows}

    def files_under(self, folder: str) -> dict[str, FileStamp]:
        """The indexed page files inside `folder` (at any depth), by path."""
        # Paths inside sort from "folder/" up to, not including, "folder0" ("0" follows "/").
        sql = _STAMP + " WHERE path >= ? AND path < ?"
        rows = self._conn.execute(sql, (folder + "/", folder + "0"))
        return {row[0]: FileStamp._make(row) for row in rows}

    def files_of(self, slugs: Sequence[str]) -> dict[str, FileStamp]:
        """The indexed page files holding these slugs, by path."""
        rows = self._where_in(_STAMP + " WHERE path IS NOT NULL AND slug IN ({})", slugs)
        return {row[0]: FileStamp._make(row) for row in rows}

    # -- links -----------------------------------------------------------------------

    def add_links(self, links: Iterable[NewLink]) -> None:
        self._conn.executemany(
            "INSERT INTO links(source, target, line, context, key, exact, resolved, ambiguous) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            links,
        )

    def delete_links_from(self, sources: Sequence[str]) -> None:
        for chunk in _chunks(sources):
            self._conn.execute(f"DELETE FROM links WHERE source IN ({_marks(len(chunk))})", chunk)

    def links_from(self, source: str) -> list[LinkRow]:
        return [
            _link(r)
            for r in self._conn.execute(
                f"SELECT {_LINK_COLS} FROM links WHERE source = ? ORDER BY id", (source,)
            )
        ]

    def links_to(self, slug: str) -> list[LinkRow]:
        return [
            _link(r)
            for r in self._conn.execute(
                f"SELECT {_LINK_COLS} FROM links WHERE resolved = ? ORDER BY source, line", (slug,)
            )
        ]

    def links_with_keys(self, keys: Sequence[str]) -> list[LinkRow]:
        sql = f"SELECT {_LINK_COLS} FROM links WHERE key IN ({{}})"
        return [_link(row) for row in self._where_in(sql, keys)]

    def all_links(self) -> list[LinkRow]:
        return [_link(r) for r in self._conn.execute(f"SELECT {_LINK_COLS} FROM links")]

    def set_resolutions(self, updates: Iterable[tuple[int, str, bool]]) -> None:
        self._conn.executemany(
            "UPDATE links SET resolved = ?, ambiguous = ? WHERE id = ?",
            ((slug, int(amb), link_id) for link_id, slug, amb in updates),
        )

    def edges(self, sources: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """Distinct (source, resolved) pairs, for all sources or the given ones."""
        if sources is None:
            rows = self._conn.execute("SELECT DISTINCT source, resolved FROM links")
            return [(str(a), str(b)) for a, b in rows]
        sql = "SELECT DISTINCT source, resolved FROM links WHERE source IN ({})"
        return [(str(a), str(b)) for a, b in self._where_in(sql, sources)]

    def link_pairs(self) -> Iterator[tuple[str, str]]:
        """(source, resolved) of every link, read as they come: a pair appears once per
        link, so it repeats when a page links to the same target twice."""
        return iter(self._conn.execute("SELECT source, resolved FROM links"))

    def first_targets(self, slugs: Sequence[str]) -> dict[str, str]:
        """For each slug, the target text of the first link to it (by source, then line)."""
        sql = (
            "SELECT resolved, target FROM links WHERE resolved IN ({}) "
            "ORDER BY resolved, source DESC, line DESC, id DESC"
        )
        return dict(self._where_in(sql, slugs))  # the last row per slug wins: the first link

    def count_pages(self) -> int:
        """Real pages (not placeholders) the index holds."""
        return int(
            self._conn.execute("SELECT count(*) FROM pages WHERE path IS NOT NULL").fetchone()[0]
        )

    def count_links(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM links").fetchone()[0])

    # -- slug collisions -------------------------------------------------------------

    def set_shadowed(self, path: str, slug: str) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO shadowed(path, slug) VALUES (?, ?)", (path, slug)
        )

    def unshadow(self, path: str) -> None:
        self._conn.execute("DELETE FROM shadowed WHERE path = ?", (path,))

    def shadowed(self) -> list[tuple[str, str]]:
        rows = self._conn.execute("SELECT path, slug FROM shadowed ORDER BY path")
        return [(str(p), str(s)) for p, s in rows]

    def fts_documents(self) -> list[tuple[str, str, str]]:
        """(slug, title, body) of every FTS row, for consistency checks."""
        rows = self._conn.execute(
            "SELECT p.slug, f.title, f.body FROM fts f JOIN pages p ON p.id = f.rowid"
        )
        return sorted((str(s), str(t), str(b)) for s, t, b in rows)

    # -- search ----------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[SearchRow]:
        """BM25-ranked full-text search, title weighted above body. Never raises on input."""
        match = fts_query(query)
        if match is None:
            return []
        # FTS5's snippet() takes time quadratic in the hits within a page (seconds on a
        # 1 MB page full of the word): long pages get a plain snippet of their own.
        # Ordering by FTS5's own rank column (set to the weighted bm25 for this query)
        # lets FTS5 pick the best rows itself, so the snippets and the join are worked
        # out for those rows only, not for every match (half the time on 100k pages).
        rows = self._conn.execute(
            "SELECT p.id, p.slug, p.title, CASE WHEN p.size <= ? "
            "THEN snippet(fts, 1, '**', '**', '…', 16) END, fts.rank "
            "FROM fts JOIN pages p ON p.id = fts.rowid "
            "WHERE fts MATCH ? AND fts.rank MATCH 'bm25(10.0, 1.0)' ORDER BY fts.rank LIMIT ?",
            (SNIPPET_MAX_BYTES, match, limit),
        ).fetchall()
        return [
            SearchRow(
                str(slug),
                str(title),
                _clean_snippet(str(snippet))
                if snippet is not None
                else self._long_snippet(row_id, query),
                -float(rank),
            )
            for row_id, slug, title, snippet, rank in rows
        ]

    def _long_snippet(self, row_id: int, query: str) -> str:
        """A snippet of a long page: about sixteen words around the first place where a
        query word starts a word (case-insensitive), the words marked like snippet()'s."""
        row = self._conn.execute("SELECT body FROM fts WHERE rowid = ?", (row_id,)).fetchone()
        body = str(row[0]).replace(_SEP, "") if row else ""
        words = sorted({w.lower() for w in _WORD.findall(query)}, key=len, reverse=True)
        if not words:
            return ""
        starts = "|".join(("" if fts_text(w) != w else r"\b") + re.escape(w) for w in words)
        pattern = re.compile(f"(?:{starts})\\w*", re.I)
        found = pattern.search(body)
        start = 0 if found is None else found.start()
        left = max(0, start - 200)
        before = [m.start() for m in _NON_SPACE.finditer(body, left, start)][-5:]
        after = [m.end() for m in _NON_SPACE.finditer(body, start, start + 600)][:11]
        begin = before[0] if before else start
        end = after[-1] if after else start
        text = pattern.sub(lambda m: f"**{m.group()}**", " ".join(body[begin:end].split()))
        return ("…" if begin > 0 else "") + text + ("…" if end < len(body) else "")

    def pages_matching(self, query: str, limit: int) -> list[str]:
        """Slugs of pages whose text contains all words of `query` (unranked)."""
        match = fts_query(query)
        if match is None:
            return []
        rows = self._conn.execute(
            "SELECT p.slug FROM fts JOIN pages p ON p.id = fts.rowid WHERE fts MATCH ? LIMIT ?",
            (match.removesuffix("*"), limit),
        )
        return [str(r[0]) for r in rows]
