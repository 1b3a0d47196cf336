"""Page files on disk: reading many at once, and temp files left by killed writes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lore_mcp import files


def test_edges_skip_same_page_links_attachments_and_empty_targets() -> None:
    text = "[[#Intro]] ![[chart.png]] [[..]]\n  [[./Sub/Note|alias]] and [[Other#Part]]  \n"
    found = files.edges("folder/page", text)
    assert found == [
        files.Edge(
            "./Sub/Note", 2, "[[./Sub/Note|alias]] and [[Other#Part]]", "folder/sub/note", True
        ),
        files.Edge("Other", 2, "[[./Sub/Note|alias]] and [[Other#Part]]", "other", False),
    ]


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
