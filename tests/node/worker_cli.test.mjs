// `npx tideq worker` (bin/tideq.js: the Rust supervisor, its children node lib/worker.js) as real
// processes against a real redis-server: processes, SIGTERM, SIGKILLed children, recycling by job
// count and by memory, a broken task module, SIGHUP, several queues in one process. Every job's
// start and end is in a ledger the handlers append to (worker_fixtures.mjs), so "no job lost" and
// "none ran twice at once" are checked job by job. Health and the long variants:
// worker_cli_health.test.mjs, worker_cli_long.test.mjs.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

import { unique, useRedis } from './harness.mjs';
import {
  checkLedger,
  childrenOf,
  enqueueJobs,
  readLedger,
  rssOf,
  startCli,
  taskModule,
  tmpDir,
  until,
  writeModule,
} from './worker_fixtures.mjs';
import { chaos } from './worker_chaos.mjs';

const redis = useRedis();

/** A task module with queue `name` ({ queue, handler, options: { leaseMs } }) in a fresh dir. */
function setup(t, queues, { cjs = false } = {}) {
  const dir = tmpDir(t);
  const ledger = `${dir}/ledger`;
  const file = cjs ? 'tasks.cjs' : 'tasks.mjs';
  writeModule(dir, file, taskModule({ ledger, queues, cjs }));
  return { dir, ledger, target: `./${file}`, env: { TIDEQ_REDIS_URL: redis.url } };
}

const completed = async (q) => (await q.stats()).completed;

/** SIGTERMs the supervisor and asserts it exits 0 leaving no child behind. */
async function stop(run) {
  const kids = childrenOf(run.proc.pid);
  run.proc.kill('SIGTERM');
  const res = await run.done;
  assert.equal(res.code, 0, `exit ${res.code} ${res.signal}; stderr: ${res.stderr}`);
  for (const pid of kids) assert.equal(existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker.js'), false, `child ${pid} still runs`);
  return res;
}

for (const cjs of [false, true]) {
  test(`--processes 2 (${cjs ? 'CommonJS' : 'ES module'} tasks): two children run every job`, async (t) => {
    const name = unique('jq');
    const s = setup(t, { [name]: { kind: cjs ? 'tasks' : 'handler', ms: 5 } }, { cjs });
    const q = await enqueueJobs(redis.url, name, 400, cjs ? 'work' : undefined);
    const run = startCli([s.target, '--processes', '2', '--concurrency', '4', '--url', redis.url], { t, cwd: s.dir, env: s.env });
    await until(() => childrenOf(run.proc.pid).length === 2, () => `two children; stderr: ${run.err()}`);
    await until(async () => (await completed(q)) === 400, () => `400 jobs completed; stderr: ${run.err()}`, 60_000);
    await stop(run);
    const runs = checkLedger(readLedger(s.ledger), { killed: false });
    assert.equal(runs.started.size, 400);
    assert.equal(runs.ended.size, 400);
  });
}

test('SIGTERM mid-run: every child finishes its running jobs and the command exits 0', async (t) => {
  const name = unique('jq');
  const s = setup(t, { [name]: { kind: 'handler', ms: 600 } });
  const q = await enqueueJobs(redis.url, name, 40);
  const run = startCli([s.target, '--processes', '2', '--concurrency', '2', '--shutdown-grace', '30', '--url', redis.url], { t, cwd: s.dir, env: s.env });
  await until(() => new Set(readLedger(s.ledger).map((r) => r.pid)).size === 2, () => `both children running jobs; stderr: ${run.err()}`);
  await stop(run);
  const runs = checkLedger(readLedger(s.ledger), { killed: false });
  assert.ok(runs.started.size >= 2, `started ${runs.started.size}`);
  const stats = await q.stats();
  assert.equal(stats.active, 0);
  assert.equal(stats.completed, runs.ended.size);
  assert.equal(stats.completed + stats.ready, 40, 'no job lost');
});

test('SIGKILL of a child every second while 3,000 jobs run: every job completes, none twice at once, two children again', async (t) => {
  const { kills, children } = await chaos(t, redis, { jobs: 3_000, seconds: 8 });
  t.diagnostic(`${kills} kills, ${children} children ran jobs`);
});

test('--max-jobs-per-process: each child runs at most that many jobs, then a fresh one takes its place', async (t) => {
  const name = unique('jq');
  const s = setup(t, { [name]: { kind: 'handler', ms: 5 } });
  const q = await enqueueJobs(redis.url, name, 300);
  const run = startCli([s.target, '--processes', '2', '--concurrency', '4', '--max-jobs-per-process', '40', '--url', redis.url], { t, cwd: s.dir, env: s.env });
  await until(async () => (await completed(q)) === 300, () => `300 jobs completed; stderr: ${run.err()}`, 90_000);
  await until(() => childrenOf(run.proc.pid).length === 2, 'two children');
  await stop(run);
  const runs = checkLedger(readLedger(s.ledger), { killed: false });
  assert.equal(runs.started.size, 300);
  for (const [pid, n] of runs.pids) assert.ok(n <= 40, `child ${pid} ran ${n} jobs`);
  t.diagnostic(`${runs.pids.size} children ran jobs, at most ${Math.max(...runs.pids.values())} each`);
  assert.ok(runs.pids.size >= 8, `${runs.pids.size} children ran jobs`);
});

test('--max-memory-per-process: a child leaking 5 MB a job is recycled, its RSS bounded, no job lost', async (t) => {
  const name = unique('jq');
  const s = setup(t, { [name]: { kind: 'handler', ms: 40, leakMb: 5 } });
  const q = await enqueueJobs(redis.url, name, 200);
  const run = startCli([s.target, '--processes', '1', '--concurrency', '1', '--max-memory-per-process', '200MB', '--url', redis.url], { t, cwd: s.dir, env: s.env });
  let maxRss = 0;
  await until(
    async () => {
      for (const pid of childrenOf(run.proc.pid)) maxRss = Math.max(maxRss, rssOf(pid));
      return (await completed(q)) === 200;
    },
    () => `200 jobs completed; stderr: ${run.err()}`,
    120_000,
  );
  await stop(run);
  const runs = checkLedger(readLedger(s.ledger), { killed: false });
  assert.equal(runs.started.size, 200);
  // 200 jobs leak 1 GB in one process: recycling keeps each child far below.
  t.diagnostic(`${runs.pids.size} children ran jobs; largest RSS seen ${Math.round(maxRss / 1048576)} MB`);
  assert.ok(runs.pids.size >= 3, `${runs.pids.size} children ran jobs`);
  assert.ok(maxRss < 700 * 1024 * 1024, `a child reached ${Math.round(maxRss / 1048576)} MB`);
});

for (const [what, text, pattern] of [
  ['a syntax error', 'export default {\n  emails: (job) => job.id +,\n};\n', /SyntaxError/],
  ['an error thrown at import', 'throw new Error("boom at import");\n', /boom at import/],
]) {
  test(`a task module with ${what}: the command exits non-zero with the error, having started at most 3 children`, async (t) => {
    const dir = tmpDir(t);
    writeModule(dir, 'broken.mjs', text);
    const counter = `${dir}/started`;
    writeModule(dir, 'count.cjs', `require('node:fs').appendFileSync(${JSON.stringify(counter)}, process.argv[1] + '\\n');\n`);
    const run = startCli(['./broken.mjs', '--url', redis.url], {
      t,
      cwd: dir,
      env: { NODE_OPTIONS: `--require ${dir}/count.cjs` },
      timeoutMs: 60_000,
    });
    const res = await run.done;
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, pattern);
    const children = readFileSync(counter, 'utf8').split('\n').filter((l) => l.endsWith('worker.js'));
    t.diagnostic(`${children.length} children started`);
    assert.ok(children.length >= 1 && children.length <= 3, `${children.length} children started`);
  });
}

test('SIGHUP replaces every child, one at a time, and no job is lost', async (t) => {
  const name = unique('jq');
  const s = setup(t, { [name]: { kind: 'handler', ms: 20 } });
  const q = await enqueueJobs(redis.url, name, 1_500);
  const run = startCli([s.target, '--processes', '2', '--concurrency', '4', '--url', redis.url], { t, cwd: s.dir, env: s.env });
  await until(() => new Set(readLedger(s.ledger).map((r) => r.pid)).size === 2, () => `both children running jobs; stderr: ${run.err()}`);
  const before = childrenOf(run.proc.pid);
  assert.equal(before.length, 2);
  run.proc.kill('SIGHUP');
  await until(
    () => {
      const now = childrenOf(run.proc.pid);
      return now.length === 2 && now.every((p) => !before.includes(p));
    },
    () => `two new children; stderr: ${run.err()}`,
    60_000,
  );
  await until(async () => (await completed(q)) === 1_500, () => `1500 jobs completed; stderr: ${run.err()}`, 90_000);
  await stop(run);
  const runs = checkLedger(readLedger(s.ledger), { killed: false });
  assert.equal(runs.started.size, 1_500);
  assert.equal(runs.ended.size, 1_500);
  for (const pid of before) assert.ok(runs.pids.has(pid), `old child ${pid} ran jobs`);
  assert.ok(runs.pids.size >= 4, `${runs.pids.size} children ran jobs`);
  t.diagnostic(`${runs.pids.size} children ran jobs`);
});

test('--queues a=2,b=1: one process serves two queues, each with its own concurrency', async (t) => {
  const [a, b, c] = [unique('a'), unique('b'), unique('c')];
  const s = setup(t, { [a]: { kind: 'handler', ms: 40 }, [b]: { kind: 'tasks', ms: 40 }, [c]: { kind: 'handler' } });
  const qa = await enqueueJobs(redis.url, a, 30);
  const qb = await enqueueJobs(redis.url, b, 15, 'work');
  const qc = await enqueueJobs(redis.url, c, 5);
  const run = startCli([s.target, '--queues', `${a}=2,${b}=1`, '--url', redis.url], { t, cwd: s.dir, env: s.env });
  await until(async () => (await completed(qa)) === 30 && (await completed(qb)) === 15, () => `both queues drained; stderr: ${run.err()}`, 60_000);
  await stop(run);
  const runs = checkLedger(readLedger(s.ledger), { killed: false });
  assert.equal(runs.pids.size, 1, 'one process');
  assert.equal(runs.maxConcurrent.get(a), 2);
  assert.equal(runs.maxConcurrent.get(b), 1);
  assert.equal((await qc.stats()).ready, 5, 'queue c was not served');
});

test("the children's stdout is the command's: a handler's console.log lines arrive", async (t) => {
  const dir = tmpDir(t);
  const name = unique('jq');
  writeModule(dir, 'tasks.cjs', `module.exports = { ${JSON.stringify(name)}: (job) => { console.log('handled ' + job.id); } };\n`);
  const q = await enqueueJobs(redis.url, name, 5);
  const run = startCli(['./tasks.cjs', '--processes', '2', '--url', redis.url], { t, cwd: dir });
  await until(() => (run.out().match(/^handled /gm) ?? []).length === 5, () => `5 lines on stdout; stdout: ${run.out()}; stderr: ${run.err()}`);
  assert.equal((await q.stats()).completed, 5);
  await stop(run);
});

test('SIGTTIN starts one child more, SIGTTOU stops one', async (t) => {
  const name = unique('jq');
  const s = setup(t, { [name]: { kind: 'handler', ms: 5 } });
  const run = startCli([s.target, '--processes', '2', '--url', redis.url], { t, cwd: s.dir, env: s.env });
  await until(() => childrenOf(run.proc.pid).length === 2, () => `two children; stderr: ${run.err()}`);
  run.proc.kill('SIGTTIN');
  await until(() => childrenOf(run.proc.pid).length === 3, () => `three children; stderr: ${run.err()}`);
  // One at a time: two signals sent together may arrive as one.
  run.proc.kill('SIGTTOU');
  await until(() => childrenOf(run.proc.pid).length === 2, () => `two children; stderr: ${run.err()}`);
  run.proc.kill('SIGTTOU');
  await until(() => childrenOf(run.proc.pid).length === 1, () => `one child; stderr: ${run.err()}`);
  const q = await enqueueJobs(redis.url, name, 50);
  await until(async () => (await completed(q)) === 50, () => `50 jobs completed; stderr: ${run.err()}`);
  await stop(run);
});
