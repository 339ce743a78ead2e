// `self-evolve setup HARNESS` judged as each harness would judge it, by parts that are not ours:
// the file setup wrote is read with the parser that harness's format calls for (JSON.parse,
// strip-json-comments as Gemini CLI reads its settings, smol-toml, yaml), its fields are held to
// the names the harness documents (cli/tests/fixtures/harness/*/fields.json, each from its docs),
// the MCP server entry is started exactly as written (command, args, env) by the official MCP
// TypeScript SDK client, which must get `initialize` and `tools/list` answered, and each hook
// handler's command string is run through the shell with a recorded payload of its event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import stripJsonComments from 'strip-json-comments';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { tempDir } from '../test-support/tmp.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.resolve(ROOT, '..', '..');
const CLI = path.join(REPO, 'target', 'debug', 'self-evolve');
const FIXTURES = path.join(REPO, 'cli', 'tests', 'fixtures', 'harness');

// Per harness: the files setup writes (relative to $HOME, or to the project), how the harness
// reads each, where its servers and hooks sit, and what a hook must print.
const HARNESSES = {
  claude: {
    mcp: { user: '.claude.json', project: '.mcp.json', read: 'json', key: 'mcpServers', fields: 'mcp' },
    hooks: { user: '.claude/settings.json', project: '.claude/settings.json', read: 'json', shape: 'grouped', fields: 'settings' },
    stdout: '',
    shell: ['sh', '-c'],
  },
  codex: {
    mcp: { user: '.codex/config.toml', project: '.codex/config.toml', read: 'toml', key: 'mcp_servers', fields: 'mcp' },
    hooks: { user: '.codex/hooks.json', project: '.codex/hooks.json', read: 'json', shape: 'grouped', fields: 'hooks' },
    stdout: '',
    shell: ['sh', '-lc'],
  },
  gemini: {
    mcp: { user: '.gemini/settings.json', project: '.gemini/settings.json', read: 'jsonc', key: 'mcpServers', fields: 'settings' },
    hooks: { user: '.gemini/settings.json', project: '.gemini/settings.json', read: 'jsonc', shape: 'grouped', fields: 'settings' },
    stdout: '{}',
    shell: ['bash', '-c'],
  },
  cursor: {
    mcp: { user: '.cursor/mcp.json', project: '.cursor/mcp.json', read: 'jsonc', key: 'mcpServers', fields: 'mcp' },
    hooks: { user: '.cursor/hooks.json', project: '.cursor/hooks.json', read: 'json', shape: 'flat', fields: 'hooks' },
    stdout: '{}',
    shell: ['sh', '-c'],
  },
  hermes: {
    mcp: { user: '.hermes/config.yaml', project: null, read: 'yaml', key: 'mcp_servers', fields: 'settings' },
    hooks: { user: '.hermes/config.yaml', project: null, read: 'yaml', shape: 'flat', fields: 'settings' },
    stdout: '',
    // Hermes runs a hook with no shell: the command split as Python's shlex splits it.
    shell: null,
  },
};

function read(file, how) {
  const text = readFileSync(file, 'utf8');
  if (how === 'json') return JSON.parse(text);
  if (how === 'jsonc') return JSON.parse(stripJsonComments(text));
  if (how === 'toml') return parseToml(text);
  return parseYaml(text);
}

function documented(harness) {
  return JSON.parse(readFileSync(path.join(FIXTURES, harness, 'fields.json'), 'utf8'));
}

// The documented config file entry whose id is `id` (or, failing that, the one holding servers).
function docFile(harness, id, want) {
  const files = documented(harness).config_files;
  return files.find((f) => f.id === id && f[want]) ?? files.find((f) => f[want]);
}

function world() {
  const base = tempDir('se-setup-');
  const home = path.join(base, 'me');
  const project = path.join(home, 'work', 'app');
  mkdirSync(path.join(project, '.git'), { recursive: true });
  return { home, project };
}

function setup(w, args) {
  const env = { ...process.env, HOME: w.home };
  for (const name of ['SELF_EVOLVE_HOME', 'SELF_EVOLVE_WASM', 'CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'GEMINI_CLI_HOME', 'HERMES_HOME']) delete env[name];
  const run = spawnSync(CLI, ['setup', ...args], { cwd: w.project, env, encoding: 'utf8' });
  assert.equal(run.status, 0, `setup ${args.join(' ')}: ${run.stderr}`);
}

async function startServer(entry, w) {
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args ?? [],
    env: { PATH: process.env.PATH, HOME: w.home, ...(entry.env ?? {}) },
    cwd: w.project,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'harness-stranger', version: '1.0.0' });
  await client.connect(transport);
  try {
    assert.equal(client.getServerVersion()?.name, 'self-evolve');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'skill_manage'), JSON.stringify(tools.map((t) => t.name)));
  } finally {
    await client.close();
  }
}

// Python's own shlex.split, which Hermes uses on a hook's command.
function shlexSplit(command) {
  const run = spawnSync('python3', ['-c', 'import json, shlex, sys; print(json.dumps(shlex.split(sys.argv[1])))', command], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout);
}

// A recorded payload of `event` (cli/tests/fixtures/harness/<h>/payloads), pointed at this world.
function payload(harness, event, w) {
  const file = path.join(FIXTURES, harness, 'payloads', `${event}.json`);
  const value = JSON.parse(readFileSync(file, 'utf8'));
  for (const key of ['cwd']) if (key in value) value[key] = w.project;
  if ('workspace_roots' in value) value.workspace_roots = [w.project];
  if ('transcript_path' in value) value.transcript_path = path.join(w.home, 'no-transcript.jsonl');
  return JSON.stringify(value);
}

for (const [harness, spec] of Object.entries(HARNESSES)) {
  for (const scope of spec.mcp.project ? ['user', 'project'] : ['user']) {
    test(`setup ${harness} (${scope}): read, checked and started as ${harness} would`, { timeout: 120_000 }, async () => {
      assert.ok(existsSync(CLI), `the Rust CLI is not built at ${CLI}: run \`cargo build -p self-evolve\` first`);
      const w = world();
      setup(w, scope === 'project' ? [harness, '--project'] : [harness]);
      const base = scope === 'project' ? w.project : w.home;

      // The server entry: documented fields only, started as written.
      const mcpFile = path.join(base, spec.mcp[scope]);
      const servers = read(mcpFile, spec.mcp.read)[spec.mcp.key];
      const entry = servers['self-evolve'];
      assert.ok(entry, `no self-evolve server in ${mcpFile}`);
      const allowed = docFile(harness, spec.mcp.fields, 'mcp_servers_key').mcp_server_fields;
      for (const field of Object.keys(entry)) assert.ok(allowed.includes(field), `${harness}: \`${field}\` is not a documented server field (${allowed})`);
      assert.ok(path.isAbsolute(entry.command), `${harness}: the command is not an absolute path: ${entry.command}`);
      await startServer(entry, w);

      if (!spec.hooks) return;
      // The hook handlers: documented events and fields, each command run through the shell.
      const hooksFile = path.join(base, spec.hooks[scope]);
      const doc = docFile(harness, spec.hooks.fields, 'hooks_key');
      const hooks = read(hooksFile, spec.hooks.read).hooks;
      const ours = [];
      for (const [event, list] of Object.entries(hooks)) {
        assert.ok(doc.hook_events.includes(event), `${harness}: \`${event}\` is not a documented event`);
        for (const item of list) {
          const handlers = spec.hooks.shape === 'grouped' ? item.hooks : [item];
          for (const h of handlers) if (/self-evolve/.test(h.command)) ours.push({ event, handler: h });
        }
      }
      assert.ok(ours.length >= 3, `${harness}: only ${ours.length} hooks of ours`);
      for (const { event, handler } of ours) {
        for (const field of Object.keys(handler)) assert.ok(doc.hook_handler_fields.includes(field), `${harness}: \`${field}\` is not a documented handler field`);
        const stdin = existsSync(path.join(FIXTURES, harness, 'payloads', `${event}.json`)) ? payload(harness, event, w) : '{}';
        const [program, ...args] = spec.shell ? [spec.shell[0], spec.shell[1], handler.command] : shlexSplit(handler.command);
        const run = spawnSync(program, args, {
          cwd: w.project,
          env: { PATH: process.env.PATH, HOME: w.home },
          input: stdin,
          encoding: 'utf8',
          timeout: 60_000,
        });
        assert.equal(run.status, 0, `${harness} ${event}: exit ${run.status}: ${run.stderr}`);
        assert.equal(run.stdout.trim(), spec.stdout, `${harness} ${event}: stdout`);
      }
    });
  }
}
