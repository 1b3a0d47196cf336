"""Benchmark lore-mcp end to end:

    python bench/run.py [--sizes 1000,10000,100000] [--calls 200] [--starts N]
                        [--out bench/results/NAME.json]

For each size: generate (or reuse) a synthetic vault in `bench/.vaults/<size>/`, then
through the real stdio server and the SDK's client measure the cold start (no `.lore/`)
and the warm start (index present, nothing changed) to the first answered `read_page`,
the per-call round trips in the last warm session, the server's peak RSS, the same calls
through a bare JSON-RPC client and in process against the engine (`lore_mcp.vault_ops`), and
the floor: the same calls through the SDK's client against a server that replays the
recorded answers without doing any work (`bench/sdkfloor.py`), made call by call beside
the real server, bare FTS5 inserts and plain writes of the same pages. The per-call
targets judge what lore-mcp adds over that floor (see `bench/report.py`). Prints a table
per size and writes every figure as JSON. Exits 0 whatever the figures; non-zero only
when a measurement could not run. The work is in `bench/runner.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    if str(ROOT) not in sys.path:  # `python bench/run.py` puts bench/, not the repo, first
        sys.path.insert(0, str(ROOT))
    from bench.runner import main as run

    return run(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
