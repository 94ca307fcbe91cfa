// The npm package as it is published (scripts/npm-packages.mjs packs it; scripts/release-check.sh
// installs it from a registry): one set of exports for `import` and `require`, no install script,
// no Rust sources, and, where no addon fits the platform, an error that says which platform, which
// package would hold its addon and what to do.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import * as esm from 'tideq';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const require = createRequire(import.meta.url);

/** napi's name for this platform, as binding.js computes it. */
function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'}`;
  return platform === 'win32' ? `win32-${arch}-msvc` : `${platform}-${arch}`;
}

/** The package's loader files, alone in a fresh directory (no addon, no node_modules). */
function loaderAlone() {
  const dir = mkdtempSync(join(tmpdir(), 'tideq-loader-'));
  for (const file of ['binding.js', 'native.js', 'package.json']) copyFileSync(join(root, file), join(dir, file));
  return dir;
}

test('import and require give the same exports (one addon, one set of classes)', () => {
  const cjs = require('tideq');
  const names = Object.keys(esm).filter((n) => n !== 'default').sort();
  assert.deepEqual(names, Object.keys(cjs).sort());
  assert.equal(esm.Queue, cjs.Queue);
  assert.equal(esm.default, cjs);
  assert.deepEqual(pkg.exports['.'], { types: './index.d.ts', import: './index.mjs', require: './index.js' });
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
      createRequire(join(dir2, 'x.js'))('./binding.js');
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
      createRequire(join(dir, 'x.js'))('./binding.js');
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
