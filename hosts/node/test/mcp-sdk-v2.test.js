// `self-evolve serve` (Streamable HTTP) and `self-evolve mcp` (stdio) driven by v2 of the official
// MCP TypeScript SDK (@modelcontextprotocol/client 2.4.0, the line that implements 2026-07-28) on
// both revisions: its default `legacy` negotiation (initialize, 2025-11-25) and `auto` (probes
// `server/discover`, then 2026-07-28 with `_meta` on every request). Its own Skills Extension
// client (`SkillsClient`, SEP-2640) lists, gets and reads the library and verifies every file's
// size, digest and frontmatter against the entry, so a shape we get wrong fails here. A write
// lands and is announced (`subscriptions/listen` on 2026-07-28, the session before), a secret is
// refused with nothing written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { tempDir } from '../test-support/tmp.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.resolve(ROOT, '..', '..', 'target', 'debug', 'self-evolve');
const WASM = path.resolve(ROOT, '..', '..', 'dist', 'self-evolve.wasm');
const SECRET = 'export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEKEYEXAMPLX\n';

function home() {
  const base = tempDir('se-sdk2-');
  const homeDir = path.join(base, 'home');
  const skill = path.join(homeDir, 'skills', 'pdf-forms');
  mkdirSync(path.join(skill, 'references'), { recursive: true });
  writeFileSync(path.join(skill, 'SKILL.md'),
    '---\nname: pdf-forms\ndescription: Fill PDF forms. Use when a form must be filled.\n---\nSee references/fields.md.\n');
  writeFileSync(path.join(skill, 'references', 'fields.md'), '# Fields\n\nName, date, signature.\n');
  return { base, homeDir };
}

async function serve(homeDir) {
  assert.ok(existsSync(CLI), `the Rust CLI is not built at ${CLI}: run \`cargo build -p self-evolve\` first`);
  const child = spawn(CLI, ['--wasm', WASM, 'serve', '--home', homeDir, '--bind', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  return { child, transport: () => new StreamableHTTPClientTransport(new URL(url.trim())) };
}

function stdio(homeDir, cwd) {
  return { child: null, transport: () => new StdioClientTransport({ command: CLI, args: ['--wasm', WASM, 'mcp', '--home', homeDir], cwd, stderr: 'ignore' }) };
}

function create(name, body = 'Check the expiry date, then rotate.\n') {
  return { name: 'skill_manage', arguments: { action: 'create', name,
    description: `Rotate ${name} certificates on the load balancer. Use when a ${name} certificate nears expiry.`, body } };
}

async function waitFor(check, what) {
  for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(check(), what);
}

async function exercise(server, homeDir, mode) {
  const options = mode === 'legacy' ? {} : { versionNegotiation: { mode } };
  const client = new Client({ name: 'self-evolve-sdk-v2-test', version: '1.0.0' }, options);
  let changed = 0;
  client.setNotificationHandler('notifications/resources/list_changed', () => { changed += 1; });
  await client.connect(server.transport());
  try {
    const revision = client.getNegotiatedProtocolVersion();
    assert.equal(revision, mode === 'legacy' ? '2025-11-25' : '2026-07-28');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['skill_manage']);

    const subscription = mode === 'legacy' ? null : await client.listen({ resourcesListChanged: true });
    if (subscription) assert.equal(subscription.honoredFilter.resourcesListChanged, true);
    const written = await client.callTool(create('rotate-tls-certs'));
    assert.equal(written.isError, false, JSON.stringify(written));
    assert.equal(JSON.parse(written.content[0].text).status, 'written');
    assert.ok(existsSync(path.join(homeDir, 'skills', 'rotate-tls-certs', 'SKILL.md')));
    await waitFor(() => changed > 0, `${mode}: list_changed after the write`);
    await subscription?.close();

    const refused = await client.callTool(create('aws-deploy', SECRET));
    assert.equal(refused.isError, true);
    assert.equal(JSON.parse(refused.content[0].text).code, 'secret-found');
    assert.ok(!existsSync(path.join(homeDir, 'skills', 'aws-deploy')), 'the refusal wrote nothing');

    // The SDK's own Skills Extension client: it throws on any entry or file it finds invalid.
    const skills = new SkillsClient(client);
    assert.equal(skills.supported, true);
    const listing = await skills.list();
    assert.deepEqual(listing.invalid, []);
    assert.deepEqual(listing.skills.map((s) => s.frontmatter.name).sort(), ['pdf-forms', 'rotate-tls-certs']);
    if (mode !== 'legacy') {
      assert.equal(typeof listing.ttlMs, 'number', 'a 2026-07-28 page carries ttlMs');
      assert.ok(listing.cacheScope, 'and cacheScope');
    }
    const forms = listing.skills.find((s) => s.frontmatter.name === 'pdf-forms');
    const manifest = await skills.read(forms);
    assert.equal(manifest.verified, true);
    assert.equal(manifest.frontmatter.name, 'pdf-forms');
    assert.equal(manifest.body, 'See references/fields.md.\n');
    const fields = await skills.read(forms, 'references/fields.md');
    assert.equal(fields.verified, true);
    assert.equal(new TextDecoder().decode(fields.bytes), '# Fields\n\nName, date, signature.\n');
    const { skill } = await skills.get(forms.uri);
    assert.equal(skill.uri, forms.uri);
  } finally {
    await client.close().catch(() => {});
  }
}

for (const mode of ['legacy', 'auto']) {
  test(`the TypeScript SDK v2 over HTTP, ${mode}: the tool, a write announced, a refusal, its SkillsClient`, async () => {
    const { homeDir } = home();
    const server = await serve(homeDir);
    try {
      await exercise(server, homeDir, mode);
    } finally {
      server.child.kill();
    }
  });

  test(`the TypeScript SDK v2 over stdio, ${mode}: the same`, async () => {
    const { base, homeDir } = home();
    await exercise(stdio(homeDir, base), homeDir, mode);
  });
}
