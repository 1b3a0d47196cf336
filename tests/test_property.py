"""Random sequences of writes, and index passes applied in batches, then: the live index
and graph equal a fresh index."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers import assert_matches_fresh
from lore_mcp import vault_ops as ops
from lore_mcp.errors import LoreError
from lore_mcp.vault_ops import apply, sync

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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=12))
# Two pages of one slug in different folders, and a delete: the link moves to the other.

@example(
    [
        ("save", "Alpha", "[[x/delta-page]]\n"),
        ("save", "Delta Page", "\n"),
        ("external_write", "x/Delta Page", "\n"),
        ("delete", "Delta Page", ""),
    ]
)
@pytest.mark.slow
def test_random_operations_match_fresh_index(steps: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), steps)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=20))
def test_many_random_operations_match_fresh_index(steps: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), steps)


# Two spellings of one slug ("delta-page", "alpha") make the pass shadow one file.
FILE_NAMES = [*NAMES, "Delta_Page", "ALPHA"]
vault_files = st.dictionaries(st.sampled_from(FILE_NAMES), page_text(), max_size=9)
# New text for a file, or None: the file is deleted.
file_changes = st.dictionaries(st.sampled_from(FILE_NAMES), st.none() | page_text(), max_size=9)


def _write_files(root: Path, files: dict[str, str | None], mtime_ns: int) -> None:
    for name, text in files.items():
        path = root / _file(name)
        if text is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, ns=(mtime_ns, mtime_ns))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=vault_files, changes=file_changes, batch_size=st.integers(1, 3))
# An unchanged page's link must move from a placeholder to a page of a later batch.
@example(
    before={"Alpha": "[[Gamma]]\n"},
    changes={"beta": "[[Alpha]]\n", "notes/Gamma": "[[beta]]\n"},
    batch_size=1,
)
@pytest.mark.slow
def test_a_pass_in_batches_matches_a_fresh_index(
    before: dict[str, str], changes: dict[str, str | None], batch_size: int
) -> None:
    """Pages applied a few at a time, some linking to pages of later batches, some
    replacing placeholders, some gone: the same index as one pass over every file."""
    pass_in_batches(before, changes, batch_size)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=vault_files, changes=file_changes, batch_size=st.integers(1, 3))
def test_many_passes_in_batches_match_a_fresh_index(
    before: dict[str, str], changes: dict[str, str | None], batch_size: int
) -> None:
    pass_in_batches(before, changes, batch_size)


def pass_in_batches(
    before: dict[str, str], changes: dict[str, str | None], batch_size: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write_files(root, dict(before), mtime_ns=1_000_000_000)
        state = ops.open_vault(root)
        try:
            _write_files(root, changes, mtime_ns=2_000_000_000)
            with _batches_of(batch_size), state.lock, state.index.write():
                sync.sync(state)
            assert_matches_fresh(state)
        finally:
            state.close()


@contextmanager
def _batches_of(size: int) -> Iterator[None]:
    """Passes apply pages `size` at a time (not monkeypatch: hypothesis runs every
    example in one test call)."""
    default = apply.BATCH
    apply.BATCH = size
    try:
        yield
    finally:
        apply.BATCH = default
