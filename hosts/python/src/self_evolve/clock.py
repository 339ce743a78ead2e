"""Clocks the plugin reads through `clock.now-ms`: milliseconds since the Unix epoch, as whole
u64s (a manual clock for replays and tests, the system clock otherwise)."""
from __future__ import annotations

import time

from .types import U64_MAX


def u64_ms(ms: int) -> int:
    """`ms` as a u64: a fraction dropped, clamped to 0..=u64::MAX (as the Rust host)."""
    ms = int(ms)
    return 0 if ms < 0 else U64_MAX if ms > U64_MAX else ms


def saturating_add(a: int, b: int) -> int:
    return u64_ms(u64_ms(a) + u64_ms(b))


class ManualClock:
    """A clock that moves only when told."""

    def __init__(self, start_ms: int):
        self.ms = u64_ms(start_ms)

    def now(self) -> int:
        return self.ms

    def set(self, ms: int) -> None:
        self.ms = u64_ms(ms)


class SystemClock:
    def now(self) -> int:
        return time.time_ns() // 1_000_000
