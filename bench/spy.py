"""Where the server's time goes: sample it with py-spy (all threads) and list the top
functions.

    python bench/spy.py --size 10000 cold             # spawn -> first read_page, no .lore/
    python bench/spy.py --size 10000 warm             # the same with the index present
    python bench/spy.py --size 10000 search_titles    # that call, --calls times, warm server

Any tool the runner measures can be named (`save_page` runs both the new-page and the
overwrite calls). Needs `pip install py-spy` and permission to trace (Linux: root, or
ptrace_scope 0). The raw stacks are kept next to the results for a flame graph.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python bench/spy.py` puts bench/, not the repo, first
    sys.path.insert(0, str(ROOT))

from bench import vaults  # noqa: E402
from bench.measure import server_env  # noqa: E402
from bench.rawrpc import RawServer, server_command  # noqa: E402

PHASES = ("cold", "warm", "read_page", "search", "search_titles", "get_backlinks", "get_graph")


def main() -> int:
    args = _parser().parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        print("spy: py-spy is not installed here (pip install py-spy)", file=sys.stderr)
        return 2
    out: Path = args.out or ROOT / "bench" / "results" / f"spy-{args.size}-{args.phase}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    vault = vaults.prepare(ROOT / "bench" / ".vaults", args.size, 42)
    workload = vaults.build_workload(vault, args.calls, 42)
    sampler = [spy, "record", "--format", "raw", "--rate", str(args.rate), "-o", str(out)]
    if args.idle:
        sampler.append("--idle")
    if args.phase in ("cold", "warm"):
        _profile_start(vault.root, workload.probe, args.phase == "cold", sampler)
    else:
        vaults.set_clean(vault.root, False)
        try:
            _profile_calls(vault.root, workload, args.phase, sampler)
        finally:
            vaults.restore(vault, workload)
            vaults.set_clean(vault.root, True)
    print(summarise(out, args.top))
    return 0


def _profile_start(vault: Path, probe: str, cold: bool, sampler: list[str]) -> None:
    if cold:
        shutil.rmtree(vault / ".lore", ignore_errors=True)
    server = RawServer([*sampler, "--", *server_command(vault)], server_env(), sys.stderr)
    began = time.perf_counter()
    server.initialize()
    server.call("read_page", {"slug": probe})
    print(f"spawn -> read_page answer under the sampler: {time.perf_counter() - began:.2f} s")
    server.close(timeout=None)  # py-spy writes its file when the server exits


def _profile_calls(vault: Path, workload: vaults.Workload, phase: str, sampler: list[str]) -> None:
    plan = [(label, tool, calls) for label, tool, calls in workload.calls if tool == phase]
    if not plan:
        raise SystemExit(f"spy: no calls of {phase!r}; use one of {', '.join(PHASES)}, save_page")
    server = RawServer(server_command(vault), server_env(), sys.stderr)
    try:
        server.initialize()
        server.call("read_page", {"slug": workload.probe})  # the index pass is over
        for _, tool, calls in plan:
            for args in calls[:3]:
                server.call(tool, args)
        recorder = subprocess.Popen([*sampler, "--pid", str(server.pid)])
        time.sleep(1.0)  # let py-spy attach before the calls start
        began = time.perf_counter()
        count = 0
        for _, tool, calls in plan:
            for args in calls:
                server.call(tool, args)
                count += 1
        print(f"{count} calls under the sampler in {time.perf_counter() - began:.2f} s")
        recorder.send_signal(signal.SIGINT)
        recorder.wait(60)
    finally:
        server.close()


def summarise(raw: Path, top: int) -> str:
    """The functions with the most samples on top of the stack (self) and anywhere in
    it (inclusive), as shares of all samples."""
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_function(frame) for frame in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            anywhere[name] += count
    if not total:
        return f"no samples in {raw}"
    lines = [f"{total} samples ({raw})", "", "self %  function"]
    lines += [f"{100 * n / total:6.1f}  {name}" for name, n in own.most_common(top)]
    lines += ["", "incl %  function"]
    lines += [f"{100 * n / total:6.1f}  {name}" for name, n in anywhere.most_common(top)]
    return "\n".join(lines)


def _function(frame: str) -> str:
    """`func (path/to/file.py:12)` -> `func (to/file.py)`: grouped by function."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rpartition(":")[0] or where.rstrip(")")
    for marker in ("site-packages/", "src/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python bench/spy.py", description=__doc__)
    parser.add_argument("phase", help=f"one of {', '.join(PHASES)}, save_page")
    parser.add_argument("--size", type=int, default=10_000, help="vault size (default 10000)")
    parser.add_argument("--calls", type=int, default=200, help="calls to sample (default 200)")
    parser.add_argument("--rate", type=int, default=250, help="samples a second (default 250)")
    parser.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    parser.add_argument("--idle", action="store_true", help="also sample waiting threads")
    parser.add_argument("--out", type=Path, help="where the raw stacks go")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
