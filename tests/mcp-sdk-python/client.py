"""`self-evolve serve` (or `mcp` over stdio) driven by the official MCP Python SDK's `Client`
(the `mcp` package, pinned in requirements.txt), as a Python agent would use it.

    client.py --url URL [--token T] --mode legacy|auto --home HOME
    client.py --stdio CLI WASM --mode legacy|auto --home HOME

`legacy` is the initialize handshake (2025-11-25); `auto` probes `server/discover` and so speaks
2026-07-28. Checks: the negotiated revision, the one tool, a write that lands and is announced
(`subscriptions/listen` on 2026-07-28, `notifications/resources/list_changed` on the session
before), a secret refused with nothing written, and SEP-2640's `skills/list`. Prints one JSON
line of what it saw; exits non-zero, naming the check, on the first that fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from pydantic import TypeAdapter
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

EXPECTED = {"legacy": "2025-11-25", "auto": "2026-07-28"}
SECRET_BODY = "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEKEYEXAMPLX\n"


def fail(what: str, seen: Any) -> None:
    print(f"FAILED: {what}: {seen!r}", file=sys.stderr)
    sys.exit(1)


def text_of(result: types.CallToolResult) -> dict[str, Any]:
    block = result.content[0]
    return json.loads(getattr(block, "text", "{}"))


# Distinct lessons: the duplicate guard refuses a second skill that reads like the first.
LESSONS = {
    "python-first": "Rotate expiring TLS certificates on the load balancer. Use when a certificate nears expiry.",
    "python-second": "Vacuum and reindex a bloated PostgreSQL table. Use when queries on one table slow down.",
    "python-aws": "Deploy the service with AWS credentials. Use when shipping a release.",
}


def create(name: str, body: str = "Follow the runbook, then verify.\n") -> dict[str, Any]:
    return {"action": "create", "name": name, "description": LESSONS[name], "body": body}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    announced: list[str] = []

    async def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None) or getattr(message, "method", None)
        if method == "notifications/resources/list_changed":
            announced.append(method)

    if args.url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        server: Any = streamable_http_client(args.url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    else:
        cli, wasm = args.stdio
        server = StdioServerParameters(command=cli, args=["--wasm", wasm, "mcp", "--home", args.home], env=dict(os.environ))
    seen: dict[str, Any] = {}
    async with Client(server, mode=args.mode, message_handler=on_message, cache=None) as client:
        seen["protocolVersion"] = client.protocol_version
        if client.protocol_version != EXPECTED[args.mode]:
            fail("negotiated revision", client.protocol_version)
        tools = [tool.name for tool in (await client.list_tools()).tools]
        if tools != ["skill_manage"]:
            fail("tools/list", tools)
        seen["tools"] = tools

        written = text_of(await client.call_tool("skill_manage", create("python-first")))
        if written.get("status") != "written":
            fail("the first create", written)

        if args.mode == "auto":
            # 2026-07-28: list-changed rides subscriptions/listen.
            async with client.listen(resources_list_changed=True) as subscription:
                seen["honored"] = subscription.honored.model_dump(by_alias=True, exclude_none=True)
                second = text_of(await client.call_tool("skill_manage", create("python-second")))
                if second.get("status") != "written":
                    fail("the second create", second)
                with anyio.fail_after(10):
                    async for event in subscription:
                        announced.append(type(event).__name__)
                        break
        else:
            second = text_of(await client.call_tool("skill_manage", create("python-second")))
            if second.get("status") != "written":
                fail("the second create", second)
            with anyio.fail_after(10):
                while not announced:
                    await anyio.sleep(0.02)
        seen["announced"] = announced

        refused = await client.call_tool("skill_manage", create("python-aws", SECRET_BODY))
        if not refused.is_error or text_of(refused).get("code") != "secret-found":
            fail("the secret refused", refused)
        seen["refused"] = text_of(refused)["code"]

        request = types.Request[dict[str, Any], str](method="skills/list", params={})
        # The SDK has no skills API: the page as the wire carried it.
        listed = await client.session.send_request(request, TypeAdapter(dict[str, Any]))
        names = sorted(skill["frontmatter"]["name"] for skill in listed.get("skills", []))
        seen["skills"] = names
        for key in ("ttlMs", "cacheScope") if args.mode == "auto" else ():
            if key not in listed:
                fail(f"skills/list carries {key} on 2026-07-28", listed)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url")
    where.add_argument("--stdio", nargs=2, metavar=("CLI", "WASM"))
    parser.add_argument("--token")
    parser.add_argument("--mode", choices=sorted(EXPECTED), required=True)
    parser.add_argument("--home", required=True)
    args = parser.parse_args()
    print(json.dumps(anyio.run(run, args)))


if __name__ == "__main__":
    main()
