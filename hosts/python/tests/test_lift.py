"""Export results lifted in bulk (`_lift`) are exactly what wasmtime-py's own conversion builds:
every export uses the bulk path, and with both conversions run on the same C values (the bulk one
reads without freeing, then the stock one reads and frees) every call of every conformance
scenario and of a session touching each export gives equal values of equal Python types."""
from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import CONFORMANCE, SERVICES, replay_scenario
from self_evolve import FileInput, ManualClock, Refused, SkillInput, load_plugin, user_context
from self_evolve import _fastcall, _lift
from self_evolve.types import USER_SKILLS
from wasmtime.component import Record, Variant

START = 1767225600000

EXPORTS = [("lifecycle", "init"), ("tools", "list"), ("tools", "call"), ("events", "user-message"),
           ("events", "assistant-message"), ("events", "tool-result"), ("events", "turn-end"),
           ("events", "activation-end"), ("events", "tick"), ("command", "run"), ("guidance", "section"),
           ("checker", "check"), ("checker", "check-batch"), ("checker", "check-duplicates"),
           ("catalog", "skills"), ("catalog", "get"), ("catalog", "read"), ("feedback", "begin"),
           ("feedback", "report"), ("feedback", "record"), ("shadow", "probes"), ("shadow", "admit"),
           ("shadow", "accept"), ("shadow", "take-relay"), ("shadow", "status"), ("review-loop", "begin"),
           ("review-loop", "commands"), ("review-loop", "spend"), ("review-loop", "status")]


def same(a: Any, b: Any, at: str = "value", kinds: Any = None) -> None:
    """Equal, and of the same Python types all the way down (a `bytes` is not a list of ints);
    `kinds` collects the types met."""
    assert type(a) is type(b), f"{at}: {type(a).__name__} != {type(b).__name__}"
    kinds = set() if kinds is None else kinds
    kinds.add(type(a).__name__)
    if isinstance(a, Record):
        assert a.__dict__.keys() == b.__dict__.keys(), at
        for k in a.__dict__:
            same(a.__dict__[k], b.__dict__[k], f"{at}.{k}", kinds)
    elif isinstance(a, Variant):
        assert a.tag == b.tag, at
        same(a.payload, b.payload, f"{at}<{a.tag}>", kinds)
    elif isinstance(a, list):
        assert len(a) == len(b), at
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{at}[{i}]", kinds)
    else:
        assert a == b, at


@pytest.fixture
def compared(monkeypatch) -> set:
    """Every bulk lift checked against the stock conversion; the Python types of the values met."""
    seen: set = set()

    def lift_and_compare(lift: Any, space: Any, ty: Any) -> Any:
        fast = lift(bytes(space), 0)
        stock = ty.convert_from_c(space)  # reads, and frees as it reads
        same(fast, stock, kinds=seen)
        return fast

    monkeypatch.setattr(_fastcall, "_lift_result", lift_and_compare)
    return seen


def test_every_export_of_the_component_is_lifted_in_bulk(tmp_path) -> None:
    assert _lift.usable()
    p = load_plugin(fs={"state": str(tmp_path / "s")})
    for interface, name in EXPORTS:
        caller = p._exports.func(interface, name)
        assert isinstance(caller, _fastcall.ExportCaller), (interface, name)
        assert caller._lift is not None, f"{interface}.{name} falls back to the stock conversion"


@pytest.mark.parametrize("scenario", sorted(CONFORMANCE.glob("*.jsonl")), ids=lambda p: p.name)
def test_conformance_results_lift_as_the_stock_conversion_does(scenario, tmp_path, compared) -> None:
    lines = replay_scenario(scenario, tmp_path)
    assert "".join(f"{line}\n" for line in lines).encode() == scenario.with_suffix(".expected").read_bytes()
    assert compared


def test_each_result_shape_lifts_as_the_stock_conversion_does(tmp_path, compared) -> None:
    p = load_plugin(fs={"user_skills": str(tmp_path / "skills"), "state": str(tmp_path / "state")},
                    clock=ManualClock(START), log_level="error")
    with pytest.raises(Exception):
        p.init('{"review":{"turnInterval":0}}', SERVICES)  # result<_, config-error>: err
    p.init('{"review":{"turnInterval":1}}', SERVICES)  # ok, with parts, lists, enums
    ctx = user_context("s1")
    assert [t.name for t in p.tools_list()] == ["skill_manage"]
    for name in ["lift-one", "lift-two", "lift-three"]:
        body = {"action": "create", "name": name, "description": f"Use when you lift {name} results in bulk.",
                "body": f"# {name}\n\nSteps.\n"}
        json.loads(p.tools_call(ctx, "skill_manage", json.dumps(body)))  # result<string, string>: ok
    with pytest.raises(Refused):
        p.tools_call(ctx, "skill_manage", json.dumps({"action": "create", "name": "lift-one"}))  # err
    p.fs.write(USER_SKILLS, "lift-one/references/blob.bin", bytes(range(256)) * 4, "create-new")
    assert p.catalog_read(ctx, "lift-one", "references/blob.bin") == bytes(range(256)) * 4  # list<u8>
    with pytest.raises(Refused):
        p.catalog_read(ctx, "lift-one", "references/none.bin")  # result<list<u8>, string>: err
    first = p.catalog_skills(ctx, 0, 2)  # option<u32>: some
    assert first.next_offset == 2 and len(first.skills) == 2
    assert p.catalog_skills(ctx, 2, 2).next_offset is None  # none
    assert p.catalog_get(ctx, "lift-two").files  # list<served-file> with u64 sizes
    assert p.command(ctx, "list")
    p.user_message(ctx, "please lift", True)
    p.turn_end(ctx, "completed")  # list<string>
    p.tick()
    assert p.guidance()  # option<string>: some
    findings = p.check([SkillInput(folder="x", skill_md=FileInput(path="x/SKILL.md", bytes=b"---\nname: y\n---\n"))])
    assert findings and all(f.line >= 0 for f in findings)  # list<finding>: u32, enum
    p.check_duplicates()
    assert p.review_loop_status("s1")
    p.review_loop_spend("none", 1, 2)
    # Records, tagged results (`result<string, string>`), bytes, u32/u64 and enums as ints and
    # strings, a none: every shape the exports return.
    assert {"Record", "Variant", "bytes", "int", "str", "list", "NoneType"} <= compared, compared
