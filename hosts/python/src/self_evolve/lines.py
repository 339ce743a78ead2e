"""Decision lines the host writes itself, byte for byte as host-test/src/lines.rs and the Node
host write them (compact JSON, the result embedded raw when it is JSON already)."""
from __future__ import annotations

import json


def _json(value: object) -> str:
    # serde_json's compact form; non-ASCII kept as is.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _raw_or_string(text: str) -> str:
    # Python's parser also takes NaN and Infinity; serde_json (the Rust host's) does not.
    try:
        json.loads(text, parse_constant=_no_constant)
        return text
    except ValueError:
        return _json(text)


def tool_line(session: str, agent: str, tool: str, ok: bool, result: str) -> str:
    return (f'{{"kind":"tool","session":{_json(session)},"agent":{_json(agent)},"tool":{_json(tool)},'
            f'"ok":{"true" if ok else "false"},"result":{_raw_or_string(result)}}}')


def command_line(session: str, text: str, ok: bool, output: str) -> str:
    return (f'{{"kind":"command","session":{_json(session)},"text":{_json(text)},'
            f'"ok":{"true" if ok else "false"},"output":{_json(output)}}}')


def review_loop_refused_line(session: str, refusal: str) -> str:
    return f'{{"kind":"review-loop","session":{_json(session)},"refused":{_raw_or_string(refusal)}}}'
