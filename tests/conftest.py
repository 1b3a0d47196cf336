"""Shared fixtures: temporary vaults with real files and a real SQLite index."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore_mcp import vault_ops
from lore_mcp.vault_ops import AppState

REPO = Path(__file__).resolve().parents[1]
BRAIN = REPO / "brain"


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the anyio plugin ships with anyio)."""
    return "asyncio"


@pytest.fixture(params=["legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    """The protocol era a client speaks: the handshake era, or the stateless one."""
    return str(request.param)


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    """An empty vault folder."""
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def brain_dir(tmp_path: Path) -> Path:
    """A private copy of the sample vault `brain/`."""
    root = tmp_path / "brain"
    shutil.copytree(BRAIN, root, ignore=shutil.ignore_patterns(".lore"))
    return root


@pytest.fixture
def state(vault_dir: Path) -> Iterator[AppState]:
    """An open, empty vault."""
    st = vault_ops.open_vault(vault_dir)
    yield st
    st.close()


@pytest.fixture
def brain(brain_dir: Path) -> Iterator[AppState]:
    """The sample vault, opened and indexed."""
    st = vault_ops.open_vault(brain_dir)
    yield st
    st.close()


def write(root: Path, rel: str, text: str) -> Path:
    """Write a page file the way an outside editor would."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
