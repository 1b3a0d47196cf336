"""The benchmark run behind `python bench/run.py`: every measurement for every size."""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shlex
import shutil
import statistics
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio

from bench import floors, measure, report, vaults

BENCH = Path(__file__).resolve().parent
SMALL = 10_000  # sizes up to this get three starts of each kind by default


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out: Path = args.out or BENCH / "results" / f"{stamp}.json"
    document: dict[str, Any] = {
        "command": shlex.join(["python", "bench/run.py", *argv]),
        "started": stamp,
        "machine": report.machine(),
        "seed": args.seed,
        "calls": args.calls,
        "sizes": [],
    }
    failed = False
    for size in args.sizes:
        starts = args.starts or (3 if size <= SMALL else 1)
        try:
            result = run_size(size, args.calls, starts, args.seed, args.cache)
        except Exception as exc:  # a measuring script reports and goes on
            traceback.print_exc()
            result = {"pages": size, "error": f"{type(exc).__name__}: {exc}"}
        failed = failed or "error" in result
        document["sizes"].append(result)
        document["machine"]["load_average_end"] = os.getloadavg()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
        if "figures" in result:
            print(report.table(result), end="\n\n", flush=True)
    print(f"figures written to {out}")
    return 1 if failed else 0


def run_size(size: int, calls: int, starts: int, seed: int, cache: Path) -> dict[str, Any]:
    """Every measurement for one vault size, as a JSON-ready dict."""
    digest = report.engine_digest()
    _say(f"{size} pages: preparing the vault in {cache / str(size)}")
    vault = vaults.prepare(cache, size, seed)
    workload = vaults.build_workload(vault, calls, seed)
    with (cache / f"{size}.server.log").open("w", encoding="utf-8") as log:
        runs = _sessions(vault, workload, starts, log, cache / f"{size}.answers.json")
    _say(f"{size} pages: the same calls in process")
    try:
        opened, local = measure.in_process(vault.root, workload.calls)
    finally:
        vaults.restore(vault, workload)
        vaults.set_clean(vault.root, True)
    _say(f"{size} pages: floors")
    result: dict[str, Any] = {
        "pages": size,
        "vault": {
            "path": str(vault.root),
            "bytes": vault.total_bytes,
            "index_bytes": vault.index_bytes,  # .lore/ after the cold starts
            "generated_s": vault.generated_s,
        },
        "cold": [vars(s) for s in runs.cold],
        "warm": [vars(s) for s in runs.warm],
        "calls": {
            label: {
                "stdio": report.summary(runs.stdio[label]),
                "beside_floor": report.summary(runs.beside.ours[label]),
                "sdk_floor": report.summary(runs.beside.floor[label]),
                "over_floor": report.summary(_differences(runs.beside, label)),
                "raw_stdio": report.summary(runs.raw[label]),
                "in_process": report.summary(local[label]),
            }
            for label, _, _ in workload.calls
            if all(label in timings for timings in (runs.stdio, runs.beside.ours, runs.raw, local))
        },
        "in_process_open_s": round(opened, 4),
        "floors": _floors(vault, calls)
        | {
            "ping_bare": report.summary(runs.raw[measure.PING]),
            "sdk_floor_start": vars(runs.beside.floor_start),
        },
    }
    if report.engine_digest() != digest:  # the sources changed while this size ran
        result["engine_changed_during_run"] = True
    result["engine_digest"] = digest
    result["figures"] = _figures(result)
    result["targets"] = report.check(result["figures"], size)
    errors = [str(s.error) for s in runs.cold + runs.warm if s.error]
    if errors:
        result["error"] = "a server start failed: " + "; ".join(errors)
    return result


@dataclass
class Sessions:
    """What the server sessions of one size measured."""

    cold: list[measure.Start]
    warm: list[measure.Start]
    stdio: dict[str, measure.Timings]  # the calls through the SDK's client
    raw: dict[str, measure.Timings]  # the same through a bare JSON-RPC client
    beside: measure.Paired  # the same through the SDK's client, beside bench/sdkfloor.py


def _sessions(
    vault: vaults.Vault, workload: vaults.Workload, starts: int, log: TextIO, answers: Path
) -> Sessions:
    """Cold starts, warm starts (the last one runs the calls and records the answers),
    the same calls through a bare client, then through the SDK's client again, to the
    server and, call by call beside it, to one that replays the recorded answers (the
    SDK's floor)."""
    session, size, count = measure.session, len(vault.pages), len(workload.calls[0][2])
    cold, warm = [], []
    for n in range(starts):
        _say(f"{size} pages: cold start {n + 1}/{starts}")
        shutil.rmtree(vault.root / ".lore", ignore_errors=True)
        cold.append(anyio.run(session, vault.root, workload.probe, log)[0])
    lore = vault.root / ".lore"
    vault.index_bytes = sum(f.stat().st_size for f in lore.rglob("*") if f.is_file())
    for n in range(starts - 1):
        _say(f"{size} pages: warm start {n + 1}/{starts}")
        warm.append(anyio.run(session, vault.root, workload.probe, log)[0])
    _say(f"{size} pages: warm start {starts}/{starts}, then {count} calls of each kind")
    recorded: measure.Answers = {}
    vaults.set_clean(vault.root, False)
    try:
        with_plan = functools.partial(session, plan=workload.calls, record=recorded)
        start, stdio = anyio.run(with_plan, vault.root, workload.probe, log)
        warm.append(start)
    finally:
        vaults.restore(vault, workload)
    _say(f"{size} pages: the same calls through a bare JSON-RPC client")
    try:
        raw = measure.raw_calls(vault.root, workload.probe, log, workload.calls)
    finally:
        vaults.restore(vault, workload)
    _say(f"{size} pages: the same calls, each beside a server that does no work")
    answers.write_text(json.dumps(recorded, ensure_ascii=False), "utf-8")
    try:
        floor = measure.sdk_floor_command(answers)
        beside = anyio.run(measure.paired, vault.root, workload.probe, log, workload.calls, floor)
    finally:
        answers.unlink()
        vaults.restore(vault, workload)
    return Sessions(cold, warm, stdio, raw, beside)


def _differences(beside: measure.Paired, label: str) -> measure.Timings:
    """Per call, the server's time less the floor's for the same call at the same moment."""
    ours, floor = beside.ours[label].samples_ms, beside.floor[label].samples_ms
    return measure.Timings(samples_ms=[a - b for a, b in zip(ours, floor, strict=True)])


def _floors(vault: vaults.Vault, calls: int) -> dict[str, Any]:
    read_s, pages = floors.read_all(vault.root, vault.pages)
    return {
        "read_all_s": round(read_s, 4),
        "fts5_s": round(floors.fts5_insert(pages), 4),
        "fts5_engine_options_s": round(
            floors.fts5_insert(pages, floors.ENGINE_FTS_OPTIONS, engine=True), 4
        ),
        "plain_write_s": round(floors.plain_write(pages), 4),
        "atomic_write_2kb": report.summary(
            measure.Timings(samples_ms=floors.atomic_writes_ms(calls, b"x" * 2048))
        ),
        "empty_server_start_s": round(
            statistics.median(floors.empty_server_start_s(measure.server_env()) for _ in range(3)),
            4,
        ),
    }


def _figures(result: dict[str, Any]) -> dict[str, float]:
    """The headline numbers the targets are read against."""
    figures: dict[str, float] = {}
    for kind in ("cold", "warm"):
        good = [run["first_read_s"] for run in result[kind] if run["error"] is None]
        if good:
            figures[f"{kind}_start_s"] = round(statistics.median(good), 4)
    sessions = result["cold"] + result["warm"]
    peaks = [max(run["peak_rss_mb"], run["start_rss_mb"]) for run in sessions]
    figures["peak_rss_mb"] = round(max(peaks), 1)
    for label, columns in result["calls"].items():  # what the server adds to the SDK
        if "median_ms" in columns["over_floor"]:
            figures[report.over_floor(label)] = columns["over_floor"]["median_ms"]
    return figures


def _say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes are numbers like 1000,10000: {text!r}") from None
    if not sizes or min(sizes) < 10:
        raise argparse.ArgumentTypeError("give at least one size of 10 pages or more")
    return sizes


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more: {text!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python bench/run.py",
        description="Measure lore-mcp on synthetic vaults, end to end over stdio.",
    )
    add = parser.add_argument
    add("--sizes", type=_sizes, default=[1000, 10_000, 100_000], help="default 1000,10000,100000")
    add("--calls", type=_positive, default=200, help="calls of each kind (default 200)")
    add("--starts", type=_positive, help="cold and warm starts each (default 3; 1 above 10k)")
    add("--seed", type=int, default=42, help="the vaults' seed (default 42)")
    add("--cache", type=Path, default=BENCH / ".vaults", help="where the vaults are kept")
    add("--out", type=Path, help="the JSON file (default bench/results/<time>.json)")
    return parser
