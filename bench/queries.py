"""Engine time of `search` over the synthetic vaults, for queries of every kind.

    python bench/queries.py [--sizes 10000,100000] [--json OUT]

For each size the cached vault in `bench/.vaults/<size>/` (made by `bench/generate.py`
if missing) is opened in this process, indexed if needed, and asked a fixed set of
queries drawn from its own text: questions in loose English around its most common
words, sets of words that are in nearly every page, rare words, a rare word among
common ones, phrases, prefixes, CJK, Cyrillic and Greek words. The whole set is asked
once to warm up (after a full collection of what indexing left), then once more, each
call timed with `time.perf_counter`. Prints the
median and p99 per kind of query and for all of them, with the machine's load.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED = 7
PER_KIND = 30
QUESTION_FORMS = (
    "how do I {a} the {b}",
    "what is the {a} for",
    "where does the {a} keep its {b}",
    "why is my {a} not in the {b}",
    "how can I find a {a} by its {b}",
    "which {a} has the {b} of the {c}",
    "when should I use a {a} instead of a {b}",
    "what happens to the {a} when the {b} changes",
)
_WORD = re.compile(r"[a-z]{4,}")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{2,}")
_OTHER_SCRIPT = re.compile(r"[\u0370-\u03ff\u0400-\u04ff]{4,}")


def percentile(samples: list[float], share: float) -> float:
    """The nearest-rank percentile (`share` in 0-1) of `samples`."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def query_set(root: Path, pages: list[str]) -> dict[str, list[str]]:
    """The queries, by kind, drawn with a fixed seed from a sample of the vault's pages."""
    from bench.generate import COMMON_WORDS

    rng = random.Random(SEED)
    texts = [(root / rel).read_text(encoding="utf-8") for rel in rng.sample(pages, 300)]
    counts: dict[str, int] = {}
    for text in texts:
        for word in set(_WORD.findall(text.lower())):
            counts[word] = counts.get(word, 0) + 1
    rare = sorted(w for w, n in counts.items() if n == 1)
    common = list(COMMON_WORDS)
    cjk = sorted({m[:2] for t in texts for m in _CJK_RUN.findall(t)})
    other = sorted({m for t in texts for m in _OTHER_SCRIPT.findall(t)})

    def phrase() -> str:
        words = rng.choice(texts).lower().split()
        at = rng.randrange(len(words) - 1)
        return '"' + " ".join(w.strip(".,:;`[]()#!|") for w in words[at : at + 2]) + '"'

    return {
        "question": [
            rng.choice(QUESTION_FORMS).format(
                a=rng.choice(common), b=rng.choice(common), c=rng.choice(common)
            )
            for _ in range(PER_KIND)
        ],
        "common words": [" ".join(rng.sample(common, rng.randint(1, 4))) for _ in range(PER_KIND)],
        "rare word": [rng.choice(rare) for _ in range(PER_KIND)],
        "rare among common": [
            f"{rng.choice(common)} {rng.choice(rare)} {rng.choice(common)}" for _ in range(PER_KIND)
        ],
        "phrase": [phrase() for _ in range(PER_KIND)],
        "prefix": [rng.choice(common)[:4] for _ in range(PER_KIND // 2)]
        + [rng.choice(rare)[:4] for _ in range(PER_KIND // 2)],
        "cjk and other scripts": [rng.choice(cjk) for _ in range(PER_KIND // 2)]
        + [rng.choice(other) for _ in range(PER_KIND // 2)],
    }


def run_size(size: int, cache: Path) -> dict[str, Any]:
    from bench import vaults
    from lore_mcp import vault_ops as engine

    prepared = vaults.prepare(cache, size, 42)
    started = time.perf_counter()
    opened = engine.open_vault(prepared.root)
    opened_s = time.perf_counter() - started
    opened.index.upkeep_done()  # a merge of the search index after a first index: not timed
    # Indexing runs with the cycle collector off; its first full collection afterwards
    # walks every object the vault holds and would land in some query's time.
    gc.collect()
    try:
        kinds = query_set(prepared.root, prepared.pages)
        for queries in kinds.values():  # warm-up
            for query in queries:
                engine.search(opened, query)
        timings: dict[str, list[float]] = {}
        for kind, queries in kinds.items():
            samples = timings.setdefault(kind, [])
            for query in queries:
                start = time.perf_counter()
                engine.search(opened, query)
                samples.append((time.perf_counter() - start) * 1000)
    finally:
        opened.close()
    every = [ms for samples in timings.values() for ms in samples]
    rows = {kind: _summary(samples) for kind, samples in timings.items()} | {"all": _summary(every)}
    return {"pages": size, "open_s": round(opened_s, 2), "load": os.getloadavg(), "kinds": rows}


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "queries": len(samples),
        "median_ms": round(statistics.median(samples), 2),
        "p99_ms": round(percentile(samples, 0.99), 2),
        "max_ms": round(max(samples), 2),
    }


def main(argv: list[str] | None = None) -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description="Engine time of search, per kind of query.")
    parser.add_argument("--sizes", default="10000,100000", help="vault sizes, comma-separated")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".vaults")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        result = run_size(size, args.cache)
        results.append(result)
        load = ", ".join(f"{x:.2f}" for x in result["load"])
        print(f"{size} pages (opened in {result['open_s']} s; load average {load})")
        print(f"  {'queries':<24}{'n':>5}{'median ms':>11}{'p99 ms':>9}{'max ms':>9}")
        for kind, row in result["kinds"].items():
            print(
                f"  {kind:<24}{row['queries']:>5}{row['median_ms']:>11}"
                f"{row['p99_ms']:>9}{row['max_ms']:>9}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
