"""Tool dispatch: advertise schemas, validate arguments, gate writes, flatten refusals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pydantic import BaseModel

TOOL_FAILED = "tool_failed"
"""The single observation a model receives for any refused or failed tool call."""


@dataclass(frozen=True)
class ToolCall:
    """A tool request from the model, as decoded from its turn."""

    id: str
    """Identifier the tool observation must repeat."""
    name: str
    """Name of the requested tool."""
    arguments: Any
    """Decoded arguments; anything but a valid object is refused at validation."""


@dataclass(frozen=True)
class ExecutableTool:
    """One tool: what the model is told, what it may send, and what runs."""

    name: str
    """Name the model uses to request the tool."""
    description: str
    """One sentence the model reads to decide when to call the tool."""
    arguments_model: type[BaseModel]
    """Pydantic model that validates the arguments and publishes their schema."""
    handler: Callable[[Any], Any]
    """Receives the validated arguments model; returns a JSON-serialisable value."""
    consequential: bool = False
    """Consequential tools pass through the dispatcher's before_write gate first."""


class Dispatcher:
    """Runs allowed tools; every refusal reaches the model as the same observation."""

    def __init__(
        self,
        tools: Iterable[ExecutableTool],
        *,
        allowed: Iterable[str],
        before_write: Callable[[ToolCall], None] | None = None,
    ) -> None:
        self.tools: dict[str, ExecutableTool] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"tool name {tool.name!r} is registered twice; names must be unique")
            self.tools[tool.name] = tool
        self.allowed = frozenset(allowed)
        unknown = sorted(self.allowed - set(self.tools))
        if unknown:
            raise ValueError(f"allowed names {unknown} match no registered tool; registered: {sorted(self.tools)}")
        self.before_write = before_write

    def schemas(self) -> list[dict[str, Any]]:
        """Function-tool descriptions of the allowed tools, in registration order."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.arguments_model.model_json_schema(),
                },
            }
            for tool in self.tools.values()
            if tool.name in self.allowed
        ]

    def invoke(self, call: ToolCall) -> Any:
        """Validate, gate and run one call; return its value or TOOL_FAILED."""
        tool = self.tools.get(call.name)
        if tool is None or tool.name not in self.allowed:
            return TOOL_FAILED
        try:
            arguments = tool.arguments_model.model_validate(call.arguments)
            if tool.consequential and self.before_write is not None:
                self.before_write(call)
            return tool.handler(arguments)
        # Refusals are ValueError (pydantic's ValidationError included) or PermissionError;
        # anything else is a bug in a handler and must surface, not look like a refusal.
        except (ValueError, PermissionError):
            return TOOL_FAILED
