"""The cached benchmark vaults and the calls the runner makes against them.

A vault lives in `bench/.vaults/<size>/` with a marker file naming the generator
version, the seed and whether the vault is pristine. The runner's writes go to one
folder of new pages plus overwrites of existing pages; `restore` puts the original
bytes back and removes the new pages, so the next run starts from the same files.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.generate import GENERATOR_VERSION, generate
from lore_mcp.slugs import slug_from_path

MARKER = ".bench-vault.json"
WRITES_FOLDER = "Bench Writes"
_WORD = re.compile(r"[A-Za-z]{4,}")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{2,}")
_OTHER_SCRIPT = re.compile(r"[\u0370-\u03ff\u0400-\u04ff]{4,}")

Args = dict[str, Any]


@dataclass
class Vault:
    root: Path
    pages: list[str]  # relative paths of the generated pages, sorted
    generated_s: float | None  # None when the cached copy was reused
    total_bytes: int
    index_bytes: int = 0  # the size of `.lore/`, once a server has built it


def prepare(cache: Path, size: int, seed: int) -> Vault:
    """The vault of `size` pages, generated unless a pristine cached copy exists."""
    root = cache / str(size)
    wanted = {"generator": GENERATOR_VERSION, "seed": seed, "pages": size}
    generated: float | None = None
    if _marker(root) != wanted | {"clean": True}:
        if root.exists():
            shutil.rmtree(root)
        started = time.perf_counter()
        generate(root, size, seed)
        generated = time.perf_counter() - started
        _write_marker(root, wanted | {"clean": True})
    pages = page_files(root)
    total = sum((root / rel).stat().st_size for rel in pages)
    return Vault(root=root, pages=pages, generated_s=generated, total_bytes=total)


def _marker(root: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _write_marker(root: Path, marker: dict[str, Any]) -> None:
    (root / MARKER).write_text(json.dumps(marker, sort_keys=True) + "\n", encoding="utf-8")


def set_clean(root: Path, clean: bool) -> None:
    """Mark the cached vault as pristine or as being written to (regenerated if a run
    dies before `restore`)."""
    marker = _marker(root) or {}
    _write_marker(root, marker | {"clean": clean})


def page_files(root: Path) -> list[str]:
    """Every `*.md` under `root` outside dot-folders, as sorted relative paths."""
    found: list[str] = []
    base = len(str(root)) + 1
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(folder, f)[base:] for f in files if f.endswith(".md")]
    return sorted(found)


@dataclass
class Workload:
    """The arguments of every measured call, drawn once per vault from a fixed seed."""

    probe: str  # the slug the start-up measurements read
    calls: list[tuple[str, str, list[Args]]]  # (label, tool, arguments of each call)
    originals: dict[str, bytes] = field(default_factory=dict)  # overwritten pages


def build_workload(vault: Vault, calls: int, seed: int) -> Workload:
    rng = random.Random(seed)
    slugs = [slug_from_path(rel) for rel in vault.pages]
    sample = rng.sample(vault.pages, min(len(vault.pages), 400))
    texts = {rel: (vault.root / rel).read_text(encoding="utf-8") for rel in sample}
    words: list[str] = sorted({w for text in texts.values() for w in _WORD.findall(text)})
    cjk: list[str] = sorted({m[:2] for text in texts.values() for m in _CJK_RUN.findall(text)})
    other: list[str] = sorted({m for t in texts.values() for m in _OTHER_SCRIPT.findall(t)})
    overwritten = rng.sample(vault.pages, min(len(vault.pages), calls))
    originals = {rel: (vault.root / rel).read_bytes() for rel in overwritten}

    def pick(pool: list[str]) -> list[str]:
        return [rng.choice(pool) for _ in range(calls)]

    def query() -> str:
        roll = rng.random()
        if roll < 0.1 and cjk:
            return rng.choice(cjk)
        if roll < 0.15 and other:
            return rng.choice(other)
        if roll < 0.35:
            return f"{rng.choice(words)} {rng.choice(words)}"
        return rng.choice(words)

    def fragment() -> str:
        title = Path(rng.choice(vault.pages)).stem
        parts = title.split()
        roll = rng.random()
        if roll < 0.25:
            return title
        if roll < 0.5:
            return parts[0].lower()
        if roll < 0.75:
            return rng.choice(parts)[: rng.randint(3, 6)]
        return " ".join(parts[1:]) or title

    def content(title: str) -> str:
        targets = [Path(rel).stem for rel in rng.sample(vault.pages, min(4, len(vault.pages)))]
        links = " ".join(f"[[{t}]]" for t in targets[: rng.randint(2, 4)])
        if rng.random() < 0.2:
            links += f" [[Bench Missing {rng.randint(1, 50)}]]"
        body = " ".join(rng.choice(words) for _ in range(300))
        return f"# {title}\n\n{body[:1800]}\n\n## Links\n\nSee {links}.\n"

    new_pages = [f"{WRITES_FOLDER}/Bench Page {i:04d}" for i in range(calls)]
    plan: list[tuple[str, str, list[Args]]] = [
        ("read_page", "read_page", [{"slug": s} for s in pick(slugs)]),
        ("search", "search", [{"query": query()} for _ in range(calls)]),
        ("search_titles", "search_titles", [{"query": fragment()} for _ in range(calls)]),
        ("get_backlinks", "get_backlinks", [{"slug": s} for s in pick(slugs)]),
        ("get_graph depth 2", "get_graph", [{"slug": s, "depth": 2} for s in pick(slugs)]),
        (
            "save_page new",
            "save_page",
            [{"slug": name, "content": content(Path(name).name)} for name in new_pages],
        ),
        (
            "save_page overwrite",
            "save_page",
            [
                {"slug": slug_from_path(rel), "content": _edited(originals[rel], content("x"))}
                for rel in overwritten
            ],
        ),
    ]
    return Workload(probe=rng.choice(slugs), calls=plan, originals=originals)


def _edited(original: bytes, addition: str) -> str:
    """The page as it was plus a new section: same size class, a new hash, new links."""
    tail = addition.split("## Links", 1)[1]
    return original.decode("utf-8") + "\n## Edited" + tail


def restore(vault: Vault, workload: Workload) -> None:
    """Undo the runner's writes: original bytes back, new pages (and their folder) gone."""
    for rel, data in workload.originals.items():
        with open(vault.root / rel, "wb") as out:
            out.write(data)
    shutil.rmtree(vault.root / WRITES_FOLDER, ignore_errors=True)
