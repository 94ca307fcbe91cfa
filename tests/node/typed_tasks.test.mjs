// Typed tasks (issue 42, item 3). At compile time: tests/node/types/tasks.ts compiles under
// `tsc --strict` with its planted mistakes marked `// @ts-expect-error planted: <text>` (so tsc
// fails if one stops being an error), and with the markers removed tsc fails with exactly those
// mistakes, each on its line and naming what is wrong. At run time: `defineTasks` and
// `queue.typed()` return what they were given (the same queue works as before), and refuse what
// is not an object of handlers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, freshJobQueue, rejectsWith, tideq, useRedis } from './harness.mjs';

const redis = useRedis();
const TYPES = join(ROOT, 'tests', 'node', 'types');
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');
const MARK = /^(\s*)\/\/ @ts-expect-error planted: (.+)$/;

/** Runs tsc on one file of tests/node/types with that directory's tsconfig; { code, errors }. */
function compile(file) {
  const config = join(TYPES, `planted-${process.pid}.json`);
  writeFileSync(config, JSON.stringify({ extends: './tsconfig.json', files: [file] }));
  let code = 0;
  let out = '';
  try {
    out = execFileSync(TSC, ['-p', config, '--pretty', 'false'], { cwd: ROOT, encoding: 'utf8' });
  } catch (err) {
    code = err.status;
    out = String(err.stdout);
  } finally {
    rmSync(config, { force: true });
  }
  // One error per `file(line,col): error TS...: message` line, with its indented continuation.
  const errors = [];
  for (const line of out.split('\n')) {
    const m = /\((\d+),\d+\): error (TS\d+: .*)$/.exec(line);
    if (m) errors.push({ line: Number(m[1]), text: m[2] });
    else if (line.startsWith(' ') && errors.length) errors[errors.length - 1].text += `\n${line.trim()}`;
  }
  return { code, errors, out };
}

test('tasks.ts compiles under tsc --strict with every planted mistake marked', () => {
  const { code, out } = compile('tasks.ts');
  assert.equal(code, 0, out);
});

test('without the markers, tsc fails with each planted mistake on its line, naming it', () => {
  const lines = readFileSync(join(TYPES, 'tasks.ts'), 'utf8').split('\n');
  const planted = new Map(); // line of the mistake (1-based) -> the text its error must hold
  const unmarked = lines.map((line, i) => {
    const m = MARK.exec(line);
    if (!m) return line;
    planted.set(i + 2, m[2]);
    return `${m[1]}// planted: ${m[2]}`;
  });
  assert.ok(planted.size >= 10, `${planted.size} planted mistakes`);
  const file = `planted-${process.pid}.ts`;
  writeFileSync(join(TYPES, file), unmarked.join('\n'));
  let result;
  try {
    result = compile(file);
  } finally {
    rmSync(join(TYPES, file), { force: true });
  }
  assert.notEqual(result.code, 0, 'tsc accepted the planted mistakes');
  const byLine = new Map();
  for (const e of result.errors) byLine.set(e.line, `${byLine.get(e.line) ?? ''}${e.text}\n`);
  assert.deepEqual([...byLine.keys()].sort((a, b) => a - b), [...planted.keys()], result.out);
  for (const [line, want] of planted) {
    assert.ok(byLine.get(line).includes(want), `line ${line}: expected "${want}" in\n${byLine.get(line)}`);
  }
});

test('defineTasks returns its handlers and typed() the queue itself', () => {
  const tasks = { build: async () => 1, 'send-email': () => {} };
  assert.equal(tideq.defineTasks(tasks), tasks);
  const { queue } = freshJobQueue(redis.url);
  assert.equal(queue.typed(), queue);
  assert.equal(queue.typed(tasks), queue);
});

test('defineTasks and typed() refuse what is not an object of handler functions', async () => {
  const { queue } = freshJobQueue(redis.url);
  for (const bad of [null, 'build', [() => {}], () => {}]) {
    await rejectsWith(() => tideq.defineTasks(bad), 'INVALID_ARGUMENT', TypeError, /defineTasks takes an object of task handlers by name/);
    await rejectsWith(() => queue.typed(bad), 'INVALID_ARGUMENT', TypeError, /typed takes an object of task handlers by name/);
  }
  await rejectsWith(() => tideq.defineTasks({ build: 'not a function' }), 'INVALID_ARGUMENT', TypeError, /the handler of task "build" must be a function, not string/);
});

test('a typed queue is the queue: its tasks enqueue, run and give their results as before', async () => {
  const { queue } = freshJobQueue(redis.url);
  const tasks = tideq.defineTasks({ double: async ({ n }) => ({ n: n * 2 }), nothing: () => {} });
  const typed = queue.typed(tasks);
  const a = await typed.enqueueTask('double', { n: 21 });
  const b = await typed.enqueueTask('nothing');
  const worker = typed.work(tasks, { concurrency: 2 });
  try {
    assert.deepEqual(await typed.wait(a.id, { timeoutMs: 10_000 }), { n: 42 });
    assert.equal(await typed.wait(b.id, { timeoutMs: 10_000 }), null);
  } finally {
    await worker.shutdown();
  }
});
