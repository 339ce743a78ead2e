// The conformance suite, Node side: every scenario in tests/conformance/ replayed through the
// same dist/self-evolve.wasm must print exactly the `.expected` lines the Rust host prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { tempDir } from '../test-support/tmp.js';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEvents, replay, serveGateReplies } from '../src/replay.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'tests', 'conformance');
const scenarios = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();

test('the suite holds the four scenario families', () => {
  assert.ok(scenarios.length >= 4, scenarios.join(', '));
});

for (const file of scenarios) {
  test(`conformance: ${file}`, async () => {
    const full = path.join(dir, file);
    const gateFile = full.replace(/\.jsonl$/, '.gate.json');
    const gate = existsSync(gateFile) ? await serveGateReplies(gateFile) : null;
    try {
      const lines = await replay(readEvents(full), { home: tempDir('se-conf-'), gateUrl: gate?.url });
      const expected = readFileSync(full.replace(/\.jsonl$/, '.expected'), 'utf8').split('\n').filter(Boolean);
      assert.equal(lines.length, expected.length, 'line count');
      lines.forEach((line, i) => assert.equal(line, expected[i], `line ${i + 1}`));
    } finally {
      gate?.stop();
    }
  });
}
