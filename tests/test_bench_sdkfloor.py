"""The benchmark's SDK floor: lore-mcp's tools as declared, answering recorded results."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from lore_mcp import vault_ops as engine
from lore_mcp.server import build_server

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `bench` is a folder of the repository, not installed
    sys.path.append(str(ROOT))

from bench import measure  # noqa: E402
from bench.sdkfloor import build  # noqa: E402

pytestmark = pytest.mark.anyio


def _answer(result: Any) -> dict[str, Any]:
    answer: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answer


async def test_declares_the_tools_of_the_real_server(brain_dir: Path) -> None:
    """Same names, input and output schemas: the client validates the same things."""
    state = engine.open_vault(brain_dir)
    async with Client(build_server(state)) as real, Client(build({})) as floor:
        ours = {tool.name: tool for tool in (await real.list_tools()).tools}
        canned = {tool.name: tool for tool in (await floor.list_tools()).tools}
    assert canned.keys() == ours.keys()
    for name, tool in ours.items():
        assert canned[name].input_schema == tool.input_schema, name
        assert canned[name].output_schema == tool.output_schema, name


async def test_replays_recorded_answers_in_order_then_fails(brain_dir: Path) -> None:
    state = engine.open_vault(brain_dir)
    async with Client(build_server(state)) as real:
        first = await real.call_tool("read_page", {"slug": "index"})
        second = await real.call_tool("read_page", {"slug": "getting-started"})
        found = await real.call_tool("search", {"query": "links"})
    recorded = {"read_page": [_answer(first), _answer(second)], "search": [_answer(found)]}
    async with Client(build(recorded)) as floor:
        # The arguments are validated as the real server does, then ignored.
        assert _answer(await floor.call_tool("read_page", {"slug": "x"})) == _answer(first)
        assert _answer(await floor.call_tool("search", {"query": "y"})) == _answer(found)
        assert _answer(await floor.call_tool("read_page", {"slug": "x"})) == _answer(second)
        spent = await floor.call_tool("read_page", {"slug": "x"})
        bad = await floor.call_tool("read_page", {"slug": ""})
    assert spent.is_error
    assert "no recorded answers of read_page left" in spent.content[0].text  # type: ignore[union-attr]
    assert bad.is_error  # a slug must not be empty, as in the real server


@pytest.mark.slow
async def test_paired_calls_go_to_both_the_server_and_the_floor(
    brain_dir: Path, tmp_path: Path
) -> None:
    """The floor replays what a first session recorded; the paired session makes every
    call to both, timed side by side, and the recorded answers last it out."""
    plan: measure.Plan = [
        ("read_page", "read_page", [{"slug": s} for s in ("index", "getting-started")] * 3),
        ("search", "search", [{"query": q} for q in ("links", "vault", "search")]),
        ("save_page new", "save_page", [{"slug": "bench/new page", "content": "# New\n"}]),
    ]
    second = tmp_path / "second"
    shutil.copytree(brain_dir, second)
    recorded: measure.Answers = {}
    answers = tmp_path / "answers.json"
    with (tmp_path / "server.log").open("w", encoding="utf-8") as log:
        start, _ = await measure.session(brain_dir, "index", log, plan, record=recorded)
        assert start.error is None
        answers.write_text(json.dumps(recorded), "utf-8")
        beside = await measure.paired(
            second, "index", log, plan, measure.sdk_floor_command(answers)
        )
    assert beside.floor_start.first_read_s > 0
    for label, _, calls in plan:
        ours, floor = beside.ours[label], beside.floor[label]
        assert len(ours.samples_ms) == len(floor.samples_ms) == len(calls), label
        assert (ours.errors, floor.errors) == (0, 0), (ours.first_error, floor.first_error)
    assert (second / "bench" / "new page.md").read_text("utf-8") == "# New\n"
