"""Check evidence files against their JSON Schemas, with messages that name the file and the JSON path."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match

DIALECT = "https://json-schema.org/draft/2020-12/schema"

# jsonschema's messages embed the offending value; a pasted transcript would swamp the report.
MESSAGE_LIMIT = 300
VALUE_PREVIEW_LIMIT = 80

REGENERATE = (
    "re-run the notebook cell that saves this file and upload the new file; "
    "do not edit it by hand"
)


@dataclass(frozen=True)
class SchemaProblem:
    """One way an evidence file breaks its schema, addressed for the student."""

    file: str
    """The evidence file's name, as the student knows it."""
    path: str
    """Where in the file, e.g. ``transfer[2].passed``; empty for the whole document."""
    message: str
    """What is wrong there, in jsonschema's wording, capped in length."""

    def __str__(self) -> str:
        if self.path:
            return f"{self.file}: {self.path}: {self.message}"
        return f"{self.file}: {self.message}"


class SchemaFileError(ValueError):
    """A schema file shipped with an assignment is unusable; an instructor must fix it."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        super().__init__(
            f"schema {path}: {problem}. Fix the schema file (it ships with the assignment, "
            "not with the submission) and check it with "
            "jsonschema.Draft202012Validator.check_schema."
        )


def load_schema(path: Path) -> dict[str, Any]:
    """Read a Draft 2020-12 schema and check it against the metaschema before any student file meets it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SchemaFileError(path, f"cannot be read ({error})") from error
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise SchemaFileError(
            path, f"is not valid JSON at line {error.lineno}, column {error.colno} ({error.msg})"
        ) from error
    _check_schema(path, schema)
    return schema


def _check_schema(path: Path, schema: object) -> None:
    if not isinstance(schema, dict):
        raise SchemaFileError(path, f"must be a JSON object, not {type(schema).__name__}")
    declared = schema.get("$schema", DIALECT)
    # Validating a draft-07 schema with 2020-12 rules would silently change what it accepts.
    if declared != DIALECT:
        raise SchemaFileError(path, f"declares $schema {declared!r}; expected {DIALECT!r}")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise SchemaFileError(
            path, f"is not a valid schema at {error.json_path}: {error.message}"
        ) from error


#: No evidence file the notebook writes nests deeper than this; deeper input is refused before
#: any recursive code (the JSON decoder, jsonschema, the hidden suites) can be made to overflow.
MAX_DEPTH = 64


def parse_json(text: str, file: str) -> tuple[object | None, SchemaProblem | None]:
    """Decode an evidence file's text; on failure, say where the text breaks and what to do."""
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        message = f"nests arrays or objects {depth} levels deep, more than the {MAX_DEPTH} any saved evidence has; {REGENERATE}"
        return None, SchemaProblem(file, "", message)
    try:
        return json.loads(text), None
    except json.JSONDecodeError as error:
        message = (
            f"is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
            f"the file may be cut short or edited, so {REGENERATE}"
        )
        return None, SchemaProblem(file, "", message)


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting in JSON text, ignoring brackets inside strings; no recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check(instance: object, schema: dict[str, Any], file: str) -> list[SchemaProblem]:
    """Every way ``instance`` breaks ``schema``, sorted by JSON path, each reported once."""
    errors = [_most_specific(error) for error in Draft202012Validator(schema).iter_errors(instance)]
    errors.sort(key=lambda error: (_path_key(error.absolute_path), error.message))
    problems = (SchemaProblem(file, _render_path(error), _message(error)) for error in errors)
    return list(dict.fromkeys(problems))


def check_file(path: Path, schema: dict[str, Any], file: str | None = None) -> list[SchemaProblem]:
    """Read one evidence file from disk and check it; ``file`` overrides the name shown."""
    name = file if file is not None else path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return [SchemaProblem(name, "", f"cannot be read as UTF-8 text ({error}); {REGENERATE}")]
    instance, problem = parse_json(text, name)
    if problem is not None:
        return [problem]
    return check(instance, schema, name)


def _most_specific(error: ValidationError) -> ValidationError:
    """anyOf/oneOf only say 'not valid under any'; descend to the alternative the value came closest to."""
    if not error.context:
        return error
    return best_match([error]) or error


def _message(error: ValidationError) -> str:
    message = error.message
    if error.context:
        # best_match could not choose, so show what each alternative objected to.
        reasons = dict.fromkeys(child.message for child in error.context)
        message = f"{message}: " + "; ".join(reasons)
    return _shorten(_shorten_value(message, error.instance), MESSAGE_LIMIT)


def _shorten_value(message: str, instance: object) -> str:
    shown = repr(instance)
    if len(shown) <= VALUE_PREVIEW_LIMIT:
        return message
    return message.replace(shown, _shorten(shown, VALUE_PREVIEW_LIMIT))


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render_path(error: ValidationError) -> str:
    # json_path is "$", "$.a[2].b" or "$['odd key']"; students read it without the "$".
    path = error.json_path.removeprefix("$")
    return path.removeprefix(".")


def _path_key(path: Iterable[str | int]) -> tuple[tuple[int, int, str], ...]:
    # Compare indexes as numbers so transfer[10] sorts after transfer[2].
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in path)
