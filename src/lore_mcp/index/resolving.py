"""A query's terms as the index holds them: for each word, the inflections (`stems`)
and the stems in the other languages (`languages`) that some page holds, found in one
statement; for the last word, the longer words it starts when few pages hold it as
typed; and how many pages hold each term, counted up to a cap (each count asked once a
search). `finder` ranks the pages that hold them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lore_mcp.index import terms
from lore_mcp.index.search import SearchTable
from lore_mcp.index.stems import Stemmer

MAX_FORMS = 4  # inflections of a word looked for
MAX_STEMS = 3  # stems of a word, in the other languages, looked for
STEMS = "stems : "  # a column filter for the stems
COMPLETION_PAGES = 10  # pages whose words tell what the last word may be the start of
COMPLETIONS = 8  # words the last word may be the start of


@dataclass(slots=True)
class Resolved:
    """A query term as the index holds it."""

    term: terms.Term
    forms: list[str]  # FTS5 strings of one phrase each; none for a symbol word
    pages: int  # pages holding it, counted up to the search's cap
    exact: bool  # the count is the whole count

    @property
    def key(self) -> str:
        return self.term.key

    @property
    def match(self) -> str | None:
        if not self.forms:
            return None
        return self.forms[0] if len(self.forms) == 1 else "(" + " OR ".join(self.forms) + ")"

    @property
    def name_match(self) -> str:
        """What finds it in the names column: its forms but the stems (a column filter
        within a column filter finds nothing)."""
        forms = [f for f in self.forms if not f.startswith(STEMS)]
        return forms[0] if len(forms) == 1 else "(" + " OR ".join(forms) + ")"

    @property
    def plain_forms(self) -> list[str]:
        """Its forms but the stems, folded, without their quotes and prefix stars."""
        return [terms.fold(f.strip('"*')) for f in self.forms if f.startswith('"')]


class Terms:
    """The terms of one search, resolved against the index: what `finder` asks of
    them, and the counts it asks for besides (of statements joining them)."""

    def __init__(
        self,
        table: SearchTable,
        stemmer: Stemmer,
        languages: tuple[str, ...],
        exact_count: int,
    ) -> None:
        self.table = table
        self.stemmer = stemmer
        self.languages = languages
        self.exact_count = exact_count  # pages per term counted one by one
        self.held: set[str] = set()  # the inflections and stems of its words the vault holds
        self.counts: dict[str, tuple[int, int]] = {}  # pages matching, and the cap counted to

    def resolve(
        self, wanted: list[terms.Term], prefix: terms.Term | None, limit: int
    ) -> list[Resolved]:
        """The terms the vault holds. The last word also stands for the longer words it
        starts when fewer than `limit` pages hold it as a word (it is being typed)."""
        words = [t for t in wanted if t.key.startswith("w:")]
        asked = [f for t in words for forms in self._others(t) for f in forms]
        self.held = self.table.held(list(dict.fromkeys(asked)))
        kept = [r for r in map(self._resolve, wanted) if r.pages]
        key = None if prefix is None else f"w:{prefix.words[0]}"
        term = next((t for t in wanted if t.key == key), None)
        if prefix is None or term is None:
            return kept
        if any(r.key == key and r.pages >= limit for r in kept):
            return kept
        extended = self._resolve(term, self._completions(prefix))
        kept = [r for r in kept if r.key != key]
        return [*kept, extended] if extended.pages else kept

    def _completions(self, prefix: terms.Term) -> list[str]:
        """The words a prefix starts in the vault, as FTS5 strings: those of the first
        pages holding any (a prefix merges the lists of every word it starts, on every
        use, at a cost that grows with their pages)."""
        assert prefix.fts is not None
        words = self.table.completions(prefix.fts, COMPLETION_PAGES)
        return [terms.quote(w) for w in words if w != prefix.words[0]][:COMPLETIONS]

    def _resolve(self, term: terms.Term, completions: Sequence[str] = ()) -> Resolved:
        table, cap = self.table, self.exact_count
        if term.symbol is not None:
            count = len(table.symbol_pages(term.symbol, cap))
            return Resolved(term, [], count, count < cap)
        assert term.fts is not None
        forms = [term.fts]
        if term.key.startswith("w:"):
            others, stems = self._others(term)
            forms += [f for f in others if f in self.held][: MAX_FORMS - 1]
            forms += [f for f in stems if f in self.held]
        forms += [f for f in completions if f not in forms]
        resolved = Resolved(term, forms, 0, True)
        assert resolved.match is not None
        count = self.count(resolved.match, cap)
        resolved.pages, resolved.exact = count, count < cap
        return resolved

    def count(self, match: str, cap: int) -> int:
        """How many pages match, counted up to `cap`, each statement once a search: a
        count up to a higher cap answers for a lower one (a term's own count, for a
        statement of that one term)."""
        count = self.counts.get(match)
        if count is None or (count[0] == count[1] and count[1] < cap):  # none, or too low
            count = self.counts[match] = (self.table.count(match, cap), cap)
        return min(count[0], cap)

    def _others(self, term: terms.Term) -> tuple[list[str], list[str]]:
        """A word's other inflections and its stems in the other languages, as FTS5
        strings, of which the vault may hold some (`held`)."""
        word = term.words[0]
        others = [terms.quote(f) for f in self.stemmer.forms(word)[1:]]
        stems = [f"{STEMS}{terms.quote(lang + s)}" for lang, s in self.stems(word)]
        return others, stems

    def stems(self, word: str) -> list[tuple[str, str]]:
        """A word's stems in the other languages (the query's, or all of them)."""
        return self.table.stems.of_word(word, self.languages)[:MAX_STEMS]


def any_of(resolved: Sequence[Resolved]) -> str:
    """An FTS5 string that matches a page holding any of these terms."""
    return " OR ".join(r.match or "" for r in resolved)


def names_hold(
    resolved: Resolved, starts: list[str], names: str, folded: str, tokens: list[str]
) -> bool:
    """Whether a page's names (title and aliases; `folded`, and the words of that) hold
    a term: each of its words as the start of a word of theirs, about as the tokenizer
    would find it."""
    if not names or not starts:
        return False
    if resolved.term.symbol is not None:
        return resolved.term.symbol in names.lower()
    for start in starts:
        if terms.is_cjk(start[:1]):
            if start not in folded:
                return False
        elif not any(t.startswith(start) for t in tokens):
            return False
    return True


NAME_WORD = re.compile(r"[^\W_]+")  # a word of a page's names, as `names_hold` takes them
