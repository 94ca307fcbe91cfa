// The `tideq` command of the npm package runs the Rust command line (the same code as the
// `tideq` binary): one test per promise, against a real redis-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freshJobQueue, useRedis } from './harness.mjs';

const redis = useRedis();

const bin = fileURLToPath(new URL('../../bin/tideq.js', import.meta.url));

function tideq(args) {
  return spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
}

test('the tideq bin lists queues and stats as the binary does', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'a' });
  let out = tideq(['--url', redis.url, '--prefix', prefix, 'stats', queue.name, '--json']);
  assert.equal(out.status, 0, out.stderr);
  assert.equal(JSON.parse(out.stdout).ready, 1);
  out = tideq(['--url', redis.url, '--prefix', prefix, 'queues', '--json']);
  const [line] = JSON.parse(out.stdout);
  assert.deepEqual([line.kind, line.name, line.shards, line.ready], ['jobs', queue.name, 1, 1]);
});

test('the tideq bin exits with the command line\'s codes', () => {
  let out = tideq(['--version']);
  assert.equal(out.status, 0);
  assert.match(out.stdout, /^tideq /);
  out = tideq(['no-such-command']);
  assert.equal(out.status, 2);
  assert.match(out.stderr, /no-such-command/);
});
