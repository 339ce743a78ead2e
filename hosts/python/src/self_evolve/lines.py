"""Decision lines the host writes itself, byte for byte as host-test/src/lines.rs and the Node
host write them (compact JSON, the result embedded raw when it is JSON already)."""
from __future__ import annotations

import json
import re


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


# Characters a terminal obeys or that hide text from a person, as host-test/src/text.rs judges
# them: control characters but tab and newline, and crates/scan/src/hidden.rs's marks (zero-width,
# bidi, separators, soft hyphen, tag characters).
_HIDDEN = re.compile(
    "[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def _escape(match: "re.Match[str]") -> str:
    data = match.group(0).encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(data[i:i + 2], 'big'):04x}" for i in range(0, len(data), 2))


def visible_json(line: str) -> str:
    """A JSON line as the Rust CLI prints it (`visible_json`): each hidden character written as a
    JSON escape (`\\u202e`; a surrogate pair past U+FFFF), so a parser reads the same value while a
    terminal obeys nothing. json.dumps(ensure_ascii=False) escapes only C0 controls."""
    return _HIDDEN.sub(_escape, line)
