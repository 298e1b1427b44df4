"""Drives an MCP server over stdio with the official MCP client (the `mcp` package).

Usage: python client.py COMMAND [ARG...] < steps.json > answers.json

Starts COMMAND ARG... as a stdio MCP server, initializes one session, runs each step of
the JSON array read from standard input, and prints a JSON array with one answer per step:

  {"list": true}                      -> {"tools": [{"name", "description",
                                            "input_schema", "annotations"}, ...]}
  {"call": NAME, "arguments": {...}}  -> {"is_error": bool, "texts": [str, ...]}

A protocol error (an MCP error response) answers {"error": MESSAGE}. Assertions live in
the Rust test that runs this (services/gatehouse/tests/mcp_cli.rs); this script only
speaks the protocol, with the reference client, so the server meets a real one.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def dump(value):
    """A pydantic model (or plain value) as JSON-ready data, without unset fields."""
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    return value


async def step(session: ClientSession, request: dict) -> dict:
    try:
        if request.get("list"):
            listed = await session.list_tools()
            return {
                "tools": [
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.input_schema,
                        "annotations": dump(tool.annotations),
                    }
                    for tool in listed.tools
                ]
            }
        result = await session.call_tool(request["call"], request.get("arguments") or {})
        return {
            "is_error": bool(result.is_error),
            "texts": [block.text for block in result.content if block.type == "text"],
        }
    except MCPError as error:
        return {"error": str(error)}


async def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: client.py COMMAND [ARG...] < steps.json")
    steps = json.load(sys.stdin)
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            answers = [await step(session, request) for request in steps]
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
