"""Reading many pages with a worker process: the same pages, in order, and nothing left
running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BRAIN
from lore_mcp import files, pagereader

HAS_PROC = Path("/proc/self/stat").exists()


def _many_pages(root: Path, count: int) -> list[str]:
    for i in range(count):
        (root / f"p{i:05}.md").write_text(f"# Page {i}\n\nSee [[p{(i + 1) % count:05}]].\n")
    return sorted(files.scan_files(root))


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    """Where the worker keeps its output (the index folder, in the server)."""
    folder = tmp_path / "spool"
    folder.mkdir()
    return folder


def _running(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_worker_reads_what_this_process_reads(tmp_path: Path) -> None:
    rels = sorted(files.scan_files(BRAIN))
    here = list(pagereader.read_pages(BRAIN, rels, tmp_path, worker=False))
    there = list(pagereader.read_pages(BRAIN, rels, tmp_path, worker=True))
    assert [rel for rel, _ in there] == rels
    assert there == here
    index = dict(there)["Index.md"]
    assert index is not None and index.edges


def test_many_chunks_arrive_in_order(vault_dir: Path, spool: Path) -> None:
    count = pagereader.CHUNK_FILES * 6 + 7
    rels = _many_pages(vault_dir, count)
    there = list(pagereader.read_pages(vault_dir, rels, spool, worker=True))
    assert [rel for rel, _ in there] == rels
    assert there == list(pagereader.read_pages(vault_dir, rels, spool, worker=False))
    last = there[-1][1]
    assert last is not None and [edge.key for edge in last.edges] == ["p00000"]


def test_the_spool_is_never_a_file_anyone_sees(vault_dir: Path, spool: Path) -> None:
    rels = _many_pages(vault_dir, pagereader.CHUNK_FILES * 2)
    with pagereader.read_pages(vault_dir, rels, spool, worker=True) as reader:
        pages = iter(reader)
        next(pages)
        assert list(spool.iterdir()) == []
        assert len(list(pages)) == len(rels) - 1
    assert list(spool.iterdir()) == []
    assert sorted(vault_dir.iterdir()) == [vault_dir / rel for rel in rels]


def test_a_file_that_cannot_be_read_comes_back_as_none(vault_dir: Path, spool: Path) -> None:
    rels = _many_pages(vault_dir, 3)
    (vault_dir / rels[1]).unlink()
    there = list(pagereader.read_pages(vault_dir, rels, spool, worker=True))
    assert [(rel, page is None) for rel, page in there] == [
        (rels[0], False),
        (rels[1], True),
        (rels[2], False),
    ]


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc to see processes")
def test_stopping_early_stops_the_worker(vault_dir: Path, spool: Path) -> None:
    rels = _many_pages(vault_dir, pagereader.CHUNK_FILES * 3)
    with pagereader.read_pages(vault_dir, rels, spool, worker=True) as reader:
        pid = reader.pid
        assert pid is not None
        pages = iter(reader)
        assert next(pages)[0] == rels[0]
        assert _running(pid)
    assert reader.pid is None
    assert not _running(pid)


def test_when_the_worker_dies_the_rest_is_read_here(vault_dir: Path, spool: Path) -> None:
    rels = _many_pages(vault_dir, pagereader.CHUNK_FILES * 3)
    with pagereader.read_pages(vault_dir, rels, spool, worker=True) as reader:
        pages = iter(reader)
        first = next(pages)
        assert reader.pid is not None
        os.kill(reader.pid, signal.SIGKILL)
        there = [first, *pages]
    assert there == list(pagereader.read_pages(vault_dir, rels, spool, worker=False))


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc to see processes")
def test_the_worker_exits_when_its_parent_is_killed(vault_dir: Path, spool: Path) -> None:
    _many_pages(vault_dir, pagereader.CHUNK_FILES * 12)
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from lore_mcp import files, pagereader\n"
        "root = Path(sys.argv[1])\n"
        "rels = sorted(files.scan_files(root))\n"
        "reader = pagereader.read_pages(root, rels, Path(sys.argv[2]), worker=True)\n"
        "pages = iter(reader)\n"
        "next(pages)\n"
        "print(reader.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(vault_dir), str(spool)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    try:
        worker = int(parent.stdout.readline())
        assert _running(worker)
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    deadline = time.monotonic() + 30
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(worker)
