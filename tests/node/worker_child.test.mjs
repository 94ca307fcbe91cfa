// lib/worker.js, the child process `npx tideq worker` starts, run by hand: its arguments, how it
// finds the queues in a task module (ES module or CommonJS, default or `queues` export, an object, an
// array or a function returning one), the errors for a module it cannot use (exit 1, one line on
// stderr, before any worker starts), and a run to the end with `--max-jobs`.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { sleep, tideq, unique, useRedis } from './harness.mjs';
import { WORKER, checkLedger, enqueueJobs, readLedger, startCli, taskModule, tmpDir, writeModule } from './worker_fixtures.mjs';

const redis = useRedis();

/** Runs `node lib/worker.js ...args` in `cwd`; resolves with { code, stdout, stderr }. */
function child(args, { cwd, env = {}, timeoutMs = 60_000 } = {}) {
  return startCli(args, { cwd, env, timeoutMs, script: WORKER, sub: [] }).done;
}

/** Asserts an exit with `code` and exactly one stderr line matching `pattern`. */
function oneLine(res, code, pattern) {
  assert.equal(res.code, code, `exit ${res.code}; stderr: ${res.stderr}`);
  const lines = res.stderr.trimEnd().split('\n');
  assert.match(lines[0], /^tideq worker: /);
  assert.match(lines[0], pattern);
  assert.equal(res.stdout, '');
  return lines;
}

test('bad arguments exit 2 with the usage', async (t) => {
  const dir = tmpDir(t);
  for (const [args, pattern] of [
    [['./tasks.mjs', '--nope'], /unknown flag --nope/],
    [['./tasks.mjs', '-x'], /unknown flag -x/],
    [[], /missing TARGET/],
    [['./a.mjs', './b.mjs'], /one TARGET only/],
    [['./tasks.mjs', '--max-jobs', '0'], /--max-jobs must be a whole number of at least 1; got "0"/],
    [['./tasks.mjs', '--concurrency', 'lots'], /--concurrency must be a whole number/],
    [['./tasks.mjs', '--queues', 'a=2,,b'], /--queues has an empty item/],
    [['./tasks.mjs', '--queues', 'a=0'], /--queues a= must be a whole number/],
    [['./tasks.mjs', '--queues', 'a,a'], /--queues names "a" twice/],
    [['./tasks.mjs', '--shutdown-grace', '-1'], /--shutdown-grace must be a number of seconds/],
    [['./tasks.mjs', '--log-format', 'xml'], /--log-format must be text or json/],
    [['./tasks.mjs', '--log-level', 'loud'], /--log-level must be one of/],
    [['./tasks.mjs', '--url'], /--url needs a value/],
  ]) {
    const res = await child(args, { cwd: dir });
    assert.equal(res.code, 2, `${args.join(' ')}: exit ${res.code}; ${res.stderr}`);
    assert.match(res.stderr, pattern, args.join(' '));
    assert.match(res.stderr, /usage: tideq-worker TARGET/);
  }
});

test('a module it cannot use: exit 1 with one line saying why, before any worker starts', async (t) => {
  const dir = tmpDir(t);
  const ledger = `${dir}/ledger`;
  writeModule(dir, 'none.mjs', 'export const x = 1;\n');
  writeModule(dir, 'number.mjs', 'export default 42;\n');
  writeModule(dir, 'empty.mjs', 'export default {};\n');
  writeModule(dir, 'badtask.mjs', 'export default { emails: { send: () => {}, other: 3 } };\n');
  writeModule(dir, 'badhandler.cjs', 'module.exports = { emails: "nope" };\n');
  writeModule(dir, 'fnthrows.mjs', 'export default async () => { throw new Error("no config here"); };\n');
  writeModule(dir, 'queueonly.mjs', `import { Queue } from ${JSON.stringify(new URL('../../lib/index.mjs', import.meta.url).href)};\nexport default { emails: new Queue('emails') };\n`);
  writeModule(dir, 'entrykey.mjs', `import { Queue } from ${JSON.stringify(new URL('../../lib/index.mjs', import.meta.url).href)};\nexport default { emails: { queue: new Queue('mail'), handler: () => {} } };\n`);
  writeModule(dir, 'entrybad.mjs', `export default [{ queue: 'emails', handler: () => {} }];\n`);
  writeModule(dir, 'two.mjs', taskModule({ ledger, queues: { a: {}, b: { kind: 'tasks' } } }));
  for (const [args, pattern] of [
    [['./missing.mjs'], /\.\/missing\.mjs: no such file/],
    [['no-such-package-tideq-test'], /no-such-package-tideq-test: cannot find this package/],
    [['./none.mjs'], /has neither a default export nor an export named "queues" \(it exports: x\)/],
    [['./number.mjs'], /default export\) is number 42; expected an object of queue name -> handler/],
    [['./empty.mjs'], /declares no queue/],
    [['./badtask.mjs'], /queue "emails": task "other" is number 3, not a function/],
    [['./badhandler.cjs'], /queue "emails" is string "nope"; expected a job handler/],
    [['./fnthrows.mjs'], /its exported function threw: Error: no config here/],
    [['./queueonly.mjs'], /queue "emails" is a Queue without a handler/],
    [['./entrykey.mjs'], /its queue is named "mail"; use that name as the key/],
    [['./entrybad.mjs'], /\[0\]: queue is string "emails", not a tideq Queue/],
    [['./two.mjs', '--queues', 'a=2,c=1,d'], /has no queue "c", "d"; its queues: a, b/],
  ]) {
    const res = await child([...args, '--url', redis.url], { cwd: dir });
    oneLine(res, 1, pattern);
  }
  assert.deepEqual(readLedger(ledger), []);
});

test('a module that fails to load: exit 1 with the error, its file and line', async (t) => {
  const dir = tmpDir(t);
  writeModule(dir, 'syntax.mjs', 'export default {\n  emails: (job) => { return job.id +; },\n};\n');
  writeModule(dir, 'throws.cjs', 'throw new Error("boom at import");\n');
  writeModule(dir, 'imports.mjs', 'import "./nowhere.mjs";\nexport default {};\n');
  for (const [target, pattern] of [
    ['./syntax.mjs', /SyntaxError/],
    ['./throws.cjs', /Error: boom at import[\s\S]*throws\.cjs:1/],
    ['./imports.mjs', /Cannot find module .*nowhere\.mjs/],
  ]) {
    const res = await child([target, '--url', redis.url], { cwd: dir });
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, new RegExp(`^tideq worker: ${target.replace('.', '\\.')} failed to load: `));
    assert.match(res.stderr, pattern);
    if (target === './syntax.mjs') assert.match(res.stderr, /syntax\.mjs:2/);
  }
});

// Each form of a task module, run by hand to the end: `--max-jobs` stops the process once it has
// leased that many jobs, over all its queues.
const forms = [
  ['an ES module, default export, job handlers', { cjs: false, kinds: ['handler', 'handler'] }],
  ['a CommonJS module, default export, task handlers', { cjs: true, kinds: ['tasks', 'tasks'] }],
  ['an ES module exporting `queues`, { queue, handler } entries', { cjs: false, kinds: ['entry', 'handler'], exportName: 'queues' }],
  ['a CommonJS module exporting an async function', { cjs: true, kinds: ['handler', 'entry'], wrap: 'function' }],
];
for (const [what, form] of forms) {
  test(`runs the queues of ${what}, then stops after --max-jobs`, async (t) => {
    const dir = tmpDir(t);
    const ledger = `${dir}/ledger`;
    const [a, b] = [unique('a'), unique('b')];
    const queues = { [a]: { kind: form.kinds[0], ms: 5 }, [b]: { kind: form.kinds[1], ms: 5 } };
    const file = form.cjs ? 'tasks.cjs' : 'tasks.mjs';
    writeModule(dir, file, taskModule({ ledger, queues, cjs: form.cjs, wrap: form.wrap, exportName: form.exportName }));
    await enqueueJobs(redis.url, a, 6, form.kinds[0] === 'tasks' ? 'work' : undefined);
    await enqueueJobs(redis.url, b, 4, form.kinds[1] === 'tasks' ? 'work' : undefined);
    const res = await child([`./${file}`, '--url', redis.url, '--max-jobs', '10', '--concurrency', '2'], {
      cwd: dir,
      env: { TIDEQ_REDIS_URL: redis.url },
    });
    assert.equal(res.code, 0, res.stderr);
    const runs = checkLedger(readLedger(ledger), { killed: false });
    assert.equal(runs.started.size, 10);
    assert.equal(runs.ended.size, 10);
    assert.ok(runs.maxConcurrent.get(a) <= 2 && runs.maxConcurrent.get(b) <= 2, JSON.stringify([...runs.maxConcurrent]));
  });
}

test('--queues picks queues and gives each its own concurrency', async (t) => {
  const dir = tmpDir(t);
  const ledger = `${dir}/ledger`;
  const [a, b, c] = [unique('a'), unique('b'), unique('c')];
  writeModule(dir, 'tasks.mjs', taskModule({ ledger, queues: { [a]: { ms: 30 }, [b]: { ms: 30 }, [c]: { ms: 30 } } }));
  await enqueueJobs(redis.url, a, 12);
  await enqueueJobs(redis.url, b, 12);
  await enqueueJobs(redis.url, c, 5);
  const res = await child(['./tasks.mjs', '--url', redis.url, '--queues', `${a}=3,${b}=1`, '--max-jobs', '24'], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  const runs = checkLedger(readLedger(ledger), { killed: false });
  assert.equal(runs.started.size, 24);
  assert.equal(runs.maxConcurrent.get(a), 3);
  assert.equal(runs.maxConcurrent.get(b), 1);
  assert.equal(runs.maxConcurrent.get(c), undefined, 'queue c was not asked for');
  const stats = await new tideq.Queue(c, { url: redis.url }).stats();
  assert.equal(stats.ready, 5);
});

test('SIGTERM: the child stops leasing, finishes its running jobs and exits 0', async (t) => {
  const dir = tmpDir(t);
  const ledger = `${dir}/ledger`;
  const a = unique('a');
  writeModule(dir, 'tasks.mjs', taskModule({ ledger, queues: { [a]: { ms: 400 } } }));
  await enqueueJobs(redis.url, a, 20);
  const run = startCli(['./tasks.mjs', '--url', redis.url, '--concurrency', '3', '--shutdown-grace', '20'], { t, cwd: dir, script: WORKER, sub: [] });
  while (readLedger(ledger).length === 0) await sleep(20);
  run.proc.kill('SIGTERM');
  const res = await run.done;
  assert.equal(res.code, 0, res.stderr);
  const runs = checkLedger(readLedger(ledger), { killed: false });
  assert.ok(runs.started.size >= 1 && runs.started.size <= 6, `started ${runs.started.size}`);
  const stats = await new tideq.Queue(a, { url: redis.url }).stats();
  assert.equal(stats.completed + stats.ready, 20);
  assert.equal(stats.active, 0);
});

test('a second SIGTERM aborts: the child exits without waiting, its running jobs left to their leases', async (t) => {
  const dir = tmpDir(t);
  const ledger = `${dir}/ledger`;
  const a = unique('a');
  writeModule(dir, 'tasks.mjs', taskModule({ ledger, queues: { [a]: { ms: 120_000 } } }));
  await enqueueJobs(redis.url, a, 4);
  const run = startCli(['./tasks.mjs', '--url', redis.url, '--concurrency', '2', '--shutdown-grace', '300'], { t, cwd: dir, script: WORKER, sub: [], timeoutMs: 60_000 });
  while (readLedger(ledger).length < 2) await sleep(20);
  run.proc.kill('SIGTERM');
  await sleep(200);
  run.proc.kill('SIGTERM');
  const res = await run.done;
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stderr, /stopped at once; 2 running job\(s\) left to their leases/);
  const records = readLedger(ledger);
  assert.deepEqual(records.map((r) => r.kind), ['S', 'S']);
  const stats = await new tideq.Queue(a, { url: redis.url }).stats();
  assert.equal(stats.active, 2, 'the two jobs wait for their leases');
  assert.equal(stats.ready, 2);
});
