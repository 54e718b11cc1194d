"""What several tests share: worker processes a test kills, a toy lane and provider written the
way new ones are, a bare MCP server, and a reference implementation to compare against."""
