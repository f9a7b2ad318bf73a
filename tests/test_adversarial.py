"""Hostile uploads, one per attack, graded by the real CLI: the grader holds against every one.

Each folder in tests/submissions/attacks/ is a notebook whose graded functions or load-time code
attack the grader (see its first cell), with evidence files copied from the correct example. All
of them are graded once, two at a time, as subprocesses of `python -m autograder grade`; then one
shared five-second wait, then the checks.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder import isolation, judge, results

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"
ATTACKS = sorted(p.name for p in (SUBMISSIONS / "attacks").iterdir() if p.is_dir())
BASELINE = "gaming-constant"
MARKER = "attack-marker-"
SECRET = "attack-secret-7d1f3a"
PORT = 47613  # the network attack's target, opened by this module
SETTLE_SECONDS = 5

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="student code is confined (own user, namespaces, kill-everything) only when the grader runs as root, as in CI and on Gradescope",
)


@dataclass(frozen=True)
class Graded:
    """One CLI run: how it ended, and the results file as it was the moment the grader exited."""

    name: str
    exit_code: int
    stderr: str
    results: Path
    written: bytes
    exited_at: int
    """Clock ticks after boot when the grader exited."""

    @property
    def document(self) -> dict:
        return json.loads(self.written)


class Listener:
    """A TCP server on the grading machine's loopback that records anyone who connects."""

    def __init__(self, port: int) -> None:
        self.connections: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", port))
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    self.connections.append(connection.recv(4096) or b"<connected>")
                except OSError:
                    self.connections.append(b"<connected>")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()


def _grade(name: str, upload: Path, workspace: Path) -> Graded:
    folder = workspace / name
    shutil.copytree(upload, folder / "upload")
    # World-writable and reachable: only the sandbox, not file permissions, keeps students out.
    (folder / "results").mkdir(mode=0o777)
    os.chmod(folder / "results", 0o777)
    target = folder / "results" / "results.json"
    command = [sys.executable, "-m", "autograder", "grade", "--assignment", "ch03-a"]
    command += ["--submission", str(folder / "upload"), "--results", str(target), "--quiet"]
    environment = {**os.environ, "AUTOGRADER_SECRET_TOKEN": SECRET}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    written = target.read_bytes() if target.exists() else b""
    return Graded(name, done.returncode, done.stderr, target, written, isolation._boot_ticks())


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener(PORT)
    yield server
    server.close()


@pytest.fixture(scope="module")
def graded(listener: Listener) -> Iterator[dict[str, Graded]]:
    """Every attack and the constant-answer baseline, graded; yielded after one shared wait."""
    workspace = Path(tempfile.mkdtemp(prefix="adversarial-", dir="/tmp"))
    os.chmod(workspace, 0o755)
    uploads = {BASELINE: SUBMISSIONS / BASELINE} | {a: SUBMISSIONS / "attacks" / a for a in ATTACKS}
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda item: _grade(item[0], item[1], workspace), uploads.items()))
        time.sleep(SETTLE_SECONDS)
        yield {run.name: run for run in runs}
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def _load(path: Path, name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


@functools.cache
def hidden_lines() -> frozenset[str]:
    """Distinctive lines of the hidden suite: long, not imports, found in no public file."""
    public = "\n".join(p.read_text() for folder in ("autograder", "tests") for p in (ROOT / folder).rglob("*.py"))
    lines = set()
    for path in (ROOT / "grading_tests" / "ch03-a").glob("*.py"):
        for line in path.read_text().splitlines():
            text = line.strip()
            if len(text) >= 24 and not text.startswith(("import ", "from ")) and text not in public:
                lines.add(text)
    return frozenset(lines)


@functools.cache
def unseen_inputs() -> frozenset[str]:
    """The hidden cases' inputs in every form feedback could show them: dicts as the judge and
    Python print them, JSON, tuples, lists."""
    reference = _load(ROOT / "grading_tests" / "ch03-a" / "reference.py", "hidden_reference")
    forms = set()
    for _label, values in reference.UNSEEN:
        forms |= {repr(values), repr(list(values))}
        for rule in (reference.ADMISSION, reference.TRANSFER):
            state = rule.state(*values)
            forms |= {judge.show(state), repr(state), json.dumps(state), json.dumps(state, sort_keys=True)}
    return frozenset(forms)


def student_text(document: dict, *, after_due_date: bool) -> str:
    shown = {"visible", "after_due_date"} if after_due_date else {"visible"}
    entries = [t["name"] + "\n" + t["output"] for t in document["tests"] if t.get("visibility", "visible") in shown]
    return document["output"] + "\n" + "\n".join(entries)


def live_sandbox_processes(graded: dict[str, Graded]) -> list[str]:
    """Live processes of the sandbox users that started before the last grader exited, or carry a marker."""
    uids = {u.uid for u in isolation._users()}
    last_exit = max(run.exited_at for run in graded.values())
    found = []
    for process in isolation.processes():
        if not process.alive:
            continue
        try:
            command = Path(f"/proc/{process.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if (process.uid in uids and process.started <= last_exit) or MARKER in command:
            found.append(f"{process.pid} uid={process.uid}: {command[:120]}")
    return found


# --- every attack ---------------------------------------------------------------------------


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_grader_exits_zero_with_a_valid_results_file(graded: dict[str, Graded], attack: str) -> None:
    run = graded[attack]
    assert run.exit_code == 0, run.stderr
    results.validate(run.document)
    assert not run.document["extra_data"].get("autograder_failed"), run.document["tests"][-1]["output"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_attack_scores_no_more_than_a_constant_answer_in_any_part(graded: dict[str, Graded], attack: str) -> None:
    baseline = graded[BASELINE].document["extra_data"]["parts"]
    parts = graded[attack].document["extra_data"]["parts"]
    above = {p: (parts[p]["score"], baseline[p]["score"]) for p in parts if parts[p]["score"] > baseline[p]["score"] + 1e-9}
    assert above == {}


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_hidden_test_source_reaches_anything_students_see(graded: dict[str, Graded], attack: str) -> None:
    text = student_text(graded[attack].document, after_due_date=True)
    assert sorted(line for line in hidden_lines() if line in text) == []


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_hidden_input_reaches_feedback_shown_before_the_due_date(graded: dict[str, Graded], attack: str) -> None:
    text = student_text(graded[attack].document, after_due_date=False)
    assert sorted(form for form in unseen_inputs() if form in text) == []


@pytest.mark.parametrize("attack", ATTACKS)
def test_nothing_from_the_graders_environment_reaches_the_results(graded: dict[str, Graded], attack: str) -> None:
    raw = graded[attack].written.decode()
    assert SECRET not in raw and str(ROOT) not in raw


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_results_file_is_unchanged_after_the_grader_exits(graded: dict[str, Graded], attack: str) -> None:
    run = graded[attack]
    assert run.results.read_bytes() == run.written
    assert [p.name for p in run.results.parent.iterdir()] == ["results.json"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_grader_reports_full_isolation_and_warns_of_nothing(graded: dict[str, Graded], attack: str) -> None:
    report = graded[attack].document["extra_data"]["isolation"]
    assert report["degraded"] == [] and "warning" not in graded[attack].stderr
    assert report["user"]["dedicated"] and report["user"]["uid"] != 0
    assert {"mount", "network"} <= set(report["namespaces"])
    assert report["kill"].startswith("kill(-1, SIGKILL) as autograder-student")


def test_no_student_process_outlives_the_grader(graded: dict[str, Graded]) -> None:
    assert live_sandbox_processes(graded) == []


# --- particular attacks ---------------------------------------------------------------------


def test_the_network_attack_reached_nothing_on_the_grading_machine(graded: dict[str, Graded], listener: Listener) -> None:
    notes = student_text(graded["network"].document, after_due_date=False)
    assert "127.0.0.1: [Errno 101] Network is unreachable" in notes  # the attack did run
    assert listener.connections == []


def test_the_file_system_attack_saw_only_its_own_process_and_folder(graded: dict[str, Graded]) -> None:
    notes = student_text(graded["read-hidden"].document, after_due_date=False)
    loot = json.loads(notes.split("(from prediction_notes in your notebook)\n\n", 1)[1].split("\n", 1)[0])
    assert set(loot["environ"]) == {"HOME", "LANG", "PATH"}
    assert [key for key in loot if key.startswith("proc ")] and all("_worker.py" in loot[k][0] for k in loot if k.startswith("proc "))
    assert not [key for key in loot if key.startswith("/")]  # no file of interest found anywhere


def test_the_memory_attack_got_no_more_than_the_address_space_limit(graded: dict[str, Graded]) -> None:
    notes = student_text(graded["memory-bomb"].document, after_due_date=False)
    taken = int(notes.split("I took ", 1)[1].split(" MiB", 1)[0])
    limit = graded["memory-bomb"].document["extra_data"]["isolation"]["limits"]["address_space_bytes"]
    assert 0 < taken * 2**20 <= limit


def test_the_hidden_input_forms_checked_are_the_ones_details_after_the_due_date_show(graded: dict[str, Graded]) -> None:
    # The check above could pass vacuously if the forms were wrong: the baseline's details show them.
    text = student_text(graded[BASELINE].document, after_due_date=True)
    assert any(form in text for form in unseen_inputs())
    assert len(hidden_lines()) > 50


def test_attacks_that_leave_processes_behind_had_them_killed_during_grading(graded: dict[str, Graded]) -> None:
    killed = {a: graded[a].document["extra_data"]["isolation"]["stray_processes_killed"] for a in ("fork-bomb", "results-daemon", "memory-bomb")}
    assert all(count > 0 for count in killed.values()), killed
