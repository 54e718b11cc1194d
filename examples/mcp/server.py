"""A small MCP server (stdio) with Vox-orchestrator-like tools, written for synth's tests and demo.
Read-only tools are marked with the readOnlyHint annotation; `product_lane` groups them."""
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("synth-example-tools", log_level="WARNING")
TASKS = [{"id": 1, "title": "write docs", "status": "open"}, {"id": 2, "title": "ship v1", "status": "done"}]


def lane(name: str) -> dict:
    return {"product_lane": name}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta=lane("app"))
def vox_list_tasks(status: str = "open", limit: int = 10) -> list[dict]:
    """List the to-do tasks of the current app, filtered by status ("open" or "done")."""
    if status not in ("open", "done"):
        raise ToolError(f"unknown status {status!r}")
    return [t for t in TASKS if t["status"] == status][:limit]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta=lane("app"))
def vox_count_tasks(status: str = "open") -> int:
    """Count the to-do tasks with the given status."""
    return sum(t["status"] == status for t in TASKS)


@server.tool(annotations=ToolAnnotations(readOnlyHint=False), meta=lane("app"))
def vox_add_task(title: str, priority: int = 3) -> dict:
    """Add a to-do task with a title and a priority from 1 (urgent) to 5."""
    return {"id": 3, "title": title, "priority": priority}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta=lane("data"))
def vox_query_table(table: str, limit: int = 20) -> list[dict]:
    """Read rows of a database table of the app."""
    if table != "Task":
        raise ToolError(f"no table named {table}")
    return TASKS[:limit]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta=lane("data"))
def vox_describe_schema(table: str) -> dict:
    """Describe the columns of a database table."""
    return {"table": table, "columns": ["id", "title", "status"]}


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True), meta=lane("platform"))
def vox_deploy_app(app: str, environment: str) -> str:
    """Deploy an app to an environment (staging or production)."""
    return f"deployed {app} to {environment}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta=lane("platform"))
def vox_check_source(source: str) -> dict:
    """Type-check a piece of Vox source code and return the diagnostics."""
    return {"ok": "->" not in source}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta=lane("ai"))
def vox_search_docs(query: str, max_results: int = 5) -> list[str]:
    """Search the Vox documentation for a query."""
    return [f"doc about {query}"][:max_results]


if __name__ == "__main__":
    server.run()
