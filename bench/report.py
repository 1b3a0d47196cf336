"""Figures, targets and the printed table; the machine the figures were taken on.

The targets are for a 2-core machine. A call is judged by what lore-mcp adds to the
SDK's own cost of it: the median, call by call in the same run, of the server's round
trip less that of `bench/sdkfloor.py` (same tools, same transport, recorded answers, no
work). At 10k pages that is at most 1 ms for a read (read_page, search_titles,
get_backlinks) and 5 ms for a save (new page or overwrite); the cold start (spawn to the
first answered read_page, no index) at most 5 s; the peak RSS of the server with the
processes it reads pages in at most 150 MB. At 100k pages: twice the per-call figures,
60 s and 1 GB. `search` has targets of its own, on the engine's time per query
(`bench/queries.py`). A vault of up to 10k pages is checked against the 10k targets, a
larger one against the 100k targets. They are read off the figures; nothing here fails
a run.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.measure import Timings

OVER_FLOOR = " over floor"


def over_floor(label: str) -> str:
    """The figure of a call's median time over the SDK's floor (see `_call_rows`)."""
    return label + OVER_FLOOR


_PER_CALL_10K = {
    "read_page": 1.0,
    "search_titles": 1.0,
    "get_backlinks": 1.0,
    "save_page new": 5.0,
    "save_page overwrite": 5.0,
}
TARGETS_10K: dict[str, float] = {
    "cold_start_s": 5.0,
    "peak_rss_mb": 150.0,
    **{over_floor(label): limit for label, limit in _PER_CALL_10K.items()},
}
TARGETS_100K: dict[str, float] = {
    "cold_start_s": 60.0,
    "peak_rss_mb": 1024.0,
    **{over_floor(label): 2 * limit for label, limit in _PER_CALL_10K.items()},
}


def targets_for(pages: int) -> tuple[str, dict[str, float]]:
    return ("10k", TARGETS_10K) if pages <= 10_000 else ("100k", TARGETS_100K)


def summary(timings: Timings) -> dict[str, Any]:
    """n, median, p99 (nearest rank), mean, min, max in ms; errors."""
    samples = sorted(timings.samples_ms)
    if not samples:
        return {"n": 0, "errors": timings.errors, "first_error": timings.first_error}
    rank = max(1, math.ceil(0.99 * len(samples)))
    return {
        "n": len(samples),
        "median_ms": round(statistics.median(samples), 3),
        "p99_ms": round(samples[rank - 1], 3),
        "mean_ms": round(statistics.fmean(samples), 3),
        "min_ms": round(samples[0], 3),
        "max_ms": round(samples[-1], 3),
        "errors": timings.errors,
        "first_error": timings.first_error,
    }


def check(figures: dict[str, float], pages: int) -> dict[str, Any]:
    """Each target next to its figure: value, limit, ok."""
    name, limits = targets_for(pages)
    checks = {
        figure: {"value": figures[figure], "target": limit, "ok": figures[figure] <= limit}
        for figure, limit in limits.items()
        if figure in figures
    }
    return {"set": name, "checks": checks}


# -- the table ----------------------------------------------------------------------------


def _verdict(result: dict[str, Any], figure: str) -> tuple[str, str]:
    entry = result["targets"]["checks"].get(figure)
    if entry is None:
        return "", ""
    unit = "s" if figure.endswith("_s") else "MB" if figure.endswith("_mb") else "ms"
    return f"<= {entry['target']:g} {unit}", "ok" if entry["ok"] else "MISS"


def _starts(runs: list[dict[str, Any]], key: str, unit: str = "s") -> str:
    values = [run[key] for run in runs if run.get("error") is None]
    if not values:
        return "failed"
    digits = 1 if unit == "MB" else 3
    shown = f"{statistics.median(values):.{digits}f} {unit}"
    if len(values) > 1:
        shown += f"  (each: {', '.join(f'{v:.{min(digits, 2)}f}' for v in values)})"
    return shown


def table(result: dict[str, Any]) -> str:
    """A readable table of one size's figures with targets and ok/MISS."""
    vault = result["vault"]
    made = vault["generated_s"]
    origin = "cached" if made is None else f"generated in {made:.1f} s"
    lines = [
        f"== {result['pages']:,} pages, {vault['bytes'] / 1e6:.1f} MB ({origin}), "
        f"index {vault.get('index_bytes', 0) / 1e6:.1f} MB; "
        f"targets: the {result['targets']['set']} set",
    ]
    if result.get("engine_changed_during_run"):
        lines.append("!! the lore_mcp sources changed during this size's run: figures mix versions")
    lines += _start_rows(result)
    lines += ["", *_call_rows(result), "", *_floor_rows(result)]
    return "\n".join(lines)


def _start_rows(result: dict[str, Any]) -> list[str]:
    lines = [f"{'start-up and memory':<40}{'value (median)':<44}{'target':<12}"]

    def row(label: str, value: str, figure: str = "") -> None:
        target, verdict = _verdict(result, figure)
        lines.append(f"{label:<40}{value:<44}{target:<12}{verdict}".rstrip())

    for kind in ("cold", "warm"):
        runs = result[kind]
        row(
            f"{kind} start: spawn -> read_page answer",
            _starts(runs, "first_read_s"),
            f"{kind}_start_s",
        )
        row("  spawn -> initialize answered", _starts(runs, "initialize_s"))
        row("  server CPU until then", _starts(runs, "start_cpu_s"))
        row("  peak RSS until then (with readers)", _starts(runs, "start_rss_mb", "MB"))
        lines.extend(f"  error: {run['error']}"[:200] for run in runs if run.get("error"))
    rss = result["figures"].get("peak_rss_mb", 0.0)
    row("peak RSS, max over all sessions", f"{rss:.1f} MB", "peak_rss_mb")
    return lines


def _call_rows(result: dict[str, Any]) -> list[str]:
    """Per call: the SDK client over stdio; the same beside the SDK's floor, and the
    difference, which the targets judge; a bare JSON-RPC client; the engine in process."""
    lines = [
        f"{'call, ms':<22}{'n':>5}{'sdk med':>9}{'p99':>8}{'beside':>8}{'floor':>7}"
        f"{'over':>7}  {'over target':<16}{'bare med':>10}{'p99':>8}{'engine med':>12}{'p99':>8}",
    ]
    for label, columns in result["calls"].items():
        target, verdict = _verdict(result, over_floor(label))
        stdio = columns["stdio"]
        median = {name: column.get("median_ms", 0) for name, column in columns.items()}
        cells = f"{median['stdio']:>9.2f}{stdio.get('p99_ms', 0):>8.2f}"
        cells += f"{median.get('beside_floor', 0):>8.2f}{median.get('sdk_floor', 0):>7.2f}"
        cells += f"{median.get('over_floor', 0):>+7.2f}  {f'{target} {verdict}':<16}"
        for name, width in (("raw_stdio", 10), ("in_process", 12)):
            p99 = columns.get(name, {}).get("p99_ms", 0)
            cells += f"{median.get(name, 0):>{width}.2f}{p99:>8.2f}"
        errors = "".join(
            f"  [{name}: {column['errors']} errors, first: {column['first_error']}]"
            for name, column in columns.items()
            if column.get("errors")
        )
        lines.append(f"{label:<22}{stdio['n']:>5}{cells}{errors}".rstrip())
    lines.append(
        "(sdk: mcp.Client over stdio, as an agent sees it; beside / floor / over: medians "
        "of the same client and calls made, call by call, to the server and to "
        "bench/sdkfloor.py, which replays these answers without doing any work, and of "
        "each call's difference between the two: what lore-mcp adds, which the targets "
        "judge; bare: a bare JSON-RPC client over stdio, i.e. server + pipe; engine: "
        "lore_mcp.vault_ops in this process)"
    )
    return lines


def _floor_rows(result: dict[str, Any]) -> list[str]:
    floors = result["floors"]
    atomic = floors["atomic_write_2kb"]
    rows = [
        ("read every page file", f"{floors['read_all_s']:.3f} s"),
        ("FTS5 insert, bare fts5(title, body)", f"{floors['fts5_s']:.3f} s"),
        ("FTS5 insert, the engine's options", f"{floors['fts5_engine_options_s']:.3f} s"),
        ("plain write of every page", f"{floors['plain_write_s']:.3f} s"),
        (
            "atomic 2 KB write + fsync, med / p99",
            f"{atomic['median_ms']:.2f} / {atomic['p99_ms']:.2f} ms",
        ),
        ("in-process open (incremental pass)", f"{result['in_process_open_s']:.3f} s"),
    ]
    if "empty_server_start_s" in floors:
        start = floors["empty_server_start_s"]
        rows.append(("empty MCPServer, spawn → initialize", f"{start:.3f} s"))
    canned = floors.get("sdk_floor_start", {})
    if canned.get("first_read_s"):
        rows.append(("sdkfloor.py, spawn → read_page answer", f"{canned['first_read_s']:.3f} s"))
    ping = floors.get("ping_bare", {})
    if "median_ms" in ping:
        rows.append(
            ("ping, bare client, med / p99", f"{ping['median_ms']:.2f} / {ping['p99_ms']:.2f} ms")
        )
    return ["floor (same pages, same run)"] + [f"  {label:<38}{value}" for label, value in rows]


# -- the machine --------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures depend on: cores, CPU, memory, versions, load, the commit."""
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name"),
        "mem_total": _proc_field("/proc/meminfo", "MemTotal"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "mcp": _version("mcp"),
        "lore_mcp": _version("lore-mcp"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty_files": len((_git("status", "--porcelain") or "").splitlines()),
        "engine_digest": engine_digest(),
        "load_average": os.getloadavg(),
    }


def engine_digest() -> str:
    """SHA-256 (first 16 hex) of the lore_mcp sources measured: the tree changes under
    uncommitted work, and this ties figures to the code that made them."""
    import lore_mcp

    digest = hashlib.sha256()
    package = Path(lore_mcp.__file__).parent
    for source in sorted(package.rglob("*.py")):
        name = source.relative_to(package).as_posix()
        digest.update(name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def _proc_field(path: str, name: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()
