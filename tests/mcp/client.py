"""Drives an MCP server with the official MCP client (the `mcp` package).

Usage: python client.py COMMAND [ARG...] < steps.json > answers.json
       python client.py --url URL < steps.json > answers.json

Starts COMMAND ARG... as a stdio MCP server, or connects to the streamable-HTTP server at
URL (with `Authorization: Bearer $MCP_CLIENT_TOKEN` when that is set), initializes one
session, runs each step of the JSON array read from standard input, and prints a JSON
array with one answer per step:

  {"list": true}                      -> {"tools": [{"name", "description",
                                            "input_schema", "annotations"}, ...]}
  {"call": NAME, "arguments": {...}}  -> {"is_error": bool, "texts": [str, ...]}

A protocol error (an MCP error response) answers {"error": MESSAGE}. A session the
server refuses to initialize (a wrong token) prints "initialize refused: MESSAGE" on
standard error and exits with status 3. Assertions live in the Rust tests that run this
(services/gatehouse/tests/mcp_cli.rs, services/runner/src/mcp/tests/official_client.rs);
this script only speaks the protocol, with the reference client, so the server meets a
real one.
"""

import asyncio
import contextlib
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
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


INITIALIZE_REFUSED = 3


@contextlib.asynccontextmanager
async def transport(argv: list[str]):
    """The client's streams to the server `argv` names: a URL, or a command to start."""
    if argv[0] == "--url":
        token = os.environ.get("MCP_CLIENT_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(argv[1], http_client=http) as (read, write):
                yield read, write
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:])
        async with stdio_client(server) as (read, write):
            yield read, write


async def main() -> int:
    argv = sys.argv[1:]
    if not argv or (argv[0] == "--url" and len(argv) != 2):
        sys.exit("usage: client.py COMMAND [ARG...] < steps.json\n       client.py --url URL < steps.json")
    steps = json.load(sys.stdin)
    refused = None
    async with transport(argv) as (read, write):
        async with ClientSession(read, write) as session:
            try:
                await session.initialize()
            except MCPError as error:
                refused = error
            else:
                answers = [await step(session, request) for request in steps]
    if refused is not None:
        print(f"initialize refused: {refused}", file=sys.stderr)
        return INITIALIZE_REFUSED
    json.dump(answers, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
