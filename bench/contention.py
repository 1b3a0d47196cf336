"""Two servers and a `lore save` on one vault while the first server builds its index:

    python bench/contention.py [--pages 30000] [--vault PATH]

Generates a vault (or uses PATH, its `.lore/` removed so the first index is cold),
starts server A (the real `lore-mcp` over stdio, through the SDK's client), and while
A's first index holds the write lock starts server B and a `lore save`. Prints how long
B took to answer `initialize` and its first tool call, what became of the save and
when, whether the index file was ever replaced, and whether each server then sees the
other's writes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
LORE = ["-c", "from lore_mcp.cli import lore_main; lore_main()"]


def server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lore_mcp", "--vault", str(root), "--log-level", "WARNING"],
        env=dict(os.environ),
    )


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert result.is_error is False, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def measure(root: Path) -> None:
    db = root / ".lore" / "cache" / "lore.db"
    started = time.monotonic()
    async with Client(server(root), mode="legacy") as first:
        print(f"A answered initialize in {time.monotonic() - started:.2f} s (indexing now)")
        while not db.exists():
            await anyio.sleep(0.05)
        await anyio.sleep(1.0)
        inode = db.stat().st_ino
        saving = subprocess.Popen(
            [sys.executable, *LORE, "--vault", str(root), "save", "From The CLI"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert saving.stdin is not None and saving.stderr is not None
        saving.stdin.write("saved by lore save\n")
        saving.stdin.close()
        begun = time.monotonic()
        save_ended: list[float] = []

        async def wait_for_save() -> None:
            await anyio.to_thread.run_sync(saving.wait)
            save_ended.append(time.monotonic())

        async with (
            anyio.create_task_group() as tasks,
            Client(server(root), mode="legacy") as second,
        ):
            tasks.start_soon(wait_for_save)
            print(f"B answered initialize in {time.monotonic() - begun:.2f} s")
            shape = await tool(second, "get_graph")
            print(
                f"B answered its first call in {time.monotonic() - begun:.2f} s "
                f"({shape['shape']['pages']} pages)"
            )
            await tool(first, "save_page", slug="From A", content="[[From B]]")
            await tool(second, "save_page", slug="From B", content="[[From A]]")
            a_sees = await tool(first, "read_page", slug="From B")
            b_sees = await tool(second, "read_page", slug="From A")
            print(
                "each sees the other's page:",
                not a_sees["is_placeholder"] and not b_sees["is_placeholder"],
            )
            while not save_ended:
                await anyio.sleep(0.1)
            said = saving.stderr.read().strip().splitlines()
            saving.stderr.close()
            print(
                f"lore save exited {saving.returncode} after {save_ended[0] - begun:.1f} s: "
                f"{said[-1] if said else 'no message'}"
            )
        print("index file replaced:", db.stat().st_ino != inode)
    print(f"A's first index took about {time.monotonic() - started:.1f} s in all")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=30_000)
    parser.add_argument("--vault", type=Path)
    args = parser.parse_args()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.generate import generate

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        if args.vault is not None:
            shutil.copytree(args.vault, root, ignore=shutil.ignore_patterns(".lore"))
        else:
            began = time.monotonic()
            generate(root, args.pages)
            print(f"generated {args.pages} pages in {time.monotonic() - began:.1f} s")
        anyio.run(measure, root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
