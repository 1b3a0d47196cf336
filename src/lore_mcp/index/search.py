"""Full-text search: its tables, and the SQL a search runs.

- `fts(headings, body)`: every page's text (without its frontmatter) and, apart, the
  text of its headings, which weighs more. Tokenized by `porter unicode61
  remove_diacritics 2`, CJK split into characters (`terms.fts_text`).
- `fts_names(names)`: each page's title and aliases, a line each: small, so that a
  term's pages by name are found without a pass over every page holding it.
- `symbols(word, page, count, named)`: the symbol words (C++, .NET, node.js, v1.10) each
  page holds, as written (lowercased), which the tokenizer would split.

What a search does with them is in `lore_mcp.index.finder`. Every user string reaches
MATCH only as quoted FTS5 strings built by `terms`, so none can raise a syntax error.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from lore_mcp.index import terms
from lore_mcp.index.batch import select_in
from lore_mcp.index.stems import TOKENIZER, Stemmer

SEARCH_SCHEMA = f"""
CREATE VIRTUAL TABLE fts USING fts5(headings, body, tokenize = '{TOKENIZER}');
CREATE VIRTUAL TABLE fts_names USING fts5(names, tokenize = '{TOKENIZER}');
CREATE TABLE symbols(
    word TEXT NOT NULL,
    page INTEGER NOT NULL,
    count INTEGER NOT NULL,
    named INTEGER NOT NULL,
    PRIMARY KEY (word, page)
) WITHOUT ROWID;
CREATE INDEX symbols_page ON symbols(page);
"""
SEARCH_TABLES = ("fts", "fts_names", "symbols")
WEIGHTS = "2.0, 1.0"  # bm25() weights of headings and body
HIGHLIGHT_MAX_BYTES = 256 * 1024  # longer pages are marked here, not by FTS5


class SearchRow(NamedTuple):
    key: str  # the page's path
    title: str
    snippet: str
    score: float


class SearchTable:
    """The search tables of one connection: writes, and the lookups a search is made of."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.stemmer = Stemmer()

    def close(self) -> None:
        self.stemmer.close()

    def check(self) -> None:
        """Read the table once: a damaged index fails here rather than on a search."""
        self._conn.execute("SELECT count(*) FROM fts").fetchone()

    # -- writes ---------------------------------------------------------------------

    def put(self, documents: Iterable[tuple[int, str, Sequence[str], str]]) -> None:
        """Replace the text of the pages with these (id, title, aliases, body)."""
        # In rowid order: FTS5 flushes its pending terms whenever a rowid is lower than
        # the one written before, and many small flushes make the index slow to build.
        ordered = sorted(documents)
        self.delete([d[0] for d in ordered])
        self._conn.executemany(
            "INSERT INTO fts(rowid, headings, body) VALUES (?, ?, ?)",
            (
                (rowid, terms.fts_text(terms.headings(body)), terms.fts_text(body))
                for rowid, _, _, body in ordered
            ),
        )
        self._conn.executemany(
            "INSERT INTO fts_names(rowid, names) VALUES (?, ?)",
            (
                (rowid, terms.fts_text("\n".join([title, *aliases])))
                for rowid, title, aliases, _ in ordered
            ),
        )
        self._conn.executemany(
            "INSERT INTO symbols(word, page, count, named) VALUES (?, ?, ?, ?)",
            (row for document in ordered for row in _symbol_rows(*document)),
        )

    def delete(self, ids: Sequence[int]) -> None:
        rows = [(i,) for i in ids]
        self._conn.executemany("DELETE FROM fts WHERE rowid = ?", rows)
        self._conn.executemany("DELETE FROM fts_names WHERE rowid = ?", rows)
        self._conn.executemany("DELETE FROM symbols WHERE page = ?", rows)

    # -- lookups --------------------------------------------------------------------

    def first(self, match: str, limit: int) -> list[int]:
        """The first pages (by id) whose text matches."""
        sql = "SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?"
        return [row[0] for row in self._conn.execute(sql, (match, limit))]

    def count(self, match: str, cap: int) -> tuple[int, int]:
        """How many pages' text matches, counted up to `cap`, and the last page id counted."""
        sql = "SELECT count(*), max(rowid) FROM (SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?)"
        found, last = self._conn.execute(sql, (match, cap)).fetchone()
        return int(found), int(last or 0)

    def pages_up_to(self, page_id: int) -> int:
        """How many pages (with text) have an id up to this one."""
        sql = "SELECT count(*) FROM pages WHERE id <= ? AND path IS NOT NULL"
        return int(self._conn.execute(sql, (page_id,)).fetchone()[0])

    def scored(self, match: str) -> list[tuple[int, float]]:
        """Every page whose text matches, with FTS5's bm25() (lower is better)."""
        sql = f"SELECT rowid, bm25(fts, {WEIGHTS}) FROM fts WHERE fts MATCH ?"
        return [(int(i), float(s)) for i, s in self._conn.execute(sql, (match,))]

    def matching(self, match: str, within: tuple[int, int] | None = None) -> set[int]:
        """Pages whose text matches, optionally only those with ids in a range."""
        if within is None:
            return {row[0] for row in self._conn.execute(_MATCH, (match,))}
        sql = _MATCH + " AND rowid BETWEEN ? AND ?"
        return {row[0] for row in self._conn.execute(sql, (match, *within))}

    def matching_among(self, match: str, ids: Sequence[int]) -> set[int]:
        """Those of these pages whose text matches (a lookup per page: for a few)."""
        return {
            row[0]
            for row in select_in(self._conn, _MATCH + " AND rowid IN ({})", ids, prefix=[match])
        }

    def named(self, match: str, cap: int) -> list[tuple[int, str]]:
        """Pages whose title or aliases match, with those names, a line each."""
        sql = "SELECT rowid, names FROM fts_names WHERE fts_names MATCH ? LIMIT ?"
        return [(int(i), str(names)) for i, names in self._conn.execute(sql, (match, cap))]

    def names_of(self, ids: Sequence[int]) -> dict[int, str]:
        sql = "SELECT rowid, names FROM fts_names WHERE rowid IN ({})"
        return {int(i): str(names) for i, names in select_in(self._conn, sql, ids)}

    def symbol_count(self, word: str, cap: int) -> int:
        sql = "SELECT count(*) FROM (SELECT 1 FROM symbols WHERE word = ? LIMIT ?)"
        return int(self._conn.execute(sql, (word, cap)).fetchone()[0])

    def symbol_pages(self, word: str, limit: int = -1) -> list[tuple[int, int, bool]]:
        """(page, count in its text, in its names) of the pages holding a symbol word."""
        sql = "SELECT page, count, named FROM symbols WHERE word = ? ORDER BY page LIMIT ?"
        return [(int(p), int(c), bool(n)) for p, c, n in self._conn.execute(sql, (word, limit))]

    def symbol_among(self, word: str, ids: Sequence[int]) -> set[int]:
        sql = "SELECT page FROM symbols WHERE word = ? AND page IN ({})"
        return {row[0] for row in select_in(self._conn, sql, ids, prefix=[word])}

    def body(self, page_id: int) -> str:
        row = self._conn.execute("SELECT body FROM fts WHERE rowid = ?", (page_id,)).fetchone()
        return str(row[0]).replace(terms.SEP, "") if row else ""

    def highlighted(self, page_id: int, match: str) -> str | None:
        """The page's text with what matches between `snippets.OPEN` and `CLOSE`; None
        if it does not match."""
        sql = "SELECT highlight(fts, 1, char(2), char(3)) FROM fts WHERE fts MATCH ? AND rowid = ?"
        row = self._conn.execute(sql, (match, page_id)).fetchone()
        return None if row is None else str(row[0])

    def completions(self, prefix: str, pages: int) -> list[str]:
        """The words (folded) a prefix match stands for in the first `pages` pages
        holding one, the most frequent first."""
        sql = "SELECT highlight(fts, 1, char(2), char(3)) FROM fts WHERE fts MATCH ? LIMIT ?"
        found: Counter[str] = Counter()
        for (text,) in self._conn.execute(sql, (prefix, pages)):
            found.update(terms.fold(w) for w in _MARKED.findall(str(text).replace(terms.SEP, "")))
        return [word for word, _ in found.most_common()]

    def pages(self, ids: Sequence[int]) -> dict[int, tuple[str, str, int]]:
        """(key, title, size) of pages by id."""
        sql = "SELECT id, key, title, size FROM pages WHERE id IN ({})"
        return {int(i): (str(s), str(t), int(z)) for i, s, t, z in select_in(self._conn, sql, ids)}

    def pages_matching(self, query: str, limit: int) -> list[str]:
        """The pages whose text holds every word of `query` (unranked)."""
        parsed = terms.parse(query)
        words = [t.fts for t in parsed.terms if t.fts is not None]
        symbols = [t.symbol for t in parsed.terms if t.symbol is not None]
        if not words and not symbols:
            return []
        match = " AND ".join(words)
        if symbols:
            ids = set.intersection(*({p for p, _, _ in self.symbol_pages(s)} for s in symbols))
            found = sorted(self.matching_among(match, sorted(ids)) if words else ids)[:limit]
        else:
            found = self.first(match, limit)
        return [key for key, _, _ in self.pages(found).values()]

    def documents(self) -> list[tuple[str, str, str]]:
        """(key, names, text) of every page, sorted, for consistency checks."""
        rows = self._conn.execute(
            "SELECT p.key, n.names, f.body FROM fts f JOIN pages p ON p.id = f.rowid "
            "JOIN fts_names n ON n.rowid = f.rowid"
        )
        return sorted((str(s), str(n), str(b)) for s, n, b in rows)


_MATCH = "SELECT rowid FROM fts WHERE fts MATCH ?"
_MARKED = re.compile("\x02([^\x03]*)\x03")


def _symbol_rows(
    rowid: int, title: str, aliases: Sequence[str], body: str
) -> list[tuple[str, int, int, int]]:
    in_text = terms.symbol_words(body)
    in_names: Counter[str] = Counter()
    for name in (title, *aliases):
        in_names.update(terms.symbol_words(name))
    return [
        (w, rowid, in_text[w], int(w in in_names)) for w in sorted(in_text.keys() | in_names.keys())
    ]
