"""The benchmark's vault generator: deterministic, and shaped as the benchmark needs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from lore_mcp import vault_ops as engine
from lore_mcp.links import extract_links

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `bench` is a folder of the repository, not installed
    sys.path.append(str(ROOT))

from bench.generate import MAX_BYTES, MIN_BYTES, generate  # noqa: E402

FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def test_same_seed_same_bytes_other_seed_other_vault(tmp_path: Path) -> None:
    generate(tmp_path / "a", 50)
    generate(tmp_path / "b", 50, seed=42)
    generate(tmp_path / "c", 50, seed=7)
    first = files(tmp_path / "a")
    assert len(first) == 50
    assert files(tmp_path / "b") == first
    assert files(tmp_path / "c") != first


def test_vault_shape(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    generate(root, 50)
    pages = files(root)
    texts = [data.decode("utf-8") for data in pages.values()]
    assert all(MIN_BYTES <= len(data) <= MAX_BYTES for data in pages.values())
    assert len({Path(rel).parent for rel in pages}) > 10  # spread over the folders
    assert any(" " in Path(rel).stem and Path(rel).stem != Path(rel).stem.lower() for rel in pages)
    counts = [len(extract_links(text)) for text in texts]
    assert min(counts) >= 2 and max(counts) <= 8
    fenced = [block for text in texts for block in FENCE.findall(text)]
    assert any("[[" in block for block in fenced)  # links in code, which are not links
    assert any("`[[" in FENCE.sub("", text) for text in texts)  # and in inline code
    forms = [link for text in texts for link in re.findall(r"!?\[\[[^\]]+\]\]", text)]
    assert any(f.startswith("![[") for f in forms)
    assert any("|" in f for f in forms) and any("#" in f for f in forms)
    assert any("/" in f for f in forms)
    state = engine.open_vault(root)
    try:
        assert len(state.pages) == 50
        assert len(state.placeholders) > 0  # some targets do not exist
    finally:
        state.close()


def test_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match="not empty"):
        generate(tmp_path, 10)
    assert (tmp_path / "note.md").read_text(encoding="utf-8") == "mine"
