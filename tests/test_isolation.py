"""Tests for isolation: the sandbox user, limits, namespaces and kill-everything around student code."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from autograder import cli, isolation, pipeline, results
from autograder.declaration import PROJECT_ROOT
from autograder.sandbox import Observation, Sandbox
from conftest import MakeSandbox

ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the sandbox switches user and enters namespaces only as root (CI and Gradescope run as root)",
)
LIMITS = isolation.Limits.for_budget(10.0, 120.0)


@pytest.fixture
def without_root(monkeypatch: pytest.MonkeyPatch) -> isolation.Machine:
    """Behave as a grader that is not root: no user switch, no namespaces, limits only."""
    plan = isolation.Machine(False, problems=("the grader does not run as root",))
    monkeypatch.setattr(isolation, "machine", lambda: plan)
    return plan


def returned(observation: Observation) -> Any:
    assert observation.ok, observation
    return observation.returned


def live_processes_of(uid: int) -> list[int]:
    return [p.pid for p in isolation.processes() if p.uid == uid and p.alive]


# --- who the student code runs as -------------------------------------------------------------


@ROOT_ONLY
def test_student_code_runs_as_an_unprivileged_user_with_no_groups(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("import os\ndef who():\n    return [os.getresuid(), os.getresgid(), os.getgroups()]")
    uids, gids, groups = returned(sandbox.call("who"))
    user = sandbox.isolation_report()["user"]
    assert user["dedicated"] and user["name"].startswith(isolation.DEDICATED_USER)
    assert uids == (user["uid"],) * 3 and 0 not in gids and groups == []


@ROOT_ONLY
def test_every_limit_is_set_and_student_code_cannot_raise_it(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        import os, resource

        def limits():
            names = ["RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE"]
            found = {name: list(resource.getrlimit(getattr(resource, name))) for name in names}
            try:
                resource.setrlimit(resource.RLIMIT_AS, (2**40, 2**40))
                found["raised"] = True
            except (ValueError, OSError):
                found["raised"] = False
            found["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
            return found
        """
    )
    found = returned(sandbox.call("limits"))
    expected = sandbox.isolation_report()["limits"]
    assert found["RLIMIT_AS"] == [expected["address_space_bytes"]] * 2
    assert found["RLIMIT_NPROC"] == [expected["processes"]] * 2
    assert found["RLIMIT_FSIZE"] == [expected["file_size_bytes"]] * 2
    assert found["RLIMIT_CPU"] == [expected["cpu_seconds"]] * 2
    assert found["RLIMIT_NOFILE"] == [expected["open_files"]] * 2 and found["RLIMIT_CORE"] == [0, 0]
    assert found["raised"] is False and found["nice"] == 19


@ROOT_ONLY
def test_memory_beyond_the_limit_is_a_memory_error(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("def hog():\n    return len(bytearray(2**30))")
    observation = sandbox.call("hog")
    assert observation.outcome == "raised" and observation.raised is not None
    assert observation.raised.type_name == "MemoryError"


@ROOT_ONLY
def test_a_file_beyond_the_size_limit_cannot_be_written(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        def fill():
            with open("/tmp/big.bin", "wb") as out:
                try:
                    for _ in range(20):
                        out.write(b"x" * 2**20)
                        out.flush()
                except OSError as error:
                    return [error.errno, out.tell()]
            return "written"
        """
    )
    errno, size = returned(sandbox.call("fill"))
    assert errno == 27 and size <= LIMITS.file_size  # EFBIG


# --- what the student code can see and reach --------------------------------------------------


@ROOT_ONLY
def test_the_project_tree_and_the_graders_processes_are_out_of_sight(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        f"""
        import os

        def look():
            places = [{str(PROJECT_ROOT)!r}, {str(PROJECT_ROOT / "grading_tests")!r}, "/autograder", "/root", "/work"]
            owners = {{os.stat(f"/proc/{{pid}}").st_uid for pid in os.listdir("/proc") if pid.isdigit()}}
            return [[os.path.exists(place) for place in places], sorted(os.listdir("/")), sorted(owners)]
        """
    )
    exists, top, owners = returned(sandbox.call("look"))
    assert exists == [False] * 5
    assert set(top) <= {"usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc", "tmp"}
    assert owners == [sandbox.isolation_report()["user"]["uid"]]  # hidepid: only its own processes


@ROOT_ONLY
def test_no_connection_reaches_the_grading_machine(make_sandbox: MakeSandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.5)
        port = server.getsockname()[1]
        sandbox = make_sandbox(
            f"""
            import socket

            def dial():
                try:
                    socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
                    return "connected"
                except OSError as error:
                    return error.errno
            """
        )
        assert returned(sandbox.call("dial")) == 101  # ENETUNREACH: an empty network namespace
        with pytest.raises(TimeoutError):
            server.accept()


@ROOT_ONLY
def test_the_student_folder_is_read_only_but_for_the_output_captures(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(
        """
        import os

        def scribble():
            try:
                open("planted.txt", "w").close()
                return "planted"
            except OSError as error:
                return error.errno
        """
    )
    assert returned(sandbox.call("scribble")) == 13  # EACCES
    assert sorted(p.name for p in sandbox.folder.iterdir()) == sorted(["_worker.py", *isolation.CAPTURE_FILES])


@ROOT_ONLY
def test_the_system_call_filter_refuses_new_namespaces_and_ptrace_but_not_threads_or_programs(
    make_sandbox: MakeSandbox,
) -> None:
    if not isolation.seccomp_available():
        pytest.skip("no system-call filter for this architecture")
    sandbox = make_sandbox(
        """
        import ctypes, os, subprocess, threading

        def probe():
            libc = ctypes.CDLL(None, use_errno=True)
            refused = []
            for call, args in (("unshare", (0x10000000,)), ("unshare", (0x40000000,)), ("ptrace", (16, os.getppid(), 0, 0))):
                result = getattr(libc, call)(*args)
                refused.append([result, ctypes.get_errno()])
            box = []
            worker = threading.Thread(target=lambda: box.append("thread"))
            worker.start()
            worker.join()
            echoed = subprocess.run(["echo", "program"], capture_output=True, text=True).stdout.strip()
            return [refused, box + [echoed]]
        """
    )
    refused, allowed = returned(sandbox.call("probe"))
    assert refused == [[-1, 1]] * 3  # EPERM
    assert allowed == ["thread", "program"]
    assert sandbox.isolation_report()["system_call_filter"].startswith("seccomp")


# --- killing everything -----------------------------------------------------------------------


DAEMON = """
import os, time

def daemon():
    if os.fork():
        return "started"
    os.setsid()
    if os.fork():
        os._exit(0)
    time.sleep(600)
"""


@ROOT_ONLY
def test_a_setsid_daemon_dies_when_the_sandbox_closes(make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "STRAY_CHECK_INTERVAL", 1e9)  # leave it for close
    sandbox = make_sandbox(DAEMON)
    assert returned(sandbox.call("daemon")) == "started"
    uid = sandbox.isolation_report()["user"]["uid"]
    assert len(live_processes_of(uid)) >= 2  # the worker and the daemon
    sandbox.close()
    assert live_processes_of(uid) == []


@ROOT_ONLY
def test_a_fork_bomb_stops_at_the_process_limit_and_is_killed_after_the_call(
    make_sandbox: MakeSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolation, "STRAY_CHECK_INTERVAL", 0.0)
    sandbox = make_sandbox(
        """
        import os, time

        def bomb():
            born = 0
            for _ in range(500):
                try:
                    if os.fork() == 0:
                        time.sleep(600)
                        os._exit(0)
                    born += 1
                except OSError:
                    break
            return born
        """,
        "import os\ndef worker():\n    return os.getppid()",
    )
    worker = returned(sandbox.call("worker"))
    born = returned(sandbox.call("bomb"))
    assert 0 < born < LIMITS.processes
    uid = sandbox.isolation_report()["user"]["uid"]
    assert len(live_processes_of(uid)) == 1  # the worker alone, still loaded:
    assert returned(sandbox.call("worker")) == worker
    assert sandbox.isolation_report()["stray_processes_killed"] == born


@ROOT_ONLY
def test_kill_minus_one_in_student_code_reaches_only_the_sandbox(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("import os, signal\ndef end_all():\n    os.kill(-1, signal.SIGKILL)\n    return 1", "def ok():\n    return 1")
    assert sandbox.call("end_all").outcome == "crashed"
    assert returned(sandbox.call("ok")) == 1  # a fresh worker; the grader never noticed


@ROOT_ONLY
def test_two_sandboxes_at_once_run_as_different_users_and_closing_one_spares_the_other(make_sandbox: MakeSandbox) -> None:
    first, second = make_sandbox("def ok():\n    return 1"), make_sandbox("def ok():\n    return 2")
    assert (returned(first.call("ok")), returned(second.call("ok"))) == (1, 2)
    assert first.isolation_report()["user"]["uid"] != second.isolation_report()["user"]["uid"]
    first.close()
    assert returned(second.call("ok")) == 2
    assert second.isolation_report()["worker_starts"] == 1


@ROOT_ONLY
def test_leftovers_of_a_grader_that_died_are_killed_when_their_user_is_taken(make_sandbox: MakeSandbox) -> None:
    users = isolation._users()
    if not users[0].dedicated:
        pytest.skip(f"needs {isolation.DEDICATED_USER}: run setup.sh as root")
    leftover = subprocess.Popen(["sleep", "600"], user=users[0].uid, group=users[0].gid, extra_groups=[])
    try:
        sandbox = make_sandbox("def ok():\n    return 1")
        returned(sandbox.call("ok"))
        if sandbox.isolation_report()["user"]["uid"] != users[0].uid:
            pytest.skip("another sandbox holds the first user's slot")
        assert leftover.pid not in live_processes_of(users[0].uid)
    finally:
        leftover.kill()
        leftover.wait()


# --- the report and the warnings --------------------------------------------------------------


@ROOT_ONLY
def test_the_report_names_the_user_limits_namespaces_network_and_kill_method(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox("A = 1")
    sandbox.value("A")
    report = sandbox.isolation_report()
    assert report["degraded"] == []
    assert report["python"] in (os.path.realpath(p) for p in ("/usr/bin/python3.11", "/usr/local/bin/python3.11", os.sys.executable))
    assert set(report["namespaces"]) >= {"mount", "network"} and report["network"].startswith("none")
    assert report["kill"] == f"kill(-1, SIGKILL) as {report['user']['name']} until none of its processes remain"
    assert report["environment"] == ["HOME", "LANG", "PATH"]
    json.dumps(report)  # plain data for results.json


def test_without_root_limits_still_apply_and_the_report_says_what_is_missing(
    make_sandbox: MakeSandbox, without_root: isolation.Machine
) -> None:
    sandbox = make_sandbox("import resource\ndef cap():\n    return resource.getrlimit(resource.RLIMIT_AS)[0]")
    assert returned(sandbox.call("cap")) == LIMITS.address_space
    report = sandbox.isolation_report()
    assert report["degraded"] == ["the grader does not run as root"]
    assert report["network"].startswith("NOT isolated") and report["namespaces"] == []
    assert report["kill"].startswith("process group, session and descendants")


def test_the_pipeline_turns_each_degradation_into_an_instructor_note(ch03a, submissions, without_root) -> None:  # type: ignore[no-untyped-def]
    document = pipeline.grade(ch03a, submissions / "correct")
    instructor = [t for t in document["tests"] if t["name"] == "For the instructor"]
    assert instructor and instructor[0]["visibility"] == "hidden"
    assert "Student code ran with degraded isolation: the grader does not run as root" in instructor[0]["output"]


def test_the_grade_command_warns_on_stderr_when_isolation_was_degraded(tmp_path, submissions, without_root) -> None:  # type: ignore[no-untyped-def]
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["grade", "--assignment", "ch03-a", "--submission", str(submissions / "correct"), "--results", str(tmp_path / "r.json"), "--quiet"], out, err)
    assert code == 0
    assert err.getvalue() == "autograder: warning: Student code ran with degraded isolation: the grader does not run as root. See SECURITY.md.\n"


def test_the_grade_command_replaces_a_planted_results_file_before_any_student_code_runs(tmp_path, submissions, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "results.json"
    target.write_text('{"score": 100}')
    seen = []

    def grade(assignment, submission):  # type: ignore[no-untyped-def]
        seen.append(json.loads(target.read_text()))
        return results.failure("stop here", "", assignment.id)

    monkeypatch.setattr(pipeline, "grade", grade)
    assert cli.run(["grade", "--assignment", "ch03-a", "--submission", str(submissions / "correct"), "--results", str(target), "--quiet"], io.StringIO(), io.StringIO()) == 0
    assert seen[0]["extra_data"]["autograder_failed"] is True and seen[0]["score"] == 0


def test_an_interpreter_under_a_folder_the_user_cannot_enter_is_not_chosen(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    (locked / "bin").mkdir(parents=True)
    python = locked / "bin" / "python3.11"
    python.write_text("")
    python.chmod(0o755)
    locked.chmod(0o700)
    stranger = isolation.User("stranger", 424242, 424242)
    assert not isolation.reachable(python, stranger)
    assert isolation.reachable(Path("/usr/bin/env"), stranger)
