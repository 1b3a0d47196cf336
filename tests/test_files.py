"""Page files on disk: reading many at once, and temp files left by killed writes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import BRAIN
from lore_mcp import files


def test_worker_processes_read_what_this_process_reads() -> None:
    rels = sorted(files.scan_files(BRAIN))
    here = list(files.read_pages(BRAIN, rels, workers=0))
    shared = list(files.read_pages(BRAIN, rels, workers=2))
    assert [rel for rel, _ in shared] == rels
    assert shared == here
    index = dict(here)["Index.md"]
    assert index is not None and index.links


def test_stale_temp_files_are_removed_and_fresh_ones_kept(vault_dir: Path) -> None:
    stale = vault_dir / ".lore-tmp-abc.md~"
    fresh = vault_dir / ".lore-tmp-def.md~"
    for path in (stale, fresh):
        path.write_text("half a page")
    hour_ago = time.time() - files.STALE_TEMP_SECONDS - 60
    os.utime(stale, (hour_ago, hour_ago))
    assert files.scan_files(vault_dir) == {}
    assert not stale.exists()
    assert fresh.exists()
