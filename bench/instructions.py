"""The instructions a first index and a search execute, counted by Valgrind: a figure
that stays the same when the machine's speed does not (on a shared machine it drifts by
a third within an hour, far more than most changes to the code).

    python bench/instructions.py [--size 10000] [--parse 2000] [--searches 300] [--src DIR]

Makes (or reuses) the synthetic vault `bench/.vaults/<size>/`, then runs, each under
`valgrind --tool=cachegrind --cache-sim=no` in a process of its own:

- `open`: a copy of the vault without its index opened in process (`open_vault`, a
  first index of every page, its writing thread's work included; no reader processes,
  whose work Valgrind would not count), less the same process without the open
  (Python and the imports);
- `parse`: the first `--parse` pages, read into memory first, parsed
  (`pagefile.parse`), less the same process without the parse;
- `search`: the `--searches` queries `bench/run.py` asks (its workload, seed 42) of a
  copy of the vault with its index (its upkeep done first), after as many others to
  warm up (seed 1042), less the same process without them.

Prints the three counts (`--searches 0` leaves the last out). `--src DIR` counts the code
of another checkout (its `src`), to compare two versions: the same run gives the same
count within 0.5 % (0.1 % for parsing, which runs in one thread). Needs `valgrind` on
PATH; the runs take about 50 times as long as without it (a minute or two each at 10k
pages).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Instructions of a first index, by Valgrind.")
    parser.add_argument("--size", type=int, default=10_000, help="vault size (default 10000)")
    parser.add_argument("--parse", type=int, default=2000, help="pages parsed (default 2000)")
    parser.add_argument("--searches", type=int, default=300, help="searches (default 300)")
    parser.add_argument("--src", type=Path, help="count the code of this src folder instead")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".vaults")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # what, vault, go/no
    args = parser.parse_args(argv)
    if args.child:
        what, vault, mode = args.child
        _child(what, Path(vault), mode == "go", args.parse)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH (apt-get install valgrind)", file=sys.stderr)
        return 2
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import vaults

    vault = vaults.prepare(args.cache, args.size, 42).root
    env = dict(os.environ)
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "vault"
        shutil.copytree(vault, copy, ignore=shutil.ignore_patterns(".lore"))
        opened = _count(env, "open", copy, "go", 0) - _count(env, "open", copy, "no", 0)
        parsed = _count(env, "parse", copy, "go", args.parse)
        parsed -= _count(env, "parse", copy, "no", args.parse)
        if args.searches > 0:
            indexed = Path(scratch) / "indexed"
            shutil.copytree(vault, indexed)  # with its index: no first index to count
            # Its upkeep done before counting, so that each count starts from the same index.
            settle = [sys.executable, __file__, "--child", "settle", str(indexed), "go"]
            subprocess.run(settle, env=env, check=True)
            searched = _count(env, "search", indexed, "go", args.searches)
            searched -= _count(env, "search", indexed, "no", args.searches)
    code = args.src or ROOT / "src"
    print(f"code: {code}")
    print(f"open_vault, a first index of {args.size:,} pages: {opened / 1e9:,.2f} G instructions")
    print(f"parse of {args.parse:,} pages in memory:{'':<12}{parsed / 1e6:,.0f} M instructions")
    if args.searches > 0:
        each = searched / args.searches / 1e6
        label = f"{args.searches} searches of {args.size:,} pages:"
        print(f"{label:<43}{each:,.2f} M instructions each")
    return 0


def _count(env: dict[str, str], what: str, vault: Path, mode: str, pages: int) -> int:
    """The instructions of one child run under cachegrind."""
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--parse",
        str(pages),
        "--child",
        what,
        str(vault),
        mode,
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found = _REFS.search(done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def _child(what: str, root: Path, go: bool, pages: int) -> None:
    """In a process under Valgrind: the work counted, or (not `go`) everything but it."""
    if what == "open":
        from lore_mcp.vault_ops import open_vault

        if go:  # no reader processes: Valgrind counts this process only
            open_vault(root, readers=0).close()
        return
    if what in ("search", "settle"):
        _search(root, go, pages if what == "search" else 0)
        return
    from lore_mcp.vault_ops.pagefile import parse

    paths = sorted(p for p in root.rglob("*.md") if ".lore" not in p.relative_to(root).parts)
    read = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in paths[:pages]]
    if go:
        for rel, data in read:
            parse(rel, data, len(data), 0)


def _search(root: Path, go: bool, count: int) -> None:
    """As many other searches to warm up, then (`go`) the benchmark's: each of its
    queries new to the process, as an agent's are (its words' forms and stems not
    looked up yet)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import vaults
    from lore_mcp.vault_ops import open_vault
    from lore_mcp.vault_ops.queries import search

    pages = vaults.Vault(root, vaults.page_files(root), None, 0)
    asked, other = (
        [args["query"] for name, _, calls in workload.calls if name == "search" for args in calls]
        for workload in (vaults.build_workload(pages, count, seed) for seed in (42, 1042))
    )
    vault = open_vault(root, readers=0)
    try:
        vault.index.upkeep_done()  # a merge of segments would be counted too
        for query in other:
            search(vault, query)
        if go:
            for query in asked:
                search(vault, query)
    finally:
        vault.close()


if __name__ == "__main__":
    raise SystemExit(main())
