// The package carries the component: `npm pack` makes a tarball with src/ and the transpiled
// component (gen/), and nothing else of the checkout; installed offline into an empty folder, its
// `self-evolve-node` bin replays a conformance scenario there and prints exactly its `.expected`
// lines. Everything after the pack runs in that folder, with no checkout path on the environment
// (no npm_* variables, no PATH entry inside the repository) and copies of the scenario's files,
// so the installed code can only find the component next to itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, readdirSync, realpathSync, writeFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';

const HOST = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = realpathSync(path.join(HOST, '..', '..'));
const CONFORMANCE = path.join(ROOT, 'tests', 'conformance');
const SCENARIO = 'gate-openai'; // with a scripted gate: the installed gate-server.js runs too

/** The environment without npm's variables and without anything that names the checkout. */
function strangerEnv() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === 'INIT_CWD' || key === 'PWD' || key === 'OLDPWD') continue;
    if (key === 'PATH') {
      env.PATH = value.split(path.delimiter).filter((dir) => dir && !dir.includes(ROOT)).join(path.delimiter);
    } else if (!value.includes(ROOT)) {
      env[key] = value;
    }
  }
  return env;
}

function run(cmd, args, options) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30000, ...options });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: exit ${r.status} ${r.signal || ''}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('the packed tarball, installed offline into an empty folder, replays a conformance scenario', { timeout: 60000 }, () => {
  // `prepack` builds gen/ so a tarball never lacks it; here `npm test`'s pretest has just built
  // it, and rebuilding in place would race the other test files reading gen/, so scripts are off.
  const pkg = JSON.parse(readFileSync(path.join(HOST, 'package.json'), 'utf8'));
  assert.equal(pkg.scripts.prepack, 'npm run build');
  assert.deepEqual(pkg.dependencies ?? {}, {}, 'the installed package needs nothing from a registry');
  const out = tempDir('se-pack-');
  run('npm', ['pack', '--ignore-scripts', '--pack-destination', out, '--loglevel=error'], { cwd: HOST });
  const tarballs = readdirSync(out).filter((f) => f.endsWith('.tgz'));
  assert.deepEqual(tarballs, [`${pkg.name}-${pkg.version}.tgz`]);
  const tarball = path.join(out, tarballs[0]);

  const listed = run('tar', ['tzf', tarball]).split('\n').filter(Boolean);
  for (const file of ['package.json', 'src/replay.js', 'src/host.js', 'src/gate-server.js', 'gen/self-evolve.js', 'gen/self-evolve.core.wasm']) {
    assert.ok(listed.includes(`package/${file}`), `the tarball lacks ${file}`);
  }
  const stray = listed.filter((f) => !/^package\/(package\.json|src\/[^/]+\.js|gen\/.+)$/.test(f));
  assert.deepEqual(stray, [], 'only package.json, src/ and gen/ are packed');

  const empty = tempDir('se-installed-');
  writeFileSync(path.join(empty, 'package.json'), '{"name":"t","private":true}\n');
  const env = strangerEnv();
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], { cwd: empty, env });

  for (const suffix of ['.jsonl', '.gate.json']) copyFileSync(path.join(CONFORMANCE, SCENARIO + suffix), path.join(empty, SCENARIO + suffix));
  mkdirSync(path.join(empty, 'home'));
  const printed = run('npx', ['--offline', 'self-evolve-node', `${SCENARIO}.jsonl`, '--gate-replies', `${SCENARIO}.gate.json`, '--home', 'home'], { cwd: empty, env });
  const lines = printed.split('\n').filter(Boolean);
  const expected = readFileSync(path.join(CONFORMANCE, `${SCENARIO}.expected`), 'utf8').split('\n').filter(Boolean);
  assert.equal(lines.length, expected.length, 'line count');
  lines.forEach((line, i) => assert.equal(line, expected[i], `line ${i + 1}`));
});
