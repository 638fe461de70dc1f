"""Interop check: the Python SDK client (`pip install mcp`) gets a prompt whose arguments are
typed on the server (`days: u32`, `metric: bool`), sending them as strings, and is refused with
-32602 naming the argument when one does not parse.

Usage: python3 py_client_typed_prompt.py <weather server command> [args...]
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
try:  # mcp 2.x
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError


async def main(command: str, args: list[str]) -> None:
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_prompts()
            report = next(p for p in listed.prompts if p.name == "weekly_report")
            names = [a.name for a in report.arguments]
            assert names == ["city", "days", "metric", "style"], names

            prompt = await session.get_prompt(
                "weekly_report", {"city": "Lisbon", "days": "5", "metric": "True"}
            )
            text = prompt.messages[0].content.text
            expected = (
                "Write a brief weather report for Lisbon covering 5 days, "
                "temperatures in Celsius."
            )
            assert text == expected, text

            try:
                await session.get_prompt(
                    "weekly_report", {"city": "Lisbon", "days": "5", "metric": "maybe"}
                )
            except McpError as e:
                assert e.error.code == -32602, e.error
                assert "`metric`" in e.error.message, e.error.message
            else:
                raise AssertionError("metric=maybe was accepted")
    print("interop ok")


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2:]), 20))
