"""Course runtime for the bounded agent loop unit: shop tools, dispatcher, loop and model lab."""

__all__ = ["agent_loop", "chapter_three", "files", "llm_lab", "shop", "tool_dispatch"]
