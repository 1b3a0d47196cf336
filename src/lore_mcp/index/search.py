"""Full-text search: the FTS5 table, the queries any user string becomes, and snippets.

Chinese and Japanese have no spaces between words, so each of their characters is
stored as its own token (separated by U+001F, which the tokenizer treats as a separator
and which never occurs in text), and a query word in them becomes a phrase of its
characters: "記憶" matches inside "長期記憶の話".
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

SEARCH_SCHEMA = """
CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2');
"""
SNIPPET_MAX_BYTES = 16_384  # FTS5's snippet() is quadratic in the hits of a page: longer
# pages get a snippet made here instead
_CJK = (
    "\u2e80-\u2fdf\u3005\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_SEP = "\x1f"
_QUERY_TERM = re.compile(r'"([^"]*)"|([^\s"]+)')
_WORD = re.compile(r"\w+")
_NON_SPACE = re.compile(r"\S+")


class SearchRow(NamedTuple):
    slug: str
    title: str
    snippet: str
    score: float


def fts_text(text: str) -> str:
    """Text as stored in the FTS table: CJK characters split into single tokens."""
    if text.isascii():
        return text
    return _CJK_RUN.sub(lambda m: _SEP + _SEP.join(m.group()) + _SEP, text)


def fts_query(user_query: str) -> str | None:
    """Any user string as a safe FTS5 MATCH expression, or None if it has no words.

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


class SearchTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def check(self) -> None:
        """Read the table once: a damaged index fails here rather than on a search."""
        self._conn.execute("SELECT count(*) FROM fts").fetchone()

    def put(self, documents: Iterable[tuple[int, str, str]]) -> None:
        """Replace the text of the pages with these (id, title, body)."""
        # In rowid order: FTS5 flushes its pending terms whenever a rowid is lower than
        # the one written before, and many small flushes make the index slow to build.
        ordered = sorted(documents)
        self._conn.executemany("DELETE FROM fts WHERE rowid = ?", [(d[0],) for d in ordered])
        self._conn.executemany(
            "INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)",
            ((rowid, fts_text(title), fts_text(body)) for rowid, title, body in ordered),
        )

    def delete(self, ids: Sequence[int]) -> None:
        self._conn.executemany("DELETE FROM fts WHERE rowid = ?", [(i,) for i in ids])

    def query(self, query: str, limit: int) -> list[SearchRow]:
        """BM25-ranked full-text search, title weighted above body. Never raises on input."""
        match = fts_query(query)
        if match is None:
            return []
        rows = self._conn.execute(
            "SELECT p.id, p.slug, p.title, CASE WHEN p.size <= ? "
            "THEN snippet(fts, 1, '**', '**', '…', 16) END, fts.rank "
            "FROM fts JOIN pages p ON p.id = fts.rowid "
            "WHERE fts MATCH ? AND fts.rank MATCH 'bm25(10.0, 1.0)' ORDER BY fts.rank LIMIT ?",
            (SNIPPET_MAX_BYTES, match, limit),
        ).fetchall()
        return [
            SearchRow(
                slug,
                title,
                " ".join(snippet.replace(_SEP, "").split())
                if snippet is not None
                else self._long_snippet(row_id, query),
                -float(rank),
            )
            for row_id, slug, title, snippet, rank in rows
        ]

    def _long_snippet(self, row_id: int, query: str) -> str:
        """About sixteen words around the first place where a query word starts a word
        (case-insensitive), the words marked as snippet() marks them."""
        row = self._conn.execute("SELECT body FROM fts WHERE rowid = ?", (row_id,)).fetchone()
        body = str(row[0]).replace(_SEP, "") if row else ""
        words = sorted({w.lower() for w in _WORD.findall(query)}, key=len, reverse=True)
        if not words:
            return ""
        starts = "|".join(("" if fts_text(w) != w else r"\b") + re.escape(w) for w in words)
        pattern = re.compile(f"(?:{starts})\\w*", re.IGNORECASE)
        found = pattern.search(body)
        start = 0 if found is None else found.start()
        before = [m.start() for m in _NON_SPACE.finditer(body, max(0, start - 200), start)][-5:]
        after = [m.end() for m in _NON_SPACE.finditer(body, start, start + 600)][:11]
        begin = before[0] if before else start
        end = after[-1] if after else start
        text = pattern.sub(lambda m: f"**{m.group()}**", " ".join(body[begin:end].split()))
        return ("…" if begin > 0 else "") + text + ("…" if end < len(body) else "")

    def pages_matching(self, query: str, limit: int) -> list[str]:
        """Slugs of pages whose text holds every word of `query` (unranked)."""
        match = fts_query(query)
        if match is None:
            return []
        rows = self._conn.execute(
            "SELECT p.slug FROM fts JOIN pages p ON p.id = fts.rowid WHERE fts MATCH ? LIMIT ?",
            (match.removesuffix("*"), limit),
        )
        return [str(row[0]) for row in rows]

    def documents(self) -> list[tuple[str, str, str]]:
        """(slug, title, body) of every page's text, sorted, for consistency checks."""
        rows = self._conn.execute(
            "SELECT p.slug, f.title, f.body FROM fts f JOIN pages p ON p.id = f.rowid"
        )
        return sorted((str(s), str(t), str(b)) for s, t, b in rows)
