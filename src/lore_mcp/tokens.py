"""The bearer tokens of the HTTP door: where they come from and what each may reach.

A token comes from $LORE_MCP_TOKEN (one token, reaching everything) or from a token file
that only its owner may change, one token a line, each limited to some vaults or to
reading (`TOKEN label=NAME vaults=team,personal role=reader`). Every token is checked
for length and for characters an Authorization header can carry; a token file is
refused when others could read or write it. `bearer` checks requests against them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lore_mcp.errors import LoreError
from lore_mcp.vaults import EVERYTHING, Grant, Role, check_name

TOKEN_ENV = "LORE_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True)
class Token:
    """A bearer token and what it may reach."""

    secret: str = field(repr=False)
    grant: Grant = EVERYTHING


def load_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str:
    """The bearer token: from `token_file` when given (its first), else from
    $LORE_MCP_TOKEN. Raises `LoreError` when there is none or it is unfit; HTTP never
    runs without one."""
    return load_tokens(token_file, environ)[0].secret


def load_tokens(
    token_file: Path | None, environ: Mapping[str, str] = os.environ
) -> tuple[Token, ...]:
    """The bearer tokens and their reach: the lines of `token_file` when given (see
    `parse_tokens`), else $LORE_MCP_TOKEN, which reaches everything."""
    if token_file is not None:
        return parse_tokens(_read_token_file(token_file), f"the token file {token_file}")
    raw = environ.get(TOKEN_ENV, "")
    if not raw.strip():
        raise LoreError(
            f"HTTP serving needs a bearer token and none is configured. Set {TOKEN_ENV} or "
            f"pass --token-file FILE (at least {MIN_TOKEN_CHARS} characters; make one with "
            f"{MAKE_TOKEN}). There is no open mode."
        )
    return (Token(check_token(raw.strip(), f"${TOKEN_ENV}"), Grant(label="token")),)


ROLES = ("reader", "writer")


def parse_tokens(text: str, source: str) -> tuple[Token, ...]:
    """One token a line, `TOKEN [label=NAME] [vaults=a,b] [role=reader|writer]`; blank
    lines and `#` comments are skipped. A token without `vaults` reaches every vault,
    without `role` it writes; its label (for the audit log) is `label`, else `token`
    for a file of one token and `line-N` for the token on line N of several."""
    lines = [
        (number, line.split())
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    tokens = []
    for number, (secret, *settings) in lines:
        where = f"{source}, line {number}"
        options: dict[str, str] = {}
        for setting in settings:
            key, equals, value = setting.partition("=")
            if not equals or key not in ("label", "vaults", "role") or not value:
                raise LoreError(
                    f"In {where}: {setting!r} is not label=NAME, vaults=NAME,NAME or "
                    "role=reader|writer."
                )
            options[key] = value
        if options.get("role", "writer") not in ROLES:
            raise LoreError(f"In {where}: the role is reader or writer, not {options['role']!r}.")
        try:
            vaults = options.get("vaults")
            reach = None if vaults is None else frozenset(map(check_name, vaults.split(",")))
        except LoreError as exc:
            raise LoreError(f"In {where}: {exc}") from None
        label = options.get("label") or ("token" if len(lines) == 1 else f"line-{number}")
        role: Role = "reader" if options.get("role") == "reader" else "writer"
        tokens.append(Token(check_token(secret, where), Grant(label, reach, role)))
    if not tokens:
        raise LoreError(f"{source} holds no token; write one a line ({MAKE_TOKEN}).")
    if len({t.secret for t in tokens}) < len(tokens) or len({t.grant.label for t in tokens}) < len(
        tokens
    ):
        raise LoreError(f"{source} lists a token or a label twice; give each its own.")
    return tuple(tokens)


def check_token(token: str, source: str) -> str:
    """`token` if it is long enough and sendable in a header, else a `LoreError`."""
    if len(token) < MIN_TOKEN_CHARS:
        raise LoreError(
            f"The token from {source} has {len(token)} characters; at least "
            f"{MIN_TOKEN_CHARS} are needed. Make one with {MAKE_TOKEN}."
        )
    if not all("!" <= ch <= "~" for ch in token):
        raise LoreError(
            f"The token from {source} holds spaces or non-ASCII characters, which an "
            f"Authorization header cannot carry. Make one with {MAKE_TOKEN}."
        )
    return token


def _read_token_file(path: Path) -> str:
    """The token in the file, which only its owner (and the owner's group, to read) may
    read or change: a token others can read is no secret, one they can write lets them
    pick it."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise LoreError(f"Cannot read the token file {path}: {exc}.") from None
    if os.name == "posix" and mode & (stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH):
        who = "readable by every user" if mode & stat.S_IROTH else "writable by other users"
        raise LoreError(
            f"The token file {path} is {who} (mode {stat.S_IMODE(mode):04o}): anyone who "
            f"can change it can choose the token. Run `chmod 600 {path}` and start again."
        )
    if not text:
        raise LoreError(
            f"The token file {path} is empty; write a token of at least "
            f"{MIN_TOKEN_CHARS} characters into it ({MAKE_TOKEN})."
        )
    return text
