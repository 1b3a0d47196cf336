"""Unlinked mentions: where a page's name appears as words in other pages' prose, not
in code, links or frontmatter. Read with the one link parser (`links.scan`), so what
counts as prose is what counts for links. Pure functions, no I/O."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

from lore_mcp import markdown
from lore_mcp.links import scan

# Scripts written without spaces between words: no word boundary is required next to them.
_UNSPACED = (  # Thai, Lao, Myanmar, Khmer, kana, CJK ideographs, Hangul
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_WORD = f"[^\\W_{_UNSPACED}]"


def _mention_pattern(phrases: Iterable[str]) -> re.Pattern[str] | None:
    bodies = []
    for phrase in phrases:
        words = phrase.split()
        if not words:
            continue
        left = f"(?<!{_WORD})" if re.match(_WORD, words[0][0]) else ""
        right = f"(?!{_WORD})" if re.match(_WORD, words[-1][-1]) else ""
        bodies.append(left + r"\s+".join(re.escape(word) for word in words) + right)
    return re.compile("|".join(bodies), re.IGNORECASE) if bodies else None


def find_mentions(text: str, *phrases: str) -> list[tuple[int, str]]:
    """Lines where one of `phrases` appears as words in prose (not in code, links or
    frontmatter), in order."""
    pattern = _mention_pattern(phrases)
    if pattern is None or not pattern.search(text):
        return []
    page = scan(text, full=True)
    masked = list(text)
    for start, end in page.opaque:
        masked[start:end] = re.sub(r"[^\r\n]", " ", text[start:end])
    prose = "".join(masked)
    starts = markdown.line_starts(text)
    lines = markdown.source_lines(text)
    found = {
        bisect_right(starts, m.start())
        for start, end in page.regions
        for m in pattern.finditer(prose, start, end)
    }
    return [(n, lines[n - 1]) for n in sorted(found)]
