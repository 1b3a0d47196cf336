"""Measurements through the real stdio server (the SDK's client) and in process.

`session` spawns `python -m lore_mcp --vault DIR --no-watch` with the SDK's stdio
transport, times spawn → initialize → first answered `read_page`, optionally runs the
per-call workload through the same live session, and reads the server's peak RSS
(`VmHWM`, and during start-up the sum over the server and the processes it started to
read pages, sampled) and CPU time (its reaped children's included) from `/proc`.
`raw_calls` repeats the calls through a bare JSON-RPC client (no client-side
validation), and `in_process` against the engine (`lore_mcp.vault_ops`) in this process,
so the shares of the client, the protocol and the engine are visible. `session` can
also record every answer for `bench/sdkfloor.py` to replay, which gives the SDK's own
share of each call: `paired` runs the calls through the real server and that floor side
by side, call by call, so the two are compared in the same moments of a busy machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.to_thread
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from bench.rawrpc import RawServer, server_command
from lore_mcp import vault_ops as engine
from lore_mcp.errors import LoreError
from lore_mcp.models import SaveResult
from lore_mcp.vault_ops import AppState

Args = dict[str, Any]
Plan = list[tuple[str, str, list[Args]]]
Answers = dict[str, list[dict[str, Any]]]  # tool name -> its CallToolResults as JSON, in order
# The variables the server gets from the environment the benchmark runs in: LORE_READER_PASS_FILES
# lets a run try another threshold for reader processes.
PASS_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV", "LORE_READER_PASS_FILES")
FIRST_READ_TIMEOUT_S = 1800.0
CALL_TIMEOUT_S = 120.0
WARM_UP_CALLS = 3
PING = "ping"


@dataclass
class Start:
    """One server start: seconds from just before spawn to each milestone."""

    initialize_s: float = 0.0
    first_read_s: float = 0.0
    start_cpu_s: float = 0.0  # the server's, user + system, at that answer
    start_rss_mb: float = 0.0  # the peak RSS of the server and its readers until then
    end_cpu_s: float = 0.0  # the same at the end of the session (after the calls, if any)
    peak_rss_mb: float = 0.0  # the server's VmHWM at the end
    error: str | None = None


@dataclass
class Timings:
    """Round trips of one kind of call, in milliseconds."""

    samples_ms: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None

    def record(self, elapsed_ms: float, problem: str | None = None) -> None:
        """One call's time, and what went wrong with it, if anything."""
        self.samples_ms.append(elapsed_ms)
        if problem is not None:
            self.errors += 1
            self.first_error = self.first_error or problem[:300]


UNCHANGED = "save_page answered 'unchanged': it did no work, so its time is not a save's"


def _problem(tool: str, is_error: bool, text: str, structured: dict[str, Any] | None) -> str | None:
    """An error result, or a save that did no work (every measured save changes a page)."""
    if is_error:
        return text or "isError"
    if tool == "save_page" and structured is not None and structured.get("unchanged"):
        return UNCHANGED
    return None


def server_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in PASS_ENV if name in os.environ}
    return env | {"PYTHONIOENCODING": "utf-8"}


async def session(
    vault: Path,
    probe: str,
    server_log: TextIO,
    plan: Plan | None = None,
    *,
    record: Answers | None = None,
) -> tuple[Start, dict[str, Timings]]:
    """Start a server on `vault`, read `probe`, run `plan` if given, and stop it. Every
    result is appended to `record[tool]` if given, in call order."""
    timings: dict[str, Timings] = {}
    async with _started(server_command(vault), probe, server_log, record) as (client, start):
        if start.error is None and plan is not None:
            timings = await _run_plan(client, plan, record)
    return start, timings


@dataclass
class Paired:
    """The calls measured through the real server and through the floor, side by side."""

    floor_start: Start
    ours: dict[str, Timings]
    floor: dict[str, Timings]


async def paired(
    vault: Path, probe: str, server_log: TextIO, plan: Plan, floor_command: list[str]
) -> Paired:
    """The floor (`floor_command`, replaying answers `session` recorded for `plan`) and
    the real server on `vault`, both started and kept open, then each call of `plan`
    made to one and at once to the other, which of them first taking turns: the two
    samples of a call are taken in the same moment of the machine, whatever else it is
    doing, so their difference is the server's own work."""
    ours: dict[str, Timings] = {}
    floor: dict[str, Timings] = {}
    async with (
        _started(floor_command, probe, server_log) as (canned, floor_start),
        _started(server_command(vault), probe, server_log) as (real, start),
    ):
        for failed in (floor_start, start):
            if failed.error is not None:
                raise RuntimeError(failed.error)
        for label, tool, calls in plan:
            if not tool.startswith("save"):
                for args in calls[:WARM_UP_CALLS]:
                    await real.call_tool(tool, args)
                    await canned.call_tool(tool, args)
            sides = [
                (real, ours.setdefault(label, Timings())),
                (canned, floor.setdefault(label, Timings())),
            ]
            for n, args in enumerate(calls):
                for client, timings in sides if n % 2 == 0 else sides[::-1]:
                    await _timed_call(client, tool, args, timings)
    return Paired(floor_start, ours, floor)


@contextlib.asynccontextmanager
async def _started(
    command: list[str], probe: str, server_log: TextIO, record: Answers | None = None
) -> AsyncIterator[tuple[Client, Start]]:
    """A live session with the server `command` runs, once it has answered a read of
    `probe`; its start-up figures are in the `Start`, and its peak memory and CPU time
    at the end are added when the session closes."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env())
    start = Start()
    began = time.perf_counter()
    async with Client(stdio_client(params, errlog=server_log), mode="legacy") as client:
        start.initialize_s = time.perf_counter() - began
        pid = server_pid(command)
        sampled = [0.0]
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_sample_tree_rss, pid, sampled)
            with anyio.fail_after(FIRST_READ_TIMEOUT_S):
                first = await client.call_tool("read_page", {"slug": probe})
            tasks.cancel_scope.cancel()
        start.first_read_s = time.perf_counter() - began
        if record is not None:
            _keep(record, "read_page", first)
        start.start_rss_mb = max(peak_rss_mb(pid), sampled[0])
        start.start_cpu_s = cpu_seconds(pid)
        if first.is_error:
            start.error = f"read_page({probe!r}) failed: {_text(first)}"
        yield client, start
        start.peak_rss_mb, start.end_cpu_s = peak_rss_mb(pid), cpu_seconds(pid)


async def _run_plan(client: Client, plan: Plan, record: Answers | None) -> dict[str, Timings]:
    results: dict[str, Timings] = {}
    for label, tool, calls in plan:
        if not tool.startswith("save"):  # warm-up, not measured (writes are not repeated)
            for args in calls[:WARM_UP_CALLS]:
                result = await client.call_tool(tool, args)
                if record is not None:
                    _keep(record, tool, result)
        timings = results[label] = Timings()
        for args in calls:
            result = await _timed_call(client, tool, args, timings)
            if record is not None:
                _keep(record, tool, result)
    return results


async def _timed_call(client: Client, tool: str, args: Args, timings: Timings) -> CallToolResult:
    """Make one call, and record its round trip (and what went wrong) in `timings`."""
    with anyio.fail_after(CALL_TIMEOUT_S):
        began = time.perf_counter()
        result = await client.call_tool(tool, args)
        elapsed = time.perf_counter() - began
    problem = _problem(tool, result.is_error, _text(result), result.structured_content)
    timings.record(elapsed * 1000, problem)
    return result


def _keep(record: Answers, tool: str, result: CallToolResult) -> None:
    """`result` as the JSON the server sent, for `bench/sdkfloor.py` to replay."""
    answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    record.setdefault(tool, []).append(answer)


def sdk_floor_command(answers: Path) -> list[str]:
    """The canned server of `bench/sdkfloor.py`, replaying the answers in that file."""
    return [sys.executable, str(Path(__file__).with_name("sdkfloor.py")), str(answers)]


def _text(result: CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, TextContent))


def raw_calls(vault: Path, probe: str, server_log: TextIO, plan: Plan) -> dict[str, Timings]:
    """The same calls through a bare JSON-RPC client (see `rawrpc`): server plus pipe.
    `PING` holds as many `ping` round trips: the protocol's own floor."""
    server = RawServer(server_command(vault), server_env(), server_log)
    results: dict[str, Timings] = {}
    try:
        server.initialize()
        server.call("read_page", {"slug": probe})  # waits for the index pass
        pings = results[PING] = Timings()
        for _ in range(len(plan[0][2]) if plan else 0):
            began = time.perf_counter()
            server.request("ping", {})
            pings.samples_ms.append((time.perf_counter() - began) * 1000)
        for label, tool, calls in plan:
            if not tool.startswith("save"):
                for args in calls[:WARM_UP_CALLS]:
                    server.call(tool, args)
            timings = results[label] = Timings()
            for args in calls:
                elapsed, result = server.timed_call(tool, args)
                text = " ".join(str(block.get("text", "")) for block in result.get("content", []))
                structured = result.get("structuredContent")
                timings.record(
                    elapsed, _problem(tool, bool(result.get("isError")), text, structured)
                )
    finally:
        server.close()
    return results


def in_process(root: Path, plan: Plan) -> tuple[float, dict[str, Timings]]:
    """Open the vault here (an incremental index pass; seconds returned) and time the
    same calls straight against the engine."""
    began = time.perf_counter()
    vault = engine.open_vault(root)
    took = time.perf_counter() - began
    results: dict[str, Timings] = {}
    try:
        for label, tool, calls in plan:
            if not tool.startswith("save"):
                for args in calls[:WARM_UP_CALLS]:
                    _direct(vault, tool, args)
            timings = results[label] = Timings()
            for args in calls:
                began = time.perf_counter()
                try:
                    answer = _direct(vault, tool, args)
                except LoreError as exc:
                    timings.record((time.perf_counter() - began) * 1000, str(exc))
                    continue
                elapsed = (time.perf_counter() - began) * 1000
                unchanged = isinstance(answer, SaveResult) and answer.unchanged
                timings.record(elapsed, UNCHANGED if unchanged else None)
    finally:
        vault.close()
    return took, results


def _direct(vault: AppState, tool: str, args: Args) -> object:
    if tool == "read_page":
        return engine.read_page(vault, args["slug"])
    if tool == "save_page":
        return engine.save_page(vault, args["slug"], args["content"], door="mcp")
    if tool == "search":
        return engine.search(vault, args["query"])
    if tool == "search_titles":
        return engine.search_titles(vault, args["query"])
    if tool == "get_backlinks":
        return engine.get_backlinks(vault, args["slug"])
    if tool == "get_graph":
        return engine.get_graph(vault, args["slug"], args["depth"])
    raise ValueError(f"no in-process form for {tool}")


# -- /proc --------------------------------------------------------------------------------


def server_pid(command: list[str]) -> int:
    """The process this process spawned to run `command` (Linux: read from /proc)."""
    me, wanted = os.getpid(), "\0".join(command[1:]).encode()
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_text()
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == me and wanted in cmdline:
                return int(entry.name)
    raise RuntimeError("cannot find the server process among this process's children")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set size (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def tree_rss_mb(pid: int) -> float:
    """The resident set size of the process and all its descendants now, in MiB."""
    parents: dict[int, int] = {}
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(entry.path, "stat").read_text()
                    parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    tree, grew = {pid}, True
    while grew:
        found = {child for child, parent in parents.items() if parent in tree}
        grew = not found <= tree
        tree |= found
    total_kb = 0
    for member in tree:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
    return total_kb / 1024


async def _sample_tree_rss(pid: int, peak: list[float]) -> None:
    """Keep the largest `tree_rss_mb` in `peak[0]`, sampled every 20 ms until cancelled."""
    while True:
        peak[0] = max(peak[0], await anyio.to_thread.run_sync(tree_rss_mb, pid))
        await anyio.sleep(0.02)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process and its reaped children have used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
