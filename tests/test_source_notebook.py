"""The ch03-a source assignment: its reference run, the release nbgrader makes of it, and its runtime."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

SOURCE = Path(__file__).resolve().parents[1] / "source" / "ch03-a"
NOTEBOOK = "ch03-a.ipynb"
HANDOFF = "ch03-unit-a-handoff-v1.json"
WORK = Path("practical-work/ch03-a")
AUTOMATIC_PARTS = {"admission": 25, "transfer": 25, "counterexample": 10, "connection": 15, "artifacts": 10, "evidence": 15}
GIVEN_TRANSFER_LABELS = ["exact fit", "next attempt too costly", "two exhausted limits", "zero allowed attempts"]

# Appended to the executed copy only: records what the limit runs returned, as JSON, plus which
# interpreter the kernel ran, so the assertions below never depend on printed output.
PROBE = """
import json, sys
json.dump(
    {
        "prefix": sys.prefix,
        "runs": {
            name: [run.status, run.model_calls, run.tool_calls, run.estimated_cost_cents]
            for name, run in [("call_limit", call_limited), ("cost_limit", cost_limited),
                              ("tool_limit", tool_limited), ("precedence", precedence)]
        },
    },
    open("probe.json", "w"),
)
"""


def copy_assignment(destination: Path) -> Path:
    ignored = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "practical-work", HANDOFF)
    return Path(shutil.copytree(SOURCE, destination / "ch03-a", ignore=ignored))


def execute(folder: Path, *, extra_cell: str | None = None, allow_errors: bool = False) -> nbformat.NotebookNode:
    notebook = nbformat.read(folder / NOTEBOOK, as_version=4)
    if extra_cell is not None:
        notebook.cells.append(nbformat.v4.new_code_cell(extra_cell))
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=120,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(folder)}},
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY", raising=False)  # the kernel inherits this environment
        client.execute()
    return notebook


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def source_cells() -> dict[str, nbformat.NotebookNode]:
    notebook = nbformat.read(SOURCE / NOTEBOOK, as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell for cell in notebook.cells if "nbgrader" in cell.metadata}


def released(cell: nbformat.NotebookNode) -> str:
    """The text nbgrader's generate_assignment gives this cell in the student copy."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.from_dict(cell)])
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    notebook, _ = ClearSolutions().preprocess(notebook, {})
    notebook, _ = ClearHiddenTests().preprocess(notebook, {})
    return notebook.cells[0].source


def first_binding(source: str, name: str) -> Any:
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign) and [getattr(target, "id", None) for target in statement.targets] == [name]:
            return ast.literal_eval(statement.value)
    raise AssertionError(f"{name} is not bound to a literal in:\n{source}")


# The reference run ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = copy_assignment(tmp_path_factory.mktemp("reference"))
    execute(folder, extra_cell=PROBE)
    yield folder


@pytest.mark.slow
def test_the_kernel_is_this_virtual_environment(reference_run: Path) -> None:
    assert read_json(reference_run / "probe.json")["prefix"] == sys.prefix


@pytest.mark.slow
def test_the_opening_connection_completes_in_three_model_and_three_tool_calls(reference_run: Path) -> None:
    handoff = read_json(reference_run / HANDOFF)
    assert (handoff["status"], handoff["model_calls"], handoff["tool_calls"]) == ("COMPLETED", 3, 3)
    tool_ids = [message["tool_call_id"] for message in handoff["messages"] if message["role"] == "tool"]
    assert tool_ids == ["stock-1", "draft-v", "draft-s"]


@pytest.mark.slow
def test_the_submission_holds_exactly_the_declared_fields(reference_run: Path) -> None:
    submission = read_json(reference_run / WORK / "ch03-a-submission-v1.json")
    assert set(submission) == {
        "unit", "planned_minutes", "starting_evidence", "prediction", "explanation",
        "core_report", "transfer", "explanation_review",
    }
    assert submission["core_report"]["connection"] == "PASSED"
    assert submission["core_report"]["handoff"] == "WRITTEN"
    assert [row["case"] for row in submission["transfer"]][:4] == GIVEN_TRANSFER_LABELS
    assert all(row["passed"] is True for row in submission["transfer"])
    assert set(submission["prediction"]) == {"prediction", "reason", "falsifier", "revision"}
    assert set(submission["explanation"]) == {"causal_trace", "failed_hypothesis", "remaining_limit"}


@pytest.mark.slow
def test_the_scripted_lab_run_refuses_strawberry_at_2600_cents(reference_run: Path) -> None:
    report = read_json(reference_run / WORK / "ch03-a-llm-lab-report-v1.json")
    scripted = report["scripted"]
    assert (scripted["status"], scripted["model_calls"], scripted["tool_calls"]) == ("COMPLETED", 5, 6)
    assert scripted["estimated_cost_cents"] == 10
    assert scripted["refused"] == [{"call": "scripted-3-call-2", "reason": "DRAFT_COST_LIMIT", "exposure_cents": 2600}]
    assert scripted["drafted"] == ["SKU-VANILLA"]
    assert scripted["own_loop_agrees"] is True
    drafts = read_json(reference_run / WORK / "ch03-a-llm-drafts-scripted.json")
    assert [draft["sku"] for draft in drafts["drafts"]] == ["SKU-VANILLA"]
    assert drafts["reserved_cents"] == 1500


@pytest.mark.slow
def test_without_a_key_the_session_replays_the_recorded_transcript(reference_run: Path) -> None:
    session = read_json(reference_run / WORK / "ch03-a-llm-lab-report-v1.json")["session"]
    assert (session["source"], session["model"], session["status"]) == ("scripted", None, "COMPLETED")
    assert (session["model_calls"], session["tool_calls"], session["estimated_cost_cents"]) == (5, 6, 10)


@pytest.mark.slow
def test_each_limit_ends_the_run_with_its_own_status_and_counters(reference_run: Path) -> None:
    limits = read_json(reference_run / WORK / "ch03-a-llm-lab-report-v1.json")["limits"]
    assert limits == {
        "call_limit": "MODEL_CALL_LIMIT",
        "cost_limit": "MODEL_COST_LIMIT",
        "tool_limit": "TOOL_LIMIT",
        "precedence": "MODEL_CALL_LIMIT",
    }
    runs = read_json(reference_run / "probe.json")["runs"]
    assert runs["call_limit"][:3] == ["MODEL_CALL_LIMIT", 2, 3]
    assert runs["cost_limit"] == ["MODEL_COST_LIMIT", 3, 5, 90]
    assert runs["tool_limit"][:3] == ["TOOL_LIMIT", 2, 1]
    assert [runs["precedence"][index] for index in (0, 1, 3)] == ["MODEL_CALL_LIMIT", 3, 90]


# The release nbgrader makes -------------------------------------------------------------------


@pytest.mark.slow
def test_the_generated_release_runs_to_the_checks_and_fails_only_there(tmp_path: Path) -> None:
    course = tmp_path / "course"
    copy_assignment(course / "source")
    venv_bin = str(Path(sys.executable).parent)  # nbgrader shells out to alembic, installed beside it
    environment = {**os.environ, "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}
    subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", "ch03-a", "--create", "--force"],
        cwd=course, env=environment, check=True, capture_output=True,
    )
    release = course / "release" / "ch03-a"
    assert (release / "agentloop_runtime" / "agent_loop.py").is_file()
    notebook = execute(release, allow_errors=True)
    failed = [
        cell.metadata.get("nbgrader", {}).get("grade_id")
        for cell in notebook.cells
        if cell.cell_type == "code" and any(output.output_type == "error" for output in cell.outputs)
    ]
    assert failed == ["admission", "transfer", "counterexample", "connection", "artifacts"]
    assert read_json(release / WORK / "ch03-a-submission-v1.json")["core_report"]["completed"] == 0


def test_the_automatic_parts_are_locked_grade_cells_with_their_points() -> None:
    cells = source_cells()
    for grade_id, points in AUTOMATIC_PARTS.items():
        meta = cells[grade_id].metadata["nbgrader"]
        assert (meta["grade"], meta["solution"], meta["locked"], meta["points"]) == (True, False, True, points)
        assert released(cells[grade_id]).count("assert") >= 2


def test_the_released_notes_are_exactly_the_templates() -> None:
    cells = source_cells()
    for grade_id, keys in [
        ("prediction_notes", {"prediction", "reason", "falsifier", "revision"}),
        ("explanation_notes", {"causal_trace", "failed_hypothesis", "remaining_limit"}),
    ]:
        template = first_binding(cells[grade_id].source, grade_id)
        text = released(cells[grade_id])
        assert set(template) == keys
        assert first_binding(text, grade_id) == template
        assert text.startswith(f"{grade_id} = {{") and text.endswith("}")
        assert "NotImplementedError" not in text


def test_the_released_admission_starter_always_admits() -> None:
    text = released(source_cells()["admission_answer"])
    assert text.splitlines()[-1] == '    return "CALL"'
    namespace: dict[str, Any] = {}
    exec(text, namespace)
    exhausted = {"used_calls": 9, "max_calls": 1, "spent": 50, "next_cost": 9, "budget": 1}
    assert namespace["decide_admission"](exhausted) == "CALL"


def test_the_released_transfer_check_is_nbgraders_default_stub() -> None:
    text = released(source_cells()["transfer_answer"])
    namespace: dict[str, Any] = {}
    exec(text, namespace)
    with pytest.raises(NotImplementedError):
        namespace["transfer_check"]({"calls": 0, "max_calls": 1, "spent": 0, "next_cost": 0, "budget": 0})


def test_the_released_transfer_cases_are_the_four_given_ones() -> None:
    text = released(source_cells()["counterexample_answer"])
    namespace: dict[str, Any] = {}
    exec(text, namespace)
    assert [label for label, _, _ in namespace["TRANSFER_CASES"]] == GIVEN_TRANSFER_LABELS


# The runtime, imported directly ---------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime() -> Iterator[Any]:
    sys.path.insert(0, str(SOURCE))
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # keep source/ free of __pycache__
    try:
        import agentloop_runtime.agent_loop
        import agentloop_runtime.chapter_three
        import agentloop_runtime.llm_lab
        import agentloop_runtime.shop

        yield agentloop_runtime
    finally:
        sys.dont_write_bytecode = writes_bytecode
        sys.path.remove(str(SOURCE))


RECORDED = [
    [("list_stock", {})],
    [("supplier", {"sku": "SKU-VANILLA"}), ("supplier", {"sku": "SKU-STRAWBERRY"})],
    [("draft_order", {"sku": "SKU-VANILLA", "quantity": 6}), ("draft_order", {"sku": "SKU-STRAWBERRY", "quantity": 4})],
    [("draft_order", {"sku": "SKU-CHOCOLATE", "quantity": 1})],
]


def recorded_turns(runtime: Any) -> list[Any]:
    turns = [
        runtime.llm_lab.scripted_turn(calls=[{"name": name, "arguments": arguments} for name, arguments in calls])
        for calls in RECORDED
    ]
    return turns + [runtime.llm_lab.scripted_turn("Vanilla drafted; strawberry refused.")]


def gated_tools(runtime: Any, budget_cents: int = 2500) -> tuple[Any, list[dict[str, Any]]]:
    """The Chapter 2 tools with draft_order behind a reserved-cents gate, as in the lab."""
    tool_dispatch = runtime.tool_dispatch
    reference = runtime.shop.build_tools(runtime.shop.SHOP)
    reserved, refusals = [0], []

    def admit(call: Any) -> None:
        exposure = reserved[0] + runtime.shop.PRICES[call.arguments["sku"]] * call.arguments["quantity"]
        if exposure > budget_cents:
            refusals.append({"call": call.id, "exposure_cents": exposure})
            raise ValueError("over the draft budget")

    def draft(arguments: Any) -> Any:
        value = reference.tools["draft_order"].handler(arguments)
        reserved[0] += value["total_cents"]
        return value

    tools = [tool for name, tool in reference.tools.items() if name != "draft_order"] + [
        tool_dispatch.ExecutableTool("draft_order", "Draft.", runtime.shop.DraftArguments, draft, consequential=True)
    ]
    return tool_dispatch.Dispatcher(tools, allowed=reference.allowed, before_write=admit), refusals


def run_both(runtime: Any, **overrides: int) -> tuple[Any, Any]:
    results = []
    for module in (runtime.agent_loop, runtime.chapter_three):
        dispatcher, _ = gated_tools(runtime)
        model = runtime.llm_lab.ScriptedModel(recorded_turns(runtime))
        messages = [{"role": "user", "content": "Draft what is needed."}]
        results.append(module.run_loop(model, dispatcher, messages, limits=module.Limits(**overrides)))
    return results[0], results[1]


def counts(result: Any) -> tuple[str, int, int, int]:
    return result.status, result.model_calls, result.tool_calls, result.estimated_cost_cents


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, ("COMPLETED", 5, 6, 10)),
        ({"model_calls": 2}, ("MODEL_CALL_LIMIT", 2, 3, 4)),
        ({"estimated_call_cents": 30, "model_budget_cents": 100}, ("MODEL_COST_LIMIT", 3, 5, 90)),
        ({"tool_calls": 2}, ("TOOL_LIMIT", 2, 1, 4)),
        ({"model_calls": 3, "estimated_call_cents": 30, "model_budget_cents": 100}, ("MODEL_CALL_LIMIT", 3, 5, 90)),
        ({"output_tokens": 1}, ("TOKEN_LIMIT", 1, 0, 2)),
    ],
)
def test_both_loops_end_the_recorded_run_with_the_same_counters(
    runtime: Any, overrides: dict[str, int], expected: tuple[str, int, int, int]
) -> None:
    reference, learner = run_both(runtime, **overrides)
    assert counts(reference) == expected
    assert counts(learner) == expected
    assert runtime.llm_lab.tool_trace(learner) == runtime.llm_lab.tool_trace(reference)


def test_the_gate_refuses_the_second_draft_and_the_loop_carries_on(runtime: Any) -> None:
    dispatcher, refusals = gated_tools(runtime)
    model = runtime.llm_lab.ScriptedModel(recorded_turns(runtime))
    result = runtime.agent_loop.run_loop(model, dispatcher, [], limits=runtime.agent_loop.Limits())
    trace = runtime.llm_lab.tool_trace(result)
    assert [step["ok"] for step in trace] == [True, True, True, True, False, False]
    assert refusals == [{"call": "scripted-3-call-2", "exposure_cents": 2600}]
    assert result.answer == "Vanilla drafted; strawberry refused."


def test_a_turn_over_the_tool_limit_is_not_appended(runtime: Any) -> None:
    reference, _ = run_both(runtime, tool_calls=2)
    assert [message["role"] for message in reference.messages] == ["user", "assistant", "tool"]


def test_a_failed_attempt_is_still_charged(runtime: Any) -> None:
    dispatcher, _ = gated_tools(runtime)
    model = runtime.llm_lab.ScriptedModel([])
    result = runtime.agent_loop.run_loop(model, dispatcher, [], limits=runtime.agent_loop.Limits())
    assert counts(result) == ("MODEL_FAILED", 1, 0, 2)


def test_without_a_key_build_model_returns_the_replay(runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = runtime.llm_lab.build_model(recorded_turns(runtime))
    assert model.source == "scripted"
    assert runtime.llm_lab.resolve_api_key() is None


def test_the_dispatcher_flattens_every_refusal_to_tool_failed(runtime: Any) -> None:
    dispatcher = runtime.shop.build_tools(runtime.shop.SHOP)
    call = runtime.shop.ToolCall
    refused = [
        call("a", "draft_order", {"sku": "SKU-VANILLA", "quantity": "6"}),
        call("b", "draft_order", {"sku": "SKU-VANILLA", "quantity": 5}),
        call("c", "draft_order", {"sku": "SKU-VANILLA", "quantity": 6, "rush": True}),
        call("d", "purchase", {}),
        call("e", "supplier", "SKU-VANILLA"),
    ]
    assert [dispatcher.invoke(item) for item in refused] == ["tool_failed"] * len(refused)
    assert dispatcher.invoke(call("f", "draft_order", {"sku": "SKU-STRAWBERRY", "quantity": 4}))["total_cents"] == 1100


def test_limits_name_the_field_and_value_they_reject(runtime: Any) -> None:
    with pytest.raises(ValueError, match=r"Limits\.tool_calls must be a non-negative int, got -1"):
        runtime.agent_loop.Limits(tool_calls=-1)
