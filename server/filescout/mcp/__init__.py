"""The MCP face: `filescout mcp`, the engine's tools for chat panels and agents."""
