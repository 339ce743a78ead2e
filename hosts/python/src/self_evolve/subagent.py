"""The subagent capability, scripted: each activation takes what `responder(spec)` returns, else
the oldest queued script (none: "no skill update"); the host performs its tool calls and
reports it finished (`Plugin.pump_activations`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional

from .clock import saturating_add, u64_ms
from .types import ActivationResult, SubagentSpec


@dataclass
class Script:
    calls: list = field(default_factory=list)  # of {"tool": str, "args": object}
    text: str = "no skill update"
    delay_ms: int = 0


@dataclass
class Activation:
    id: str
    spec: SubagentSpec
    script: Script
    started_ms: int
    tools: list
    aborted: bool = False
    delivered: bool = False
    worked: bool = False


@dataclass
class Work:
    """A started child's tool calls, to be performed as the child."""

    id: str
    parent_session: str
    calls: list
    allowed: list


class ScriptedProvider:
    def __init__(self, clock: object):
        self.clock = clock
        self.queue: List[Script] = []
        self.activations: List[Activation] = []  # in start order, for tests to read
        self.by_id: dict = {}
        #: When set, `start` refuses with this message.
        self.refuse: Optional[str] = None
        self.responder: Optional[Callable[[SubagentSpec], Optional[Script]]] = None

    def push(self, script: Script) -> None:
        self.queue.append(script)

    def start(self, spec: SubagentSpec) -> str:
        if self.refuse is not None:
            raise RuntimeError(self.refuse)
        id = f"act-{len(self.activations) + 1}"
        answered = self.responder(spec) if self.responder else None
        script = answered if answered is not None else (self.queue.pop(0) if self.queue else Script())
        activation = Activation(id=id, spec=spec, script=script, started_ms=self.clock.now(), tools=list(spec.tools))
        self.activations.append(activation)
        self.by_id[id] = activation
        return id

    def restrict_tools(self, id: str, tools: list) -> None:
        activation = self.by_id.get(id)
        if activation is None:
            raise LookupError(f"no activation `{id}`")
        activation.tools = list(tools)

    def abort(self, id: str) -> None:
        activation = self.by_id.get(id)
        if activation is not None and not activation.delivered:
            activation.aborted = True

    def take_work(self) -> List[Work]:
        out = []
        for a in self.activations:
            if a.worked or a.aborted:
                continue
            a.worked = True
            out.append(Work(id=a.id, parent_session=a.spec.parent_session, calls=a.script.calls, allowed=a.tools))
        return out

    def take_finished(self, now_ms: int) -> List[ActivationResult]:
        out = []
        for a in self.activations:
            if a.delivered:
                continue
            if a.aborted:
                a.delivered = True
                out.append(ActivationResult(id=a.id, status="aborted", text=""))
            elif u64_ms(now_ms) >= saturating_add(a.started_ms, a.script.delay_ms):
                # Due at `started + delay`, stopping at u64::MAX (as the Rust host).
                a.delivered = True
                out.append(ActivationResult(id=a.id, status="completed", text=a.script.text))
        return out
