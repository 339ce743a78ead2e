// The `catalog` export through the Node host: the same served skills, digests and refusals as the
// Rust host gives `self-evolve mcp`, and the host's bounds on names and paths (nothing that long
// enters the instance; the refusal is the Rust host's, byte for byte).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../test-support/tmp.js';
import { loadPlugin, userContext, tooLargeField } from '../src/host.js';

function put(root, rel, text) {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
}

test('the refusal text is the Rust host\'s', () => {
  assert.equal(
    tooLargeField('path', 5000, 4096),
    '{"code":"too-large","details":{"bytes":5000,"field":"path","limit":4096},"hint":"list the skills for their names and files","message":"`path` is 5000 bytes; the limit for it is 4096"}',
  );
});

test('served skills carry every file with its digest; invalid ones and foreign paths are refused', async () => {
  const home = tempDir('se-catalog-');
  const skills = path.join(home, 'skills');
  put(skills, 'pdf-forms/SKILL.md', '---\nname: pdf-forms\ndescription: Fill PDF forms. Use when filling.\nversion: 2\n---\nBody.\n');
  put(skills, 'pdf-forms/references/fields.md', '# Fields\n');
  put(skills, 'broken/SKILL.md', '---\nname: [unclosed\n---\n');
  const plugin = await loadPlugin({ fs: { userSkills: skills, state: path.join(home, 'state') } });
  assert.ok(plugin.init('{}', ['tools']).ok);
  const ctx = userContext('s1');

  const page = plugin.catalogSkills(ctx, 0, 100);
  assert.ok(page.ok, page.error);
  assert.deepEqual(page.value.skills.map((s) => s.name), ['pdf-forms']);
  assert.equal(page.value.nextOffset, undefined);
  const pdf = page.value.skills[0];
  assert.deepEqual(JSON.parse(pdf.frontmatterJson), { name: 'pdf-forms', description: 'Fill PDF forms. Use when filling.', version: 2 });
  assert.deepEqual(pdf.files.map((f) => f.path), ['SKILL.md', 'references/fields.md']);
  const read = plugin.catalogRead(ctx, 'pdf-forms', 'references/fields.md');
  assert.ok(read.ok);
  assert.equal(createHash('sha256').update(read.value).digest('hex'), pdf.files[1].sha256);
  assert.equal(Number(pdf.files[1].size), read.value.length);

  assert.equal(JSON.parse(plugin.catalogGet(ctx, 'broken').error).code, 'not-served');
  assert.equal(JSON.parse(plugin.catalogRead(ctx, 'pdf-forms', '../broken/SKILL.md').error).code, 'not-found');
  const longName = plugin.catalogGet(ctx, 'x'.repeat(10 << 20));
  assert.equal(JSON.parse(longName.error).details.field, 'name');
  const longPath = plugin.catalogRead(ctx, 'pdf-forms', 'a/'.repeat(5 << 20));
  assert.equal(JSON.parse(longPath.error).details.field, 'path');
  assert.ok(plugin.catalogSkills(ctx, 0, 1).ok, 'the next call works');
});
