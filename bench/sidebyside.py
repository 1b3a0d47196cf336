"""lore-mcp and basic-memory side by side: the same vault, the same client, the same calls.

    python bench/sidebyside.py --vault DIR --basic-memory BM [--project NAME] [--calls N]

`DIR` is a vault (for example `bench/.vaults/1000`, made by `bench/generate.py`) that
basic-memory has indexed as project `NAME` (`basic-memory project add NAME DIR`; its
config dir is whatever `BASIC_MEMORY_CONFIG_DIR` says, passed on to it). `BM` is the
`basic-memory` executable (its wheel needs Python 3.12, so it lives in a virtual
environment of its own). Both servers run over stdio under the SDK's client; each is
asked the same searches (questions, words in nearly every page, rare words drawn from
the vault's text, as `bench/queries.py` draws them) and reads of the same pages, after a
warm-up, and each call's round trip is timed. lore-mcp keeps its index in the vault's
`.lore/` folder, which basic-memory leaves alone. Prints the median and p99 per call and
server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("question", "common words", "rare word")


def _lore(vault: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lore_mcp", "--vault", str(vault), "--log-level", "WARNING"],
        env=dict(os.environ),
    )


def _basic_memory(command: str) -> StdioServerParameters:
    return StdioServerParameters(command=command, args=["mcp"], env=dict(os.environ))


async def _timed(
    server: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]
) -> list[float]:
    async with Client(server, mode="legacy") as client:
        for name, arguments in calls[:10]:  # warm-up
            await client.call_tool(name, arguments)
        samples = []
        for name, arguments in calls:
            started = time.perf_counter()
            result = await client.call_tool(name, arguments)
            samples.append((time.perf_counter() - started) * 1000)
            if result.is_error:
                raise SystemExit(f"{name} {arguments} failed: {result.content}")
        return samples


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):7.2f} ms  p99 {p99:7.2f} ms  (n={len(ordered)})"


async def run(vault: Path, command: str, project: str, calls: int) -> None:
    from bench.queries import query_set

    pages = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    kinds = query_set(vault, pages)
    queries = [q for kind in KINDS for q in kinds[kind]][:calls]
    reads = [p.removesuffix(".md") for p in pages[:: max(1, len(pages) // calls)]][:calls]
    lore_calls = [("search", {"query": q}) for q in queries]
    lore_reads = [("read_page", {"slug": p}) for p in reads]
    bm_calls = [
        ("search_notes", {"query": q, "project": project, "search_type": "text"}) for q in queries
    ]
    bm_reads = [("read_note", {"identifier": p, "project": project}) for p in reads]
    for label, server, searches, readings in (
        ("lore-mcp", _lore(vault), lore_calls, lore_reads),
        ("basic-memory", _basic_memory(command), bm_calls, bm_reads),
    ):
        print(f"{label:13} search     {_summary(await _timed(server, searches))}")
        print(f"{label:13} read       {_summary(await _timed(server, readings))}")


def main() -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description="lore-mcp and basic-memory, same calls.")
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--basic-memory", required=True, help="the basic-memory executable")
    parser.add_argument("--project", default="bench")
    parser.add_argument("--calls", type=int, default=90)
    args = parser.parse_args()
    anyio.run(run, args.vault.resolve(), args.basic_memory, args.project, args.calls)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
