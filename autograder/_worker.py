"""The program that runs inside the sandbox."""

# Standard library only, and never `import autograder`: the sandbox copies this file into a
# private folder and runs it as `python -I _worker.py REQUEST_FD RESPONSE_FD`. Everything it
# sends is checked again on the trusted side, because student code shares this process and
# may rewrite any of it.

from __future__ import annotations

import builtins
import json
import os
import re
import selectors
import signal
import sys
import types
from typing import Any

MAX_DEPTH = 50
MAX_NODES = 200_000
INT_DIGITS = 4300
TEXT_CAP = 200
ERROR_MESSAGE_CAP = 500
STREAM_CAP = 2_000
# The trusted side reads at most 1 MiB per message; leave room for the envelope around a
# child's response (two capped streams, escaped, plus a few fields).
RESPONSE_CAP = 1024 * 1024 - 64 * 1024
READ_CHUNK = 65_536
CHILD_FAILED = 70  # EX_SOFTWARE: the child could not even write its answer
# JSON merges an escaped high and low surrogate into one character, so strings holding
# surrogates travel as code points.
_SURROGATE = re.compile("[\ud800-\udfff]")


# --- typed encoding -----------------------------------------------------------------------


class _TooLarge(Exception):
    """The value has more nodes than the encoding budget allows."""


def encode(value: object) -> list[Any]:
    """Encode a value as typed JSON nodes; anything not exactly plain data becomes opaque."""
    try:
        return _encode(value, 0, set(), [MAX_NODES])
    except _TooLarge:
        return _opaque_node(value, f"<too large to bring back: more than {MAX_NODES} items>")


def _encode(value: Any, depth: int, path: set[int], budget: list[int]) -> list[Any]:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    kind = type(value)
    # `type(x) is T`, never isinstance: a subclass may override __eq__, __hash__ or __str__.
    if kind is str:
        return _encode_str(value)
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return _encode_int(value)
    if kind is float:
        return ["float", repr(value)]
    if value is None:
        return ["none"]
    if kind is list or kind is tuple or kind is dict:
        return _encode_container(value, depth, path, budget)
    return _opaque_node(value)


def _encode_str(value: str) -> list[Any]:
    if value.isascii() or not _SURROGATE.search(value):
        return ["str", value]
    return ["codepoints", [ord(c) for c in value]]


def _encode_int(value: int) -> list[Any]:
    # Ints travel as decimal strings so JSON readers cannot round them through a double.
    try:
        text = int.__repr__(value)
    except ValueError:
        text = ""
    if not text or len(text.lstrip("-")) > INT_DIGITS:
        return _opaque_node(value, f"<int with more than {INT_DIGITS} digits>")
    return ["int", text]


def _encode_container(value: Any, depth: int, path: set[int], budget: list[int]) -> list[Any]:
    if depth >= MAX_DEPTH:
        return _opaque_node(value, f"<nested more than {MAX_DEPTH} levels deep>")
    if id(value) in path:
        return _opaque_node(value, "<refers to itself>")
    path.add(id(value))
    try:
        if type(value) is dict:
            pairs = [
                [_encode(k, depth + 1, path, budget), _encode(v, depth + 1, path, budget)]
                for k, v in dict.items(value)
            ]
            return ["dict", pairs]
        items = [_encode(item, depth + 1, path, budget) for item in value]
        return [type(value).__name__, items]
    finally:
        path.discard(id(value))


def _opaque_node(value: object, text: str | None = None) -> list[Any]:
    return ["opaque", _type_name(value), _safe_repr(value) if text is None else text]


def _type_name(value: object) -> str:
    try:
        kind = type(value)
        module, qualname = kind.__module__, kind.__qualname__
        if type(module) is str and type(qualname) is str:
            return (qualname if module == "builtins" else f"{module}.{qualname}")[:TEXT_CAP]
    except BaseException:  # a metaclass property may raise anything
        pass
    return "<unknown type>"


def _safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except BaseException:  # student __repr__ may raise anything, SystemExit included
        return "<repr failed>"
    if type(text) is not str:
        return "<repr failed>"
    return str.__getitem__(text, slice(0, TEXT_CAP))


def decode(node: list[Any]) -> object:
    """Rebuild plain data from the typed nodes the trusted side sent (call arguments)."""
    tag = node[0]
    if tag == "int":
        return int(node[1])
    if tag == "float":
        return float(node[1])
    if tag == "none":
        return None
    if tag in ("str", "bool"):
        return node[1]
    if tag == "codepoints":
        return "".join(map(chr, node[1]))
    if tag == "list":
        return [decode(item) for item in node[1]]
    if tag == "tuple":
        return tuple(decode(item) for item in node[1])
    if tag == "dict":
        return {decode(k): decode(v) for k, v in node[1]}
    raise ValueError(f"unknown tag {tag!r} in a call argument")


def error_info(exc: BaseException) -> dict[str, str]:
    """Describe an exception as plain data; the trusted side decides whether it is builtin."""
    kind = type(exc)
    try:
        module, qualname = kind.__module__, kind.__qualname__
    except BaseException:
        module, qualname = "", "<unknown exception>"
    try:
        message = str(exc)
    except BaseException:
        message = "<str() of the exception failed>"
    if type(message) is not str or type(module) is not str or type(qualname) is not str:
        return {"module": "", "qualname": "<unknown exception>", "message": ""}
    return {
        "module": module,
        "qualname": qualname[:TEXT_CAP],
        "message": message[:ERROR_MESSAGE_CAP],
    }


# --- loading --------------------------------------------------------------------------------


def load(statements: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the statements one by one into a fresh `__main__`; a failure does not stop the rest."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    # Notebook code runs as __main__; dataclasses and typing look names up through sys.modules.
    sys.modules["__main__"] = module
    namespace = module.__dict__
    errors = []
    for statement in statements:
        error = _run_statement(statement, namespace)
        if error is not None:
            errors.append({"cell": statement["cell"], "line": statement["line"], "error": error})
    return namespace, errors


def _run_statement(statement: dict[str, Any], namespace: dict[str, Any]) -> dict[str, str] | None:
    # Leading newlines keep tracebacks and SyntaxErrors on the notebook's own line numbers.
    padded = "\n" * (statement["line"] - 1) + statement["source"]
    try:
        code = compile(padded, f"<cell {statement['cell']}>", "exec", dont_inherit=True)
        exec(code, namespace)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt fail the statement only
        return error_info(exc)
    return None


_MODULE_ATTRIBUTES = frozenset(
    [
        "__name__",
        "__builtins__",
        "__doc__",
        "__package__",
        "__loader__",
        "__spec__",
        "__annotations__",
    ]
)


def defined_names(namespace: dict[str, Any]) -> list[str]:
    names = list(namespace)
    return [name for name in names if type(name) is str and name not in _MODULE_ATTRIBUTES]


VALUES_CAP = RESPONSE_CAP // 2


def snapshot(namespace: dict[str, Any], names: list[str]) -> dict[str, list[Any]]:
    """Every defined name's value, encoded right after loading, before any call has run."""
    values, size = {}, 0
    for name in names:
        node = encode(namespace.get(name))
        length = len(json.dumps(node, ensure_ascii=True, separators=(",", ":")))
        if size + length > VALUES_CAP:
            node = _too_large(node)
            length = len(json.dumps(node))
        values[name] = node
        size += length + len(name) + 8
    return values


# --- one call in a forked child -----------------------------------------------------------


def run_request(request: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """Run one call or value lookup and return the response as a dict (in the child)."""
    name = request["name"]
    if name not in namespace:
        return {"outcome": "missing"}
    if request["op"] == "value":
        return {"outcome": "returned", "value": encode(namespace[name]), "args_after": []}
    args = [decode(node) for node in request["args"]]
    try:
        result = namespace[name](*args)
    except BaseException as exc:
        return {"outcome": "raised", "error": error_info(exc), "args_after": _encode_all(args)}
    return {"outcome": "returned", "value": encode(result), "args_after": _encode_all(args)}


def _encode_all(values: list[object]) -> list[list[Any]]:
    return [encode(value) for value in values]


def dump_response(response: dict[str, Any]) -> str:
    """Serialise a child response, replacing parts that would break the size cap."""
    text = json.dumps(response, ensure_ascii=True, separators=(",", ":"))
    if len(text) > RESPONSE_CAP and "value" in response:
        response = dict(response, value=_too_large(response["value"]))
        text = json.dumps(response, ensure_ascii=True, separators=(",", ":"))
    if len(text) > RESPONSE_CAP and "args_after" in response:
        response = dict(response, args_after=[_too_large(n) for n in response["args_after"]])
        text = json.dumps(response, ensure_ascii=True, separators=(",", ":"))
    return text


_TAG_TYPES = {"codepoints": "str", "none": "NoneType"}


def _too_large(node: list[Any]) -> list[Any]:
    type_name = node[1] if node[0] == "opaque" else _TAG_TYPES.get(node[0], node[0])
    return ["opaque", type_name, f"<too large to bring back: over {RESPONSE_CAP} bytes encoded>"]


def _child(
    request: dict[str, Any],
    namespace: dict[str, Any],
    body_fd: int,
    out_fd: int,
    err_fd: int,
    closing: tuple[int, ...],
) -> None:
    """Body of the forked child: run, answer on body_fd, and never return."""
    try:
        for fd in closing:
            os.close(fd)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.close(out_fd)
        os.close(err_fd)
        try:
            response = run_request(request, namespace)
        finally:
            _flush_streams()
        _write_all(body_fd, (dump_response(response) + "\n").encode("ascii"))
    except BaseException:  # the child must reach os._exit whatever happens
        os._exit(CHILD_FAILED)
    os._exit(0)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # student code may have replaced or closed the streams
            pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_body(fd: int, pid: int) -> tuple[bytes, str]:
    """Read the child's answer until EOF, or until the child is gone and the pipe drained.

    Reading as it arrives keeps a large answer from deadlocking against waitpid; watching the
    child's pidfd keeps a lingering grandchild, which still holds the pipe, from stalling us.
    """
    os.set_blocking(fd, False)
    pidfd = _open_pidfd(pid)
    chunks: list[bytes] = []
    size, exited = 0, False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ)
            while True:
                ready = {key.fd for key, _ in selector.select()}
                exited = exited or pidfd in ready
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    if exited:
                        return b"".join(chunks), ""
                    continue
                if not chunk:
                    return b"".join(chunks), ""
                size += len(chunk)
                if size > RESPONSE_CAP + 1:
                    os.kill(pid, signal.SIGKILL)
                    return b"", f"the call wrote more than {RESPONSE_CAP} bytes as its response"
                chunks.append(chunk)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # kernels before 5.3: fall back to reading until EOF
        return None


def _parse_body(raw: bytes, problem: str) -> tuple[dict[str, Any] | None, str]:
    if problem or not raw:
        return None, problem
    try:
        response = json.loads(raw.decode("ascii"))
    except (ValueError, RecursionError):
        return None, "the call's response was not one JSON object"
    if type(response) is not dict or raw.count(b"\n") != 1:
        return None, "the call's response was not one JSON object"
    return response, ""


def _read_capture(fd: int) -> str:
    data = os.pread(fd, STREAM_CAP * 4, 0)
    return data.decode("utf-8", "replace")[:STREAM_CAP]


def serve_one(
    request: dict[str, Any], namespace: dict[str, Any], channels: tuple[int, int]
) -> dict[str, Any]:
    """Fork, let the child run the request, and describe what happened."""
    out_fd = os.open("call-stdout.txt", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    err_fd = os.open("call-stderr.txt", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    body_read, body_write = os.pipe()
    _flush_streams()  # or the child would inherit and print the parent's buffered text
    pid = os.fork()
    if pid == 0:
        _child(request, namespace, body_write, out_fd, err_fd, (body_read, *channels))
    os.close(body_write)
    try:
        raw, problem = _read_body(body_read, pid)
    finally:
        os.close(body_read)
    _, status = os.waitpid(pid, 0)
    response, problem = _parse_body(raw, problem)
    message = {
        "kind": "result",
        "id": request["id"],
        "exit": os.waitstatus_to_exitcode(status),
        "response": response,
        "problem": problem,
        "stdout": _read_capture(out_fd),
        "stderr": _read_capture(err_fd),
    }
    os.close(out_fd)
    os.close(err_fd)
    return message


# --- main loop ------------------------------------------------------------------------------


def _send(fd: int, message: dict[str, Any]) -> None:
    line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
    _write_all(fd, line.encode("ascii"))


def _silence_standard_fds() -> None:
    # Student prints must never reach the protocol; keep them in a file nobody reads.
    sink = os.open("worker-output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(sink, 1)
    os.dup2(sink, 2)
    os.close(sink)


def main(argv: list[str]) -> int:
    request_fd, response_fd = int(argv[1]), int(argv[2])
    # Programs the student starts with subprocess must not inherit the protocol channels.
    os.set_inheritable(request_fd, False)
    os.set_inheritable(response_fd, False)
    _silence_standard_fds()
    with open(request_fd, "rb", closefd=False) as requests:
        first = json.loads(requests.readline())
        namespace, errors = load(first["statements"])
        names = defined_names(namespace)
        loaded = {
            "kind": "loaded",
            "defined": names,
            "errors": errors,
            "values": snapshot(namespace, names),
        }
        _send(response_fd, loaded)
        while line := requests.readline():
            request = json.loads(line)
            _send(response_fd, serve_one(request, namespace, (request_fd, response_fd)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
