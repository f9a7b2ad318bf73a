"""Tests for autograder.extraction: slicing graded names out of notebooks without running them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from autograder.extraction import (
    Cell,
    Extraction,
    NotebookError,
    SkippedCell,
    extract,
    extract_cells,
    literal_value,
    read_cells,
)

GRADED = ["decide_admission", "transfer_check", "TRANSFER_CASES",
          "prediction_notes", "explanation_notes"]


def write_notebook(folder: Path, cells: list[Any], name: str = "submission.ipynb") -> Path:
    path = folder / name
    nbformat.write(new_notebook(cells=cells), path)
    return path


def extract_sources(folder: Path, sources: list[str], names: list[str]) -> Extraction:
    """Extract from a notebook whose code cells hold `sources`, in order."""
    path = write_notebook(folder, [new_code_cell(source) for source in sources])
    return extract(path, names)


def run_module(extraction: Extraction) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(extraction.module_source, "<extracted>", "exec"), namespace)
    return namespace


def kept_sources(extraction: Extraction) -> list[str]:
    return [statement.source for statement in extraction.statements]


def course_notebook() -> list[Any]:
    """A submission shaped like the course's: runtime setup, gate, transfer task, notes."""
    return [
        new_markdown_cell("# Admission gate practice"),
        new_code_cell("%pip install -q pydantic"),
        new_code_cell(
            "import json\n"
            "import sys\n"
            "from pathlib import Path\n"
            "sys.path.insert(0, str(Path('course_runtime')))\n"
            "from coursekit.runtime import ScriptedProvider, replay_session\n"
            "WORK = Path('work')\n"
            "WORK.mkdir(exist_ok=True)"
        ),
        new_code_cell(
            "prediction_notes = {\n"
            "    'guess': 'The gate refuses the fourth call.',\n"
            "    'because': 'Three calls are allowed.',\n"
            "}"
        ),
        new_markdown_cell("## Build the gate"),
        new_code_cell(
            "CALL, CALL_LIMIT, COST_LIMIT = 'CALL', 'MODEL_CALL_LIMIT', 'MODEL_COST_LIMIT'\n"
            "\n"
            "\n"
            "def over_budget(spent, cost, budget):\n"
            "    return spent + cost > budget"
        ),
        new_code_cell(
            "def decide_admission(case):\n"
            "    if case['used_calls'] >= case['max_calls']:\n"
            "        return CALL_LIMIT\n"
            "    if over_budget(case['spent'], case['next_cost'], case['budget']):\n"
            "        return COST_LIMIT\n"
            "    return CALL"
        ),
        new_code_cell(
            "probe = {'used_calls': 0, 'max_calls': 1, 'spent': 0, 'next_cost': 1, 'budget': 1}\n"
            "print(decide_admission(probe))\n"
            "assert decide_admission(dict(probe, used_calls=1)) == CALL_LIMIT"
        ),
        new_code_cell(
            "session = replay_session(ScriptedProvider([]), decide_admission)\n"
            "print(session.status)"
        ),
        new_code_cell(
            "def transfer_check(state):\n"
            "    if state['calls'] >= state['max_calls']:\n"
            "        return 'CALL_LIMIT'\n"
            "    if over_budget(state['spent'], state['next_cost'], state['budget']):\n"
            "        return 'COST_LIMIT'\n"
            "    return 'CALL'"
        ),
        new_code_cell(
            "TRANSFER_CASES = [\n"
            "    ('fits', [{'calls': 0, 'max_calls': 2, 'spent': 1, 'next_cost': 1, "
            "'budget': 2}], 'CALL'),\n"
            "]\n"
            "\n"
            "\n"
            "def run_cases(candidate, cases):\n"
            "    return [candidate(*args) == expected for _, args, expected in cases]\n"
            "\n"
            "\n"
            "outcomes = run_cases(transfer_check, TRANSFER_CASES)\n"
            "json.dumps(outcomes)"
        ),
        new_code_cell(
            "TRANSFER_CASES.append(\n"
            "    ('no calls left', [{'calls': 2, 'max_calls': 2, 'spent': 0, 'next_cost': 0, "
            "'budget': 9}], 'CALL_LIMIT')\n"
            ")\n"
            "print(run_cases(transfer_check, TRANSFER_CASES))"
        ),
        new_code_cell(
            "explanation_notes = {'trace': 'used_calls equal to max_calls gave the limit.'}\n"
            "(WORK / 'submission.json').write_text(json.dumps(explanation_notes))"
        ),
    ]


# --------------------------------------------------------------------------------------------
# The whole slice


def test_the_extracted_module_runs_in_a_fresh_namespace_and_its_functions_work(
    tmp_path: Path,
) -> None:
    extraction = extract(write_notebook(tmp_path, course_notebook()), GRADED)

    namespace = run_module(extraction)

    gate = namespace["decide_admission"]
    case = {"used_calls": 1, "max_calls": 3, "spent": 5, "next_cost": 2, "budget": 6}
    assert gate(case) == "MODEL_COST_LIMIT"
    assert gate(dict(case, used_calls=3)) == "MODEL_CALL_LIMIT"
    assert namespace["transfer_check"](
        {"calls": 0, "max_calls": 1, "spent": 2, "next_cost": 2, "budget": 4}
    ) == "CALL"
    assert [label for label, _, _ in namespace["TRANSFER_CASES"]] == ["fits", "no calls left"]
    assert namespace["prediction_notes"]["guess"] == "The gate refuses the fourth call."
    assert extraction.missing == ()


def test_the_course_runtime_setup_and_drivers_are_left_out_of_the_slice(tmp_path: Path) -> None:
    extraction = extract(write_notebook(tmp_path, course_notebook()), GRADED)

    source = extraction.module_source
    for absent in ["coursekit", "replay_session", "sys.path", "WORK", "print(", "assert ",
                   "run_cases", "outcomes", "write_text", "pip"]:
        assert absent not in source, absent


def test_the_statements_are_kept_in_notebook_order_with_their_cell_and_line(
    tmp_path: Path,
) -> None:
    extraction = extract(write_notebook(tmp_path, course_notebook()), GRADED)

    where = [(s.cell, s.line) for s in extraction.statements]
    assert where == sorted(where)
    assert (5, 4) in where  # over_budget, after two blank lines in cell 5
    assert "# cell 5, line 4\ndef over_budget(" in extraction.module_source


def test_found_names_the_cell_of_each_winning_definition(tmp_path: Path) -> None:
    extraction = extract(write_notebook(tmp_path, course_notebook()), GRADED)

    assert extraction.found == {
        "prediction_notes": 3,
        "decide_admission": 6,
        "transfer_check": 9,
        "TRANSFER_CASES": 10,
        "explanation_notes": 12,
    }


# --------------------------------------------------------------------------------------------
# Dependencies


def test_a_helper_defined_in_another_cell_is_taken_along(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "def decide_admission(case):\n    return label_for(case)",
        "print('unrelated')",
        "def label_for(case):\n    return 'CALL' if case else 'MODEL_CALL_LIMIT'",
    ], ["decide_admission"])

    assert run_module(extraction)["decide_admission"]({}) == "MODEL_CALL_LIMIT"
    assert [s.cell for s in extraction.statements] == [0, 2]


def test_a_later_redefinition_wins_and_only_its_helpers_are_taken(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "def first_helper(case):\n    return 'FIRST'",
        "def decide_admission(case):\n    return first_helper(case)",
        "def second_helper(case):\n    return 'SECOND'",
        "def decide_admission(case):\n    return second_helper(case)",
    ], ["decide_admission"])

    assert extraction.found == {"decide_admission": 3}
    assert [s.cell for s in extraction.statements] == [1, 2, 3]
    assert "first_helper(case):" not in extraction.module_source
    assert run_module(extraction)["decide_admission"]({}) == "SECOND"


def test_an_import_used_by_a_needed_function_is_kept(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "import math\nimport random\nfrom decimal import Decimal as D",
        "def transfer_check(state):\n    return math.ceil(D('1.5')) + state",
    ], ["transfer_check"])

    assert kept_sources(extraction) == [
        "import math",
        "from decimal import Decimal as D",
        "def transfer_check(state):\n    return math.ceil(D('1.5')) + state",
    ]
    assert run_module(extraction)["transfer_check"](1) == 3


def test_a_change_to_an_imported_module_is_not_taken_with_the_import(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "import sys\nsys.path.insert(0, str(RUNTIME_FOLDER))\nsys.argv.append('--offline')",
        "def decide_admission(case):\n    return sys.maxsize > case",
    ], ["decide_admission"])

    assert kept_sources(extraction)[0] == "import sys"
    assert "RUNTIME_FOLDER" not in extraction.module_source
    assert run_module(extraction)["decide_admission"](3) is True


def test_a_statement_using_the_course_runtime_that_is_not_needed_is_left_out(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "from coursekit.loop import run_loop, Limits",
        "LIMITS = Limits(calls=3)",
        "def decide_admission(case):\n    return 'CALL'",
        "result = run_loop(decide_admission, limits=LIMITS)\nprint(result)",
    ], ["decide_admission"])

    assert kept_sources(extraction) == ["def decide_admission(case):\n    return 'CALL'"]
    assert run_module(extraction)["decide_admission"]({}) == "CALL"


def test_driver_calls_prints_and_asserts_are_left_out(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "def transfer_check(state):\n    return 'CALL'",
        "print(transfer_check({}))",
        "assert transfer_check({}) == 'CALL'",
        "report = grade_all(transfer_check)\nrun_transfer(transfer_check, [])",
        "for case in [{}, {}]:\n    print(transfer_check(case))",
    ], ["transfer_check"])

    assert [s.cell for s in extraction.statements] == [0]


def test_a_name_used_in_a_function_body_means_its_last_binding_in_the_notebook(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "def decide_admission(case):\n    return case < CEILING",
        "CEILING = 3",
        "CEILING = 10",
    ], ["decide_admission"])

    assert kept_sources(extraction)[1:] == ["CEILING = 10"]
    assert run_module(extraction)["decide_admission"](5) is True


def test_a_default_argument_means_the_binding_live_when_the_function_was_defined(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "CEILING = 3",
        "def decide_admission(case, ceiling=CEILING):\n    return case < ceiling",
        "CEILING = 10",
    ], ["decide_admission"])

    assert "CEILING = 10" not in extraction.module_source
    assert run_module(extraction)["decide_admission"](5) is False


def test_a_value_computed_at_top_level_uses_the_binding_live_at_that_statement(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "BASE = [('base', [], 'CALL')]",
        "TRANSFER_CASES = BASE + [('mine', [], 'CALL')]",
        "BASE = run_course_setup()",
    ], ["TRANSFER_CASES"])

    assert "run_course_setup" not in extraction.module_source
    assert len(run_module(extraction)["TRANSFER_CASES"]) == 2


def test_a_decorator_and_its_import_are_taken_with_the_function(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "import functools",
        "def traced(function):\n"
        "    @functools.wraps(function)\n"
        "    def wrapper(*args):\n"
        "        return ('traced', function(*args))\n"
        "    return wrapper",
        "@traced\ndef transfer_check(state):\n    return 'CALL'",
    ], ["transfer_check"])

    assert [s.cell for s in extraction.statements] == [0, 1, 2]
    assert extraction.statements[2].source.startswith("@traced\ndef transfer_check")
    assert run_module(extraction)["transfer_check"]({}) == ("traced", "CALL")


def test_a_class_based_helper_whose_methods_use_globals_is_taken(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "from dataclasses import dataclass, field\nfrom typing import ClassVar",
        "STATUSES = {'calls': 'MODEL_CALL_LIMIT', 'cost': 'MODEL_COST_LIMIT'}",
        "@dataclass(frozen=True)\n"
        "class Gate:\n"
        "    used: int\n"
        "    cap: int\n"
        "    history: list = field(default_factory=list)\n"
        "    ORDER: ClassVar[tuple] = ('calls', 'cost')\n"
        "\n"
        "    def verdict(self, spent, cost, budget):\n"
        "        if self.used >= self.cap:\n"
        "            return STATUSES[self.ORDER[0]]\n"
        "        if spent + cost > budget:\n"
        "            return STATUSES[self.ORDER[1]]\n"
        "        return 'CALL'",
        "def decide_admission(case):\n"
        "    gate = Gate(case['used_calls'], case['max_calls'])\n"
        "    return gate.verdict(case['spent'], case['next_cost'], case['budget'])",
    ], ["decide_admission"])

    gate = run_module(extraction)["decide_admission"]
    case = {"used_calls": 0, "max_calls": 2, "spent": 3, "next_cost": 2, "budget": 4}
    assert gate(case) == "MODEL_COST_LIMIT"
    assert gate(dict(case, used_calls=2)) == "MODEL_CALL_LIMIT"


def test_a_match_based_implementation_is_extracted_and_runs(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "REFUSALS = ('CALL_LIMIT', 'COST_LIMIT')",
        "def transfer_check(state):\n"
        "    match state:\n"
        "        case {'calls': int(calls), 'max_calls': int(cap)} if calls >= cap:\n"
        "            return REFUSALS[0]\n"
        "        case {'spent': spent, 'next_cost': cost, 'budget': budget} "
        "if spent + cost > budget:\n"
        "            return REFUSALS[1]\n"
        "        case _:\n"
        "            return 'CALL'",
    ], ["transfer_check"])

    check = run_module(extraction)["transfer_check"]
    state = {"calls": 1, "max_calls": 3, "spent": 4, "next_cost": 3, "budget": 7}
    assert check(state) == "CALL"
    assert check(dict(state, next_cost=4)) == "COST_LIMIT"
    assert check(dict(state, calls=3)) == "CALL_LIMIT"


def test_walrus_nested_functions_and_async_definitions_are_understood(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "if (margin := 4) > 0:\n    print('margin set')",
        "def make_check(limit):\n"
        "    def check(value):\n"
        "        return value < limit + margin\n"
        "    return check",
        "async def fetch_remote():\n    return await remote_call()",
        "transfer_check = make_check(2)",
    ], ["transfer_check"])

    assert "fetch_remote" not in extraction.module_source
    assert run_module(extraction)["transfer_check"](5) is True


def test_comprehension_variables_do_not_pull_in_unrelated_bindings(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "for case in run_course_cases():\n    print(case)",
        "SEEDS = [1, 2]",
        "TRANSFER_CASES = [(f'seed {case}', [case], 'CALL') for case in SEEDS]",
    ], ["TRANSFER_CASES"])

    assert "run_course_cases" not in extraction.module_source
    assert run_module(extraction)["TRANSFER_CASES"][1] == ("seed 2", [2], "CALL")


def test_a_future_import_is_kept_and_placed_first(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "def decide_admission(case: Undefined) -> str:\n    return 'CALL'",
        "from __future__ import annotations",
    ], ["decide_admission"])

    assert kept_sources(extraction)[0] == "from __future__ import annotations"


# --------------------------------------------------------------------------------------------
# TRANSFER_CASES and other values built up over several cells


def test_an_append_in_a_later_cell_is_kept(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "TRANSFER_CASES = [('first', [], 'CALL')]",
        "print(len(TRANSFER_CASES))",
        "TRANSFER_CASES.append(('mine', [], 'COST_LIMIT'))",
    ], ["TRANSFER_CASES"])

    assert [s.cell for s in extraction.statements] == [0, 2]
    assert run_module(extraction)["TRANSFER_CASES"][-1] == ("mine", [], "COST_LIMIT")


def test_a_later_reassignment_drops_the_earlier_appends(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "TRANSFER_CASES = [('old', [], 'CALL')]",
        "TRANSFER_CASES.append(('old extra', [], 'CALL'))",
        "TRANSFER_CASES = [('new', [], 'CALL')]",
        "TRANSFER_CASES.extend([('new extra', [], 'CALL')])",
    ], ["TRANSFER_CASES"])

    assert [s.cell for s in extraction.statements] == [2, 3]
    assert [c[0] for c in run_module(extraction)["TRANSFER_CASES"]] == ["new", "new extra"]


def test_every_way_of_adding_cases_is_kept_and_replays_to_the_notebook_value(
    tmp_path: Path,
) -> None:
    sources = [
        "TRANSFER_CASES = [('a', [], 'CALL')]",
        "TRANSFER_CASES.extend([('b', [], 'CALL')])\nTRANSFER_CASES.insert(0, ('c', [], 'CALL'))",
        "TRANSFER_CASES += [('d', [], 'CALL')]",
        "for n in range(2):\n    TRANSFER_CASES.append((f'loop {n}', [], 'CALL'))",
        "if len(TRANSFER_CASES) > 3:\n    TRANSFER_CASES.append(('branch', [], 'CALL'))",
        "TRANSFER_CASES[0] = ('c edited', [], 'CALL')",
        "EXTRA = [('e', [], 'CALL')]\nTRANSFER_CASES = TRANSFER_CASES + EXTRA",
    ]
    notebook_run: dict[str, Any] = {}
    for source in sources:
        exec(source, notebook_run)

    extraction = extract_sources(tmp_path, sources, ["TRANSFER_CASES"])

    assert run_module(extraction)["TRANSFER_CASES"] == notebook_run["TRANSFER_CASES"]
    assert len(extraction.statements) == 9


def test_statements_separated_by_semicolons_are_sliced_one_by_one(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "TRANSFER_CASES = []; print('start'); TRANSFER_CASES.append(('x', [], 'CALL'))",
    ], ["TRANSFER_CASES"])

    assert kept_sources(extraction) == [
        "TRANSFER_CASES = []",
        "TRANSFER_CASES.append(('x', [], 'CALL'))",
    ]
    assert [s.defines for s in extraction.statements] == [("TRANSFER_CASES",)] * 2


def test_notes_edited_after_their_definition_keep_the_edit(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "explanation_notes = {'trace': 'template'}",
        "explanation_notes['trace'] = 'my own trace'\nexplanation_notes.update(limit='mine')",
    ], ["explanation_notes"])

    assert run_module(extraction)["explanation_notes"] == {
        "trace": "my own trace", "limit": "mine",
    }


def test_missing_lists_the_names_defined_nowhere_in_the_order_asked(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "def decide_admission(case):\n    return 'CALL'",
        "TRANSFER_CASES.append(('never created', [], 'CALL'))",
    ], ["transfer_check", "decide_admission", "TRANSFER_CASES", "explanation_notes"])

    assert extraction.missing == ("transfer_check", "TRANSFER_CASES", "explanation_notes")
    assert extraction.found == {"decide_admission": 0}


# --------------------------------------------------------------------------------------------
# IPython syntax and unreadable cells


def test_line_magics_shell_commands_and_help_queries_do_not_break_extraction(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "%pip install -q pydantic\n!ls -la\n%matplotlib inline",
        "decide_admission?",
        "CEILING = 2\nfiles = !ls\nCEILING??\n"
        "def decide_admission(case):\n    return case < CEILING",
    ], ["decide_admission"])

    assert extraction.skipped_cells == ()
    assert [(s.cell, s.line) for s in extraction.statements] == [(2, 1), (2, 4)]
    assert "get_ipython" not in extraction.module_source
    assert run_module(extraction)["decide_admission"](1) is True


def test_line_numbers_follow_the_students_cell_after_a_continued_magic(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "\n%pip install \\\n    pydantic\n\ndef transfer_check(state):\n    return 'CALL'",
    ], ["transfer_check"])

    assert [(s.cell, s.line) for s in extraction.statements] == [(0, 5)]


def test_a_bash_cell_magic_is_reported_as_skipped(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "%%bash\necho 'TRANSFER_CASES = []'",
        "def transfer_check(state):\n    return 'CALL'",
    ], ["transfer_check"])

    assert extraction.skipped_cells == (SkippedCell(0, "IPython cell magic %%bash"),)
    assert extraction.found == {"transfer_check": 1}


def test_a_timeit_cell_magic_is_skipped_because_it_runs_its_body_repeatedly(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "%%timeit\nTRANSFER_CASES = []",
    ], ["TRANSFER_CASES"])

    assert extraction.skipped_cells == (SkippedCell(0, "IPython cell magic %%timeit"),)
    assert extraction.missing == ("TRANSFER_CASES",)


@pytest.mark.parametrize("magic", ["%%time", "%%capture captured"])
def test_the_body_of_a_time_or_capture_cell_magic_is_kept_at_its_own_lines(
    tmp_path: Path, magic: str,
) -> None:
    extraction = extract_sources(tmp_path, [
        f"\n{magic}\nCEILING = 5\n!echo hi\n"
        "def decide_admission(case):\n    return case < CEILING",
    ], ["decide_admission"])

    assert [(s.cell, s.line) for s in extraction.statements] == [(0, 3), (0, 5)]
    assert run_module(extraction)["decide_admission"](4) is True


def test_the_statement_after_a_time_line_magic_is_kept(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "%time TRANSFER_CASES = [('timed', [], 'CALL')]",
    ], ["TRANSFER_CASES"])

    assert kept_sources(extraction) == ["TRANSFER_CASES = [('timed', [], 'CALL')]"]


def test_a_cell_with_a_syntax_error_is_skipped_with_its_line(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, [
        "def decide_admission(case):\n    return 'CALL'",
        "x = 1\n\ndef transfer_check(state:\n    return 'CALL'",
    ], ["decide_admission", "transfer_check"])

    [skipped] = extraction.skipped_cells
    assert skipped.cell == 1
    assert skipped.reason.startswith("syntax error at line 3: ")
    assert extraction.missing == ("transfer_check",)
    assert extraction.found == {"decide_admission": 0}


def test_a_cell_python_refuses_to_compile_is_skipped_with_the_reason(tmp_path: Path) -> None:
    extraction = extract_sources(tmp_path, ["TRANSFER_CASES = []\nreturn TRANSFER_CASES"],
                                 ["TRANSFER_CASES"])

    assert extraction.skipped_cells == (
        SkippedCell(0, "syntax error at line 2: 'return' outside function"),
    )


def test_an_absurdly_nested_cell_is_skipped_instead_of_crashing_the_grader(
    tmp_path: Path,
) -> None:
    extraction = extract_sources(tmp_path, [
        "TRANSFER_CASES = " + "-" * 50_000 + "1",
        "TRANSFER_CASES = []",
    ], ["TRANSFER_CASES"])

    assert extraction.skipped_cells == (
        SkippedCell(0, "nested too deeply to analyse; split the expression into smaller parts"),
    )
    assert extraction.found == {"TRANSFER_CASES": 1}


def test_markdown_and_raw_cells_are_ignored_but_count_in_cell_numbers(tmp_path: Path) -> None:
    path = write_notebook(tmp_path, [
        new_markdown_cell("TRANSFER_CASES = ['from markdown']"),
        new_code_cell("TRANSFER_CASES = []"),
        new_raw_cell("TRANSFER_CASES = ['from raw']"),
        new_code_cell("TRANSFER_CASES.append('mine')"),
    ])

    assert read_cells(path) == [Cell(1, "TRANSFER_CASES = []"),
                                Cell(3, "TRANSFER_CASES.append('mine')")]
    assert run_module(extract(path, ["TRANSFER_CASES"]))["TRANSFER_CASES"] == ["mine"]


def test_a_bare_string_of_names_is_refused_with_what_to_pass_instead() -> None:
    with pytest.raises(TypeError, match=r"\['decide_admission'\]"):
        extract_cells([], "decide_admission")


def test_a_name_that_is_not_an_identifier_is_refused() -> None:
    with pytest.raises(ValueError, match="'transfer-check' is not a Python identifier"):
        extract_cells([], ["transfer-check"])


# --------------------------------------------------------------------------------------------
# .py exports


def test_an_nbconvert_script_export_splits_at_its_in_markers(tmp_path: Path) -> None:
    path = tmp_path / "submission.py"
    path.write_text(
        "#!/usr/bin/env python\n"
        "# coding: utf-8\n"
        "\n"
        "# # Admission gate practice\n"
        "\n"
        "# In[1]:\n"
        "\n"
        "\n"
        "import math\n"
        "\n"
        "\n"
        "# In[2]:\n"
        "\n"
        "\n"
        "def transfer_check(state):\n"
        "    return math.floor(state)\n"
        "\n"
        "\n"
        "# Some explanation in markdown\n"
        "\n"
        "# In[ ]:\n"
        "\n"
        "\n"
        "get_ipython().run_cell_magic('bash', '', 'echo hi\\n')\n",
        encoding="utf-8",
    )

    cells = read_cells(path)
    extraction = extract(path, ["transfer_check"])

    assert [cell.index for cell in cells] == [0, 1, 2]
    assert cells[0].source == "import math\n"
    assert extraction.found == {"transfer_check": 1}
    assert [(s.cell, s.line) for s in extraction.statements] == [(0, 1), (1, 1)]
    assert extraction.skipped_cells == (SkippedCell(2, "IPython cell magic %%bash"),)


def test_a_percent_script_export_splits_into_cells_and_ignores_markdown(tmp_path: Path) -> None:
    path = tmp_path / "submission.py"
    path.write_text(
        "# ---\n"
        "# jupyter:\n"
        "#   kernelspec:\n"
        "#     name: python3\n"
        "# ---\n"
        "\n"
        "# %% [markdown]\n"
        "# TRANSFER_CASES = ['in markdown']\n"
        "\n"
        "# %%\n"
        "TRANSFER_CASES = []\n"
        "\n"
        "# %% Add my case\n"
        "TRANSFER_CASES.append('mine')\n",
        encoding="utf-8",
    )

    cells = read_cells(path)

    assert cells == [Cell(1, "TRANSFER_CASES = []\n"), Cell(2, "TRANSFER_CASES.append('mine')\n")]
    assert run_module(extract(path, ["TRANSFER_CASES"]))["TRANSFER_CASES"] == ["mine"]


def test_a_plain_python_file_is_one_cell(tmp_path: Path) -> None:
    path = tmp_path / "solution.py"
    path.write_text("def transfer_check(state):\n    return 'CALL'\n", encoding="utf-8")

    assert read_cells(path) == [Cell(0, "def transfer_check(state):\n    return 'CALL'\n")]


# --------------------------------------------------------------------------------------------
# Files that are not notebooks


def test_invalid_json_raises_a_notebook_error_naming_the_file_and_the_position(
    tmp_path: Path,
) -> None:
    path = tmp_path / "broken submission.ipynb"
    path.write_text('{\n  "cells": [\n    {"cell_type": "code",,}\n', encoding="utf-8")

    with pytest.raises(NotebookError) as caught:
        read_cells(path)

    assert caught.value.path == path
    message = str(caught.value)
    assert str(path) in message
    assert "not valid JSON (line 3, column" in message
    assert "Re-download the notebook" in message


@pytest.mark.parametrize(("content", "complaint"), [
    ("[1, 2, 3]", "holds a JSON list"),
    ('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}', 'no "cells" list'),
    ('{"cells": []}', 'no "nbformat" version'),
    ("", "is empty"),
])
def test_json_that_is_not_a_notebook_raises_a_notebook_error_saying_what_is_wrong(
    tmp_path: Path, content: str, complaint: str,
) -> None:
    path = tmp_path / "submission.ipynb"
    path.write_text(content, encoding="utf-8")

    with pytest.raises(NotebookError, match=complaint) as caught:
        extract(path, ["decide_admission"])

    assert caught.value.path == path
    assert "Expected a Jupyter notebook (.ipynb)" in str(caught.value)


def test_bytes_that_are_not_utf8_raise_a_notebook_error(tmp_path: Path) -> None:
    path = tmp_path / "submission.ipynb"
    path.write_bytes(b'{"cells": "\xff\xfe"}')

    with pytest.raises(NotebookError, match="is not UTF-8 text"):
        read_cells(path)


def test_a_notebook_list_source_is_joined_into_one_cell(tmp_path: Path) -> None:
    path = tmp_path / "submission.ipynb"
    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 2, "metadata": {},
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 3,
                   "source": ["x = 1\n", "y = 2"]}],
    }), encoding="utf-8")

    assert read_cells(path) == [Cell(0, "x = 1\ny = 2")]


# --------------------------------------------------------------------------------------------
# literal_value


def test_literal_value_reads_the_last_dict_literal(tmp_path: Path) -> None:
    path = write_notebook(tmp_path, [
        new_code_cell("prediction_notes = {'guess': 'draft'}"),
        new_code_cell("prediction_notes = {\n    'guess': 'Write your prediction.',\n"
                      "    'reason': 'Name the rule.',\n}"),
    ])

    assert literal_value(path, "prediction_notes") == {
        "guess": "Write your prediction.", "reason": "Name the rule.",
    }


@pytest.mark.parametrize("source", [
    "prediction_notes = dict(guess=template_text())",
    "prediction_notes = {'guess': 'literal'}\nprediction_notes = build_notes()",
    "other_notes = {'guess': 'literal'}",
])
def test_literal_value_is_none_when_the_last_binding_is_not_a_literal_or_absent(
    tmp_path: Path, source: str,
) -> None:
    path = write_notebook(tmp_path, [new_code_cell(source)])

    assert literal_value(path, "prediction_notes") is None


# --------------------------------------------------------------------------------------------
# Properties over generated notebooks

LIST_NAMES = ("alpha", "beta", "gamma")
FUNCTION_NAMES = ("make", "build")


@st.composite
def runnable_notebooks(draw: st.DrawFn) -> tuple[list[str], dict[str, str]]:
    """Code cells that run top to bottom without error, and which list each function reads.

    Lists are never aliased and never emptied, so every statement below is valid whenever
    its names are bound. `boom(...)` stands for a driver call.
    """
    bound: set[str] = set()
    reads: dict[str, str] = {}
    statements: list[str] = []
    for _ in range(draw(st.integers(1, 14))):
        k = draw(st.integers(0, 9))
        x = draw(st.sampled_from(LIST_NAMES))
        f = draw(st.sampled_from(FUNCTION_NAMES))
        y = draw(st.sampled_from(sorted(bound))) if bound else x
        callable_ = [g for g, read in sorted(reads.items()) if read in bound]
        kinds = ["assign", "branch", "define"]
        if bound:
            kinds += ["derive", "append", "extend", "augment", "insert", "setitem", "loop",
                      "driver", "driver_result"]
        if callable_:
            kinds.append("call")
        kind = draw(st.sampled_from(kinds))
        target = x if kind in {"assign", "branch", "define", "derive", "call"} else y
        statements.append({
            "assign": f"{x} = [{k}]",
            "branch": f"if {k} % 2:\n    {x} = [{k}]\nelse:\n    {x} = [{k}, {k}]",
            "define": f"def {f}():\n    return {x} + [{k}]",
            "derive": f"{x} = {y} + [{k}]",
            "append": f"{y}.append({k})",
            "extend": f"{y}.extend({x if x in bound else y})",
            "augment": f"{y} += [{k}]",
            "insert": f"{y}.insert(0, {k})",
            "setitem": f"{y}[0] = {k}",
            "loop": f"for item in range({k % 3}):\n    {y}.append(item)",
            "driver": f"boom({y})",
            "driver_result": f"_seen = boom({y})",
            "call": f"{x} = {callable_[0] if callable_ else f}()",
        }[kind])
        if kind == "define":
            reads[f] = x
        elif kind in {"assign", "branch", "derive", "call"}:
            bound.add(target)
    breaks = draw(st.lists(st.booleans(), min_size=len(statements), max_size=len(statements)))
    cells: list[str] = []
    for statement, new_cell in zip(statements, breaks):
        if new_cell or not cells:
            cells.append(statement)
        else:
            cells[-1] += "\n" + statement
    return cells, reads


def driver_ran(*_: object) -> None:
    raise AssertionError("a driver call was extracted")


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(runnable_notebooks())
def test_the_extracted_module_gives_every_name_its_value_after_a_top_to_bottom_run(
    notebook: tuple[list[str], dict[str, str]],
) -> None:
    sources, reads = notebook
    full_run: dict[str, Any] = {"boom": lambda *_: None}
    for source in sources:
        exec(source, full_run)

    names = [*LIST_NAMES, *FUNCTION_NAMES]
    extraction = extract_cells([Cell(i, s) for i, s in enumerate(sources)], names)
    sliced: dict[str, Any] = {"boom": driver_ran}
    exec(extraction.module_source, sliced)

    assert set(extraction.missing) == {n for n in names if n not in full_run}
    for name in LIST_NAMES:
        if name in full_run:
            assert sliced[name] == full_run[name], name
    for name in FUNCTION_NAMES:
        if name in full_run and reads[name] in full_run:
            assert sliced[name]() == full_run[name](), name


@settings(max_examples=100, deadline=None)
@given(runnable_notebooks())
def test_extracted_statements_are_the_notebooks_own_statements_in_order(
    notebook: tuple[list[str], dict[str, str]],
) -> None:
    sources, _ = notebook
    cells = [Cell(2 * i + 1, s) for i, s in enumerate(sources)]  # odd: markdown in between

    extraction = extract_cells(cells, [*LIST_NAMES, *FUNCTION_NAMES])

    positions = [(s.cell, s.line) for s in extraction.statements]
    assert positions == sorted(set(positions))
    by_index = {cell.index: cell.source.split("\n") for cell in cells}
    for statement in extraction.statements:
        first_line = statement.source.split("\n")[0]
        assert by_index[statement.cell][statement.line - 1].startswith(first_line)
