"""The Python host around the component: typed results, bounds checked before a value enters
the instance, the deadline and the memory limit, recovery after a trap, the compiled-code cache."""
from __future__ import annotations

import json
import time

import pytest

from conftest import SERVICES
from self_evolve import (
    CallContext,
    FileInput,
    FsError,
    SkillInput,
    FsCap,
    Limits,
    ManualClock,
    PluginTrap,
    Refused,
    ConfigError,
    load_plugin,
    user_context,
)
from self_evolve import engine as engine_module
from self_evolve.gate_server import GateServer
from self_evolve.replay import read_events, replay
from self_evolve.types import USER_SKILLS
from self_evolve.host import MAX_ARGS_BYTES, MAX_CATALOG_NAME, too_large_arguments, too_large_field

START = 1767225600000


def plugin_in(home, **kw):
    fs = {"user_skills": str(home / "skills"), "state": str(home / "state")}
    return load_plugin(fs=fs, clock=kw.pop("clock", ManualClock(START)), log_level="error", **kw)


WORDS = ["rotate tls certificates", "vacuum postgres tables", "bisect flaky builds", "pin npm lockfiles",
         "drain kubernetes nodes", "tune nginx buffers", "audit iam policies", "compact kafka topics"]


def create(p, name, session="s1"):
    # A description of its own per name: the plugin refuses near-duplicates.
    words = WORDS[sum(name.encode()) % len(WORDS)]
    args = {"action": "create", "name": name, "description": f"Use when you {words} for {name}.",
            "body": f"# {name}\n\nSteps.\n"}
    return json.loads(p.tools_call(user_context(session), "skill_manage", json.dumps(args)))


class BreakableClock:
    """Raises a plain Python error once when told: the guest cannot survive that."""

    def __init__(self, ms):
        self.manual = ManualClock(ms)
        self.broken = False
        self.sleep_s = 0.0

    def now(self):
        if self.broken:
            self.broken = False
            raise RuntimeError("the clock broke")
        if self.sleep_s:
            time.sleep(self.sleep_s)
            self.sleep_s = 0.0
        return self.manual.now()


def test_init_list_and_a_tool_call_round_trip(tmp_path) -> None:
    p = plugin_in(tmp_path)
    report = p.init("{}", SERVICES)
    assert report.version and any(part.name == "skill-manage" and part.state == "active" for part in report.parts)
    assert json.loads(report.config_json)["review"]
    assert [t.name for t in p.tools_list()] == ["skill_manage"]
    assert create(p, "python-host")["status"] == "written"
    assert (tmp_path / "skills" / "python-host" / "SKILL.md").is_file()
    assert p.guidance()


def test_a_refusal_is_an_exception_carrying_the_plugins_error_and_writes_nothing(tmp_path) -> None:
    p = plugin_in(tmp_path)
    p.init("{}", SERVICES)
    create(p, "dup-one")
    before = sorted(str(f.relative_to(tmp_path)) for f in tmp_path.rglob("*") if "skills" in f.parts)
    with pytest.raises(Refused) as refused:
        create(p, "dup-one")
    assert refused.value.code == "exists", refused.value.payload
    assert json.loads(refused.value.payload)["hint"]
    assert sorted(str(f.relative_to(tmp_path)) for f in tmp_path.rglob("*") if "skills" in f.parts) == before


def test_a_bad_configuration_is_a_config_error_naming_its_key(tmp_path) -> None:
    p = plugin_in(tmp_path)
    with pytest.raises(ConfigError) as e:
        p.init('{"review":{"turnInterval":0}}', SERVICES)
    assert e.value.key == "review.turnInterval"


def test_arguments_past_their_bounds_are_refused_before_they_enter(tmp_path) -> None:
    p = plugin_in(tmp_path, limits=Limits(memory_bytes=32 << 20))
    p.init("{}", SERVICES)
    big = '{"action":"list","x":"' + "a" * MAX_ARGS_BYTES + '"}'
    with pytest.raises(Refused) as e:
        p.tools_call(user_context("s1"), "skill_manage", big)
    assert e.value.payload == too_large_arguments(len(big))
    # The same bytes the Rust and Node hosts pin.
    assert too_large_field("path", 5000, 4096) == (
        '{"code":"too-large","details":{"bytes":5000,"field":"path","limit":4096},'
        '"hint":"list the skills for their names and files","message":"`path` is 5000 bytes; the limit for it is 4096"}')
    with pytest.raises(Refused) as e:
        p.catalog_get(user_context("s1"), "é" * MAX_CATALOG_NAME)
    assert json.loads(e.value.payload)["details"] == {"bytes": 2 * MAX_CATALOG_NAME, "field": "name", "limit": MAX_CATALOG_NAME}
    assert p.replacements == 0
    with pytest.raises(Refused, match="too-large: the /skills line is 70000 bytes"):
        p.command(user_context("s1"), "x" * 70000)


def test_bad_enum_strings_are_refused_before_they_enter_and_the_instance_lives_on(tmp_path) -> None:
    p = plugin_in(tmp_path)
    p.init("{}", SERVICES)
    with pytest.raises(ValueError, match="turn status"):
        p.turn_end(user_context("s1"), "finished")
    with pytest.raises(ValueError, match="origin"):
        p.user_message(CallContext(session="s1", origin="robot"), "hi")
    assert p.replacements == 0
    assert [t.name for t in p.tools_list()] == ["skill_manage"]


def test_after_a_trap_the_next_call_works_with_the_last_good_configuration(tmp_path) -> None:
    clock = BreakableClock(START)
    logged = []
    p = plugin_in(tmp_path, clock=clock, on_log=lambda level, message: logged.append((level, message)))
    p.init("{}", SERVICES)
    p.init('{"review":{"turnInterval":7}}', ["tools", "commands"])  # the last good one
    with pytest.raises(ConfigError):
        p.init('{"review":{"turnInterval":0}}', SERVICES)  # refused: not remembered
    for round in (1, 2):
        clock.broken = True
        with pytest.raises(PluginTrap) as trap:
            p.tick()
        assert trap.value.reason == "trap" and trap.value.export == "events.tick"
        assert str(trap.value) == "plugin export `events.tick` trapped: the clock broke; the instance was replaced"
        assert p.tools_list()[0].name == "skill_manage", round
        assert create(p, f"after-trap-{round}")["status"] == "written"
        status = json.loads(p.command(user_context("s1"), "review status --json"))
        assert status["turnInterval"] == 7
        assert p.guidance() is None, "services of the last good init: no system-prompt"
    assert p.replacements == 2
    assert logged.count(("error", "plugin export `events.tick` trapped: the clock broke; the instance was replaced")) == 2


def test_a_call_past_its_deadline_is_stopped_and_the_instance_replaced(tmp_path) -> None:
    clock = BreakableClock(START)
    p = plugin_in(tmp_path, clock=clock, limits=Limits(call_deadline_ms=100))
    p.init("{}", SERVICES)
    clock.sleep_s = 0.4  # inside an import: the guest is interrupted when it resumes
    with pytest.raises(PluginTrap) as trap:
        p.tick()
    assert trap.value.reason == "timeout", trap.value
    assert "ran past its 100 ms deadline" in str(trap.value)
    assert p.tick() == []


def test_a_slow_gate_answer_within_its_timeout_is_not_a_trap(tmp_path) -> None:
    """The per-call deadline (2 s) is for the plugin's own work: a gate that takes longer to
    answer, within its own timeout, is waited for, not a trap that loses the turn (as the Rust
    host's replay test of the same name)."""
    session = tmp_path / "slow.jsonl"
    session.write_text("\n".join([
        '{"t":0,"type":"config","config":{"review":{"turnInterval":1,"gate":"jev","jev":{"timeoutMs":3500}}}}',
        '{"t":1000,"type":"user","session":"s1","text":"use pnpm","human":true}',
        '{"t":2000,"type":"turn-end","session":"s1","status":"completed"}',
    ]) + "\n", encoding="utf-8")
    home = tmp_path / "home"
    with GateServer([{"status": 200, "delayMs": 2600, "body": {"choice": "no", "confidence": 0.95}}]) as gate:
        lines = replay(read_events(str(session)), home=str(home), gate_url=gate.url)
        assert gate.requests == 1
    gates = [d for d in map(json.loads, lines) if d["kind"] == "gate"]
    assert [(d["decision"], d["source"]) for d in gates] == [("skip", "jev")], lines


def test_the_memory_limit_stops_a_call_and_the_instance_is_replaced(tmp_path) -> None:
    p = plugin_in(tmp_path, limits=Limits(memory_bytes=24 << 20))
    p.init("{}", SERVICES)
    content = "---\nname: huge\ndescription: Use when.\n---\n" + "word " * (4 << 20)
    with pytest.raises(PluginTrap) as trap:
        p.tools_call(user_context("s1"), "skill_manage", json.dumps({"action": "create", "name": "huge", "content": content}))
    assert trap.value.reason == "trap"
    assert not (tmp_path / "skills" / "huge").exists()
    assert create(p, "small-after")["status"] == "written"


class BrokenFs(FsCap):
    """An fs capability whose operations can be told to raise what a buggy host would raise."""

    failing: dict = {}

    def list_dir(self, root, path):
        if "list_dir" in self.failing:
            raise self.failing["list_dir"]
        return super().list_dir(root, path)

    def write(self, root, path, data, mode):
        if "write" in self.failing:
            raise self.failing["write"]
        return super().write(root, path, data, mode)


def test_a_capability_that_raises_reaches_the_guest_as_its_typed_error(tmp_path) -> None:
    fs = BrokenFs(user_skills=str(tmp_path / "skills"), state=str(tmp_path / "state"))
    fs.failing = {}
    p = load_plugin(fs=fs, clock=ManualClock(START), log_level="error")
    p.init("{}", SERVICES)
    assert create(p, "before-breaking")["status"] == "written"
    # Not an FsError: crosses as io(message), never as a trap.
    fs.failing = {"list_dir": KeyError("not an FsError")}
    listed = json.loads(p.tools_call(user_context("s1"), "skill_manage", '{"action":"list"}'))
    assert listed["warnings"] == ["could not list the user skills folder: i/o error: 'not an FsError'"]
    fs.failing = {"write": FsError("no-space")}
    before = sorted(str(f.relative_to(tmp_path)) for f in tmp_path.rglob("*"))
    with pytest.raises(Refused) as refused:
        create(p, "no-room-left")
    assert "space" in refused.value.payload, refused.value.payload
    assert sorted(str(f.relative_to(tmp_path)) for f in tmp_path.rglob("*")) == before
    assert not (tmp_path / "skills" / "no-room-left").exists()
    fs.failing = {}
    assert p.replacements == 0
    assert create(p, "after-repair")["status"] == "written"


def test_bytes_cross_in_bulk_and_intact(tmp_path) -> None:
    p = plugin_in(tmp_path)
    p.init("{}", SERVICES)
    create(p, "bytes-skill")
    data = bytes(range(256)) * 64
    p.fs.write(USER_SKILLS, "bytes-skill/references/blob.bin", data, "create-new")
    ctx = user_context("s1")
    got = p.catalog_read(ctx, "bytes-skill", "references/blob.bin")
    assert got == data
    skill = p.catalog_get(ctx, "bytes-skill")
    assert [f.path for f in skill.files] == ["SKILL.md", "references/blob.bin"]
    findings = p.check([SkillInput(folder="x", skill_md=FileInput(path="x/SKILL.md", bytes=b"---\nname: y\n---\n"))])
    assert {f.path for f in findings} == {"x/SKILL.md"} and any(f.severity == "error" for f in findings)


def test_compiled_code_is_cached_on_disk_by_hash_and_wasmtime_version(tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setattr(engine_module, "_loaded", {})
    first = load_plugin(fs={"state": str(tmp_path / "s")}, cache_dir=cache)
    assert first.cache == "miss"
    files = list(cache.iterdir())
    assert len(files) == 1 and engine_module.wasmtime_version() in files[0].name
    monkeypatch.setattr(engine_module, "_loaded", {})
    assert load_plugin(fs={"state": str(tmp_path / "s")}, cache_dir=cache).cache == "hit"
    # A damaged cache file is compiled again, not trusted.
    files[0].write_bytes(b"garbage")
    monkeypatch.setattr(engine_module, "_loaded", {})
    assert load_plugin(fs={"state": str(tmp_path / "s")}, cache_dir=cache).cache == "miss"
    assert load_plugin(fs={"state": str(tmp_path / "s")}, cache_dir=cache).cache == "memory"


def test_the_package_finds_the_component_it_was_installed_with() -> None:
    import os

    import self_evolve
    from conftest import REPO

    wasm = engine_module.default_wasm()
    assert wasm.read_bytes() == (REPO / "dist" / "self-evolve.wasm").read_bytes(), wasm
    if os.environ.get("SELF_EVOLVE_EXPECT_PACKAGED"):
        # build.sh installs the package with pip, not editable: the tests run what a user gets.
        package = os.path.dirname(self_evolve.__file__)
        assert "site-packages" in package, package
        assert str(wasm) == os.path.join(package, "data", "self-evolve.wasm")


def test_an_interrupt_inside_an_import_reaches_the_caller_and_the_instance_is_replaced(tmp_path) -> None:
    # Let through, a KeyboardInterrupt or SystemExit crosses wasmtime-py's C callback and the
    # process dies with SIGSEGV; here the call traps, then the interrupt is raised as it was.
    fs = BrokenFs(user_skills=str(tmp_path / "skills"), state=str(tmp_path / "state"))
    fs.failing = {}
    p = load_plugin(fs=fs, clock=ManualClock(START), log_level="error")
    p.init("{}", SERVICES)
    for interrupt in (KeyboardInterrupt(), SystemExit(3)):
        fs.failing = {"list_dir": interrupt}
        with pytest.raises(type(interrupt)):
            p.tools_call(user_context("s1"), "skill_manage", '{"action":"list"}')
        fs.failing = {}
        assert create(p, f"after-{type(interrupt).__name__.lower()}")["status"] == "written"
    assert p.replacements >= 2  # the re-init of a replacement may meet the same interrupt


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_keeps_its_call_deadline(tmp_path) -> None:
    import os

    plugin_in(tmp_path / "parent")  # the engine and its ticker exist before the fork
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the deadline stopped the call
        code = 1
        try:
            clock = BreakableClock(START)
            p = plugin_in(tmp_path / "child", clock=clock, limits=Limits(call_deadline_ms=100))
            p.init("{}", SERVICES)
            clock.sleep_s = 0.4
            try:
                p.tick()
            except PluginTrap as trap:
                code = 0 if trap.reason == "timeout" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_a_lone_surrogate_becomes_a_replacement_character_not_a_trap(tmp_path) -> None:
    p = plugin_in(tmp_path)
    p.init("{}", SERVICES)
    split_emoji = json.loads('"half an emoji \\ud83d here"')
    p.user_message(CallContext(session=split_emoji), split_emoji)
    p.user_message(user_context("s1"), split_emoji * (1 << 17))  # long enough to be clipped
    with pytest.raises(Refused) as refused:
        p.tools_call(user_context("s1"), "skill_manage", json.dumps({"action": "view", "name": split_emoji},
                                                                    ensure_ascii=False))
    assert refused.value.code, refused.value.payload
    assert p.replacements == 0
    with pytest.raises(Refused):
        p.catalog_get(user_context("s1"), split_emoji)
    assert p.replacements == 0


def test_deadlines_count_whole_ticks_as_the_rust_host_does(tmp_path) -> None:
    assert plugin_in(tmp_path, limits=Limits(call_deadline_ms=145))._ticks() == 29
    assert plugin_in(tmp_path, limits=Limits(call_deadline_ms=2000))._ticks() == 400
    # A deadline shorter than a tick is one tick; instantiation gets its own second regardless.
    for _ in range(20):
        assert plugin_in(tmp_path, limits=Limits(call_deadline_ms=1))._ticks() == 1


def test_a_40_mb_event_text_is_clipped_before_it_enters_never_inside_a_character(tmp_path) -> None:
    from self_evolve.host import MAX_EVENT_TEXT_BYTES, clip_event_text

    p = plugin_in(tmp_path)
    p.init("{}", SERVICES)
    huge = "é" * (20 << 20)  # 40 MiB of UTF-8: past the 64 MiB instance limit once copied in twice
    p.user_message(user_context("s1"), huge)
    p.assistant_message(user_context("s1"), huge)
    assert p.replacements == 0
    clipped = clip_event_text("a" + huge)
    assert len(clipped.encode("utf-8")) == MAX_EVENT_TEXT_BYTES - 1  # the last é would not fit whole
    assert clipped.startswith("aé") and clipped.endswith("é")


def test_a_provider_whose_start_raises_refuses_the_review_and_the_plugin_lives_on(tmp_path) -> None:
    from self_evolve import ScriptedProvider

    class NoReviewer(ScriptedProvider):
        def start(self, spec):
            raise RuntimeError("no reviewer today")

    clock = ManualClock(START)
    logged = []
    p = plugin_in(tmp_path, clock=clock, provider=NoReviewer(clock), on_log=lambda level, message: logged.append((level, message)))
    p.init("{}", SERVICES)
    ctx = user_context("s1")
    p.user_message(ctx, "hi")
    assert p.command(ctx, "review now") == "review not started: subagent start refused: no reviewer today"
    assert ("warn", "review not started: the subagent provider refused (no reviewer today)") in logged
    assert p.replacements == 0
    assert create(p, "after-no-reviewer")["status"] == "written"
