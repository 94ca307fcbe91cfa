// The npm package as it is published (scripts/npm-packages.mjs packs it; scripts/release-check.sh
// installs it from a registry): the hand-written JS in lib/, the generated loader (native.js) and
// types (index.d.ts) at the root, exactly the files `files` names; each `exports` subpath loads
// with `require` and `import`; one set of exports for both; no install script, no Rust sources,
// and, where no addon fits the platform, an error that says which platform, which package would
// hold its addon and what to do.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import * as esm from 'tideq';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const require = createRequire(import.meta.url);

/** napi's name for this platform, as lib/binding.js computes it. */
function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'}`;
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`;
}

/** The package's loader files, alone in a fresh directory (no addon, no node_modules). */
function loaderAlone() {
  const dir = mkdtempSync(join(tmpdir(), 'tideq-loader-'));
  mkdirSync(join(dir, 'lib'));
  for (const file of ['lib/binding.js', 'native.js', 'package.json']) copyFileSync(join(root, file), join(dir, file));
  return dir;
}

test('the package holds exactly lib/ (the hand-written JS), native.js, index.d.ts, the command and the docs', () => {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }));
  const files = packed.files.map((f) => f.path).sort();
  // Every file under lib/ that git tracks, and nothing else from it (no stray build or test output).
  const lib = execFileSync('git', ['ls-files', 'lib'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const file of ['lib/index.js', 'lib/index.mjs', 'lib/binding.js', 'lib/otel.js', 'lib/outcomes.js', 'lib/worker.js']) {
    assert.ok(lib.includes(file), `${file} is not in lib/`);
  }
  const want = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'index.d.ts', 'native.js', 'bin/tideq.js', ...lib].sort();
  assert.deepEqual(files, want);
  assert.equal(pkg.main, 'lib/index.js');
  assert.equal(pkg.types, 'index.d.ts');
});

test('each exports subpath loads with require and with import, and its types file exists', async () => {
  const subpaths = Object.keys(pkg.exports);
  assert.ok(subpaths.includes('.') && subpaths.includes('./package.json'), subpaths.join(', '));
  for (const sub of subpaths) {
    const spec = sub === '.' ? 'tideq' : `tideq/${sub.slice(2)}`;
    const json = sub.endsWith('.json');
    const viaRequire = require(spec);
    const viaImport = json ? (await import(spec, { with: { type: 'json' } })).default : await import(spec);
    assert.ok(viaRequire && typeof viaRequire === 'object', `require('${spec}')`);
    if (json) {
      assert.deepEqual(viaImport, viaRequire);
      continue;
    }
    // import and require share one module: the same objects under the same names.
    const names = Object.keys(viaImport).filter((n) => n !== 'default').sort();
    assert.deepEqual(names, Object.keys(viaRequire).sort(), spec);
    for (const name of names) assert.equal(viaImport[name], viaRequire[name], `${spec}: ${name}`);
    const entry = pkg.exports[sub];
    assert.ok(entry.types, `${sub} has no types`);
    readFileSync(join(root, entry.types));
  }
});

test('import and require give the same exports (one addon, one set of classes)', () => {
  const cjs = require('tideq');
  const names = Object.keys(esm).filter((n) => n !== 'default').sort();
  assert.deepEqual(names, Object.keys(cjs).sort());
  assert.equal(esm.Queue, cjs.Queue);
  assert.equal(esm.default, cjs);
  assert.deepEqual(pkg.exports['.'], { types: './index.d.ts', import: './lib/index.mjs', require: './lib/index.js' });
});

test('the published package has no install script and ships no Rust sources', () => {
  assert.equal(pkg.scripts.install, undefined);
  assert.equal(pkg.scripts.postinstall, undefined);
  assert.equal(pkg.scripts.preinstall, undefined);
  for (const file of pkg.files) assert.doesNotMatch(file, /Cargo|src\/|\.rs$|\.node$/, `files lists ${file}`);
});

test('no addon for the platform: the error names the platform, its package, the npm bug and the build from source', () => {
  const dir2 = loaderAlone();
  try {
    let caught;
    try {
      createRequire(join(dir2, 'x.js'))('./lib/binding.js');
    } catch (e) {
      caught = e;
    }
    assert.ok(caught instanceof Error);
    assert.equal(caught.code, 'NOT_SUPPORTED');
    const platform = platformName();
    assert.match(caught.message, new RegExp(`no native addon for this platform \\(${platform}`));
    assert.ok(caught.message.includes(`${pkg.napi.packageName}-${platform}`), caught.message);
    assert.ok(caught.message.includes('https://github.com/npm/cli/issues/4828'), caught.message);
    assert.ok(caught.message.includes('npm install && npm run build'), caught.message);
    assert.ok(caught.message.includes('linux-x64-gnu, linux-arm64-gnu'), caught.message);
    assert.ok(caught.cause, 'the loader\'s own error is kept as the cause');
  } finally {
    rmSync(dir2, { recursive: true });
  }
});

test('an addon that is there but does not load: the error says it was found and why it failed', () => {
  const dir = loaderAlone();
  try {
    writeFileSync(join(dir, `${pkg.napi.binaryName}.${platformName()}.node`), 'not a shared library');
    let caught;
    try {
      createRequire(join(dir, 'x.js'))('./lib/binding.js');
    } catch (e) {
      caught = e;
    }
    assert.ok(caught instanceof Error);
    assert.equal(caught.code, 'NOT_SUPPORTED');
    assert.match(caught.message, new RegExp(`the native addon for ${platformName()} was found but failed to load: `));
    assert.doesNotMatch(caught.message, /is not installed/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
