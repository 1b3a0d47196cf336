"""Every module of the package can be the first one imported: a script, a plugin or a
worker process may start from any of them, not only from the entry points."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# In one interpreter, each module is imported with none of the package loaded (the
# third-party libraries stay, being outside the package's own import cycles).
_EACH_MODULE_FIRST = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    import lore_mcp

    names = [m.name for m in pkgutil.walk_packages(lore_mcp.__path__, "lore_mcp.")]
    for name in names:
        for loaded in [m for m in sys.modules if m.split(".")[0] == "lore_mcp"]:
            del sys.modules[loaded]
        try:
            importlib.import_module(name)
        except Exception as exc:
            print(f"{name}: {exc!r}")
    print(f"{len(names)} modules")
    """
)


@pytest.mark.slow
def test_every_module_imports_first() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", _EACH_MODULE_FIRST],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    *failures, summary = done.stdout.splitlines()
    assert failures == []
    assert int(summary.split()[0]) > 50  # the walk found the package's modules
