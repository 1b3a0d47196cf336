"""Which vaults a server or a command serves: `--vault [NAME=]PATH` (repeatable), a
config file (`--config FILE`, else `vaults.toml` in the user's config folder), or
$LORE_VAULT, in that order; the first vault is the default.

The config file is TOML, one table per vault, in order::

    [vaults.personal]
    path = "~/notes"

    [vaults.team]
    path = "/srv/team-wiki"
    read_only = true
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import platformdirs

from lore_mcp.config import VAULT_ENV
from lore_mcp.errors import InvalidArgumentError, UsageError
from lore_mcp.vaults import VaultSpec, check_name, checked, name_for_folder

CONFIG_FILE = "vaults.toml"


def default_config_path() -> Path:
    """Where the vaults are listed when no --vault or --config says otherwise."""
    return platformdirs.user_config_path("lore") / CONFIG_FILE


def parse_vault(text: str, *, read_only: bool = False) -> VaultSpec:
    """`NAME=PATH`, or a bare `PATH` (named after its folder). A value holding `=`
    is a path when that folder exists, or when what comes before the `=` can name no
    vault."""
    name, equals, path = text.partition("=")
    if equals and path and not Path(text).expanduser().is_dir():
        try:
            check_name(name)
        except InvalidArgumentError:
            pass
        else:
            return VaultSpec(name, Path(path).expanduser(), read_only)
    if not text.strip():
        raise UsageError("--vault needs a folder, or NAME=FOLDER")
    root = Path(text).expanduser()
    return VaultSpec(name_for_folder(root), root, read_only)


def read_config(path: Path) -> list[VaultSpec]:
    """The vaults a config file lists, in its order."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"Cannot read the config file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"The config file {path} is not valid TOML: {exc}") from None
    tables = data.get("vaults")
    if not isinstance(tables, dict) or not tables:
        raise UsageError(
            f"The config file {path} lists no vaults; add a table such as "
            '[vaults.personal] with path = "~/notes".'
        )
    specs = []
    for name, table in tables.items():
        if not isinstance(table, dict) or not isinstance(table.get("path"), str):
            raise UsageError(f'In {path}, [vaults.{name}] needs path = "FOLDER".')
        read_only = table.get("read_only", False)
        if not isinstance(read_only, bool):
            raise UsageError(f"In {path}, [vaults.{name}] read_only must be true or false.")
        unknown = set(table) - {"path", "read_only"}
        if unknown:
            raise UsageError(
                f"In {path}, [vaults.{name}] has settings lore does not know: "
                f"{', '.join(sorted(unknown))} (it takes path and read_only)."
            )
        root = Path(table["path"]).expanduser()
        if not root.is_absolute():
            root = path.parent / root  # relative to the file, not to where lore runs
        specs.append(VaultSpec(_named(name, path), root, read_only))
    return specs


def _named(name: str, path: Path) -> str:
    try:
        return check_name(name)
    except InvalidArgumentError as exc:
        raise UsageError(f"In {path}: {exc}") from None


def vault_specs(
    given: Sequence[str],
    config: Path | None,
    *,
    read_only: Sequence[str] = (),
    environ: Mapping[str, str] = os.environ,
    default_config: Path | None = None,
) -> list[VaultSpec]:
    """The vaults asked for: `given` (--vault values), else the `config` file, else
    $LORE_VAULT, else the user's config file when there is one. `read_only` names vaults
    to serve read-only (`*`: all of them). Raises `UsageError` when there are none."""
    if given and config is not None:
        raise UsageError("give the vaults once: with --vault or with --config, not both")
    if given:
        specs = [parse_vault(text) for text in given]
    elif config is not None:
        specs = read_config(config)
    elif raw := environ.get(VAULT_ENV, "").strip():
        specs = [parse_vault(raw)]
    elif (found := default_config or default_config_path()).is_file():
        specs = read_config(found)
    else:
        raise UsageError(
            f"no vault given: pass --vault PATH or set {VAULT_ENV} (or pass --config FILE, "
            f"or list vaults in {default_config or default_config_path()})"
        )
    try:
        specs = checked(specs)
    except InvalidArgumentError as exc:
        raise UsageError(str(exc)) from None
    return _read_only(specs, read_only)


def _read_only(specs: list[VaultSpec], names: Sequence[str]) -> list[VaultSpec]:
    wanted = {name.strip().lower() for item in names for name in item.split(",") if name.strip()}
    known = {spec.name.lower() for spec in specs}
    if unknown := wanted - known - {"*"}:
        raise UsageError(
            f"--read-only names no vault given: {', '.join(sorted(unknown))} "
            f"(the vaults are {', '.join(spec.name for spec in specs)})"
        )
    every = "*" in wanted
    return [
        VaultSpec(s.name, s.root, s.read_only or every or s.name.lower() in wanted) for s in specs
    ]
