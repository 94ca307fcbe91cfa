// The SIGKILL scenario of `npx tideq worker`, shared by worker_cli.test.mjs (3,000 jobs, ~8 s) and
// worker_cli_long.test.mjs (20,000 jobs, 30 s): two children run short jobs with a 3 s lease while
// the test SIGKILLs one of them every second. Every job must complete, none may run twice at once
// (a job starts again only after its run ended or its process was killed), and the supervisor
// must end with two children again.
import assert from 'node:assert/strict';

import { sleep, unique } from './harness.mjs';
import { checkLedger, childrenOf, enqueueJobs, readLedger, recordKill, startCli, taskModule, tmpDir, until, writeModule } from './worker_fixtures.mjs';

export async function chaos(t, redis, { jobs, seconds }) {
  const dir = tmpDir(t);
  const ledger = `${dir}/ledger`;
  const name = unique('jq');
  writeModule(dir, 'tasks.mjs', taskModule({ ledger, queues: { [name]: { kind: 'entry', ms: 20, leaseMs: 3000 } } }));
  const q = await enqueueJobs(redis.url, name, jobs);
  const run = startCli(['./tasks.mjs', '--processes', '2', '--concurrency', '4', '--shutdown-grace', '10'], {
    t,
    cwd: dir,
    env: { TIDEQ_REDIS_URL: redis.url },
    timeoutMs: (seconds + 240) * 1000,
  });
  // Only a child that has run jobs for a second is killed: one killed before it said it was ready
  // would count as a failure to start (three in a row stop the command).
  const firstSeen = new Map();
  let kills = 0;
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    await sleep(1000);
    const now = Date.now();
    for (const r of readLedger(ledger)) if (r.kind === 'S' && !firstSeen.has(r.pid)) firstSeen.set(r.pid, now);
    const victims = childrenOf(run.proc.pid).filter((p) => firstSeen.has(p) && now - firstSeen.get(p) >= 1000);
    if (victims.length === 0) continue;
    const victim = victims[kills % victims.length];
    recordKill(ledger, victim);
    process.kill(victim, 'SIGKILL');
    kills++;
  }
  // The supervisor's restart backoff grows while children keep dying (up to 10 s): fewer kills
  // than seconds.
  assert.ok(kills >= Math.max(3, Math.floor(seconds / 5)), `only ${kills} kills in ${seconds} s; stderr: ${run.err()}`);
  await until(async () => (await q.stats()).completed === jobs, async () => `${jobs} completed (${JSON.stringify(await q.stats())}); stderr: ${run.err().slice(-2000)}`, 180_000, 200);
  await until(() => childrenOf(run.proc.pid).length === 2, () => `two children again; stderr: ${run.err().slice(-2000)}`, 30_000);
  run.proc.kill('SIGTERM');
  const res = await run.done;
  assert.equal(res.code, 0, res.stderr.slice(-2000));
  const runs = checkLedger(readLedger(ledger));
  assert.equal(runs.started.size, jobs);
  assert.equal(runs.ended.size, jobs, 'every job ended in a process that was not killed');
  assert.deepEqual([...runs.open.keys()], []);
  const stats = await q.stats();
  assert.equal(stats.completed, jobs);
  assert.equal(stats.dead, 0);
  return { kills, children: runs.pids.size };
}
