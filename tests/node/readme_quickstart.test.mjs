// The README's Node.js quick start, as a user pastes it into a fresh project: it failed as the
// CommonJS file `npm init -y` gives ("Cannot use import statement outside a module"); the README
// now says it is an ES module, and how to write it in CommonJS. Both forms run here.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { ROOT, runNode, unique, useRedis } from './harness.mjs';

const redis = useRedis();
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('### Node.js'));
const block = section.slice(section.indexOf('```js\n') + 6, section.indexOf('\n```', section.indexOf('```js\n')));

/** A fresh `npm init -y` project where `tideq` is installed (this checkout). */
const project = mkdtempSync(join(tmpdir(), 'tideq-quickstart-'));
mkdirSync(join(project, 'node_modules'));
symlinkSync(ROOT, join(project, 'node_modules', 'tideq'));
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', main: 'index.js' }));
after(() => rmSync(project, { recursive: true, force: true }));

/** The block with its own queue name, so the runs do not share jobs. */
const own = (code) => code.replace("'emails-js'", `'${unique('quickstart')}'`);

test('the README says the Node.js quick start is an ES module, and how to write it in CommonJS', () => {
  assert.match(section.slice(0, section.indexOf('```js')), /ES module/);
  assert.match(section.slice(0, section.indexOf('```js')), /require\('tideq'\)/);
});

test('the Node.js quick start runs as pasted into app.mjs of a fresh npm init -y project', async () => {
  writeFileSync(join(project, 'app.mjs'), own(block));
  const r = await runNode([join(project, 'app.mjs')], { env: { TIDEQ_REDIS_URL: redis.url } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /sending to ada@example.com\n1\n/);
});

test('the Node.js quick start runs in CommonJS as the README says (require, in an async function)', async () => {
  const body = own(block).replace("import { Queue } from 'tideq';", '');
  const cjs = `const { Queue } = require('tideq');\n(async () => {\n${body}\n})();\n`;
  writeFileSync(join(project, 'app.js'), cjs);
  const r = await runNode([join(project, 'app.js')], { env: { TIDEQ_REDIS_URL: redis.url } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /sending to ada@example.com\n1\n/);
});
