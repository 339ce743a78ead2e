// The Node host's capabilities on their own (no guest): fs confinement and HTTP policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, symlinkSync, readFileSync, readdirSync, existsSync } from 'node:fs';
import { tempDir } from '../test-support/tmp.js';
import * as path from 'node:path';
import { FsCap } from '../src/fs.js';
import { HttpCap } from '../src/http.js';
import { serveGateReplies } from '../src/replay.js';

function world() {
  const base = tempDir('se-fs-');
  const user = path.join(base, 'user');
  const outside = path.join(base, 'outside');
  mkdirSync(user);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'do not read');
  return { base, user, outside, fs: new FsCap({ userSkills: user, state: path.join(base, 'state') }) };
}

const U = { tag: 'user-skills' };
const tree = (dir) => readdirSync(dir, { recursive: true }).sort();

test('malformed paths are refused for every operation and nothing is created', () => {
  const w = world();
  const before = tree(w.base);
  for (const p of ['/etc/passwd', '../outside/secret.txt', 'a/../../outside', '', 'a//b', './a', 'a/.', 'a\\b', 'a\u0000b', 'a\nb',
    'a\u0085b', 'a\u009b31mb', // C1 controls, refused as Rust's char::is_control refuses them
    Array(17).fill('\u00e9'.repeat(127)).join('/'), // 2175 UTF-16 units but 4334 bytes: the path counts bytes
  ]) {
    assert.throws(() => w.fs.read(U, p), { tag: 'invalid-path' }, `read ${JSON.stringify(p)}`);
    assert.throws(() => w.fs.write(U, p, new Uint8Array([1]), 'truncate'), { tag: 'invalid-path' });
    assert.throws(() => w.fs.rename(U, 'ok.md', p), { tag: 'invalid-path' });
    assert.throws(() => w.fs.createDirAll(U, p), { tag: 'invalid-path' });
  }
  assert.deepEqual(tree(w.base), before);
});

test('symlinks are refused anywhere on the path, and the outside is untouched', () => {
  const w = world();
  symlinkSync(w.outside, path.join(w.user, 'escape'));
  symlinkSync(path.join(w.outside, 'secret.txt'), path.join(w.user, 'link.md'));
  const before = tree(w.outside);
  assert.throws(() => w.fs.read(U, 'escape/secret.txt'), { tag: 'symlink' });
  assert.throws(() => w.fs.read(U, 'link.md'), { tag: 'symlink' });
  assert.throws(() => w.fs.write(U, 'escape/new.txt', new Uint8Array([1]), 'create-new'), { tag: 'symlink' });
  assert.throws(() => w.fs.write(U, 'link.md', new Uint8Array([1]), 'truncate'), { tag: 'symlink' });
  assert.throws(() => w.fs.createDirAll(U, 'escape/deep'), { tag: 'symlink' });
  assert.equal(w.fs.stat(U, 'link.md').kind, 'symlink');
  assert.deepEqual(tree(w.outside), before);
  assert.equal(readFileSync(path.join(w.outside, 'secret.txt'), 'utf8'), 'do not read');
});

test('write modes, rename, listing and unmapped roots', () => {
  const w = world();
  const S = { tag: 'state' };
  assert.deepEqual(w.fs.listDir(S, ''), []);
  w.fs.write(S, 'a/b.txt', new TextEncoder().encode('one'), 'create-new');
  assert.throws(() => w.fs.write(S, 'a/b.txt', new Uint8Array(), 'create-new'), { tag: 'already-exists' });
  w.fs.write(S, 'a/b.txt', new TextEncoder().encode('+'), 'append');
  assert.equal(new TextDecoder().decode(w.fs.read(S, 'a/b.txt')), 'one+');
  w.fs.rename(S, 'a/b.txt', 'c/d.txt');
  assert.throws(() => w.fs.read(S, 'a/b.txt'), { tag: 'not-found' });
  assert.deepEqual(w.fs.listDir(S, ''), [['a', 'dir'], ['c', 'dir']]);
  assert.throws(() => w.fs.read({ tag: 'project-skills', val: 's1' }, 'x.md'), { tag: 'not-permitted' });
  assert.equal(existsSync(path.join(w.base, 'x.md')), false);
});

test('http: named endpoints only; the credential reaches the server, never the plugin', async () => {
  const base = tempDir('se-http-');
  const replies = path.join(base, 'replies.json');
  const record = path.join(base, 'requests.jsonl');
  writeFileSync(replies, JSON.stringify([{ status: 200, body: { choice: 'yes' } }, { status: 503 }]));
  const server = await serveGateReplies(replies, record);
  try {
    process.env.SE_NODE_GATE_KEY = 'sk-node-secret-271828';
    const http = new HttpCap({ gate: { url: server.url, credentialEnv: 'SE_NODE_GATE_KEY' }, nokey: { url: server.url, credentialEnv: 'SE_NODE_UNSET' } });
    const req = { endpoint: 'gate', path: '/choice', headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"q":1}'), timeoutMs: 5000 };
    const response = http.post(req);
    assert.equal(response.status, 200);
    assert.equal(new TextDecoder().decode(response.body), '{"choice":"yes"}');
    assert.ok(!JSON.stringify([...response.body]).includes('sk-node'));
    assert.equal(http.post(req).status, 503);
    const seen = readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(seen[0].headers.authorization, 'Bearer sk-node-secret-271828');
    assert.equal(seen[0].body, '{"q":1}');
    assert.throws(() => http.post({ ...req, endpoint: 'elsewhere' }), { tag: 'denied' });
    assert.throws(() => http.post({ ...req, headers: [['Authorization', 'x']] }), { tag: 'denied' });
    assert.throws(() => http.post({ ...req, path: '//evil.example/x' }), { tag: 'denied' });
    assert.throws(() => http.post({ ...req, endpoint: 'nokey' }), { tag: 'no-credential' });
    assert.equal(http.hasCredential('gate'), true);
    assert.equal(http.hasCredential('nokey'), false);
    assert.equal(seen.length, 2, 'denied requests never left the host');
  } finally {
    server.stop();
  }
});
