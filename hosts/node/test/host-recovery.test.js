// The Node host after a trap: the instance is replaced, set up with the last configuration
// that succeeded, and only the call that trapped reports it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { tempDir } from '../test-support/tmp.js';
import { loadPlugin, userContext, ManualClock } from '../src/host.js';

const SERVICES = ['tools', 'commands', 'system-prompt', 'agents', 'subagents'];

/** A clock that throws a plain JS error once when told: the guest cannot survive that. */
function breakableClock(ms) {
  const manual = new ManualClock(ms);
  return {
    broken: false,
    now() {
      if (this.broken) { this.broken = false; throw new Error('the clock broke'); }
      return manual.now();
    },
  };
}

const reviewStatus = (p) => JSON.parse(p.command(userContext('s1'), 'review status --json').value);

test('after a trap the next call works, on a fresh instance with the last good configuration', async () => {
  const home = tempDir('se-trap-');
  const clock = breakableClock(1767225600000);
  const p = await loadPlugin({ fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') }, clock, logLevel: 'error' });
  assert.ok(p.init('{}', SERVICES).ok);
  assert.ok(p.init('{"review":{"turnInterval":7}}', ['tools', 'commands']).ok); // the last good one
  assert.equal(p.init('{"review":{"turnInterval":0}}', SERVICES).ok, false); // refused: not remembered
  for (let round = 1; round <= 2; round++) {
    clock.broken = true;
    assert.throws(() => p.tick(), { message: 'plugin export `events.tick` trapped: the clock broke; the instance was replaced' });
    assert.equal(p.toolsList()[0].name, 'skill_manage', `round ${round}`);
    const listed = p.toolsCall(userContext('s1'), 'skill_manage', JSON.stringify({ action: 'list' }));
    assert.ok(listed.ok, listed.error);
    assert.equal(reviewStatus(p).turnInterval, 7);
    assert.equal(p.guidance(), undefined, 'services of the last good init: no system-prompt');
  }
});
