"""Grade bounded-agent-loop assignments: observe student code in a sandbox, judge it outside."""

__all__ = ["__version__"]

__version__ = "0.1.0"
