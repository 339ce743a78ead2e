// `self-evolve mcp` driven by the official MCP TypeScript SDK client (@modelcontextprotocol/sdk),
// over stdio, as an agent would load it: initialize, the one tool, writes that land and writes
// refused with nothing written, the skills through SEP-2640's Skills Extension (skills/list,
// skills/get, resources/read, every digest checked against the bytes read), list_changed after a
// write, and two servers on one home with no lost write. The SDK has no skills API of its own
// (1.32), so the extension's methods go through `client.request` with a loose result schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceListChangedNotificationSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { tempDir } from '../test-support/tmp.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.resolve(ROOT, '..', '..', 'target', 'debug', 'self-evolve');
const WASM = path.resolve(ROOT, '..', '..', 'dist', 'self-evolve.wasm');

function skill(name, description, body = 'Steps.\n') {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;
}

function put(root, rel, text) {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
}

// Every file under a folder with its bytes: "nothing was written" compares two of these.
function tree(dir, prefix = '') {
  const out = {};
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) Object.assign(out, tree(full, `${prefix}${name}/`));
    else out[`${prefix}${name}`] = readFileSync(full, 'latin1');
  }
  return out;
}

function home() {
  const base = tempDir('se-mcp-');
  const user = path.join(base, 'home', 'skills');
  put(user, 'pdf-forms/SKILL.md', skill('pdf-forms', 'Fill PDF forms from JSON data. Use when a form must be filled.'));
  put(user, 'pdf-forms/references/fields.md', '# Field names\n');
  put(user, 'pdf-forms/scripts/fill.py', 'print("fill")\n');
  put(user, 'shared-name/SKILL.md', skill('shared-name', 'The user copy. Use when shadowed.'));
  put(user, 'broken/SKILL.md', '---\nname: [unclosed\n---\n');
  const project = path.join(base, 'project');
  mkdirSync(path.join(project, '.git'), { recursive: true });
  put(path.join(project, '.dsh', 'skills'), 'shared-name/SKILL.md', skill('shared-name', 'The project copy wins. Use when shadowed.'));
  return { base, home: path.join(base, 'home'), project };
}

async function connect(homeDir, project, onListChanged) {
  assert.ok(existsSync(CLI), `the Rust CLI is not built at ${CLI}: run \`cargo build -p self-evolve\` first`);
  const transport = new StdioClientTransport({
    command: CLI,
    args: ['--wasm', WASM, 'mcp', '--home', homeDir, '--project', project],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'self-evolve-test', version: '1.0.0' });
  if (onListChanged) client.setNotificationHandler(ResourceListChangedNotificationSchema, onListChanged);
  await client.connect(transport);
  return client;
}

// A made-up word per number, so generated skills share no terms (the duplicate guard would
// rightly refuse look-alikes).
const SYLLABLES = ['ka', 'lo', 'mi', 'nu', 'pe', 'ro', 'si', 'ta', 'vo', 'ze'];
const word = (n) => `${SYLLABLES[n % 10]}${SYLLABLES[Math.floor(n / 10) % 10]}${SYLLABLES[Math.floor(n / 100) % 10]}${SYLLABLES[Math.floor(n / 1000) % 10]}x`;

const call = (client, args) => client.callTool({ name: 'skill_manage', arguments: args });
const answer = (result) => JSON.parse(result.content[0].text);
const sha256 = (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

async function allSkills(client) {
  const skills = [];
  let cursor;
  do {
    const page = await client.request({ method: 'skills/list', params: cursor ? { cursor } : {} }, ResultSchema);
    skills.push(...page.skills);
    cursor = page.nextCursor;
  } while (cursor);
  return skills;
}

// The bytes a resources/read returned, as the client must hash them.
function bytesOf(contents) {
  return contents.text !== undefined ? Buffer.from(contents.text, 'utf8') : Buffer.from(contents.blob, 'base64');
}

test('an MCP client sees the tool, the Skills Extension, guarded writes and list_changed', async () => {
  const { home: homeDir, project } = home();
  let changed = 0;
  const client = await connect(homeDir, project, () => { changed += 1; });
  try {
    const caps = client.getServerCapabilities();
    assert.deepEqual(caps.extensions?.['io.modelcontextprotocol/skills'], {}, JSON.stringify(caps));
    assert.equal(caps.resources?.listChanged, true);

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['skill_manage']);
    assert.ok(tools[0].inputSchema.properties.action.enum.includes('create'), JSON.stringify(tools[0].inputSchema));

    // A write that lands: on disk, reported written, and announced.
    const created = await call(client, {
      action: 'create', name: 'rotate-tls-certs',
      description: 'Rotate expiring TLS certificates on the load balancer. Use when a certificate nears expiry.',
      body: 'Check the expiry date, then rotate.\n',
    });
    assert.equal(created.isError, false, JSON.stringify(created));
    assert.equal(answer(created).status, 'written');
    assert.ok(existsSync(path.join(homeDir, 'skills', 'rotate-tls-certs', 'SKILL.md')));
    for (let i = 0; i < 50 && changed === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(changed, 1, 'notifications/resources/list_changed after the write');

    // Refusals: tool errors whose text is the plugin's JSON, and nothing on disk changes.
    const before = tree(homeDir);
    const refusals = [
      [{ action: 'create', name: 'rotate-tls-certs', description: 'Again. Use when testing.', body: 'x\n' }, 'exists'],
      [{ action: 'create', name: 'renew-lb-certs', description: "Renewing the load balancer's TLS certs before they expire. Use when they near expiry.", body: 'Renew.\n' }, 'duplicate'],
      [{ action: 'create', name: 'aws-deploy', description: 'Deploy with AWS keys. Use when deploying.', body: 'export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEKEYEXAMPLX\n' }, 'secret-found'],
      [{ action: 'patch', name: 'pdf-forms', old_string: 'Fill', new_string: 'Fix' }, 'not-owned'],
    ];
    for (const [args, code] of refusals) {
      const refused = await call(client, args);
      assert.equal(refused.isError, true, `${args.name}: ${JSON.stringify(refused)}`);
      assert.equal(answer(refused).code, code, `${args.name}: ${refused.content[0].text}`);
    }
    assert.deepEqual(tree(homeDir), before, 'refused writes leave the home as it was');
    assert.equal(changed, 1, 'no list_changed for a refusal');

    // The extension: served skills only, project over user, every file with a digest that
    // matches the bytes resources/read returns.
    const skills = await allSkills(client);
    const names = skills.map((s) => s.frontmatter.name).sort();
    assert.deepEqual(names, ['pdf-forms', 'rotate-tls-certs', 'shared-name'], 'broken is not served');
    const shared = skills.find((s) => s.frontmatter.name === 'shared-name');
    assert.equal(shared.frontmatter.description, 'The project copy wins. Use when shadowed.');
    const pdf = skills.find((s) => s.frontmatter.name === 'pdf-forms');
    assert.equal(pdf.uri, 'skill://pdf-forms/SKILL.md');
    assert.deepEqual(pdf.resources.map((r) => r.uri), [
      'skill://pdf-forms/SKILL.md', 'skill://pdf-forms/references/fields.md', 'skill://pdf-forms/scripts/fill.py',
    ]);
    for (const s of skills) {
      assert.ok(s.resources.some((r) => r.uri === s.uri), `${s.uri} lists its own SKILL.md`);
      for (const r of s.resources) {
        const read = await client.readResource({ uri: r.uri });
        const bytes = bytesOf(read.contents[0]);
        assert.equal(sha256(bytes), r.digest, r.uri);
        assert.equal(bytes.length, r.size, r.uri);
      }
    }
    const md = await client.readResource({ uri: 'skill://pdf-forms/SKILL.md' });
    assert.equal(md.contents[0].mimeType, 'text/markdown');
    assert.equal(md.contents[0].text, skill('pdf-forms', 'Fill PDF forms from JSON data. Use when a form must be filled.'));

    const got = await client.request({ method: 'skills/get', params: { uri: 'skill://rotate-tls-certs/SKILL.md' } }, ResultSchema);
    assert.equal(got.skill.frontmatter.name, 'rotate-tls-certs');
    // The frontmatter is every field, typed as the SKILL.md's YAML reads: the stamp's version is the string "1".
    assert.deepEqual(
      { by: got.skill.frontmatter.metadata['authored-by'], version: got.skill.frontmatter.metadata.version },
      { by: 'self-evolve', version: '1' },
    );
    for (const uri of ['skill://broken/SKILL.md', 'skill://nobody/SKILL.md', 'skill://pdf-forms/references/fields.md', 'file:///etc/passwd']) {
      await assert.rejects(
        client.request({ method: 'skills/get', params: { uri } }, ResultSchema),
        (err) => err.code === -32602,
        uri,
      );
    }
    for (const uri of ['skill://broken/SKILL.md', 'skill://pdf-forms/../broken/SKILL.md', 'skill://pdf-forms/.hidden', 'skill://shared-name/references/none.md']) {
      await assert.rejects(client.readResource({ uri }), (err) => err.code === -32602, uri);
    }

    // resources/list: the legacy index and each served SKILL.md; the index matches skills/list.
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri).sort(), [
      'skill://index.json', 'skill://pdf-forms/SKILL.md', 'skill://rotate-tls-certs/SKILL.md', 'skill://shared-name/SKILL.md',
    ]);
    const index = JSON.parse((await client.readResource({ uri: 'skill://index.json' })).contents[0].text);
    assert.deepEqual(index.skills.map((s) => s.uri).sort(), skills.map((s) => s.uri).sort());
  } finally {
    await client.close();
  }
});

test('skills/list pages through a large library, each skill once', async () => {
  const { home: homeDir, project } = home();
  for (let i = 0; i < 230; i++) {
    const name = `bulk-skill-${String(i).padStart(3, '0')}`;
    put(path.join(homeDir, 'skills'), `${name}/SKILL.md`, skill(name, `Bulk skill number ${i}. Use when counting.`));
  }
  const client = await connect(homeDir, project);
  try {
    let pages = 0;
    const seen = [];
    let cursor;
    do {
      const page = await client.request({ method: 'skills/list', params: cursor ? { cursor } : {} }, ResultSchema);
      pages += 1;
      seen.push(...page.skills.map((s) => s.frontmatter.name));
      cursor = page.nextCursor;
    } while (cursor);
    assert.ok(pages >= 3, `${pages} pages`);
    assert.equal(seen.length, 232, '230 generated + pdf-forms + shared-name; broken is not served');
    assert.equal(new Set(seen).size, seen.length, 'no skill twice');
    await assert.rejects(client.request({ method: 'skills/list', params: { cursor: 'not-a-cursor' } }, ResultSchema), (err) => err.code === -32602);
  } finally {
    await client.close();
  }
});

test('two MCP servers on one home: every write reported written is on disk, each name created once', async () => {
  const { home: homeDir, project } = home();
  const clients = await Promise.all([connect(homeDir, project), connect(homeDir, project)]);
  try {
    const reported = [];
    await Promise.all(clients.map(async (client, c) => {
      for (let i = 0; i < 12; i++) {
        // Each server's own skills, and names both try to create (with the same content).
        for (const [name, k] of [[`${word(100 + i * 2 + c)}-notes`, 100 + i * 2 + c], [`contested-${word(i)}`, i]]) {
          const result = await call(client, {
            action: 'create', name,
            description: `${word(k + 1000)} ${word(k + 2000)} ${word(k + 3000)} chores. Use when ${word(k + 4000)} breaks.`,
            body: `Steps for ${name}.\n`,
          });
          const body = answer(result);
          reported.push({ c, name, ok: !result.isError, code: body.code, status: body.status });
        }
      }
    }));
    const written = reported.filter((r) => r.ok && r.status === 'written');
    for (const r of written) {
      const file = path.join(homeDir, 'skills', r.name, 'SKILL.md');
      assert.ok(existsSync(file), `${r.name} was reported written by server ${r.c} but is missing`);
      assert.match(readFileSync(file, 'utf8'), new RegExp(`name: ${r.name}\\n`));
    }
    for (let i = 0; i < 12; i++) {
      const name = `contested-${word(i)}`;
      const creators = written.filter((r) => r.name === name);
      assert.equal(creators.length, 1, `${name}: ${JSON.stringify(reported.filter((r) => r.name === name))}`);
    }
    const refusals = reported.filter((r) => !r.ok).map((r) => r.code);
    assert.ok(refusals.every((code) => ['exists', 'conflict'].includes(code)), JSON.stringify(refusals));
    assert.equal(written.filter((r) => r.name.endsWith('-notes')).length, 24, 'every own skill landed');
    // Both servers list the same library afterwards.
    const lists = await Promise.all(clients.map((client) => allSkills(client)));
    assert.deepEqual(lists[0].map((s) => s.uri).sort(), lists[1].map((s) => s.uri).sort());
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
});

// A call past the plugin's 24 MiB argument bound, but under the server's line bound: answered
// `too-large` (a line rmcp dropped at its default 16 MiB got no answer at all), and the next call works.
test('a 25 MiB tools/call is answered too-large and the server goes on', async () => {
  const { home: homeDir, project } = home();
  const transport = new StdioClientTransport({ command: CLI, args: ['--wasm', WASM, 'mcp', '--home', homeDir, '--project', project], stderr: 'pipe' });
  const client = new Client({ name: 'self-evolve-large-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    const huge = await call(client, { action: 'create', name: 'huge', description: 'Too big. Use never.', body: 'x'.repeat(25 << 20) });
    assert.match(huge.content[0].text, /too-large/);
    const listed = answer(await call(client, { action: 'list' }));
    assert.ok(JSON.stringify(listed).includes('pdf-forms'), JSON.stringify(listed));
  } finally {
    await client.close();
  }
});

// Requests the client aborts (the SDK sends notifications/cancelled): each keeps its place among
// the 16 the server lets wait only until its handler has ended, so 40 aborted reads in a row do
// not stop the server, and the next call is answered.
test('requests the client aborts hold no place for long: the session goes on', async () => {
  const { home: homeDir, project } = home();
  const client = await connect(homeDir, project);
  try {
    const settled = [];
    for (let i = 0; i < 40; i++) {
      const controller = new AbortController();
      const pending = client.readResource({ uri: 'skill://index.json' }, { signal: controller.signal });
      controller.abort('the test aborts it');
      settled.push(pending.then(() => 'answered', () => 'aborted'));
    }
    assert.deepEqual([...new Set(await Promise.all(settled))], ['aborted']);
    const listed = answer(await call(client, { action: 'list' }));
    assert.ok(JSON.stringify(listed).includes('pdf-forms'), JSON.stringify(listed));
  } finally {
    await client.close();
  }
});

// A live reviewer's server (`mcp --as-reviewer`, started by the `command` reviewer provider's
// agent CLI): the session and identity come from SELF_EVOLVE_* variables, and its writes are the
// reviewer's in the parent session, as the version history records them.
// `--session` given inside a reviewer's environment changes nothing: still the reviewer's writes.
for (const how of [['--as-reviewer'], ['--session', 'cc-other']]) test(`mcp ${how.join(' ')} inside a reviewer writes as the reviewer of the parent session`, async () => {
  const { home: homeDir, project } = home();
  const transport = new StdioClientTransport({
    command: CLI,
    args: ['--wasm', WASM, 'mcp', ...how, '--home', homeDir, '--project', project],
    env: { ...process.env, SELF_EVOLVE_SESSION: 'cc-parent', SELF_EVOLVE_ACTIVATION: 'rv-1-2-3' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'self-evolve-reviewer-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    const created = answer(await call(client, {
      action: 'create', name: 'pnpm-usage',
      description: 'Package manager choice for Node projects. Use when installing dependencies.',
      body: 'Use pnpm.\n',
    }));
    assert.equal(created.status, 'written', JSON.stringify(created));
  } finally {
    await client.close();
  }
  const { execFileSync } = await import('node:child_process');
  const log = JSON.parse(execFileSync(CLI, ['--wasm', WASM, 'skills', '--home', homeDir, 'log', 'pnpm-usage', '--json'], { cwd: project }).toString());
  const text = JSON.stringify(log);
  assert.ok(text.includes('"actor":"reviewer"') && text.includes('"by":"rv-1-2-3"') && text.includes('cc-parent'), text);
});

test('mcp --as-reviewer without its variables refuses to start, naming them', async () => {
  const { home: homeDir } = home();
  const { spawnSync } = await import('node:child_process');
  const env = { ...process.env };
  delete env.SELF_EVOLVE_SESSION;
  delete env.SELF_EVOLVE_ACTIVATION;
  const out = spawnSync(CLI, ['--wasm', WASM, 'mcp', '--as-reviewer', '--home', homeDir], { env, input: '' });
  assert.notEqual(out.status, 0);
  assert.match(out.stderr.toString(), /SELF_EVOLVE_SESSION/);
});
