// `npx tideq worker --health ADDR`: /livez answers 200 while the supervisor runs; /readyz 200 when
// every child is connected and leasing, 503 while Redis is stopped, 200 again once it is back.
// Runs its own redis-server on a fixed port, to stop it and start it again there.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { freePort, redisCommand, sleep, unique } from './harness.mjs';
import { childrenOf, startCli, taskModule, tmpDir, until, writeModule } from './worker_fixtures.mjs';

/** redis-server on `port`; resolves once it answers PING. `stop()` SIGTERMs it and waits. */
async function redisOn(port, dir) {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const url = `redis://127.0.0.1:${port}`;
  await until(async () => (await redisCommand(url, 'PING').catch(() => null)) === 'PONG', `redis-server on ${port}`, 10_000, 20);
  return {
    url,
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

async function status(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.status;
  } catch {
    return 0;
  }
}

test('/readyz is 503 while Redis is stopped and 200 once it is back; /livez stays 200', async (t) => {
  const dir = tmpDir(t);
  const data = mkdtempSync(join(tmpdir(), 'tideq-redis-'));
  t.after(() => rmSync(data, { recursive: true, force: true }));
  const port = await freePort();
  let server = await redisOn(port, data);
  t.after(() => server.stop());
  const name = unique('jq');
  writeModule(dir, 'tasks.mjs', taskModule({ ledger: `${dir}/ledger`, queues: { [name]: { kind: 'handler' } } }));
  const hport = await freePort();
  const base = `http://127.0.0.1:${hport}`;
  const run = startCli(['./tasks.mjs', '--processes', '2', '--url', server.url, '--health', `127.0.0.1:${hport}`], { t, cwd: dir, timeoutMs: 180_000 });
  await until(async () => (await status(`${base}/readyz`)) === 200, () => `/readyz 200; stderr: ${run.err()}`, 30_000, 100);
  assert.equal(await status(`${base}/livez`), 200);
  assert.equal(childrenOf(run.proc.pid).length, 2);
  await server.stop();
  await until(async () => (await status(`${base}/readyz`)) === 503, () => `/readyz 503; stderr: ${run.err()}`, 60_000, 100);
  assert.equal(await status(`${base}/livez`), 200);
  server = await redisOn(port, data);
  await until(async () => (await status(`${base}/readyz`)) === 200, () => `/readyz 200 again; stderr: ${run.err()}`, 60_000, 100);
  assert.equal(childrenOf(run.proc.pid).length, 2, 'the children rode out the outage');
  run.proc.kill('SIGTERM');
  const res = await run.done;
  assert.equal(res.code, 0, res.stderr);
  await sleep(0);
});
