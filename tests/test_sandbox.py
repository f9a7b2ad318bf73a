"""Tests for the sandbox: student code runs in its own process and comes back as plain data."""

from __future__ import annotations

import gc
import json
import math
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import _worker, isolation
from autograder.sandbox import (
    OTHER_TYPE,
    STREAM_CAP,
    ErrorInfo,
    MalformedMessage,
    Observation,
    Opaque,
    Sandbox,
    StatementError,
    decode,
    encode,
)
from conftest import MakeSandbox, Stmt


def returned(observation: Observation) -> Any:
    """The returned value, failing with the whole observation when the call did not return."""
    assert observation.ok, observation
    return observation.returned


def raised(observation: Observation) -> ErrorInfo:
    assert observation.outcome == "raised" and observation.raised is not None, observation
    return observation.raised


PIDS = """
def pids():
    import os
    return [os.getpid(), os.getppid(), os.getpgrp()]
"""


def live_members(group: int) -> list[int]:
    """Pids of processes in a process group that are alive (zombies are dead)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat.rpartition(")")[2].split()[:3]
        if int(pgrp) == group and state != "Z":
            members.append(int(entry.name))
    return members


# --- what comes back --------------------------------------------------------------------


def test_a_correct_function_returns_an_exact_str(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def act(x):\n    return 'CALL'")
    observation = sandbox.call("act", 1)
    assert observation.ok
    assert type(observation.returned) is str
    assert observation.returned == "CALL"


def test_a_str_subclass_comes_back_opaque_and_unequal(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        class Sly(str):
            pass

        def act():
            return Sly("CALL")
        """
    )
    opaque = returned(sandbox.call("act"))
    assert type(opaque) is Opaque
    assert opaque.type_name == OTHER_TYPE
    assert opaque != "CALL" and not opaque == "CALL" and not "CALL" == opaque


def test_an_always_equal_object_comes_back_opaque_and_unequal(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        class Yes:
            def __eq__(self, other):
                return True
            def __repr__(self):
                return "'CALL'"

        def act():
            return Yes()
        """
    )
    opaque = returned(sandbox.call("act"))
    assert type(opaque) is Opaque and opaque.type_name == OTHER_TYPE
    assert opaque.text == "'CALL'"
    assert opaque != "CALL"


def test_a_type_name_built_from_the_input_never_comes_back(make_sandbox: MakeSandbox) -> None:
    # Feedback before the due date names the returned type; the input must not ride along.
    sandbox = make_sandbox(
        """
        import numbers

        def act(secret):
            named = type(secret, (), {"__module__": "builtins", "__qualname__": secret})
            return [named(), {1, 2}, numbers.Number, print]
        """
    )
    named, known, library, builtin = returned(sandbox.call("act", "zero budget (0, 3, 0, 2, 0)"))
    assert named.type_name == library.type_name == OTHER_TYPE
    assert (known.type_name, builtin.type_name) == ("set", "builtin_function_or_method")


def test_opaque_equals_nothing_not_even_itself_yet_is_hashable() -> None:
    opaque = Opaque("numpy.int64", "3")
    assert not opaque == opaque
    assert opaque != Opaque("numpy.int64", "3")
    assert len({opaque: 1, Opaque("numpy.int64", "3"): 2}) == 2


def test_a_failing_repr_becomes_a_fixed_text(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        class Bad:
            def __repr__(self):
                raise SystemExit("no")

        def act():
            return Bad()
        """
    )
    assert returned(sandbox.call("act")).text == "<repr failed>"


def test_a_mutated_argument_shows_in_args_after_and_the_callers_copy_is_untouched(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        "def grow(xs, d):\n    xs.append(4)\n    d['k'] = (1,)\n    return len(xs)"
    )
    mine = [1, 2, 3]
    observation = sandbox.call("grow", mine, {})
    assert observation.returned == 4
    assert observation.args_after == ([1, 2, 3, 4], {"k": (1,)})
    assert type(observation.args_after[1]["k"]) is tuple
    assert mine == [1, 2, 3]


def test_value_returns_cases_with_exact_types(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        "TRANSFER_CASES = [('move', 3, {'to': [1.5, None, True]}), ('stop', -2**70, {})]"
    )
    cases = returned(sandbox.value("TRANSFER_CASES"))
    assert cases == [("move", 3, {"to": [1.5, None, True]}), ("stop", -(2**70), {})]
    assert type(cases) is list and type(cases[0]) is tuple and type(cases[0][2]) is dict
    assert [type(x) for x in cases[0][2]["to"]] == [float, type(None), bool]
    assert type(cases[1][1]) is int


def test_a_huge_return_value_comes_back_opaque_rather_than_breaking_the_protocol(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox("def big():\n    return ['x' * 100] * 50_000")
    big = returned(sandbox.call("big"))
    assert type(big) is Opaque
    assert "too large" in big.text


def test_a_value_that_contains_itself_comes_back_with_an_opaque_at_the_cycle(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox("LOOP = [1]\nLOOP.append(LOOP)")
    loop = returned(sandbox.value("LOOP"))
    assert loop[0] == 1
    assert type(loop[1]) is Opaque and loop[1].text == "<refers to itself>"


def test_a_lone_surrogate_string_crosses_both_ways(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def echo(s):\n    return s + '\\udcff'")
    assert returned(sandbox.call("echo", "\ud800")) == "\ud800\udcff"


def test_line_numbers_inside_a_statement_match_the_notebook() -> None:
    source = (
        "def where():\n    import sys\n    f = sys._getframe()\n"
        "    return [f.f_code.co_filename, f.f_lineno]"
    )
    with Sandbox([Stmt(3, 10, source)]) as sandbox:
        assert returned(sandbox.call("where")) == ["<cell 3>", 13]


# --- exceptions and exits -----------------------------------------------------------------


def test_a_builtin_exception_is_raised_with_its_name_and_builtin_flag(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox("def act(x):\n    raise ValueError(f'bad {x}')")
    observation = sandbox.call("act", 7)
    assert observation.outcome == "raised"
    assert observation.raised == ErrorInfo("ValueError", "bad 7", True)
    assert observation.args_after == (7,)


def test_a_custom_exception_is_not_builtin_even_with_a_builtin_name(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        """
        class ValueError(Exception):
            pass

        def act():
            raise ValueError("mine")
        """
    )
    assert raised(sandbox.call("act")) == ErrorInfo("__main__.ValueError", "mine", False)


def test_an_exception_message_is_capped(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def act():\n    raise KeyError('k' * 10_000)")
    assert len(raised(sandbox.call("act")).message) == 500


def test_sys_exit_in_a_call_is_raised_system_exit_and_the_next_call_works(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox("import sys\ndef leave():\n    sys.exit(0)", "def ok():\n    return 1")
    observation = sandbox.call("leave")
    assert observation.outcome == "raised"
    assert observation.raised == ErrorInfo("SystemExit", "0", True)
    assert sandbox.call("ok").returned == 1


def test_os_exit_in_a_call_is_crashed_with_its_code_and_the_next_call_works(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        "import os\ndef leave():\n    print('bye')\n    os._exit(3)", "def ok():\n    return 1"
    )
    observation = sandbox.call("leave")
    assert observation.outcome == "crashed"
    assert observation.detail == "exited with code 3"
    assert sandbox.call("ok").returned == 1


def test_a_segfault_is_crashed_with_sigsegv_and_the_next_call_works(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        "import ctypes\ndef boom():\n    ctypes.string_at(0)", "def ok():\n    return 1"
    )
    observation = sandbox.call("boom")
    assert observation.outcome == "crashed"
    assert observation.detail == "killed by SIGSEGV"
    assert sandbox.call("ok").returned == 1


def test_an_infinite_loop_times_out_and_the_next_call_works(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        "def spin():\n    while True:\n        pass", "def ok():\n    return 1", call_timeout=0.5
    )
    started = time.monotonic()
    observation = sandbox.call("spin")
    assert observation.outcome == "timeout"
    assert observation.detail == "timed out after 0.5 s"
    assert 0.5 <= time.monotonic() - started < 2.0
    assert sandbox.call("ok").returned == 1


def test_global_state_does_not_survive_between_calls(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        COUNT = 0

        def bump():
            global COUNT
            COUNT += 1
            return COUNT
        """
    )
    assert [sandbox.call("bump").returned for _ in range(2)] == [1, 1]


def test_value_is_what_loading_bound_whatever_calls_did_to_the_worker_since(
    make_sandbox: MakeSandbox,
) -> None:
    # Student code can rewrite the worker itself (here json.loads) and remember every call's
    # input in the worker's memory; value() must still show the load-time binding.
    sandbox = make_sandbox(
        """
        import json

        NOTES = {"prediction": "mine"}

        def _remember():
            real = json.loads
            def loads(text, *args, **kwargs):
                NOTES["prediction"] = str(text)
                return real(text, *args, **kwargs)
            json.loads = loads
            return NOTES

        prediction_notes = _remember()

        def act(x):
            return 'CALL'
        """
    )
    assert returned(sandbox.call("act", "hidden input 42")) == "CALL"
    assert returned(sandbox.value("prediction_notes")) == {"prediction": "mine"}


def test_a_huge_value_at_load_comes_back_opaque_and_the_rest_still_loads(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox("BIG = ['x' * 100] * 50_000", "SMALL = [1, 2]")
    big = returned(sandbox.value("BIG"))
    assert type(big) is Opaque and "too large" in big.text
    assert returned(sandbox.value("SMALL")) == [1, 2]


def test_printing_megabytes_neither_deadlocks_nor_exceeds_the_cap(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        """
        import sys

        def loud():
            for _ in range(1000):
                print("x" * 10_000)
            sys.stderr.write("é" * 5_000_000)
            return "done"
        """
    )
    observation = sandbox.call("loud")
    assert observation.returned == "done"
    assert observation.stdout == "x" * STREAM_CAP
    assert observation.stderr == "é" * STREAM_CAP


# --- loading ------------------------------------------------------------------------------


def test_a_statement_that_raises_at_load_is_reported_and_later_statements_still_load() -> None:
    statements = [
        Stmt(1, 1, "import math"),
        Stmt(2, 4, "RATE = 1 / 0"),
        Stmt(4, 2, "def act():\n    return 'CALL'"),
        Stmt(5, 1, "raise SystemExit(2)"),
        Stmt(6, 1, "LATE = 1"),
    ]
    with Sandbox(statements) as sandbox:
        report = sandbox.load_report
        assert report.outcome == "loaded"
        assert report.errors == (
            StatementError(2, 4, ErrorInfo("ZeroDivisionError", "division by zero", True)),
            StatementError(5, 1, ErrorInfo("SystemExit", "2", True)),
        )
        assert report.defined == ("math", "act", "LATE")
        assert sandbox.defines("act") and not sandbox.defines("RATE")
        assert sandbox.call("act").returned == "CALL"


def test_a_syntax_error_at_load_is_reported_at_its_cell(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def broken(:\n    pass", "GOOD = 1")
    (error,) = sandbox.load_report.errors
    assert (error.cell, error.error.type_name, error.error.builtin) == (1, "SyntaxError", True)
    assert sandbox.value("GOOD").returned == 1


def test_printing_at_load_does_not_disturb_the_protocol(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        "print('{\"kind\": \"loaded\"}' * 1000)\nimport sys\nsys.stderr.write('x')", "A = 1"
    )
    assert sandbox.load_report.outcome == "loaded"
    assert sandbox.value("A").returned == 1


def test_os_exit_at_load_gives_a_crashed_report_and_calls_do_not_hang(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox("def act():\n    return 1", "import os\nos._exit(5)")
    report = sandbox.load_report
    assert (report.outcome, report.detail) == ("crashed", "exited with code 5 while loading")
    started = time.monotonic()
    observations = [sandbox.call("act") for _ in range(3)]
    assert time.monotonic() - started < 0.5  # the failed load is remembered, not retried
    assert {(o.outcome, o.detail) for o in observations} == {("crashed", report.detail)}


def test_an_endless_load_times_out_once_and_is_not_retried(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def act():\n    return 1", "while True:\n    pass", load_timeout=0.5)
    assert sandbox.load_report.outcome == "timeout"
    assert sandbox.load_report.detail == "timed out after 0.5 s while loading"
    started = time.monotonic()
    assert sandbox.call("act").outcome == "timeout"
    assert time.monotonic() - started < 0.2


def test_undefined_names_are_missing_without_running_anything(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("A = 1")
    assert sandbox.call("act").outcome == "missing"
    assert sandbox.value("B").outcome == "missing"
    assert not sandbox.defines("act")


# --- a hostile process ----------------------------------------------------------------------


def test_garbage_written_to_the_response_pipe_in_a_call_is_a_protocol_error(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        """
        import os

        def forge():
            for fd in range(3, 64):
                try:
                    os.write(fd, b'garbage\\n')
                except OSError:
                    pass
            return 'CALL'
        """,
        "def ok():\n    return 1",
    )
    observation = sandbox.call("forge")
    assert observation.outcome == "protocol_error"
    assert observation.returned is None
    assert sandbox.call("ok").returned == 1


def test_garbage_written_to_the_protocol_at_load_is_a_protocol_error(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        """
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, b'["not", "a report"]\\n')
            except OSError:
                pass
        """,
        "A = 1",
    )
    assert sandbox.load_report.outcome == "protocol_error"
    assert sandbox.value("A").outcome == "protocol_error"


def test_a_flood_without_a_newline_on_the_protocol_is_a_protocol_error_not_a_hang(
    make_sandbox: MakeSandbox,
) -> None:
    sandbox = make_sandbox(
        """
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, b'x' * 2_000_000)
            except OSError:
                pass
        """,
        load_timeout=5,
    )
    assert sandbox.load_report.outcome == "protocol_error"
    assert "longer than 1048576 bytes" in sandbox.load_report.detail


def test_a_reload_never_writes_through_a_link_the_student_left(
    make_sandbox: MakeSandbox, tmp_path: Path
) -> None:
    victim = tmp_path / "grader-file.txt"
    victim.write_text("precious")
    sandbox = make_sandbox(
        f"""
        import os
        os.unlink('_worker.py')
        os.symlink({str(victim)!r}, '_worker.py')
        """,
        "def spin():\n    while True:\n        pass",
        "def ok():\n    return 1",
        call_timeout=0.3,
    )
    assert sandbox.call("spin").outcome == "timeout"
    assert returned(sandbox.call("ok")) == 1  # reloaded from a fresh copy of the worker
    assert victim.read_text() == "precious"


def test_the_student_process_sees_only_a_minimal_environment(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("import os\ndef env():\n    return [dict(os.environ), os.getcwd()]")
    environment, cwd = returned(sandbox.call("env"))
    assert set(environment) <= {"PATH", "LANG", "HOME", "LC_CTYPE"}
    assert environment["HOME"] == cwd == str(sandbox.folder)


def test_non_plain_arguments_are_refused_before_anything_runs(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def act(x):\n    return x")
    with pytest.raises(TypeError, match=r"argument 0\[1\] is a set"):
        sandbox.call("act", [1, {2}])
    assert sandbox._resources.worker is None  # nothing was started for a refused call


# --- budget and cleanup ---------------------------------------------------------------------


def test_the_total_budget_stops_further_calls(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        "def spin():\n    while True:\n        pass",
        "def ok():\n    return 1",
        call_timeout=0.4,
        total_seconds=0.6,
    )
    assert sandbox.call("spin").outcome == "timeout"
    cut = sandbox.call("spin")  # less than call_timeout is left: the budget cuts it short
    assert cut.outcome == "budget_exhausted" and cut.seconds < 0.4
    started = time.monotonic()
    after = sandbox.call("ok")
    assert after.outcome == "budget_exhausted"
    assert after.detail == "the total time budget of 0.6 s ran out"
    assert time.monotonic() - started < 0.05


def test_processes_a_call_leaves_behind_are_killed_and_the_worker_carries_on(
    make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolation, "STRAY_CHECK_INTERVAL", 0.0)
    sandbox = make_sandbox(
        PIDS,
        """
        import subprocess

        def linger():
            return subprocess.Popen(["sleep", "60"]).pid
        """,
    )
    _child, worker, group = returned(sandbox.call("pids"))
    sleeper = returned(sandbox.call("linger"))
    assert returned(sandbox.call("pids"))[1] == worker  # the same worker, still loaded
    assert sleeper not in live_members(group)
    assert sandbox.isolation_report()["stray_processes_killed"] >= 1


def test_no_process_of_the_sandbox_survives_close(
    make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolation, "STRAY_CHECK_INTERVAL", 1e9)  # leave them all for close
    sandbox = make_sandbox(
        PIDS,
        """
        import os, subprocess

        def linger():
            subprocess.Popen(["sleep", "60"])
            if os.fork() == 0:
                import time
                time.sleep(60)
            return os.getpgrp()
        """,
    )
    lingering = sandbox.call("linger")
    assert lingering.seconds < 1  # a grandchild still holding the call's pipe does not stall it
    group = returned(lingering)
    _child, worker, _ = returned(sandbox.call("pids"))
    assert worker == group and len(live_members(group)) >= 3  # worker, sleep, forked sleeper
    sandbox.close()
    assert live_members(group) == []
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)


def test_a_forgotten_sandbox_is_cleaned_up_when_collected() -> None:
    sandbox = Sandbox([Stmt(1, 1, textwrap.dedent(PIDS))])
    _child, _worker_pid, group = returned(sandbox.call("pids"))
    folder = sandbox.folder
    del sandbox
    gc.collect()
    assert live_members(group) == []
    assert not folder.exists()


def test_close_removes_the_folder_it_made_but_keeps_one_it_was_given(tmp_path: Path) -> None:
    made = Sandbox([Stmt(1, 1, "A = 1")])
    made.value("A")
    given = Sandbox([Stmt(1, 1, "A = 1")], workdir=tmp_path / "work")
    given.value("A")
    made.close()
    given.close()
    assert not made.folder.exists()
    assert (tmp_path / "work").is_dir()


def test_a_closed_sandbox_refuses_calls() -> None:
    sandbox = Sandbox([Stmt(1, 1, "A = 1")])
    sandbox.close()
    with pytest.raises(RuntimeError, match="closed"):
        sandbox.value("A")


def test_a_malformed_statement_record_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"statement 1 is .*line: int >= 1"):
        Sandbox([Stmt(1, 1, "A = 1"), Stmt(2, 0, "B = 2")])


# --- the encoding -----------------------------------------------------------------------


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**4300) + 1, max_value=10**4300 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.text(st.characters(categories=["Cs"]), max_size=4)  # lone surrogates
)
keys = st.recursive(scalars, lambda inner: st.tuples(inner, inner), max_leaves=4)
plain = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal with identical types all the way down (NaN equals NaN, -0.0 differs from 0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return repr(a) == repr(b)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        pairs = zip(a.items(), b.items(), strict=True)
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in pairs
        )
    return bool(a == b)


def through_json(node: object) -> Any:
    return json.loads(json.dumps(node))


@given(plain)
@settings(max_examples=150)
def test_plain_data_round_trips_through_both_sides_with_exact_types(value: object) -> None:
    in_worker = _worker.decode(through_json(encode(value)))
    back = decode(through_json(_worker.encode(in_worker)))
    assert same(back, value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.tuples(
            st.sampled_from(
                [
                    "str",
                    "codepoints",
                    "int",
                    "float",
                    "bool",
                    "none",
                    "list",
                    "tuple",
                    "dict",
                    "opaque",
                ]
            ),
            st.lists(inner, max_size=3),
        ).map(lambda t: [t[0], *t[1]])
    ),
    max_leaves=15,
)


def only_exact_builtins(value: Any) -> bool:
    if type(value) in (str, int, float, bool, type(None), Opaque):
        return True
    if type(value) in (list, tuple):
        return all(only_exact_builtins(x) for x in value)
    if type(value) is dict:
        return all(only_exact_builtins(k) and only_exact_builtins(v) for k, v in value.items())
    return False


@given(json_values)
@settings(max_examples=300)
def test_decoding_any_json_gives_exact_builtins_or_a_malformed_message(node: object) -> None:
    try:
        value = decode(node)
    except MalformedMessage:
        return
    assert only_exact_builtins(value)


@pytest.mark.parametrize(
    "node",
    [
        ["set", [["int", "1"]]],
        ["int", "1_000"],
        ["int", "٣"],
        ["int", "1" * 4301],
        ["float", "1_0"],
        ["bool", 1],
        ["none", None],
        ["str"],
        ["dict", [[["list", []], ["int", "1"]]]],
        [],
        ["list", ["int", "1"]],
        {"str": "x"},
    ],
)
def test_malformed_nodes_are_refused(node: object) -> None:
    with pytest.raises(MalformedMessage):
        decode(node)


def test_nesting_deeper_than_the_limit_is_refused_on_decode_and_opaque_on_encode() -> None:
    deep: list[object] = []
    for _ in range(60):
        deep = [deep]
    node: object = ["list", []]
    for _ in range(60):
        node = ["list", [node]]
    with pytest.raises(MalformedMessage, match="deeper"):
        decode(node)
    with pytest.raises(ValueError, match="nested more than 50"):
        encode(deep)
    innermost: Any = decode(_worker.encode(deep))
    for _ in range(50):
        innermost = innermost[0]
    assert type(innermost) is Opaque


def test_an_int_beyond_the_digit_limit_comes_back_opaque() -> None:
    node = _worker.encode(10**5000)
    assert node[0] == "opaque" and "digits" in node[2]
    assert type(decode(node)) is Opaque


def test_floats_keep_nan_infinity_and_negative_zero() -> None:
    values: Any = decode(through_json(_worker.encode([math.nan, -math.inf, -0.0])))
    assert [repr(v) for v in values] == ["nan", "-inf", "-0.0"]
