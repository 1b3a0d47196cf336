"""Full-text search: its tables, and the SQL a search runs.

- `fts(names, headings, body, stems)`: one row a page: its title and aliases (a line
  each), the text of its headings, its text (without its frontmatter), and for a page
  in German, French or Spanish the Snowball stems of its words (`languages`), each
  behind its language's code ("delösch"): a Spanish stem finds no French page, and a
  stem's list of pages holds only the pages of its language, short to go through (a
  stem that is also an English word would otherwise cost a pass over every page
  holding the word). Tokenized
  by `porter unicode61 remove_diacritics 2`, CJK split into characters
  (`terms.fts_text`). FTS5's bm25() weighs the columns by `WEIGHTS`, and ranks with
  `ORDER BY rank ... LIMIT`, so only the best rows ever reach Python.
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
from lore_mcp.index.batch import insert_at_once, select_in
from lore_mcp.index.languages import STEMMED, STEMS, page_language
from lore_mcp.index.stems import TOKENIZER, Stemmer

# The weights of names, headings, body and stems in bm25(), in the table's order.
WEIGHTS = (10.0, 3.0, 1.0, 1.0)
_RANK = f"bm25(fts, {', '.join(map(str, WEIGHTS))})"
# `usermerge` 2: the upkeep after a write merges any two segments of a level (see
# `upkeep`), the names' table's as well (in `pages`).
SEARCH_SCHEMA = f"""
CREATE VIRTUAL TABLE fts USING fts5(names, headings, body, stems, tokenize = '{TOKENIZER}');
INSERT INTO fts(fts, rank) VALUES ('rank', '{_RANK.replace("fts, ", "")}');
INSERT INTO fts(fts, rank) VALUES ('usermerge', 2);
CREATE TABLE symbols(
    word TEXT NOT NULL,
    page INTEGER NOT NULL,
    count INTEGER NOT NULL,
    named INTEGER NOT NULL,
    PRIMARY KEY (word, page)
) WITHOUT ROWID;
CREATE INDEX symbols_page ON symbols(page);
"""
SEARCH_TABLES = ("fts", "symbols")
BODY = 2  # the body's column, for highlight()
TEXT = "{headings body}"  # the columns of a page's own text


class SearchText(NamedTuple):
    """A page's text as the search tables hold it (see the module's docstring): made
    where the page is parsed, which in a large pass is a worker process."""

    names: str
    headings: str
    body: str
    stems: str
    symbols: tuple[tuple[str, int, bool], ...]  # (word, count in the text, in the names)


def search_text(title: str, aliases: Sequence[str], body: str) -> SearchText:
    """The search text of a page with this title, these aliases and this text."""
    names = "\n".join([title, *aliases])
    language = page_language(body)
    stems = STEMS.text(language, names + "\n" + body) if language in STEMMED else ""
    heads = terms.headings(body)
    return SearchText(
        terms.fts_text(names),
        terms.fts_text(heads),
        terms.fts_text(body),
        stems,
        _symbols(title, aliases, body),
    )


def _symbols(title: str, aliases: Sequence[str], body: str) -> tuple[tuple[str, int, bool], ...]:
    in_text = terms.symbol_words(body)
    in_names: Counter[str] = Counter()
    for name in (title, *aliases):
        in_names.update(terms.symbol_words(name))
    return tuple((w, in_text[w], w in in_names) for w in sorted(in_text.keys() | in_names.keys()))


def _rows(
    documents: Iterable[tuple[int, SearchText]],
) -> tuple[list[tuple[int, str, str, str, str]], list[tuple[str, int, int, bool]]]:
    """The rows of the search tables for these (id, text): in rowid order, since FTS5
    flushes its pending terms whenever a rowid is lower than the one written before, and
    many small flushes make the index slow to build."""
    ordered = sorted(documents, key=lambda document: document[0])
    texts = [(rowid, *text[:4]) for rowid, text in ordered]
    symbols = [(w, rowid, n, named) for rowid, text in ordered for w, n, named in text.symbols]
    return texts, symbols


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
        self.stems = STEMS

    def close(self) -> None:
        self.stemmer.close()

    def check(self) -> None:
        """Read the table once: a damaged index fails here rather than on a search."""
        self._conn.execute("SELECT count(*) FROM fts").fetchone()

    # -- writes ---------------------------------------------------------------------

    def put(self, documents: Iterable[tuple[int, SearchText]], *, fresh: bool = False) -> None:
        """Replace the search text of the pages with these (id, text); `fresh` says
        none of them has one yet."""
        texts, symbols = _rows(documents)
        if not fresh:
            self.delete([row[0] for row in texts])
        self._conn.executemany(
            "INSERT INTO fts(rowid, names, headings, body, stems) VALUES (?, ?, ?, ?, ?)", texts
        )
        self._conn.executemany(
            "INSERT INTO symbols(word, page, count, named) VALUES (?, ?, ?, ?)", symbols
        )

    def insert_new(self, documents: Iterable[tuple[int, SearchText]]) -> None:
        """Insert the search text of pages that have none yet, a statement a table (see
        `batch.insert_at_once`)."""
        texts, symbols = _rows(documents)
        insert_at_once(self._conn, "fts", ("rowid", "names", "headings", "body", "stems"), texts)
        insert_at_once(self._conn, "symbols", ("word", "page", "count", "named"), symbols)

    def delete(self, ids: Sequence[int]) -> None:
        rows = [(i,) for i in ids]
        self._conn.executemany("DELETE FROM fts WHERE rowid = ?", rows)
        self._conn.executemany("DELETE FROM symbols WHERE page = ?", rows)

    # -- lookups --------------------------------------------------------------------

    def first(self, match: str, limit: int) -> list[int]:
        """The first pages (by id) that match."""
        sql = "SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?"
        return [row[0] for row in self._conn.execute(sql, (match, limit))]

    def count(self, match: str, cap: int) -> int:
        """How many pages match, counted up to `cap`."""
        sql = "SELECT count(*) FROM (SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?)"
        return int(self._conn.execute(sql, (match, cap)).fetchone()[0])

    def held(self, matches: Sequence[str]) -> set[str]:
        """Those of these FTS5 strings that some page matches, asked in one statement
        (each stops at its first page)."""
        found: set[str] = set()
        for start in range(0, len(matches), _HELD_CHUNK):
            chunk = matches[start : start + _HELD_CHUNK]
            sql = " UNION ALL ".join(
                f"SELECT {i} WHERE EXISTS ({_MATCH})" for i in range(len(chunk))
            )
            found.update(chunk[row[0]] for row in self._conn.execute(sql, chunk))
        return found

    def ranked(self, match: str, limit: int) -> list[tuple[int, float]]:
        """The best `limit` pages that match, by FTS5's bm25() with the column weights,
        best first (lower is better)."""
        sql = "SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?"
        rows = self._conn.execute(sql, (match, limit))
        return [(int(i), float(s)) for i, s in rows]

    def matching_among(self, match: str, ids: Sequence[int]) -> set[int]:
        """Those of these pages that match. FTS5 goes through the pages that match and
        SQLite keeps those among `ids` (`+rowid`: looking each id up in FTS5 costs more
        than the whole pass, for a term in many pages as for a rare one)."""
        return {
            row[0]
            for row in select_in(self._conn, _MATCH + " AND +rowid IN ({})", ids, prefix=[match])
        }

    def texts(self, ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """(names, headings, body) of pages by id, the names a line each (reading one
        column of a row costs about as much as reading all of them)."""
        sql = "SELECT rowid, names, headings, body FROM fts WHERE rowid IN ({})"
        return {
            int(i): (_plain(str(n)), _plain(str(h)), _plain(str(b)))
            for i, n, h, b in select_in(self._conn, sql, ids)
        }

    def symbol_pages(self, word: str, limit: int = -1) -> list[tuple[int, int, bool]]:
        """(page, count in its text, in its names) of the pages holding a symbol word,
        those named by it first, then those holding it most."""
        sql = (
            "SELECT page, count, named FROM symbols WHERE word = ? "
            "ORDER BY named DESC, count DESC, page LIMIT ?"
        )
        return [(int(p), int(c), bool(n)) for p, c, n in self._conn.execute(sql, (word, limit))]

    def symbol_counts(self, word: str, ids: Sequence[int]) -> dict[int, int]:
        """How often each of these pages holds a symbol word in its text (or 1, in its
        names only), for those that hold it."""
        sql = "SELECT page, max(count, named) FROM symbols WHERE word = ? AND page IN ({})"
        return {int(p): int(c) for p, c in select_in(self._conn, sql, ids, prefix=[word])}

    def symbol_among(self, word: str, ids: Sequence[int]) -> set[int]:
        sql = "SELECT page FROM symbols WHERE word = ? AND page IN ({})"
        return {row[0] for row in select_in(self._conn, sql, ids, prefix=[word])}

    def body(self, page_id: int) -> str:
        row = self._conn.execute("SELECT body FROM fts WHERE rowid = ?", (page_id,)).fetchone()
        return _plain(str(row[0])) if row else ""

    def completions(self, prefix: str, pages: int) -> list[str]:
        """The words (folded) a prefix match stands for in the first `pages` pages
        holding one in their text, the most frequent first."""
        sql = f"SELECT highlight(fts, {BODY}, char(2), char(3)) FROM fts WHERE fts MATCH ? LIMIT ?"
        found: Counter[str] = Counter()
        for (text,) in self._conn.execute(sql, (f"body : {prefix}", pages)):
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
        match = f"{TEXT} : (" + " AND ".join(words) + ")"
        if symbols:
            ids = set.intersection(*({p for p, _, _ in self.symbol_pages(s)} for s in symbols))
            found = sorted(self.matching_among(match, sorted(ids)) if words else ids)[:limit]
        else:
            found = self.first(match, limit)
        return [key for key, _, _ in self.pages(found).values()]

    def documents(self) -> list[tuple[str, str, str, str]]:
        """(key, names, text, stems) of every page, sorted, for consistency checks."""
        rows = self._conn.execute(
            "SELECT p.key, f.names, f.body, f.stems FROM fts f JOIN pages p ON p.id = f.rowid"
        )
        return sorted((str(s), str(n), str(b), str(t)) for s, n, b, t in rows)


def _plain(text: str) -> str:
    """Stored text as it was written: without the separators around CJK characters."""
    return text.replace(terms.SEP, "") if terms.SEP in text else text


_MATCH = "SELECT rowid FROM fts WHERE fts MATCH ?"
_HELD_CHUNK = 100  # FTS5 strings a statement of `held` asks for
_MARKED = re.compile("\x02([^\x03]*)\x03")
