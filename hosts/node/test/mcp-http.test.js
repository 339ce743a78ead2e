// `self-evolve serve` driven by the official MCP TypeScript SDK client over Streamable HTTP
// (@modelcontextprotocol/sdk 1.32.2's StreamableHTTPClientTransport, which speaks 2025-11-25:
// initialize, a session id, list_changed on the session): the tool, a write that lands and is
// announced, a refusal that writes nothing, the skills through SEP-2640, and a person's token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceListChangedNotificationSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { tempDir } from '../test-support/tmp.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.resolve(ROOT, '..', '..', 'target', 'debug', 'self-evolve');
const WASM = path.resolve(ROOT, '..', '..', 'dist', 'self-evolve.wasm');

// Starts `serve` on a free loopback port; resolves with its URL (the first line it prints).
async function serve(homeDir) {
  assert.ok(existsSync(CLI), `the Rust CLI is not built at ${CLI}: run \`cargo build -p self-evolve\` first`);
  const child = spawn(CLI, ['--wasm', WASM, 'serve', '--home', homeDir, '--bind', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  return { child, url: new URL(url.trim()) };
}

function home() {
  const base = tempDir('se-http-');
  const dir = path.join(base, 'pdf-forms');
  const homeDir = path.join(base, 'home');
  mkdirSync(path.join(homeDir, 'skills', 'pdf-forms'), { recursive: true });
  writeFileSync(path.join(homeDir, 'skills', 'pdf-forms', 'SKILL.md'),
    '---\nname: pdf-forms\ndescription: Fill PDF forms. Use when a form must be filled.\n---\nSteps.\n');
  return { homeDir, dir };
}

test('the TypeScript SDK over HTTP: the tool, a landed write announced, a refusal, the skills', async () => {
  const { homeDir } = home();
  const { child, url } = await serve(homeDir);
  const client = new Client({ name: 'self-evolve-http-test', version: '1.0.0' });
  let changed = 0;
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { changed += 1; });
  try {
    await client.connect(new StreamableHTTPClientTransport(url));
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['skill_manage']);
    const created = await client.callTool({ name: 'skill_manage', arguments: {
      action: 'create', name: 'rotate-tls-certs',
      description: 'Rotate expiring TLS certificates on the load balancer. Use when a certificate nears expiry.',
      body: 'Check the expiry date, then rotate.\n' } });
    assert.equal(created.isError, false, JSON.stringify(created));
    assert.equal(JSON.parse(created.content[0].text).status, 'written');
    assert.ok(existsSync(path.join(homeDir, 'skills', 'rotate-tls-certs', 'SKILL.md')));
    for (let i = 0; i < 100 && changed === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(changed, 1, 'list_changed on the session after the write');
    const refused = await client.callTool({ name: 'skill_manage', arguments: {
      action: 'create', name: 'aws-deploy', description: 'Deploy with AWS keys. Use when deploying.',
      body: 'export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEKEYEXAMPLX\n' } });
    assert.equal(refused.isError, true);
    assert.equal(JSON.parse(refused.content[0].text).code, 'secret-found');
    assert.ok(!existsSync(path.join(homeDir, 'skills', 'aws-deploy')), 'the refusal wrote nothing');
    const page = await client.request({ method: 'skills/list', params: {} }, ResultSchema);
    assert.deepEqual(page.skills.map((s) => s.frontmatter.name).sort(), ['pdf-forms', 'rotate-tls-certs']);
  } finally {
    await client.close().catch(() => {});
    child.kill();
  }
});

test('with a token in host.json, the SDK client needs it and a revoked one is refused', async () => {
  const { homeDir } = home();
  const token = execFileSync(CLI, ['serve', 'token', 'add', 'alice', '--home', homeDir]).toString().trim();
  const { child, url } = await serve(homeDir);
  try {
    await assert.rejects(new Client({ name: 'no-token', version: '1' }).connect(new StreamableHTTPClientTransport(url)));
    const withToken = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'alice', version: '1' });
    await client.connect(withToken);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['skill_manage']);
    execFileSync(CLI, ['serve', 'token', 'remove', 'alice', '--home', homeDir]);
    await assert.rejects(client.listTools());
    await client.close().catch(() => {});
  } finally {
    child.kill();
  }
});
