"""Tool-call data validated against MCP tool schemas."""
