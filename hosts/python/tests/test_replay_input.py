"""Replay files are operator input, as in hosts/node/test/replay-input.test.js: read with bounded
memory (/dev/zero ends at line 1 with the line named), refused when not UTF-8, CR before a
newline dropped; the messages are the Node host's, prefixed `self-evolve-py:` on the command line."""
from __future__ import annotations

import pytest

from test_conformance import run_cli
from self_evolve.replay import MAX_LINE_BYTES, ReplayError, read_events


def test_a_replay_of_dev_zero_is_refused_at_line_1_and_nothing_runs(tmp_path) -> None:
    home = tmp_path / "h"
    run = run_cli("replay", "/dev/zero", "--home", str(home))
    assert run.returncode == 1
    assert run.stderr == f"self-evolve-py: /dev/zero:1: a line longer than {MAX_LINE_BYTES} bytes (is this the right file?)\n"
    assert run.stdout == "" and not home.exists()


def test_a_line_that_is_not_utf8_is_refused_with_its_number(tmp_path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_bytes(b'{"t":0,"type":"config","config":{}}\n\n{"t":1,"type":"user","session":"s","text":"\xff"}\n')
    with pytest.raises(ReplayError, match=rf"^{f}:3: not UTF-8 text$"):
        read_events(str(f))


def test_a_carriage_return_before_a_newline_is_dropped_and_bad_lines_keep_their_messages(tmp_path) -> None:
    f = tmp_path / "crlf.jsonl"
    f.write_bytes(b'{"t":0,"type":"user","session":"s","text":"hi"}\r\n{"t":1,"type":"turn-end","session":"s","status":"completed"}\r\n')
    assert [e["type"] for e in read_events(str(f))] == ["user", "turn-end"]
    for text, message in [('{"t":2,"type":"user"}\n{"t":1,"type":"user"}\n', "2: t goes backwards"),
                          ('{"t":0,"type":"user"}\n{"t":1,"type":"config","config":{}}\n', "2: a config line may only come first"),
                          ('{"t":NaN,"type":"user"}\n', '1: not a replay event (see DESIGN.md, "Replay format")')]:
        f.write_text(text, encoding="utf-8")
        with pytest.raises(ReplayError) as e:
            read_events(str(f))
        assert str(e.value) == f"{f}:{message}", text
