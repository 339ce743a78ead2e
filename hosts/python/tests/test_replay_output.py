"""What the replay command prints is read by people in a terminal, as in
hosts/node/test/replay-output.test.js: every hidden character a decision line carries (a bidi
override or C1 control in a name an agent sent) is written as a JSON escape, the same bytes as
`self-evolve replay --json` (host-test/src/text.rs, `visible_json`)."""
from __future__ import annotations

import json

from test_conformance import run_cli
from self_evolve.lines import visible_json

# Printed by `self-evolve replay --json` for the same file.
RUST = ('{"kind":"tool","session":"s1","agent":"main","tool":"skill_manage","ok":false,"result":{"code":"invalid-name",'
        '"details":{"name":"evil\\u202egnp.md\\u009b"},"hint":"use 1\u201364 lowercase letters, digits and single hyphens, '
        'e.g. `deploy-with-docker`","message":"`evil\\u202egnp.md\\u009b` contains `\\u202e`; use only lowercase letters '
        'a-z, digits and `-`"}}\n')


def test_the_replay_command_prints_hidden_characters_as_json_escapes_as_the_rust_cli_does(tmp_path) -> None:
    f = tmp_path / "hidden.jsonl"
    event = {"t": 1000, "type": "call", "session": "s1", "tool": "skill_manage",
             "args": {"action": "view", "name": "evil\u202egnp.md\u009b"}}
    f.write_text(json.dumps(event) + "\n", encoding="utf-8")
    run = run_cli("replay", str(f), "--json", "--home", str(tmp_path / "home"))
    assert run.returncode == 0, run.stderr
    assert run.stdout == RUST


def test_visible_json_escapes_controls_bidi_zero_width_and_tag_characters_and_keeps_the_value() -> None:
    value = {"a": "x\u202ey\x7f\x9b\U000e0041\u200b\t\x1b\u2066 ok \u00e9"}
    line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    shown = visible_json(line)
    assert shown == '{"a":"x\\u202ey\\u007f\\u009b\\udb40\\udc41\\u200b\\t\\u001b\\u2066 ok \u00e9"}'
    assert json.loads(shown) == value
    assert visible_json('{"plain":"text"}') == '{"plain":"text"}'


def test_inside_a_reviewer_a_replay_into_an_existing_home_is_refused_and_the_home_left_as_it_was(tmp_path, monkeypatch) -> None:
    f = tmp_path / "off.jsonl"
    f.write_text(json.dumps({"t": 0, "type": "config", "config": {}}) + "\n", encoding="utf-8")
    home = tmp_path / "home"
    monkeypatch.setenv("SELF_EVOLVE_ACTIVATION", "act-7")
    refused = run_cli("replay", str(f), "--json", "--home", str(home))
    assert refused.returncode == 1, refused.stderr
    assert 'inside reviewer "act-7" (SELF_EVOLVE_ACTIVATION)' in refused.stderr and "leave out --home" in refused.stderr
    assert not home.exists()
    # Into a fresh folder of its own it runs.
    fresh = run_cli("replay", str(f), "--json")
    assert fresh.returncode == 0, fresh.stderr


def test_a_replay_hands_its_sessions_back_at_its_end_every_turn_in_the_session_file(tmp_path) -> None:
    """A replay holds its sessions as a batch ("session-batch": busy between events, written every
    1,024) and hands them back at its end, as the Rust replay does: a generation with every turn,
    no journal left for the next process to fold."""
    f = tmp_path / "turns.jsonl"
    lines = [{"t": 0, "type": "config", "config": {"review": {"turnInterval": 10000}}}]
    lines += [{"t": 1000 + i, "type": "turn-end", "session": "s1", "status": "completed"} for i in range(1500)]
    f.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = run_cli("replay", str(f), "--json", "--home", str(tmp_path / "home"))
    assert run.returncode == 0, run.stderr
    sessions = tmp_path / "home" / "self-evolve" / "sessions"
    files = [p for d in sessions.iterdir() if d.is_dir() and d.name != "in-flight" for p in d.iterdir()]
    assert [p.name for p in files if p.name.startswith("journal.")] == [], "handed back"
    newest = sorted(p for p in files if p.suffix == ".json")[-1]
    assert json.loads(newest.read_text(encoding="utf-8"))["review"]["turn"] == 1500
