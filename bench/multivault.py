"""Several vaults behind one server: what the extra vaults cost.

Generates five vaults of `--pages` pages each (cached under `--cache`, indexed once
beforehand, so every figure is of a warm index), then, for a server of 1 and of 5
vaults (a real `lore-mcp` stdio process): the time from spawning it to `initialize`
answered, to the first call answered, the median of `--calls` read_page calls to the
default vault, and, with 5 vaults, the first call to the last vault (its lazy open and
first index pass) and the median per call to it after that.

    python -m bench.multivault --pages 10000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from bench.generate import generate
from lore_mcp import vault_ops

NAMES = ("one", "two", "three", "four", "five")


def prepare(cache: Path, pages: int) -> list[Path]:
    """Five generated vaults (seeds 1-5), each indexed once."""
    roots = []
    for seed, name in enumerate(NAMES, 1):
        root = cache / f"multivault-{pages}-{name}"
        if not (root / ".done").exists():
            root.mkdir(parents=True, exist_ok=True)
            generate(root, pages, seed)
            (root / ".done").write_text("")
        vault_ops.open_vault(root).close()  # a warm index
        roots.append(root)
    return roots


async def _read_ms(client: Client, vault: str, calls: int) -> list[float]:
    took = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool("list_pages", {"limit": 5, "vault": vault})
        took.append((time.perf_counter() - start) * 1000)
        assert not result.is_error
    return took


async def measure(roots: list[Path], calls: int) -> dict[str, float]:
    args = ["-m", "lore_mcp", "--no-watch"]
    for name, root in zip(NAMES, roots, strict=False):
        args += ["--vault", f"{name}={root}"]
    # The server runs the lore_mcp this process imports (PYTHONPATH and all).
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    start = time.perf_counter()
    figures: dict[str, float] = {}
    async with Client(params, mode="legacy") as client:
        figures["initialize_ms"] = (time.perf_counter() - start) * 1000
        await client.call_tool("list_pages", {"limit": 5})
        figures["first_call_ms"] = (time.perf_counter() - start) * 1000
        figures["per_call_ms"] = statistics.median(await _read_ms(client, NAMES[0], calls))
        if len(roots) > 1:
            last = NAMES[len(roots) - 1]
            opened = time.perf_counter()
            await client.call_tool("list_pages", {"limit": 5, "vault": last})
            figures["first_call_other_ms"] = (time.perf_counter() - opened) * 1000
            figures["per_call_other_ms"] = statistics.median(await _read_ms(client, last, calls))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--cache", type=Path, default=Path(__file__).parent / ".vaults")
    args = parser.parse_args(argv)
    roots = prepare(args.cache, args.pages)
    for count in (1, 5):
        figures = anyio.run(measure, roots[:count], args.calls)
        shown = ", ".join(f"{key} {value:.1f}" for key, value in figures.items())
        print(f"{count} vault(s) of {args.pages} pages: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
