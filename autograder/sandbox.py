"""Run student code in its own process and bring back typed plain data."""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from autograder import isolation

__all__ = [
    "ErrorInfo",
    "LoadReport",
    "MalformedMessage",
    "OTHER_TYPE",
    "Observation",
    "Opaque",
    "Sandbox",
    "StatementError",
    "StatementRecord",
    "decode",
    "encode",
    "public_type_name",
]

MAX_DEPTH = 50
"""Containers nested deeper than this come back as Opaque (and are refused as arguments)."""
INT_DIGITS = 4300
"""Longest int, in decimal digits, that crosses the boundary (CPython's own str() limit)."""
MESSAGE_CAP = 1024 * 1024
"""Largest message, in bytes, read from the student process."""
STREAM_CAP = 2_000
"""Characters of a call's stdout and of its stderr that are kept."""
TEXT_CAP = 200
"""Characters kept of an Opaque's type name and text."""
ERROR_MESSAGE_CAP = 500
"""Characters kept of an exception message."""
MAX_NAMES = 100_000
"""Most names or load errors a load report may list."""

_WORKER_SOURCE = Path(__file__).with_name("_worker.py")
_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"
_READ_CHUNK = 65_536

Outcome = Literal[
    "returned", "raised", "timeout", "crashed", "missing", "protocol_error", "budget_exhausted"
]
LoadOutcome = Literal["loaded", "timeout", "crashed", "protocol_error"]


# --- records --------------------------------------------------------------------------------


class StatementRecord(Protocol):
    """One top-level statement of the notebook, as extraction hands it over."""

    @property
    def cell(self) -> int: ...

    @property
    def line(self) -> int: ...

    @property
    def source(self) -> str: ...


@dataclass(frozen=True)
class Opaque:
    """A value that was not exact plain data; it equals nothing, itself included."""

    type_name: str
    """The type's name if it is a well-known type (`numpy.int64`, `set`), else OTHER_TYPE."""
    text: str
    """The value's repr, capped; or a fixed text when the repr failed or was not attempted."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True


@dataclass(frozen=True)
class ErrorInfo:
    """An exception raised by student code."""

    type_name: str
    """`ValueError` for a builtin exception, else `module.QualName`."""
    message: str
    """str() of the exception, capped; student-written, so show it as such."""
    builtin: bool
    """True when the class is a builtins exception, so feedback may name it."""


@dataclass(frozen=True)
class Observation:
    """What one call (or one value lookup) did, as plain data decoded on the trusted side."""

    name: str
    """The name that was called or looked up."""
    outcome: Outcome
    """What happened; only `returned` carries a value."""
    returned: object = None
    """The decoded return value: exact builtins, with Opaque for anything else."""
    raised: ErrorInfo | None = None
    """The exception, when outcome is `raised`."""
    args_after: tuple[object, ...] = ()
    """The call's arguments as they were after the call, to detect mutation."""
    stdout: str = ""
    """What the call printed to stdout, capped at STREAM_CAP characters."""
    stderr: str = ""
    """What the call printed to stderr, capped at STREAM_CAP characters."""
    detail: str = ""
    """Trusted-side explanation, e.g. `timed out after 2 s` or `killed by SIGSEGV`."""
    seconds: float = 0.0
    """Wall-clock time of the request, measured on the trusted side."""

    @property
    def ok(self) -> bool:
        return self.outcome == "returned"


@dataclass(frozen=True)
class StatementError:
    """A top-level statement that raised while the notebook code was loading."""

    cell: int
    line: int
    error: ErrorInfo


@dataclass(frozen=True)
class LoadReport:
    """What loading the notebook code did."""

    defined: tuple[str, ...]
    """Names bound after every statement had its turn."""
    errors: tuple[StatementError, ...]
    """Statements that raised; loading carried on after each."""
    outcome: LoadOutcome
    """`loaded` unless the process itself timed out, died or broke the protocol."""
    detail: str = ""
    """Trusted-side explanation when outcome is not `loaded`."""


class MalformedMessage(ValueError):
    """The student process sent something that is not a well-formed protocol message."""


# --- typed encoding -------------------------------------------------------------------------


def encode(value: object) -> list[Any]:
    """Encode plain data as typed JSON nodes; refuse anything that is not exactly plain data."""
    return _encode(value, 0, set(), "the argument")


def _encode(value: object, depth: int, active: set[int], where: str) -> list[Any]:
    kind = type(value)
    if kind is str:
        return _encode_str(value)  # type: ignore[arg-type]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", _int_text(value, where)]  # type: ignore[arg-type]
    if kind is float:
        return ["float", repr(value)]
    if value is None:
        return ["none"]
    if kind is list or kind is tuple or kind is dict:
        return _encode_container(value, depth, active, where)
    raise TypeError(
        f"{where} is a {kind.__qualname__}; call arguments must be exact str, int, float, bool,"
        " None, list, tuple or dict (convert it, e.g. a set to a sorted list)"
    )


# JSON merges an escaped high and low surrogate into one character, so strings holding
# surrogates travel as code points.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode_str(value: str) -> list[Any]:
    if value.isascii() or not _SURROGATE.search(value):
        return ["str", value]
    return ["codepoints", [ord(c) for c in value]]


def _int_text(value: int, where: str) -> str:
    try:
        text = int.__repr__(value)
    except ValueError:  # CPython refuses to print ints beyond its digit limit
        text = ""
    if not text or len(text.lstrip("-")) > INT_DIGITS:
        raise ValueError(f"{where} has more than {INT_DIGITS} digits; pass a smaller int")
    return text


def _encode_container(value: Any, depth: int, active: set[int], where: str) -> list[Any]:
    if depth >= MAX_DEPTH:
        raise ValueError(f"{where} is nested more than {MAX_DEPTH} levels deep; flatten it")
    if id(value) in active:
        raise ValueError(f"{where} contains itself; pass data without cycles")
    active.add(id(value))
    try:
        if type(value) is dict:
            return [
                "dict",
                [
                    [
                        _encode(k, depth + 1, active, f"{where} key {k!r}"),
                        _encode(v, depth + 1, active, f"{where}[{k!r}]"),
                    ]
                    for k, v in value.items()
                ],
            ]
        items = [_encode(item, depth + 1, active, f"{where}[{i}]") for i, item in enumerate(value)]
        return [type(value).__name__, items]
    finally:
        active.discard(id(value))


def decode(node: object) -> object:
    """Rebuild a value from typed nodes, creating only exact builtins and Opaque.

    Raises MalformedMessage for anything that is not a well-formed node.
    """
    return _decode(node, 0)


def _decode(node: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise MalformedMessage(f"a value is nested deeper than {MAX_DEPTH} levels")
    if type(node) is not list or not node or type(node[0]) is not str:
        raise MalformedMessage(f"expected a typed node such as ['int', '3'], got {_preview(node)}")
    decoder = _DECODERS.get(node[0])
    if decoder is None:
        raise MalformedMessage(f"unknown type tag {_preview(node[0])}")
    return decoder(node, depth)


def _one(node: list[Any], kind: type) -> Any:
    """The single payload of a node such as ['int', '3'], checked to be exactly `kind`."""
    if len(node) != 2 or type(node[1]) is not kind:
        raise MalformedMessage(
            f"a {node[0]!r} node should hold one {kind.__name__}, got {_preview(node)}"
        )
    return node[1]


_INT_TEXT = re.compile(rf"-?(?:0|[1-9][0-9]{{0,{INT_DIGITS - 1}}})")
# Exactly what repr(float) writes; float() alone would also take "1_0" or " inf ".
_FLOAT_TEXT = re.compile(r"-?(?:inf|nan|[0-9]+(?:\.[0-9]+)?(?:e[+-][0-9]+)?)")


def _decode_int(node: list[Any], depth: int) -> int:
    text = _one(node, str)
    if not _INT_TEXT.fullmatch(text):
        raise MalformedMessage(
            f"not a decimal int of at most {INT_DIGITS} digits: {_preview(text)}"
        )
    return int(text)


def _decode_float(node: list[Any], depth: int) -> float:
    text = _one(node, str)
    if len(text) > 40 or not _FLOAT_TEXT.fullmatch(text):
        raise MalformedMessage(f"not a float repr: {_preview(text)}")
    return float(text)


def _decode_str(node: list[Any], depth: int) -> str:
    text: str = _one(node, str)
    return text


def _decode_codepoints(node: list[Any], depth: int) -> str:
    points = _one(node, list)
    if any(type(p) is not int or not 0 <= p <= sys.maxunicode for p in points):
        raise MalformedMessage(f"code points should be ints up to {sys.maxunicode:#x}")
    return "".join(map(chr, points))


def _decode_bool(node: list[Any], depth: int) -> bool:
    flag: bool = _one(node, bool)
    return flag


def _decode_none(node: list[Any], depth: int) -> None:
    if len(node) != 1:
        raise MalformedMessage(f"a 'none' node holds nothing, got {_preview(node)}")


def _decode_list(node: list[Any], depth: int) -> list[object]:
    return [_decode(item, depth + 1) for item in _one(node, list)]


def _decode_tuple(node: list[Any], depth: int) -> tuple[object, ...]:
    return tuple([_decode(item, depth + 1) for item in _one(node, list)])


def _decode_dict(node: list[Any], depth: int) -> dict[object, object]:
    result: dict[object, object] = {}
    for pair in _one(node, list):
        if type(pair) is not list or len(pair) != 2:
            raise MalformedMessage(
                f"a dict entry should be a [key, value] pair, got {_preview(pair)}"
            )
        key, value = _decode(pair[0], depth + 1), _decode(pair[1], depth + 1)
        try:
            result[key] = value
        except TypeError:
            raise MalformedMessage(f"a dict key is not hashable: {_preview(pair[0])}") from None
    return result


def _decode_opaque(node: list[Any], depth: int) -> Opaque:
    if len(node) != 3 or type(node[1]) is not str or type(node[2]) is not str:
        raise MalformedMessage(f"an 'opaque' node should hold two strings, got {_preview(node)}")
    return Opaque(public_type_name(node[1]), node[2][:TEXT_CAP])


OTHER_TYPE = "<non-builtin type>"
"""The type name of an Opaque whose claimed type is not a well-known one."""
_KNOWN_TYPES = frozenset(
    ["function", "builtin_function_or_method", "method", "module", "generator", "coroutine"]
    + ["NoneType", "ellipsis", "NotImplementedType", "dict_keys", "dict_values", "dict_items"]
    + [f"numpy.{n}" for n in ("int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64".split())]
    + [f"numpy.{n}" for n in ("bool_", "bool", "str_", "bytes_", "ndarray", "longlong", "ulonglong")]
    + ["decimal.Decimal", "fractions.Fraction", "collections.OrderedDict", "collections.defaultdict"]
    + ["collections.Counter", "collections.deque", "pandas.Series", "pandas.DataFrame"]
)


def public_type_name(claimed: str) -> str:
    """The claimed type name if it is a well-known type, else OTHER_TYPE.

    Student code picks its classes' `__module__` and `__qualname__`, and feedback shown before
    the due date names the type; a free-form name would carry whatever the code saw (a hidden
    input), so only a fixed vocabulary gets through.
    """
    if claimed in _KNOWN_TYPES:
        return claimed
    candidate = getattr(builtins, claimed, None) if claimed.isidentifier() else None
    return claimed if isinstance(candidate, type) else OTHER_TYPE


_DECODERS: dict[str, Callable[[list[Any], int], object]] = {
    "str": _decode_str,
    "codepoints": _decode_codepoints,
    "int": _decode_int,
    "float": _decode_float,
    "bool": _decode_bool,
    "none": _decode_none,
    "list": _decode_list,
    "tuple": _decode_tuple,
    "dict": _decode_dict,
    "opaque": _decode_opaque,
}


def _preview(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- messages from the worker ---------------------------------------------------------------


def _parse_message(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise MalformedMessage(f"a message is not JSON ({type(exc).__name__})") from None
    if type(message) is not dict:
        raise MalformedMessage(f"a message is not a JSON object: {_preview(message)}")
    return message


def _field(message: dict[str, Any], key: str, kind: type) -> Any:
    value = message.get(key)
    if type(value) is not kind:
        raise MalformedMessage(f"field {key!r} should be a {kind.__name__}, got {_preview(value)}")
    return value


def _object(value: object, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise MalformedMessage(f"{what} should be a JSON object, got {_preview(value)}")
    return value


def _load_report(message: dict[str, Any]) -> tuple[LoadReport, dict[str, Any]]:
    """The load report, and the typed nodes of every defined name's value just after loading."""
    if message.get("kind") != "loaded":
        raise MalformedMessage(
            f"expected the load report, got kind {_preview(message.get('kind'))}"
        )
    names = _field(message, "defined", list)
    errors = _field(message, "errors", list)
    values = _field(message, "values", dict)
    if len(names) > MAX_NAMES or len(errors) > MAX_NAMES:
        raise MalformedMessage(f"the load report lists more than {MAX_NAMES} names or errors")
    if any(type(name) is not str for name in names):
        raise MalformedMessage("the load report lists a defined name that is not a string")
    report = LoadReport(tuple(names), tuple(_statement_error(e) for e in errors), "loaded")
    return report, values


def _statement_error(item: object) -> StatementError:
    record = _object(item, "a load error")
    error = _error_info(_object(record.get("error"), "a load error's exception"))
    return StatementError(_field(record, "cell", int), _field(record, "line", int), error)


def _error_info(payload: dict[str, Any]) -> ErrorInfo:
    module = _field(payload, "module", str)
    qualname = _field(payload, "qualname", str)
    message = _field(payload, "message", str)
    # Decided here from a fixed set, not taken from the worker's word.
    builtin = module == "builtins" and _is_builtin_exception(qualname)
    type_name = qualname if builtin or not module else f"{module}.{qualname}"
    return ErrorInfo(type_name[:TEXT_CAP], message[:ERROR_MESSAGE_CAP], builtin)


def _is_builtin_exception(name: str) -> bool:
    candidate = getattr(builtins, name, None) if name.isidentifier() else None
    return isinstance(candidate, type) and issubclass(candidate, BaseException)


def _call_observation(
    name: str, message: dict[str, Any], request_id: int, seconds: float
) -> Observation:
    if message.get("kind") != "result" or _field(message, "id", int) != request_id:
        raise MalformedMessage(f"expected the result of request {request_id}")
    exit_code = _field(message, "exit", int)
    problem = _field(message, "problem", str)
    out = {
        "stdout": _field(message, "stdout", str)[:STREAM_CAP],
        "stderr": _field(message, "stderr", str)[:STREAM_CAP],
        "seconds": seconds,
    }
    if problem:
        detail = f"the call's answer was not one JSON object of at most {MESSAGE_CAP} bytes"
        return Observation(name, "protocol_error", detail=detail, **out)
    response = message.get("response")
    if response is None:
        return Observation(name, "crashed", detail=_describe_exit(exit_code), **out)
    return _response_observation(name, _object(response, "a call's response"), out)


def _response_observation(name: str, response: dict[str, Any], out: dict[str, Any]) -> Observation:
    outcome = response.get("outcome")
    if outcome == "missing":
        return Observation(name, "missing", detail=_missing_detail(name), **out)
    args_after = tuple(decode(node) for node in _field(response, "args_after", list))
    if outcome == "returned":
        return Observation(
            name, "returned", decode(response.get("value")), args_after=args_after, **out
        )
    if outcome == "raised":
        raised = _error_info(_object(response.get("error"), "a call's exception"))
        return Observation(name, "raised", raised=raised, args_after=args_after, **out)
    raise MalformedMessage(f"unknown call outcome {_preview(outcome)}")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "closed its side of the protocol without exiting"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _missing_detail(name: str) -> str:
    return f"{name!r} is not defined after loading the notebook code"


# --- the worker process ---------------------------------------------------------------------


class _Deadline(Exception):
    """The worker did not answer in time."""


class _WorkerGone(Exception):
    """The worker process died (or closed its pipes) before answering."""

    def __init__(self, exit_code: int | None) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


def _spawn(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    pass_fds: Sequence[int],
    preexec: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """Start the worker process; `preexec` confines it (isolation.Confinement.preexec)."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        pass_fds=tuple(pass_fds),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        # Its own session and process group, the last resort when there is no sandbox user.
        start_new_session=True,
        preexec_fn=preexec,
    )


def _minimal_env(folder: Path) -> dict[str, str]:
    return {"PATH": _SEARCH_PATH, "LANG": "C.UTF-8", "HOME": str(folder)}


def _install_worker(folder: Path) -> Path:
    target = folder / "_worker.py"
    # Student code may have left a symlink here; never write through it.
    target.unlink(missing_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "wb") as out:
        out.write(_WORKER_SOURCE.read_bytes())
    return target


class _Worker:
    """One running worker process and the two pipes that talk to it."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        requests: int,
        responses: int,
        confinement: isolation.Confinement,
    ) -> None:
        self.process = process
        self.confinement = confinement
        self._requests = requests
        self._responses = responses
        self._buffer = bytearray()
        os.set_blocking(requests, False)
        os.set_blocking(responses, False)
        self._writable = selectors.DefaultSelector()
        self._writable.register(requests, selectors.EVENT_WRITE)
        self._readable = selectors.DefaultSelector()
        self._readable.register(responses, selectors.EVENT_READ)
        self._closed = False

    @classmethod
    def start(cls, folder: Path, confinement: isolation.Confinement) -> _Worker:
        script = _install_worker(folder)
        confinement.prepare(folder, script)
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        try:
            argv = [confinement.python, "-I", str(script), str(request_read), str(response_write)]
            fds = (request_read, response_write)
            process = _spawn(argv, folder, _minimal_env(folder), fds, confinement.preexec(folder))
        except BaseException:
            os.close(request_write)
            os.close(response_read)
            raise
        finally:
            os.close(request_read)
            os.close(response_write)
        confinement.started(process.pid)
        return cls(process, request_write, response_read, confinement)

    def send(self, message: dict[str, Any], deadline: float) -> None:
        view = memoryview((json.dumps(message, separators=(",", ":")) + "\n").encode())
        while view:
            try:
                view = view[os.write(self._requests, view) :]
                continue
            except BlockingIOError:
                pass
            except BrokenPipeError:
                raise _WorkerGone(self._exit_code(deadline)) from None
            if not self._writable.select(_remaining(deadline)):
                raise _Deadline

    def receive(self, deadline: float) -> dict[str, Any]:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MESSAGE_CAP:
                raise MalformedMessage(f"a message is longer than {MESSAGE_CAP} bytes")
            self._fill(deadline)
        if end > MESSAGE_CAP:
            raise MalformedMessage(f"a message is longer than {MESSAGE_CAP} bytes")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return _parse_message(line)

    def _fill(self, deadline: float) -> None:
        if not self._readable.select(_remaining(deadline)):
            raise _Deadline
        try:
            chunk = os.read(self._responses, _READ_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            raise _WorkerGone(self._exit_code(deadline))
        self._buffer += chunk

    def _exit_code(self, deadline: float) -> int | None:
        # The pipe closed; give the process a moment to finish dying so we can say how.
        try:
            return self.process.wait(timeout=min(1.0, max(0.05, _remaining(deadline))))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.confinement.kill_all(self.process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self._writable.close()
        self._readable.close()
        os.close(self._requests)
        os.close(self._responses)


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class _Resources:
    """What a sandbox must release: its worker, its confinement and, if it made it, its folder."""

    def __init__(self, folder: Path, owned: bool, confinement: isolation.Confinement) -> None:
        self.folder = folder
        self.owned = owned
        self.confinement = confinement
        self.worker: _Worker | None = None
        self.starts = 0

    def start_worker(self) -> _Worker:
        self.worker = _Worker.start(self.folder, self.confinement)
        self.starts += 1
        return self.worker

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None

    def release(self) -> None:
        self.stop_worker()
        self.confinement.release()
        if self.owned:
            shutil.rmtree(self.folder, ignore_errors=True)


def _private_folder(workdir: Path | None) -> tuple[Path, bool]:
    if workdir is None:
        return Path(os.path.realpath(tempfile.mkdtemp(prefix="autograder-sandbox-"))), True
    folder = Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    return Path(os.path.realpath(folder)), False


def _statement_payload(statements: Iterable[StatementRecord]) -> list[dict[str, Any]]:
    payload = []
    for index, statement in enumerate(statements):
        cell = getattr(statement, "cell", None)
        line = getattr(statement, "line", None)
        source = getattr(statement, "source", None)
        if type(cell) is not int or type(line) is not int or line < 1 or type(source) is not str:
            raise TypeError(
                f"statement {index} is {statement!r}; expected a record with cell: int,"
                " line: int >= 1 and source: str, such as extraction's Statement"
            )
        payload.append({"cell": cell, "line": line, "source": source})
    return payload


def _positive(name: str, value: float) -> float:
    if type(value) not in (int, float) or not value > 0:
        raise ValueError(f"{name}={value!r}; expected a positive number of seconds")
    return float(value)


# --- the sandbox ----------------------------------------------------------------------------


class Sandbox:
    """Student code loaded in its own process; every call runs in a fresh fork of it.

    Loads lazily on first use. Use as a context manager, or call close().
    """

    def __init__(
        self,
        statements: Iterable[StatementRecord],
        *,
        call_timeout: float = 2.0,
        load_timeout: float = 10.0,
        total_seconds: float = 120.0,
        workdir: Path | None = None,
    ) -> None:
        self._statements = _statement_payload(statements)
        self._call_timeout = _positive("call_timeout", call_timeout)
        self._load_timeout = _positive("load_timeout", load_timeout)
        self._total = _positive("total_seconds", total_seconds)
        limits = isolation.Limits.for_budget(self._load_timeout, self._total)
        folder, owned = _private_folder(workdir)
        self._resources = _Resources(folder, owned, isolation.Confinement(limits))
        self._finalizer = weakref.finalize(self, self._resources.release)
        self._report: LoadReport | None = None
        self._values: dict[str, Any] | None = None
        self._failed_load: LoadReport | None = None
        self._spent = 0.0
        self._running_since: float | None = None
        self._last_request = 0

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def folder(self) -> Path:
        """The private working folder the student code runs in."""
        return self._resources.folder

    @property
    def load_report(self) -> LoadReport:
        """What loading did; loads now if nothing has been loaded yet."""
        if self._report is None:
            self._check_open()
            with self._charging():
                self._ensure_loaded()
        assert self._report is not None
        return self._report

    def defines(self, name: str) -> bool:
        return name in self.load_report.defined

    def call(self, name: str, *args: object) -> Observation:
        """Call `name(*args)` in a fresh fork of the loaded code."""
        encoded = [_encode(arg, 0, set(), f"argument {i}") for i, arg in enumerate(args)]
        return self._observe(name, {"op": "call", "name": name, "args": encoded})

    def value(self, name: str) -> Observation:
        """The value bound to `name` after loading, e.g. a list of cases.

        Taken when the code first loaded, before any call ran: nothing a later call saw (a
        hidden input) can reach it, whatever the student's processes did in between.
        """
        return self._observe(name, {"op": "value", "name": name})

    def close(self) -> None:
        """Kill every process the student started; remove the private folder if the sandbox made it."""
        self._finalizer()

    def isolation_report(self) -> dict[str, Any]:
        """Which isolation the student code got, for results.json's extra_data.isolation."""
        return {
            "process": "one worker process per sandbox, a fresh fork of it per call",
            **self._resources.confinement.report(),
            "timeouts": {
                "call_seconds": self._call_timeout,
                "load_seconds": self._load_timeout,
                "total_seconds": self._total,
            },
            "worker_starts": self._resources.starts,
            "environment": sorted(_minimal_env(self.folder)),
        }

    # -- internals --

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError("this sandbox is closed; create a new Sandbox to run more code")

    @contextlib.contextmanager
    def _charging(self) -> Iterator[None]:
        self._running_since = time.monotonic()
        try:
            yield
        finally:
            self._spent += time.monotonic() - self._running_since
            self._running_since = None

    def _remaining(self) -> float:
        running = 0.0 if self._running_since is None else time.monotonic() - self._running_since
        return self._total - self._spent - running

    def _deadline(self, timeout: float) -> tuple[float, bool]:
        """The deadline for a step, and whether the total budget (not the timeout) sets it."""
        remaining = self._remaining()
        if remaining < timeout:
            return time.monotonic() + max(0.0, remaining), True
        return time.monotonic() + timeout, False

    def _budget_detail(self) -> str:
        return f"the total time budget of {self._total:g} s ran out"

    def _observe(self, name: str, request: dict[str, Any]) -> Observation:
        self._check_open()
        if type(name) is not str:
            raise TypeError(f"name={name!r}; expected the str name of a notebook definition")
        if request["op"] == "value" and self._values is not None:
            return self._snapshot_value(name)  # runs nothing: no worker, no time budget needed
        if self._remaining() <= 0:
            return Observation(name, "budget_exhausted", detail=self._budget_detail())
        with self._charging():
            report = self._ensure_loaded()
            if report.outcome != "loaded":
                if self._remaining() <= 0:
                    return Observation(name, "budget_exhausted", detail=self._budget_detail())
                return Observation(name, report.outcome, detail=report.detail)
            if name not in report.defined:
                return Observation(name, "missing", detail=_missing_detail(name))
            if request["op"] == "value":
                return self._snapshot_value(name)
            return self._exchange(name, request)

    def _snapshot_value(self, name: str) -> Observation:
        node = (self._values or {}).get(name)
        if node is None:
            return Observation(name, "missing", detail=_missing_detail(name))
        try:
            return Observation(name, "returned", decode(node))
        except MalformedMessage as exc:
            return Observation(name, "protocol_error", detail=f"broke the protocol: {exc}")

    def _ensure_loaded(self) -> LoadReport:
        """Start and load a worker unless one is running; a failed load is never retried."""
        if self._failed_load is not None:
            return self._failed_load
        if self._resources.worker is None or self._report is None:
            self._report = self._load()
            if self._report.outcome != "loaded":
                self._failed_load = self._report
        return self._report

    def _load(self) -> LoadReport:
        # Started first: waiting for a free sandbox user is the grader's time, not the student's.
        worker = self._resources.start_worker()
        deadline, by_budget = self._deadline(self._load_timeout)
        try:
            worker.send({"op": "load", "statements": self._statements}, deadline)
            report, values = _load_report(worker.receive(deadline))
            if self._values is None:  # only the first load: later ones may follow calls
                self._values = values
            return report
        except _Deadline:
            outcome: LoadOutcome = "timeout"
            detail = (
                self._budget_detail() if by_budget else f"timed out after {self._load_timeout:g} s"
            ) + " while loading"
        except _WorkerGone as gone:
            outcome, detail = "crashed", f"{_describe_exit(gone.exit_code)} while loading"
        except MalformedMessage as exc:
            outcome, detail = "protocol_error", f"broke the protocol while loading: {exc}"
        self._resources.stop_worker()
        return LoadReport((), (), outcome, detail)

    def _exchange(self, name: str, request: dict[str, Any]) -> Observation:
        worker = self._resources.worker
        assert worker is not None
        self._last_request += 1
        deadline, by_budget = self._deadline(self._call_timeout)
        started = time.monotonic()
        try:
            worker.send({**request, "id": self._last_request}, deadline)
            message = worker.receive(deadline)
            observation = _call_observation(
                name, message, self._last_request, time.monotonic() - started
            )
            if worker.confinement.kill_strays(worker.process.pid):
                # Processes the call left behind would not die: take the worker with them;
                # the next call starts a fresh one.
                self._resources.stop_worker()
            return observation
        except _Deadline:
            if by_budget:
                outcome: Outcome = "budget_exhausted"
                detail = self._budget_detail()
            else:
                outcome, detail = "timeout", f"timed out after {self._call_timeout:g} s"
        except _WorkerGone as gone:
            outcome, detail = "crashed", _describe_exit(gone.exit_code)
        except MalformedMessage as exc:
            outcome, detail = "protocol_error", f"broke the protocol: {exc}"
        # The process is stuck, dead or out of step: discard it; the next call reloads.
        self._resources.stop_worker()
        return Observation(name, outcome, detail=detail, seconds=time.monotonic() - started)
