// The subagent capability, scripted: each activation takes what `responder(spec)` returns, else
// the oldest queued script (none: "no skill update"); the host performs its tool calls and
// reports it finished.
import { saturatingAdd, u64 } from './time.js';

export class ScriptedProvider {
  constructor(clock) {
    this.clock = clock;
    this.queue = [];
    this.activations = []; // in start order, for tests to read
    this.byId = new Map(); // activation id → activation: ids come back from the plugin
    this.refuse = null;
    this.responder = null;
  }

  push(script) {
    this.queue.push({ calls: script.calls || [], text: script.text || 'no skill update', delayMs: script.delayMs || 0 });
  }

  start(spec) {
    if (this.refuse) throw this.refuse;
    const id = `act-${this.activations.length + 1}`;
    const answered = this.responder ? this.responder(spec) : null;
    const script = answered
      ? { calls: answered.calls || [], text: answered.text ?? '', delayMs: answered.delayMs || 0 }
      : this.queue.shift() || { calls: [], text: 'no skill update', delayMs: 0 };
    const activation = { id, spec, script, startedMs: this.clock.now(), tools: [...spec.tools], aborted: false, delivered: false, worked: false };
    this.activations.push(activation);
    this.byId.set(id, activation);
    return id;
  }

  restrictTools(id, tools) {
    const a = this.byId.get(id);
    if (!a) throw `no activation \`${id}\``;
    a.tools = [...tools];
  }

  abort(id) {
    const a = this.byId.get(id);
    if (a && !a.delivered) a.aborted = true;
  }

  takeWork() {
    const out = [];
    for (const a of this.activations) {
      if (a.worked || a.aborted) continue;
      a.worked = true;
      out.push({ id: a.id, parentSession: a.spec.parentSession, calls: a.script.calls, allowed: a.tools });
    }
    return out;
  }

  takeFinished(nowMs) {
    const out = [];
    for (const a of this.activations) {
      if (a.delivered) continue;
      if (a.aborted) {
        a.delivered = true;
        out.push({ id: a.id, status: 'aborted', text: '' });
      } else if (u64(nowMs) >= saturatingAdd(a.startedMs, a.script.delayMs)) {
        // Due at `started + delay`, stopping at u64::MAX (as the Rust host): a delay past the end
        // of the clock finishes only if the clock reaches u64::MAX.
        a.delivered = true;
        out.push({ id: a.id, status: 'completed', text: a.script.text });
      }
    }
    return out;
  }
}
