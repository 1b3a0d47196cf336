"""What a line that the SDK's stdio transport cannot read should get: the error replies
JSON-RPC 2.0 prescribes, or nothing.

Pure: no I/O. `replies(line, reason)` is asked only about lines the SDK refused (`reason`
is its parser's complaint). A request that carries an id gets an error with that id:
-32700 when the line is no JSON (the id cannot be read, so it is null), -32600 when the
JSON is no valid request object (a missing or wrong `jsonrpc`, an id or method of the
wrong type, `params` that is neither object nor array, a batch), -32602 when only its
`params` cannot be read (an array where MCP takes names, nesting deeper than the SDK
parses, a lone surrogate in a string). A notification or a response that is malformed
gets nothing: JSON-RPC answers neither.

MCP removed batches in 2025-06-18: each request in a batch gets its own -32600, one
message a line as on every other line of the stdio wire, so that any client can read it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

# Nesting kept when a line too deep for Python's own parser is read again to find its
# id; deeper values are cut. The SDK itself reads about 200 levels.
MAX_DEPTH = 200

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Strings (escapes and all), single brackets, runs of anything else, and a quote that
# opens a string that never closes.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|[^"\[\]{}]+|"', re.DOTALL)
Reply = dict[str, Any]


def replies(line: str, reason: str) -> list[Reply]:
    """The error replies to `line`, which the SDK refused for `reason`; none for a
    notification, a response or a blank line."""
    if not line.strip():
        return []
    try:
        message, cut = _loads(line)
    except ValueError:
        return [error(None, PARSE_ERROR, "Parse error: the line is not JSON.")]
    if isinstance(message, list):
        if not message:
            return [error(None, INVALID_REQUEST, "Invalid Request: an empty batch.")]
        return [reply for item in message if (reply := _batched(item)) is not None]
    reply = _single(message, cut, reason)
    return [] if reply is None else [reply]


def is_request(line: str) -> bool:
    """Whether `line` has both an id and a method: a request, whatever else the SDK took
    it for (a notification when the id is of no valid type, a response when it also
    holds a result)."""
    if '"id"' not in line or '"method"' not in line:
        return False
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "id" in message and "method" in message


def error(request_id: Any, code: int, message: str) -> Reply:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def encode(reply: Reply) -> bytes:
    """One line of ASCII JSON (a lone surrogate in an echoed id stays an escape)."""
    return json.dumps(reply, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def _batched(item: Any) -> Reply | None:
    if not isinstance(item, dict):
        return error(None, INVALID_REQUEST, "Invalid Request: a batch item is no object.")
    if _unanswered(item):
        return None
    return error(
        _id_of(item),
        INVALID_REQUEST,
        "Invalid Request: batches are not supported (MCP removed them in 2025-06-18); "
        "send each message on a line of its own.",
    )


def _single(message: Any, cut: bool, reason: str) -> Reply | None:
    if not isinstance(message, dict):
        return error(None, INVALID_REQUEST, "Invalid Request: a message must be an object.")
    if _unanswered(message):
        return None
    request_id = _id_of(message)
    if problem := _request_problem(message):
        return error(request_id, INVALID_REQUEST, f"Invalid Request: {problem}.")
    if "params" not in message:
        gist = f"the server cannot read it ({_first(reason)})"
        return error(request_id, INVALID_REQUEST, f"Invalid Request: {gist}.")
    problem = _params_problem(message["params"], cut or "recursion limit" in reason)
    gist = problem or f"the server cannot read them ({_first(reason)})"
    return error(request_id, INVALID_PARAMS, f"Invalid params: {gist}.")


def _unanswered(message: dict[str, Any]) -> bool:
    """A notification (no id), or a response (a result or an error and no method) to a
    request this server never sent: JSON-RPC answers neither."""
    if "id" not in message:
        return True
    return "method" not in message and ("result" in message or "error" in message)


def _request_problem(message: dict[str, Any]) -> str | None:
    """What makes `message` no valid request object, if anything."""
    if message.get("jsonrpc") != "2.0":
        return 'the member "jsonrpc" must be exactly "2.0"'
    request_id = _id_of(message)
    if request_id is None or (isinstance(request_id, float) and not request_id.is_integer()):
        return "the id must be a string or an integer"
    if _LONE_SURROGATE.search(message["id"] if isinstance(message["id"], str) else ""):
        return "the id holds a lone surrogate, which is no Unicode"
    method = message.get("method")
    if not isinstance(method, str):
        return 'the member "method" must be a string'
    if _LONE_SURROGATE.search(method):
        return "the method holds a lone surrogate, which is no Unicode"
    params = message.get("params")
    if "params" in message and not isinstance(params, dict | list):
        return 'the member "params" must be an object (or left out)'
    return None


def _params_problem(params: Any, cut: bool) -> str | None:
    """What the SDK cannot read in `params`, as far as can be told without it."""
    if isinstance(params, list):
        return "MCP methods take named parameters: params must be an object, not an array"
    if cut:
        return f"values nest deeper than the {MAX_DEPTH} levels the server reads"
    stack = [params]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
            value = "".join(value)
        elif isinstance(value, list):
            stack.extend(value)
            continue
        if isinstance(value, str) and _LONE_SURROGATE.search(value):
            return (
                "a string holds a lone surrogate (a \\ud800-\\udfff escape without its "
                "pair), which is no Unicode; send the character itself or its full pair"
            )
    return None


def _id_of(message: dict[str, Any]) -> Any:
    """The id to answer with: the request's own when it is a string or a finite
    number, else null (as JSON-RPC asks when the id cannot be read)."""
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _first(reason: str) -> str:
    """The gist of a pydantic error: its first complaint, without the boilerplate."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    gist = lines[1] if len(lines) > 1 else (lines[0] if lines else "it is malformed")
    return gist.split(" [type=")[0][:200]


def _loads(line: str) -> tuple[Any, bool]:
    """`line` as JSON, strictly (no NaN or Infinity), and whether values nested deeper
    than Python's parser goes had to be cut (read as null). ValueError if no JSON."""
    try:
        return json.loads(line, parse_constant=_no_constant), False
    except RecursionError:
        return json.loads(_shallow(line), parse_constant=_no_constant), True


def _shallow(line: str) -> str:
    """`line` with each value nested deeper than MAX_DEPTH replaced by null; brackets
    that do not balance stay as they are, for the parser to refuse."""
    out: list[str] = []
    depth = skipping = 0
    for match in _TOKEN.finditer(line):
        token = match.group()
        opens, closes = token in ("[", "{"), token in ("]", "}")
        if skipping:
            skipping += opens - closes
            continue
        if opens and depth == MAX_DEPTH:
            skipping = 1
            out.append("null")
            continue
        depth += opens - closes
        out.append(token)
    return "".join(out)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
