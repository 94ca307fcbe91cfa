// Fixtures for the tests of `npx tideq worker` (worker_cli*.test.mjs) and its child (lib/worker.js,
// worker_child.test.mjs): task modules written to a temporary directory (ES module or CommonJS),
// a ledger of job starts and ends the handlers append to, the supervisor and its children as real
// processes (`node bin/tideq.js worker ...`), and the children of a process read from /proc.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { ROOT, sleep, tideq } from './harness.mjs';

export const BIN = join(ROOT, 'bin/tideq.js');
export const WORKER = join(ROOT, 'lib', 'worker.js');

/** A fresh temporary directory; `cleanup()` removes it. */
export function tmpDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'tideq-worker-'));
  t?.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The text of a task module. `queues`: { name: { kind, ms, leakMb, leaseMs } }, `kind` being
 * `handler` (name -> job function), `tasks` (name -> { work: (data, job) => ... }) or `entry`
 * (name -> { queue, handler, options }: a Queue the module opens itself, on $TIDEQ_REDIS_URL).
 * Each handler appends `S queue id pid` when it starts and `E queue id pid` when it ends to
 * `ledger`. `wrap: 'function'` exports an async function returning the object; `exportName:
 * 'queues'` a named export instead of the default.
 */
export function taskModule({ cjs = false, ledger, queues, wrap, exportName = 'default', extra = '' }) {
  const index = join(ROOT, 'lib', 'index.js');
  const lines = [];
  if (cjs) {
    lines.push(`const { appendFileSync } = require('node:fs');`, `const { Queue, Client } = require(${JSON.stringify(index)});`);
  } else {
    lines.push(`import { appendFileSync } from 'node:fs';`, `import { Queue, Client } from ${JSON.stringify(pathToFileURL(join(ROOT, 'lib', 'index.mjs')).href)};`);
  }
  lines.push(
    `const LEDGER = ${JSON.stringify(ledger)};`,
    `const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));`,
    `const leaked = [];`,
    `let client;`,
    `const handlerFor = (name, ms, leakMb) => async (job) => {`,
    `  appendFileSync(LEDGER, 'S ' + name + ' ' + job.id + ' ' + process.pid + '\\n');`,
    `  if (leakMb) leaked.push(Buffer.alloc(leakMb * 1024 * 1024, 1));`,
    `  await sleep(ms);`,
    `  appendFileSync(LEDGER, 'E ' + name + ' ' + job.id + ' ' + process.pid + '\\n');`,
    `};`,
    extra,
    `const build = () => ({`,
  );
  for (const [name, q] of Object.entries(queues)) {
    const h = `handlerFor(${JSON.stringify(name)}, ${q.ms ?? 0}, ${q.leakMb ?? 0})`;
    if (q.kind === 'tasks') {
      lines.push(`  ${JSON.stringify(name)}: { work: (data, job) => ${h}(job) },`);
    } else if (q.kind === 'entry') {
      lines.push(
        `  ${JSON.stringify(name)}: {`,
        `    queue: new Queue(${JSON.stringify(name)}, { client: (client ??= new Client()) }),`,
        `    handler: ${h},`,
        `    options: { leaseMs: ${q.leaseMs ?? 30000} },`,
        `  },`,
      );
    } else {
      lines.push(`  ${JSON.stringify(name)}: ${h},`);
    }
  }
  lines.push(`});`);
  const value = wrap === 'function' ? `async () => { await sleep(1); return build(); }` : 'build()';
  if (cjs) {
    lines.push(exportName === 'default' ? `module.exports = ${value};` : `exports.${exportName} = ${value};`);
  } else {
    lines.push(exportName === 'default' ? `export default ${value};` : `export const ${exportName} = ${value};`);
  }
  return `${lines.join('\n')}\n`;
}

/** Writes `text` to `dir/name`; its path. */
export function writeModule(dir, name, text) {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/**
 * The ledger's lines as records: { kind: 'S'|'E'|'K', queue, id, pid }. `K pid` lines are kills
 * the test appended itself (`recordKill`).
 */
export function readLedger(ledger) {
  if (!existsSync(ledger)) return [];
  return readFileSync(ledger, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const p = line.split(' ');
      return p[0] === 'K' ? { kind: 'K', pid: Number(p[1]) } : { kind: p[0], queue: p[1], id: p[2], pid: Number(p[3]) };
    });
}

export function recordKill(ledger, pid) {
  appendFileSync(ledger, `K ${pid}\n`);
}

/**
 * Checks the ledger: no job ran twice at once (a job starts again only after its last run
 * ended, or after the process running it was killed), and every run that started ended unless
 * its process was killed. Returns { started: Set of ids, ended: Set of ids, pids: Map pid -> runs,
 * maxConcurrent: Map queue -> most runs at once in one process }.
 */
export function checkLedger(records, { killed = true } = {}) {
  const open = new Map(); // id -> pid running it
  const dead = new Set();
  const started = new Set();
  const ended = new Set();
  const pids = new Map();
  const running = new Map(); // `${queue} ${pid}` -> count
  const maxConcurrent = new Map();
  for (const r of records) {
    if (r.kind === 'K') {
      dead.add(r.pid);
      for (const [id, pid] of open) if (pid === r.pid) open.delete(id);
      continue;
    }
    const key = `${r.queue} ${r.pid}`;
    if (r.kind === 'S') {
      const other = open.get(r.id);
      assert.ok(other === undefined || dead.has(other), `job ${r.id} started in ${r.pid} while it ran in ${other}`);
      open.set(r.id, r.pid);
      started.add(r.id);
      pids.set(r.pid, (pids.get(r.pid) ?? 0) + 1);
      running.set(key, (running.get(key) ?? 0) + 1);
      maxConcurrent.set(r.queue, Math.max(maxConcurrent.get(r.queue) ?? 0, running.get(key)));
    } else {
      // A line the killed process wrote while the test was recording its kill: as it came.
      if (dead.has(r.pid)) {
        ended.add(r.id);
        continue;
      }
      assert.equal(open.get(r.id), r.pid, `job ${r.id} ended in ${r.pid} without starting there`);
      open.delete(r.id);
      ended.add(r.id);
      running.set(key, running.get(key) - 1);
    }
  }
  if (!killed) assert.deepEqual([...open.keys()], [], 'every job that started ended');
  return { started, ended, pids, maxConcurrent, open };
}

/** The pids of `pid`'s children whose command line includes `what` (Linux /proc). */
export function childrenOf(pid, what = 'worker.js') {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== pid) continue;
      const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
      if (state === 'Z') continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes(what)) out.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return out.sort((a, b) => a - b);
}

/** Resident memory of `pid` in bytes (0 when it is gone). */
export function rssOf(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Starts `node bin/tideq.js worker ...args` in `cwd`. Returns { proc, done, out(), err() }: `done`
 * resolves with { code, signal, stdout, stderr } (the process is SIGKILLed, and `done` rejects,
 * after `timeoutMs`, or when test `t` ends with it still running).
 */
export function startCli(args, { cwd, env = {}, timeoutMs = 120_000, script = BIN, sub = ['worker'], t } = {}) {
  const proc = spawn(process.execPath, [script, ...sub, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      for (const c of childrenOf(proc.pid)) process.kill(c, 'SIGKILL');
      reject(new Error(`tideq ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  // A test that failed half-way leaves no process behind (they would keep the file's run alive).
  t?.after(() => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    for (const c of childrenOf(proc.pid)) process.kill(c, 'SIGKILL');
    proc.kill('SIGKILL');
    done.catch(() => {});
  });
  return { proc, done, out: () => stdout, err: () => stderr };
}

/** Resolves once `cond()` (may be async) is true; rejects with `what()` after `timeoutMs`. */
export async function until(cond, what, timeoutMs = 30_000, every = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(every);
  }
}

/** Enqueues `n` jobs on queue `name` (tasks named `task` when given), 500 per round trip. */
export async function enqueueJobs(url, name, n, task) {
  const q = new tideq.Queue(name, { url });
  for (let i = 0; i < n; i += 500) {
    const count = Math.min(500, n - i);
    const jobs = Array.from({ length: count }, (_, k) => (task ? { name: task, data: { n: i + k } } : { payload: Buffer.from(String(i + k)) }));
    await q.enqueueMany(jobs);
  }
  return q;
}
