"""Read an assignment's declaration: its parts, weights, files and schemas."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from autograder import mutants

#: Where the engine looks for assignments, relative to the project root.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
SUITES_DIR = PROJECT_ROOT / "grading_tests"
SCHEMAS_DIR = PROJECT_ROOT / "schemas"
DECLARATION_NAME = "assignment.toml"


class DeclarationError(Exception):
    """The declaration is missing or wrong; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Group(_Strict):
    """One kind of check inside a part, e.g. "unseen cases" or the rule "call limit first"."""

    title: str = Field(description="What students read in the summary, e.g. 'unseen cases'.")
    share: Annotated[float, Field(gt=0, le=1)] = Field(
        description="Fraction of the part's points this group carries; a part's shares sum to 1."
    )
    rule: bool = Field(False, description="True when the group checks one rule of the contract.")
    hint: str = Field("", description="What to do next, shown to students when a check of this group fails.")


class Part(_Strict):
    """A graded part: a set of hidden tests sharing one tag and one pool of points."""

    title: str
    points: Annotated[float, Field(ge=0)]
    manual: bool = Field(False, description="Graded by a person; tests only record review items.")
    groups: dict[str, Group]

    @model_validator(mode="after")
    def _shares_sum_to_one(self) -> Part:
        total = sum(group.share for group in self.groups.values())
        if self.groups and not math.isclose(total, 1.0, abs_tol=1e-9):
            shares = ", ".join(f"{name}={g.share}" for name, g in self.groups.items())
            raise ValueError(f"group shares must sum to 1, got {total:g} ({shares})")
        return self


class EvidenceFile(_Strict):
    """A JSON file the notebook writes and the student uploads."""

    filename: str = Field(description="Exact name the notebook writes, e.g. 'ch03-a-submission-v1.json'.")
    schema_file: str = Field(alias="schema", description="Schema file in schemas/<assignment>/.")
    title: str = ""


class Submission(_Strict):
    """What to look for in an upload and what to take from the notebook."""

    notebook_globs: tuple[str, ...] = ("*.ipynb", "*.py")
    names: tuple[str, ...] = Field(description="Top-level names the grader extracts from the notebook.")
    template_notebook: str = Field(
        "", description="Release notebook, relative to the project root, holding the template texts."
    )


class Sandbox(_Strict):
    call_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 2.0
    load_timeout_seconds: Annotated[float, Field(gt=0, le=120)] = 10.0
    total_seconds: Annotated[float, Field(gt=0, le=3600)] = 120.0


class AuditCases(_Strict):
    """A list of cases bound to a literal in the reference notebook, e.g. `VISIBLE_CASES = [...]`."""

    name: str = Field(description="The name the literal list is bound to.")
    layout: Literal["input, expected", "label, arguments, expected"] = Field(
        description="What each case holds: `(input, expected)` for a one-argument call, or `(label, [arguments], expected)`."
    )


class AuditFunction(_Strict):
    """A graded function the audit mutates, and the part whose hidden tests must catch every mutant."""

    part: str = Field(description="Part that must take points from every mutant of this function.")
    also: tuple[str, ...] = Field((), description="Further parts that call the function; graded and shown, a mutant may pass them.")
    statuses: tuple[str, ...] = Field(min_length=1, description="Every answer the function may give; one constant mutant each.")
    visible: AuditCases | None = Field(None, description="The cases students see, memorised by the lookup mutants.")
    operators: tuple[str, ...] | None = Field(None, description="Mutation operators to apply (default: all of mutants.OPERATORS).")

    @field_validator("operators")
    @classmethod
    def _known_operators(cls, operators: tuple[str, ...] | None) -> tuple[str, ...] | None:
        unknown = [name for name in operators or () if name not in mutants.OPERATORS]
        if unknown:
            raise ValueError(f"unknown operator(s) {', '.join(map(repr, unknown))}; known: {', '.join(mutants.OPERATORS)}")
        return operators


class AuditCaseList(_Strict):
    """A given case list the student extends (e.g. TRANSFER_CASES); the audit mutates the cases the reference adds."""

    part: str = Field(description="Part that must take points from every mutant of the added cases.")
    statuses: tuple[str, ...] = Field(min_length=2, description="The expected values a case may hold.")


class Audit(_Strict):
    """How `autograder audit` checks the hidden suites: the reference and the mutants generated from it."""

    reference: str = Field(description="Notebook with the reference solution, relative to the project root.")
    parts: tuple[str, ...] = Field(min_length=1, description="Parts that depend on code; the reference must get full marks on each.")
    gaming_cap: Annotated[float, Field(ge=0, le=1)] = Field(
        0.40, description="Largest share of a part a gaming mutant (constant, lookup, always-equal) may keep."
    )
    functions: dict[str, AuditFunction] = {}
    cases: dict[str, AuditCaseList] = {}

    def parts_named(self) -> dict[str, tuple[str, ...]]:
        """Where each part is named in this section, for cross-checks against the declared parts."""
        named = {"audit.parts": self.parts}
        named |= {f"audit.functions.{n}": (f.part, *f.also) for n, f in self.functions.items()}
        named |= {f"audit.cases.{n}": (c.part,) for n, c in self.cases.items()}
        return named


class Assignment(_Strict):
    """The whole declaration of one assignment."""

    id: str
    title: str
    submission: Submission
    files: dict[str, EvidenceFile] = {}
    sandbox: Sandbox = Sandbox()
    parts: dict[str, Part]
    audit: Audit | None = Field(None, description="How `autograder audit` checks the hidden suites; optional.")
    #: Filled in by `load`, not read from the file.
    suite_dir: Path = Path()
    schema_dir: Path = Path()

    @field_validator("parts")
    @classmethod
    def _at_least_one_part(cls, parts: dict[str, Part]) -> dict[str, Part]:
        if not parts:
            raise ValueError("declare at least one part under [parts.<name>]")
        return parts

    @model_validator(mode="after")
    def _audit_names_declared_parts_and_names(self) -> Assignment:
        if self.audit is None:
            return self
        for where, named in self.audit.parts_named().items():
            for part in named:
                if part not in self.parts:
                    raise ValueError(f"{where}: part {part!r} is not declared (declared: {', '.join(self.parts)})")
                if part not in self.audit.parts:
                    raise ValueError(f"{where}: part {part!r} is not in audit.parts, so the reference is not checked on it; add it there")
        for name in [*self.audit.functions, *self.audit.cases]:
            if name not in self.submission.names:
                raise ValueError(f"audit: {name!r} is not one of submission.names, so it is not extracted from the reference; add it there")
        return self

    @property
    def total_points(self) -> float:
        return sum(part.points for part in self.parts.values())

    def schema_path(self, file_key: str) -> Path:
        return self.schema_dir / self.files[file_key].schema_file


def available(suites_dir: Path = SUITES_DIR) -> list[str]:
    """Assignment ids that have a declaration."""
    return sorted(p.parent.name for p in suites_dir.glob(f"*/{DECLARATION_NAME}"))


def load(assignment_id: str, suites_dir: Path = SUITES_DIR, schemas_dir: Path = SCHEMAS_DIR) -> Assignment:
    """Read `grading_tests/<id>/assignment.toml`; raise DeclarationError saying what to fix."""
    path = suites_dir / assignment_id / DECLARATION_NAME
    if not path.is_file():
        known = ", ".join(available(suites_dir)) or "none"
        raise DeclarationError(f"unknown assignment {assignment_id!r}: no {path} (known assignments: {known})")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise DeclarationError(f"{path}: not valid TOML: {error}") from None
    try:
        assignment = Assignment.model_validate(raw)
    except ValidationError as error:
        raise DeclarationError(f"{path}: {_first_problem(error)}") from None
    if assignment.id != assignment_id:
        raise DeclarationError(f"{path}: id is {assignment.id!r} but the folder is {assignment_id!r}; make them agree")
    return assignment.model_copy(update={"suite_dir": path.parent, "schema_dir": schemas_dir / assignment_id})


def _first_problem(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)
