"""The inflections a query word stands for, told apart as the FTS tokenizer stems them.

FTS5's porter tokenizer stems the pages and the queries, but the Porter algorithm does
not always give a word and its inflections one stem: "embed" becomes "emb" while
"embedded" and "embedding" become "embed". A query word is therefore looked for in its
regular English inflections (base form, -s, -ed, -ing, with the usual spelling
changes), one form for each stem they reach, so that "embedding" finds "embed" and
"embed" finds "embedding". The stems are FTS5's own: the forms go through the same
tokenizer in a private in-memory table.
"""

from __future__ import annotations

import sqlite3
import threading
from functools import lru_cache

TOKENIZER = "porter unicode61 remove_diacritics 2"
_VOWELS = frozenset("aeiou")
_NO_DOUBLE = frozenset("aeiouwxy")


def bases(word: str) -> set[str]:
    """The word and the base forms it may be an inflection of."""
    found = {word}
    for suffix, replacements in (
        ("ies", ("y",)),
        ("ied", ("y",)),
        ("ing", ("", "e")),
        ("ed", ("", "e")),
        ("es", ("", "e")),
        ("s", ("",)),
    ):
        stem = word.removesuffix(suffix)
        if stem == word or len(stem) < 2 or (suffix == "s" and stem.endswith("s")):
            continue
        found.update(stem + r for r in replacements)
        if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
            found.add(stem[:-1])  # embedding, running: one consonant in the base
        break
    return found


def inflections(base: str) -> set[str]:
    """Regular English inflections of a base form."""
    forms = {base, base + "s", base + "ed", base + "ing"}
    if base.endswith("e"):
        forms |= {base[:-1] + "ing", base + "d"}
    elif base.endswith("y") and len(base) > 2 and base[-2] not in _VOWELS:
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    elif len(base) > 2 and base[-2] in _VOWELS and base[-1] not in _NO_DOUBLE:
        forms |= {base + base[-1] + "ed", base + base[-1] + "ing"}  # embed: embedded
    if base.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(base + "es")
    return forms


class Stemmer:
    """FTS5's stems of words, from a private in-memory table with the index's tokenizer."""

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.forms = lru_cache(maxsize=4096)(self._forms)

    def _table(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)
            self._conn.execute(
                f"CREATE VIRTUAL TABLE words USING fts5(w, tokenize = '{TOKENIZER}')"
            )
            self._conn.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(words, instance)")
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _forms(self, word: str) -> tuple[str, ...]:
        """The word first, then one inflection for each other stem its inflections
        reach, shortest first. Only plain lowercase ASCII words are inflected. Some
        forms are no English word ("embeding"): the caller keeps those the vault holds."""
        if not (word.isascii() and word.isalpha() and len(word) >= 3):
            return (word,)
        others = {f for b in bases(word) for f in inflections(b)} - {word}
        candidates = [word, *sorted(others, key=lambda f: (len(f), f))]
        with self._lock:
            conn = self._table()
            conn.execute("INSERT INTO words(rowid, w) VALUES (1, ?)", (" ".join(candidates),))
            rows = conn.execute("SELECT term, offset FROM stems ORDER BY offset").fetchall()
            conn.execute("DELETE FROM words")
        chosen: dict[str, str] = {}
        for stem, offset in rows:
            chosen.setdefault(str(stem), candidates[int(offset)])
        return tuple(chosen.values())
