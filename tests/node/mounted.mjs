// What the mounted dashboard's tests share (express.test.mjs, fastify.test.mjs,
// dashboard.test.mjs): an example app started as its own process on a free port, and HTTP
// requests with any headers (Host included, which fetch does not let a caller set).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';

import { ROOT } from './harness.mjs';

/** Starts `node examples/<file>` with PORT=0 and `env`; resolves with `{ port, base, stop }` once
 * it prints the address it listens on. */
export async function startExample(file, env = {}) {
  const child = spawn(process.execPath, [`examples/${file}`], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  const line = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${file} exited (${code}) before listening:\n${log}`)));
  });
  const base = /listening on (\S+)/.exec(line)?.[1];
  assert.ok(base, line);
  const port = Number(new URL(base).port);
  const stop = async () => {
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return exited;
  };
  return { port, base, stop, log: () => log };
}

/** One request to 127.0.0.1:`port`; resolves with `{ status, headers, body, json() }`. */
export function http(port, method, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A POST as the dashboard's page sends it (its header, a same-origin Origin). */
export function post(port, path, headers = {}) {
  return http(port, 'POST', path, { 'X-Tideq-Request': '1', Origin: `http://127.0.0.1:${port}`, ...headers });
}

/** The href and src attributes of a page. */
export function references(html) {
  return [...html.matchAll(/(?:href|src)="([^"]*)"/g)].map((m) => m[1]);
}

/** The checks every mounted dashboard passes, run against an example app mounted at `/tideq`
 * whose login reads X-User (alice acts, bob reads). */
export async function checkMounted(app, queue) {
  const { port } = app;
  // No user: the page, its assets and its API are refused.
  for (const path of ['/tideq/', '/tideq/app.js', '/tideq/api/overview']) {
    const r = await http(port, 'GET', path);
    assert.equal(r.status, 403, path);
    assert.match(r.json().error, /authorize hook/);
  }
  const bob = { 'X-User': 'bob' };
  const alice = { 'X-User': 'alice' };
  const overview = (await http(port, 'GET', '/tideq/api/overview', bob)).json();
  assert.equal(overview.read_only, true);
  assert.ok(overview.queues.some((q) => q.name === queue.name), JSON.stringify(overview));
  const pause = `/tideq/api/queues/${encodeURIComponent(queue.name)}/pause`;
  assert.equal((await post(port, pause, bob)).status, 403);
  assert.equal((await queue.stats()).paused, false);
  assert.equal((await http(port, 'GET', '/tideq/api/overview', alice)).json().read_only, false);

  // The Host and cross-site guards.
  let r = await http(port, 'GET', '/tideq/api/overview', { ...alice, Host: 'attacker.example' });
  assert.equal(r.status, 403);
  assert.match(r.json().error, /allowed_hosts/);
  r = await http(port, 'POST', pause, alice);
  assert.equal(r.status, 403);
  assert.match(r.json().error, /X-Tideq-Request/);
  r = await post(port, pause, { ...alice, Origin: 'http://attacker.example' });
  assert.equal(r.status, 403);
  assert.match(r.json().error, /cross-origin/);
  assert.equal((await queue.stats()).paused, false, 'nothing changed');

  r = await post(port, pause, alice);
  assert.equal(r.status, 200, r.body);
  assert.equal((await queue.stats()).paused, true);

  // The prefix: without its '/' it redirects; every link of the page resolves under it.
  r = await http(port, 'GET', '/tideq?x=1', bob);
  assert.equal(r.status, 308);
  assert.equal(r.headers.location, '/tideq/?x=1');
  const page = await http(port, 'GET', '/tideq/', bob);
  assert.equal(page.status, 200);
  assert.equal(page.headers['x-frame-options'], 'DENY');
  const refs = references(page.body).filter((ref) => !ref.startsWith('#') && !ref.startsWith('data:'));
  assert.ok(refs.length >= 2, refs.join());
  for (const ref of refs) {
    assert.ok(!ref.startsWith('/'), ref);
    assert.equal((await http(port, 'GET', `/tideq/${ref}`, bob)).status, 200, ref);
  }
  // The host app's own routes are untouched.
  assert.equal((await http(port, 'GET', '/')).body, 'the app');
}
