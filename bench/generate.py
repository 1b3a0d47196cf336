"""Deterministic synthetic vaults for the benchmarks.

`generate(root, pages, seed)` writes `pages` Markdown files of 1-4 KB under `root`:
seven top-level folders with six subfolders each (49 folders, plus the root), titles with spaces
and mixed case (a few stems repeated in other folders, so some bare links are
ambiguous), 2-8 `[[links]]` a page in every form (bare title, folder/title, `|alias`,
`#heading`, `![[embed]]`), about 10% of them to pages that do not exist (placeholders),
headings, lists, fenced code holding `[[not links]]`, inline code, and on about 5% of
the pages a CJK, Cyrillic or Greek paragraph. The same seed gives the same bytes.

    python bench/generate.py --pages 10000 --out /tmp/vault
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

GENERATOR_VERSION = 1
MIN_BYTES = 1024
MAX_BYTES = 4096
UNRESOLVED_SHARE = 0.10
NON_LATIN_SHARE = 0.05
DUPLICATE_STEM_SHARE = 0.02

AREAS = ("Projects", "Research Notes", "People", "Meetings", "Reference", "Ideas", "Daily Log")
SUBFOLDERS_PER_AREA = 6
COMMON_WORDS = (
    "memory", "index", "graph", "search", "link", "page", "vault", "note", "agent", "server",
    "context", "session", "query", "title", "folder", "backlink", "heading", "placeholder",
)  # fmt: skip
ACCENTED_WORDS = ("Café", "Über", "Señal", "Øresund", "Ålesund", "Déjà", "Mañana", "Straße")
CYRILLIC_WORDS = (
    "память", "ссылка", "страница", "поиск", "граф", "заметка", "знание", "индекс",
    "хранилище", "связь", "документ", "вопрос", "ответ", "агент",
)  # fmt: skip
GREEK_WORDS = (
    "μνήμη", "σύνδεσμος", "σελίδα", "αναζήτηση", "γράφος", "σημείωση", "γνώση",
    "ευρετήριο", "λόγος", "κόσμος", "ερώτηση", "απάντηση",
)  # fmt: skip
CJK_CHARS = (
    "記憶索引連結頁面検索図書館知識整理保存削除名前変更文章段落見出日本語中文學習研究計画"
    "会議録問題解決方法設計実装試験結果報告資料管理時間空間世界言葉思考長期短期"
)
KANA = "のはにをがでともへやからまで"
_ONSETS = (*"bcdfghjklmnprstvwz", "br", "ch", "cl", "dr", "fl", "gr", "pl", "qu", "sh", "st", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "x", "nd", "st", "rk")
_LINK_PHRASES = ("See {}.", "Related: {}.", "{} explains the why.", "This builds on {}.", "Cf. {}.")
_CODE_LANGS = ("python", "bash", "json", "text", "")


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    folder: str  # "" for the vault root, else "Area" or "Area/Sub"

    @property
    def rel_path(self) -> str:
        return f"{self.folder}/{self.title}.md" if self.folder else f"{self.title}.md"

    @property
    def full_name(self) -> str:
        return self.rel_path[:-3]


def key(title: str) -> str:
    """The slug of a generated title (letters and single spaces only)."""
    return "-".join(title.lower().split())


class _Vault:
    """The random choices behind one vault; everything comes from one `random.Random`."""

    def __init__(self, pages: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = self._vocabulary(4000)
        self.cum = list(accumulate(1.0 / (rank + 1) for rank in range(len(self.words))))
        self.sentences = [self._sentence() for _ in range(20_000)]
        self.headings = [self._phrase(1, 3) for _ in range(300)]
        self.folders = self._folders()
        self.pages = self._pages(pages)
        self.placeholders = self._placeholders(max(8, pages // 25))

    # -- names ----------------------------------------------------------------------------

    def _vocabulary(self, size: int) -> list[str]:
        rng, seen = self.rng, set(COMMON_WORDS)
        words = list(COMMON_WORDS)
        while len(words) < size:
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(1, 3))
            ) + rng.choice(_CODAS)
            if len(word) >= 3 and word not in seen:
                seen.add(word)
                words.append(word)
        return words

    def _word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self.cum)[0]

    def _pick(self, seq: Sequence[T]) -> T:
        """`rng.choice`, a little faster (the generator's hot path)."""
        return seq[int(self.rng.random() * len(seq))]

    def _int(self, low: int, high: int) -> int:
        """`rng.randint`, a little faster."""
        return low + int(self.rng.random() * (high - low + 1))

    def _cased(self, word: str) -> str:
        roll = self.rng.random()
        if roll < 0.6:
            return word.capitalize()
        return word.upper() if roll < 0.7 and len(word) <= 4 else word

    def _phrase(self, low: int, high: int) -> str:
        return " ".join(self._cased(self._word()) for _ in range(self.rng.randint(low, high)))

    def _folders(self) -> list[str]:
        folders = [""]
        for area in AREAS:
            folders.append(area)
            subs: set[str] = set()
            while len(subs) < SUBFOLDERS_PER_AREA:
                subs.add(self._phrase(1, 2).title())
            folders += [f"{area}/{sub}" for sub in sorted(subs)]
        return folders

    def _title(self) -> str:
        rng = self.rng
        words = [self.words[rng.randrange(len(self.words))] for _ in range(rng.randint(2, 3))]
        title = " ".join(self._cased(w) for w in words)
        if rng.random() < 0.01:
            title = f"{rng.choice(ACCENTED_WORDS)} {title}"
        return title

    def _pages(self, count: int) -> list[Page]:
        rng, pages = self.rng, list[Page]()
        taken: set[str] = set()  # stem keys: every new title is unique in the vault...
        placed: set[tuple[str, str]] = set()  # ...and a repeated one is unique in its folder
        sub_folders = [f for f in self.folders if "/" in f]
        for _ in range(count):
            roll = rng.random()
            folder = (
                ""
                if roll < 0.02
                else rng.choice(AREAS)
                if roll < 0.2
                else sub_folders[rng.randrange(len(sub_folders))]
            )
            if pages and rng.random() < DUPLICATE_STEM_SHARE:
                twin = pages[rng.randrange(len(pages))]
                if (folder, key(twin.title)) not in placed:
                    placed.add((folder, key(twin.title)))
                    pages.append(Page(twin.title, folder))
                    continue
            title = self._title()
            while key(title) in taken:
                title = self._title()
            taken.add(key(title))
            placed.add((folder, key(title)))
            pages.append(Page(title, folder))
        return pages

    def _placeholders(self, count: int) -> list[str]:
        taken = {key(p.title) for p in self.pages}
        names: list[str] = []
        while len(names) < count:
            name = self._phrase(2, 3)
            if key(name) not in taken:
                taken.add(key(name))
                names.append(name)
        return names

    # -- text -----------------------------------------------------------------------------

    def _sentence(self) -> str:
        words = self.rng.choices(self.words, cum_weights=self.cum, k=self._int(6, 16))
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def _paragraph(self) -> str:
        rng = self.rng
        text = " ".join(rng.choices(self.sentences, k=self._int(2, 5)))
        if rng.random() < 0.25:
            code = f"[[{self._phrase(1, 2)}]]" if rng.random() < 0.5 else f"{self._word()}()"
            text += f" Inline code: `{code}` is not a link."
        return text

    def _code_block(self) -> str:
        rng = self.rng
        lines = [f"{self._word()}_{self._word()} = {self._int(0, 999)}" for _ in range(2)]
        if rng.random() < 0.8:
            lines.append(f'lookup("[[{self._phrase(1, 3)}]]")  # not a link')
        lines += [f"print({self._word()})" for _ in range(self._int(0, 3))]
        return "```" + self._pick(_CODE_LANGS) + "\n" + "\n".join(lines) + "\n```"

    def _non_latin(self) -> str:
        rng = self.rng
        if rng.random() < 0.5:
            chars = [self._pick(CJK_CHARS + KANA) for _ in range(self._int(40, 120))]
            for at in range(self._int(8, 20), len(chars), self._int(10, 25)):
                chars[at] = "。"
            return "".join(chars) + "。"
        pool = CYRILLIC_WORDS if rng.random() < 0.5 else GREEK_WORDS
        return " ".join(self._pick(pool) for _ in range(self._int(15, 40))).capitalize() + "."

    def _link(self) -> str:
        rng = self.rng
        if rng.random() < UNRESOLVED_SHARE:
            name = self.placeholders[int(len(self.placeholders) * rng.random() ** 2)]
            return f"[[{name}]]" if rng.random() < 0.8 else f"[[{name}|{self._word()}]]"
        page = self.pages[int(len(self.pages) * rng.random() ** 2)]  # a few pages are hubs
        form = rng.random()
        if form < 0.45:
            return f"[[{page.title.lower() if rng.random() < 0.1 else page.title}]]"
        if form < 0.65:
            return f"[[{page.full_name}]]"
        if form < 0.80:
            return f"[[{page.title}|{self._word()} {self._word()}]]"
        if form < 0.90:
            return f"[[{page.title}#{self._pick(self.headings)}]]"
        return f"![[{page.title}]]"

    def _block(self) -> str:
        roll = self.rng.random()
        if roll < 0.2:
            return f"{'#' * self._int(2, 3)} {self._pick(self.headings)}"
        if roll < 0.3:
            return "\n".join(f"- {self._pick(self.sentences)}" for _ in range(3))
        if roll < 0.4:
            return self._code_block()
        return self._paragraph()

    def page_text(self, page: Page) -> str:
        rng = self.rng
        links = [
            " " + self._pick(_LINK_PHRASES).format(self._link()) for _ in range(self._int(2, 8))
        ]
        budget = MAX_BYTES - sum(len(link.encode()) for link in links) - 1
        target = self._int(MIN_BYTES, budget - 600)
        blocks = [f"# {page.title}", self._paragraph()]
        if rng.random() < NON_LATIN_SHARE:
            blocks.append(self._non_latin())
        size = sum(len(b.encode()) + 2 for b in blocks)
        while size < target:
            block = self._block()
            if size + len(block.encode()) + 2 <= budget:  # else draw a smaller one
                blocks.append(block)
                size += len(block.encode()) + 2
        prose = [i for i, b in enumerate(blocks) if i and not b.startswith(("#", "```", "-"))]
        for link in links:
            blocks[self._pick(prose)] += link
        return "\n\n".join(blocks) + "\n"


def generate(root: Path, pages: int, seed: int = 42) -> None:
    """Write a synthetic vault of `pages` pages into `root` (created; must be empty)."""
    if pages < 1:
        raise ValueError("pages must be at least 1")
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        raise ValueError(f"{root} is not empty; generate into a new or empty folder")
    vault = _Vault(pages, seed)
    for folder in vault.folders:
        (root / folder).mkdir(parents=True, exist_ok=True)
    base = str(root)
    for page in vault.pages:
        with open(f"{base}/{page.rel_path}", "wb") as out:
            out.write(vault.page_text(page).encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a deterministic synthetic vault.")
    parser.add_argument("--pages", type=int, default=1000, help="how many pages (default 1000)")
    parser.add_argument("--out", type=Path, required=True, help="a new or empty folder")
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    args = parser.parse_args(argv)
    try:
        generate(args.out, args.pages, args.seed)
    except ValueError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.pages} pages to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
