// TLS (`rediss://`) through the Node binding, against a real redis-server serving TLS only with a
// certificate from a private CA made here with the openssl CLI: the `tlsCa` client option (PEM
// contents as a string or Buffer) makes it trusted, verification stays on without it, and a bad
// `tlsCa` is refused. Mirrors core/tests/tls.rs.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';

import { freePort, rejectsWith, sleep, tideq, unique } from './harness.mjs';

const { Client, CappedQueue, Queue } = tideq;
const drained = { stopWhenDrained: true, pollIntervalMs: 100 };

/**
 * A private CA and a server certificate it signed for 127.0.0.1 and localhost (like
 * `make_certs()` in testing/src/server.rs), plus a second, unrelated CA.
 */
function makeCerts(dir) {
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const args of [
    'req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tideq-test-ca -keyout ca.key -out ca.pem',
    'req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout key.pem -out server.csr',
    'x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out cert.pem -extfile ext.cnf',
    'req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tideq-other-ca -keyout other-ca.key -out other-ca.pem',
  ]) {
    execFileSync('openssl', args.split(' '), { cwd: dir, stdio: 'ignore', timeout: 30_000 });
  }
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

const server = { dir: '', port: 0, url: '', ca: '', otherCa: '', proc: null, exited: null, failed: false };

// Where the test command found the redis-server built without TLS (scripts/test-valkey.sh sets
// TIDEQ_TEST_NO_TLS to the reason), the tests that need a TLS server are skipped, saying why.
const noTls = process.env.TIDEQ_TEST_NO_TLS || false;

before(async () => {
  server.dir = mkdtempSync(join(tmpdir(), 'tideq-node-tls-'));
  makeCerts(server.dir);
  server.ca = readFileSync(join(server.dir, 'ca.pem'), 'utf8');
  server.otherCa = readFileSync(join(server.dir, 'other-ca.pem'), 'utf8');
  server.port = await freePort();
  server.url = `rediss://127.0.0.1:${server.port}`;
  if (noTls) return;
  // TLS only: the plain port is off.
  server.proc = spawn(
    'redis-server',
    [
      '--port', '0', '--tls-port', String(server.port), '--bind', '127.0.0.1',
      '--save', '', '--appendonly', 'no', '--dir', server.dir, '--logfile', join(server.dir, 'redis.log'),
      '--tls-cert-file', 'cert.pem', '--tls-key-file', 'key.pem', '--tls-ca-cert-file', 'ca.pem',
      '--tls-auth-clients', 'no',
    ],
    { cwd: server.dir, stdio: 'ignore' },
  );
  server.exited = new Promise((resolve) => server.proc.once('exit', resolve));
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(server.port))) {
    if (server.proc.exitCode !== null || Date.now() > deadline) {
      throw new Error(`TLS redis-server did not start on port ${server.port}\n${log()}`);
    }
    await sleep(20);
  }
});

function log() {
  try {
    return readFileSync(join(server.dir, 'redis.log'), 'utf8');
  } catch {
    return '(no log)';
  }
}

afterEach((t) => {
  if (!t.passed) server.failed = true;
});

after(async () => {
  if (server.proc && server.proc.exitCode === null) {
    if (server.failed) console.error(`--- TLS redis-server log (${server.url}) ---\n${log()}`);
    server.proc.kill('SIGTERM');
    const timer = setTimeout(() => server.proc.kill('SIGKILL'), 5000);
    await server.exited;
    clearTimeout(timer);
  }
  if (server.dir) rmSync(server.dir, { recursive: true, force: true });
});

test('with tlsCa as a PEM string, a job is enqueued and processed over rediss://', { skip: noTls }, async () => {
  const client = new Client({ url: server.url, prefix: unique('t'), tlsCa: server.ca });
  await client.ping();
  const queue = new Queue(unique('jq'), { client });
  const { id, created } = await queue.enqueue(Buffer.from('over tls'));
  assert.equal(created, true);
  const seen = [];
  const stats = await queue.work((job) => seen.push([job.id, job.text()]), drained).join();
  assert.deepEqual(seen, [[id, 'over tls']]);
  assert.equal(stats.completed, 1);
  assert.equal((await queue.get(id)).state, 'completed');
});

test('with tlsCa as a Buffer, a capped queue pushes and pops over rediss://', { skip: noTls }, async () => {
  const ca = readFileSync(join(server.dir, 'ca.pem'));
  assert.ok(Buffer.isBuffer(ca));
  const client = new Client({ url: server.url, prefix: unique('t'), tlsCa: ca });
  const queue = new CappedQueue(unique('q'), { client });
  assert.equal(await queue.push('g', 'over tls'), 0);
  assert.deepEqual((await queue.popBatch('g', 10)).map(String), ['over tls']);
});

test('without tlsCa, or with another CA, the private certificate is rejected with CONNECTION (verification is on)', { skip: noTls }, async () => {
  for (const options of [{}, { tlsCa: server.otherCa }]) {
    const client = new Client({ url: server.url, prefix: unique('t'), connectTimeoutMs: 2000, ...options });
    await rejectsWith(() => client.ping(), 'CONNECTION');
    const queue = new Queue(unique('jq'), { client });
    await rejectsWith(() => queue.enqueue(Buffer.from('x')), 'CONNECTION');
  }
  // Plain redis:// to the TLS-only port fails the same way.
  const plain = new Client({ url: `redis://127.0.0.1:${server.port}`, connectTimeoutMs: 2000 });
  await rejectsWith(() => plain.ping(), 'CONNECTION');
});

test('a tlsCa that is not PEM certificates, or with a plain redis:// URL, is refused with INVALID_ARGUMENT, in every mode', async () => {
  const notPem = ['not a pem', Buffer.from('not a pem'), '', new Uint8Array([1, 2, 3])];
  for (const tlsCa of notPem) {
    await rejectsWith(() => new Client({ url: server.url, tlsCa }), 'INVALID_ARGUMENT', Error, /PEM/);
    await rejectsWith(() => new Client({ cluster: ['rediss://127.0.0.1:7000'], tlsCa }), 'INVALID_ARGUMENT', Error, /PEM/);
    await rejectsWith(
      () => new Client({ sentinel: { sentinels: ['rediss://127.0.0.1:26379'], masterName: 'm' }, tlsCa }),
      'INVALID_ARGUMENT',
      Error,
      /PEM/,
    );
  }
  // A CA for a plain redis:// URL is a mistake (it would not be used): refused too.
  await rejectsWith(() => new Client({ url: `redis://127.0.0.1:${server.port}`, tlsCa: server.ca }), 'INVALID_ARGUMENT', Error, /rediss:\/\//);
  // Valid PEM is accepted in every mode (nothing connects until the first command); null and
  // undefined mean "not given".
  new Client({ cluster: ['rediss://127.0.0.1:7000'], tlsCa: server.ca });
  new Client({ sentinel: { sentinels: ['rediss://127.0.0.1:26379'], masterName: 'm' }, tlsCa: server.ca });
  new Client({ url: server.url, tlsCa: null });
  new Client({ url: server.url, tlsCa: undefined });
});

test('a tlsCa that is not a string or Buffer is a TypeError with code INVALID_ARGUMENT', async () => {
  for (const tlsCa of [123, true, { pem: server.ca }, [server.ca], new Float32Array(2)]) {
    const err = await rejectsWith(
      () => new Client({ url: server.url, tlsCa }),
      'INVALID_ARGUMENT',
      TypeError,
      /Client options\.tlsCa must be a Buffer, Uint8Array or string/,
    );
    assert.match(err.message, /got /);
  }
});
