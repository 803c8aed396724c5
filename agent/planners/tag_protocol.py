"""The text protocol for endpoints without function calling (from AudioToolAgent).

The planner writes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (one or
several per turn) and finishes with ``<answer>...</answer>``. Parsing is forgiving: text
around the tags, code fences, a missing closing tag, single objects or lists. A call that
cannot be parsed becomes a request with ``parse_error`` set, which the loop reports back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from agent.planners.base import ToolCallRequest, ToolSpec

_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|$)", re.S | re.I)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.S)


def tool_instructions(specs: Sequence[ToolSpec]) -> str:
    lines = [
        "You can call these tools. To call one, write exactly",
        '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>',
        "You may write several calls in one reply; they run at the same time. After your "
        "calls, stop and wait: the results come back as <tool_result> messages.",
        "",
        "Tools:",
    ]
    for spec in specs:
        lines.append(f"- {spec.name}: {spec.description}")
        lines.append(f"  arguments (JSON schema): {json.dumps(spec.parameters)}")
    return "\n".join(lines)


def format_result(name: str, call_id: str, content: str) -> str:
    return f'<tool_result name="{name}" id="{call_id}">\n{content}\n</tool_result>'


def parse_tool_calls(text: str, id_prefix: str = "call") -> list[ToolCallRequest]:
    calls: list[ToolCallRequest] = []
    for index, body in enumerate(_CALL.findall(text)):
        call_id = f"{id_prefix}_{index + 1}"
        body = _FENCE.sub("", body.strip()).strip()
        parsed, error = _loads(body)
        items = parsed if isinstance(parsed, list) else [parsed]
        if error is not None:
            calls.append(ToolCallRequest(call_id, _guess_name(body), {}, parse_error=error))
            continue
        for offset, item in enumerate(items):
            sub_id = call_id if len(items) == 1 else f"{call_id}_{offset + 1}"
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                calls.append(
                    ToolCallRequest(
                        sub_id,
                        "unknown",
                        {},
                        parse_error='A tool call needs {"name": "...", "arguments": {...}}; '
                        f"got {json.dumps(item)[:200]}",
                    )
                )
                continue
            arguments = item.get("arguments", item.get("parameters", {})) or {}
            if isinstance(arguments, str):
                arguments, arg_error = _loads(arguments)
                if arg_error:
                    calls.append(ToolCallRequest(sub_id, item["name"], {}, parse_error=arg_error))
                    continue
            if not isinstance(arguments, dict):
                calls.append(
                    ToolCallRequest(
                        sub_id, item["name"], {}, parse_error="arguments must be a JSON object"
                    )
                )
                continue
            calls.append(ToolCallRequest(sub_id, item["name"], arguments))
    return calls


def _loads(body: str) -> tuple[object, str | None]:
    try:
        return json.loads(body), None
    except json.JSONDecodeError as exc:
        # Tolerate trailing prose after the object: parse the first balanced value.
        try:
            value, _ = json.JSONDecoder().raw_decode(body)
            return value, None
        except json.JSONDecodeError:
            return (
                None,
                f"Could not parse the tool call as JSON ({exc.msg} at {exc.pos}): {body[:200]}",
            )


def _guess_name(body: str) -> str:
    found = re.search(r'"name"\s*:\s*"([^"]+)"', body)
    return found.group(1) if found else "unknown"
