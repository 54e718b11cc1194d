"""A bare stdio MCP server (JSON-RPC lines, no SDK) that answers tools/list with the JSON file
given as its argument, whatever it holds: a way to test lists the SDK's servers would never send
(an invalid inputSchema, a malformed tool) and a list that changes between runs."""
import json
import sys


def main() -> None:
    tools_file = sys.argv[1]
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue  # a notification
        method, result = message.get("method"), {}
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "stub", "version": "0"}}
        elif method == "tools/list":
            with open(tools_file) as handle:
                result = {"tools": json.load(handle)}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


if __name__ == "__main__":
    main()
