// Tool arguments past the plugin's bound are refused by the host before they enter the instance,
// with the plugin's own refusal, byte for byte (pinned in the plugin's tool_args tests too).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../test-support/tmp.js';
import * as path from 'node:path';
import { loadPlugin, userContext, tooLargeArguments, clipEventText, MAX_EVENT_TEXT_BYTES } from '../src/host.js';

test('the refusal text is the plugin\'s', () => {
  assert.equal(
    tooLargeArguments(30000000),
    '{"code":"too-large","details":{"bytes":30000000,"field":"arguments","limit":25165824},"hint":"send a shorter value; put long material in references/ files with write_file","message":"`arguments` is 30000000 bytes; the limit for it is 25165824"}',
  );
});

test('25 MiB of arguments are refused without a trap, and the next call works', async () => {
  const home = tempDir('se-args-');
  const plugin = await loadPlugin({ fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') } });
  assert.ok(plugin.init('{}', ['tools']).ok);
  const ctx = userContext('s1');
  const big = JSON.stringify({ action: 'create', name: 'x', description: 'd', content: 'x'.repeat(25 << 20) });
  const r = plugin.toolsCall(ctx, 'skill_manage', big);
  assert.equal(r.ok, false);
  assert.equal(JSON.parse(r.error).details.field, 'arguments');
  const huge = plugin.toolsCall(ctx, 'skill_manage', JSON.stringify({ action: 'create', name: 'x'.repeat(6 << 20), description: 'd' }));
  assert.equal(JSON.parse(huge.error).details.field, 'name', 'the plugin names the field');
  assert.ok(plugin.toolsCall(ctx, 'skill_manage', '{"action":"list"}').ok);
});

test('40 MB event texts are clipped by the host, never trap, and the next call works', async () => {
  const home = tempDir('se-events-');
  const plugin = await loadPlugin({ fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') } });
  assert.ok(plugin.init('{}', ['tools']).ok);
  const ctx = userContext('s1');
  const huge = 'é'.repeat(20 << 20); // 40 MiB of UTF-8, two bytes a character
  assert.ok(Array.isArray(plugin.userMessage(ctx, huge, true)));
  assert.ok(Array.isArray(plugin.assistantMessage(ctx, huge)));
  assert.ok(Array.isArray(plugin.toolResult(ctx, { tool: 'bash', argsJson: huge, ok: true, output: huge })));
  assert.ok(plugin.toolsCall(ctx, 'skill_manage', '{"action":"list"}').ok);
});

test('clipping never cuts a character', () => {
  const text = 'a' + 'é'.repeat(MAX_EVENT_TEXT_BYTES);
  const clipped = clipEventText(text);
  assert.ok(Buffer.byteLength(clipped) <= MAX_EVENT_TEXT_BYTES);
  assert.ok(!clipped.includes('\uFFFD'));
  assert.equal(clipEventText('short'), 'short');
});
