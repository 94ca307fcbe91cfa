// Test harness for the Node binding: a real redis-server per test file, started on a free
// loopback port in a temporary directory and stopped afterwards (its log is printed when a test
// failed), or the server named by TIDEQ_TEST_REDIS_URL. Tests isolate by unique queue names and
// key prefixes; nothing here ever flushes a database.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before } from 'node:test';

const require = createRequire(import.meta.url);
export const ROOT = new URL('../..', import.meta.url).pathname;
export const tideq = require(join(ROOT, 'lib', 'index.js'));

/** The error codes of index.d.ts's `ErrorCode` union, in its order (types.test.mjs checks them
 * against the core's; `rejectsWith` checks every code it sees is one of them). */
export const errorCodes = (() => {
  const dts = readFileSync(join(ROOT, 'index.d.ts'), 'utf8');
  const union = /^export type ErrorCode =((?:\s*\|\s*'[A-Z_]+')+)/m.exec(dts);
  if (!union) throw new Error('index.d.ts declares no ErrorCode union');
  return [...union[1].matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]);
})();

/** A unique name for a queue, group or key prefix, so tests never share keys. */
export function unique(what = 'q') {
  return `${what}-${randomUUID().slice(0, 8)}`;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A loopback port nobody listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function encode(args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const bytes = Buffer.isBuffer(a) ? a : Buffer.from(String(a));
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

// Parses one RESP2 reply from buf at offset i; returns [value, next] or null when incomplete.
function parse(buf, i) {
  const eol = buf.indexOf('\r\n', i);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[i]);
  const line = buf.toString('utf8', i + 1, eol);
  const next = eol + 2;
  if (type === '+') return [line, next];
  if (type === '-') return [new Error(line), next];
  if (type === ':') return [Number(line), next];
  if (type === '$') {
    const len = Number(line);
    if (len < 0) return [null, next];
    if (buf.length < next + len + 2) return null;
    return [buf.toString('utf8', next, next + len), next + len + 2];
  }
  if (type === '*') {
    const n = Number(line);
    if (n < 0) return [null, next];
    const items = [];
    let at = next;
    for (let k = 0; k < n; k++) {
      const r = parse(buf, at);
      if (!r) return null;
      items.push(r[0]);
      at = r[1];
    }
    return [items, at];
  }
  throw new Error(`unexpected RESP type ${type}`);
}

/**
 * Sends one command to Redis with a throwaway connection, independent of the binding, so tests
 * can look at the keys directly (e.g. "nothing was written"). Arguments are strings, numbers or
 * Buffers (sent as they are).
 */
export function redisCommand(url, ...args) {
  const u = new URL(url);
  const pre = [];
  if (u.password) pre.push(u.username ? ['AUTH', decodeURIComponent(u.username), decodeURIComponent(u.password)] : ['AUTH', decodeURIComponent(u.password)]);
  const db = u.pathname.replace('/', '');
  if (db) pre.push(['SELECT', db]);
  const cmds = [...pre, args];
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port || 6379), u.hostname);
    let buf = Buffer.alloc(0);
    const replies = [];
    sock.setTimeout(5000, () => sock.destroy(new Error('redis command timed out')));
    sock.on('error', reject);
    sock.on('connect', () => sock.write(Buffer.concat(cmds.map(encode))));
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let at = 0;
      let r;
      while (replies.length < cmds.length && (r = parse(buf, at))) {
        replies.push(r[0]);
        at = r[1];
      }
      buf = buf.subarray(at);
      if (replies.length === cmds.length) {
        sock.end();
        const last = replies[replies.length - 1];
        if (last instanceof Error) reject(last);
        else resolve(last);
      }
    });
  });
}

/** Every key starting with `prefix:` (the key prefix of a test's Client). */
export async function keysWithPrefix(url, prefix) {
  return redisCommand(url, 'KEYS', `${prefix}:*`);
}

/**
 * Starts a private redis-server (with `args` added to its command line, e.g. `--requirepass x`)
 * on a free loopback port; resolves with `{ url, log, stop }`. `password` is what the harness's
 * own connection uses to see that it is up.
 */
export async function startRedis(args = [], { password } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tideq-node-test-'));
  const port = await freePort();
  const logfile = join(dir, 'redis.log');
  const proc = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', logfile, ...args],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const url = `redis://127.0.0.1:${port}`;
  const authed = password ? `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}` : url;
  const log = () => {
    try {
      return readFileSync(logfile, 'utf8');
    } catch {
      return '(no log)';
    }
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await redisCommand(authed, 'PING')) === 'PONG') break;
    } catch (err) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`redis-server did not start on port ${port}: ${err.message}\n${log()}`);
      }
      await sleep(20);
    }
  }
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, log, stop };
}

/**
 * Registers hooks giving the current test file a Redis: `redis.url` is set before the first
 * test. A private server is started unless TIDEQ_TEST_REDIS_URL is set.
 */
export function useRedis() {
  const redis = { url: process.env.TIDEQ_TEST_REDIS_URL || '' };
  let server = null;
  let failed = false;
  before(async () => {
    if (!redis.url) {
      server = await startRedis();
      redis.url = server.url;
    }
  });
  afterEach((t) => {
    if (!t.passed) failed = true;
  });
  after(async () => {
    if (!server) return;
    if (failed) console.error(`--- redis-server log (${server.url}) ---\n${server.log()}`);
    await server.stop();
  });
  return redis;
}

/** A queue on a fresh Client with its own key prefix; `prefix` lets a test inspect its keys. */
export function freshQueue(url, options = {}, clientOptions = {}) {
  const prefix = unique('t');
  const client = new tideq.Client({ url, prefix, ...clientOptions });
  const queue = new tideq.CappedQueue(unique('q'), { client, ...options });
  return { queue, client, prefix };
}

/** A job queue on a fresh Client with its own key prefix; `prefix` lets a test inspect its keys. */
export function freshJobQueue(url, options = {}, clientOptions = {}) {
  const prefix = unique('t');
  const client = new tideq.Client({ url, prefix, ...clientOptions });
  const queue = new tideq.Queue(unique('jq'), { client, ...options });
  return { queue, client, prefix };
}

/** Redis server time in ms, read with `redis-cli TIME` (synchronously, e.g. inside a handler). */
export function redisTimeSync(url) {
  const u = new URL(url);
  const [s, us] = execFileSync('redis-cli', ['-h', u.hostname, '-p', u.port || '6379', 'TIME'], { encoding: 'utf8' })
    .trim()
    .split(/\s+/)
    .map(Number);
  return s * 1000 + Math.floor(us / 1000);
}

/** Redis server time in ms (async, over the harness's own connection). */
export async function redisTime(url) {
  const [s, us] = (await redisCommand(url, 'TIME')).map(Number);
  return s * 1000 + Math.floor(us / 1000);
}

/** Resolves once `cond()` is true; rejects after `timeoutMs`. */
export async function waitFor(cond, what, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Runs `node` with `args`; resolves with { code, signal, stdout, stderr }. */
export function runNode(args, { env = {}, timeoutMs = 30_000, onSpawn } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`node ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (onSpawn) onSpawn(child, () => stdout);
  });
}

/** Asserts that `fn()` rejects (or throws) an error with `code`, and of class `cls`. */
export async function rejectsWith(fn, code, cls = Error, messagePart) {
  let caught;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught, `expected an error with code ${code}`);
  assert.equal(caught.code, code, `code of ${caught}`);
  assert.ok(errorCodes.includes(caught.code), `${caught.code} is not in index.d.ts's ErrorCode`);
  assert.ok(caught instanceof cls, `${caught} is not a ${cls.name}`);
  if (messagePart) assert.match(caught.message, messagePart);
  return caught;
}
