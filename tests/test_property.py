"""Random sequences of writes, then: the live index and graph equal a fresh index."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import assert_matches_fresh
from lore_mcp import vault_ops as ops
from lore_mcp.errors import LoreError

NAMES = [
    "Alpha",
    "beta",
    "notes/Alpha",
    "notes/Gamma",
    "deep/notes/Gamma",
    "Delta Page",
    "x/Delta Page",
    "Ünïcode Ω",
]
TARGETS = [
    "Alpha",
    "alpha.md",
    "notes/Alpha",
    "Gamma",
    "notes/gamma",
    "Delta Page",
    "Missing",
    "./Alpha",
    "../Alpha",
    "Alpha#Head",
    "Gamma|alias",
    "beta^blk",
    "Ünïcode Ω",
    "deep/notes/Gamma",
    "x/delta-page",
    "pic.png",
    "#local",
    "Future Idea",
]


@st.composite
def page_text(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for target in draw(st.lists(st.sampled_from(TARGETS), max_size=5)):
        style = draw(st.sampled_from(["plain", "embed", "code", "fence"]))
        link = f"[[{target}]]"
        parts.append(
            {"plain": link, "embed": "!" + link, "code": f"`{link}`", "fence": f"```\n{link}\n```"}[
                style
            ]
        )
    return "\n".join(parts) + "\n"


operation = st.one_of(
    st.tuples(st.just("save"), st.sampled_from(NAMES), page_text()),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.just("")),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("external_write"), st.sampled_from(NAMES), page_text()),
    st.tuples(st.just("external_delete"), st.sampled_from(NAMES), st.just("")),
)


def _file(name: str) -> str:
    return f"{name}.md"


def run(root: Path, steps: list[tuple[str, str, str]]) -> None:
    state = ops.open_vault(root)
    try:
        for kind, name, arg in steps:
            try:
                if kind == "save":
                    ops.save_page(state, name, arg)
                elif kind == "delete":
                    ops.delete_page(state, name)
                elif kind == "rename":
                    ops.rename_page(state, name, arg)
                elif kind == "external_write":
                    path = root / _file(name)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(arg, encoding="utf-8")
                    ops.apply_external_changes(state, [_file(name)])
                else:
                    (root / _file(name)).unlink(missing_ok=True)
                    ops.apply_external_changes(state, [_file(name)])
            except LoreError:
                pass
        assert_matches_fresh(state)
    finally:
        state.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=12))
def test_random_operations_match_fresh_index(steps: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), steps)
