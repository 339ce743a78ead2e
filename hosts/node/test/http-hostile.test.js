// The http capability against a hostile server and a hostile plugin, as the Rust and Python
// hosts behave: the body is the server's bytes (never a gzip reply unpacked to any size) up to
// exactly 1 MiB, the credential header cannot be set by the plugin in any letter case, a
// credential that is no valid header value never appears in an error, and a path cannot leave
// the endpoint's base through `%2e%2e` or carry DEL and C1 controls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpCap } from '../src/http.js';

const here = path.dirname(fileURLToPath(import.meta.url));

function serve() {
  const child = spawn(process.execPath, [path.join(here, '../test-support/hostile-server.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve({ url: `http://127.0.0.1:${String(d).trim()}`, stop: () => child.kill('SIGTERM') }));
    child.once('error', reject);
  });
}

const post = (http, p, extra = {}) => http.post({ endpoint: 'e', path: p, headers: [], body: new Uint8Array(), timeoutMs: 10000, ...extra });

test('http: a body is the server bytes, at most 1 MiB, never unpacked', async () => {
  const server = await serve();
  try {
    const http = new HttpCap({ e: { url: server.url } });
    const gz = post(http, '/gz/64');
    assert.equal(gz.status, 200);
    assert.ok(gz.body.length < 1 << 20, `the compressed bytes came back (${gz.body.length}), not 64 MiB unpacked`);
    assert.deepEqual([...gz.body.subarray(0, 2)], [0x1f, 0x8b], 'a gzip stream');
    assert.equal(post(http, '/big/1048576').body.length, 1 << 20, 'exactly the limit is a body');
    assert.throws(() => post(http, '/big/1048577'), (e) => e.tag === 'network' && /larger than the limit/.test(e.val));
  } finally {
    server.stop();
  }
});

test('http: the credential header is the host\'s in any letter case, and never reaches an error', async () => {
  const server = await serve();
  process.env.SE_NODE_HOSTILE_KEY = 'sk-SECRET-1234';
  process.env.SE_NODE_BROKEN_KEY = 'sk-SECRET-5678\nInjected: 1';
  try {
    const http = new HttpCap({
      e: { url: server.url, credentialEnv: 'SE_NODE_HOSTILE_KEY', authHeader: 'X-Api-Token', authPrefix: '' },
      broken: { url: server.url, credentialEnv: 'SE_NODE_BROKEN_KEY' },
    });
    for (const name of ['x-api-token', 'X-API-TOKEN', 'X-Api-Token']) {
      assert.throws(() => post(http, '/echo', { headers: [[name, 'guest-value']] }), { tag: 'denied' }, name);
    }
    const echoed = JSON.parse(Buffer.from(post(http, '/echo').body).toString('utf8'));
    assert.equal(echoed.headers['x-api-token'], 'sk-SECRET-1234');
    assert.throws(() => post(http, '/echo', { endpoint: 'broken' }), (e) => e.tag === 'network' && !e.val.includes('SECRET'));
  } finally {
    delete process.env.SE_NODE_HOSTILE_KEY;
    delete process.env.SE_NODE_BROKEN_KEY;
    server.stop();
  }
});

test('http: a path cannot leave the endpoint base or carry DEL and C1 controls', async () => {
  const server = await serve();
  try {
    const http = new HttpCap({ e: { url: `${server.url}/v1` } });
    for (const p of ['/%2e%2e/admin', '/%2E%2e/admin', '/x/%2e%2E/y', '/a\u007fb', '/a\u0085b', '/a\u009bb']) {
      assert.throws(() => post(http, p), { tag: 'denied' }, JSON.stringify(p));
    }
    const echoed = JSON.parse(Buffer.from(post(http, '/echo?x=1').body).toString('utf8'));
    assert.equal(echoed.path, '/v1/echo?x=1');
    // Header values go out as UTF-8 bytes (Node's server reads them back as Latin-1).
    const sent = JSON.parse(Buffer.from(post(http, '/echo', { headers: [['x-note', 'café ✓']] }).body).toString('utf8'));
    assert.equal(Buffer.from(sent.headers['x-note'], 'latin1').toString('utf8'), 'café ✓');
  } finally {
    server.stop();
  }
});

test('http: a path with non-ASCII, a space or a control is denied before any request, as in Rust and Python', async () => {
  const server = await serve();
  try {
    const http = new HttpCap({ e: { url: server.url } });
    for (const p of ['/café', '/a\uFEFFb', '/a\u00a0b', '/a\u2028b', '/a b', '/a\tb', '/a\u007fb', '/a\u0085b', '/✓']) {
      assert.throws(() => post(http, p), { tag: 'denied' }, JSON.stringify(p));
    }
    const echoed = JSON.parse(Buffer.from(post(http, '/caf%C3%A9?q=%E2%9C%93').body).toString('utf8'));
    assert.equal(echoed.seen, 0, 'no denied request reached the server');
    assert.equal(echoed.path, '/caf%C3%A9?q=%E2%9C%93', 'percent-encoded non-ASCII is plain ASCII');
  } finally {
    server.stop();
  }
});
