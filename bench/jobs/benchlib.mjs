// Shared by the Node job-queue bench scripts (tideq_node.mjs, bullmq_node.mjs): the payload, the
// result line, percentiles, VmRSS, and the idle measurement (a tiny RESP client on node:net, so
// it depends on none of the libraries being measured). Mirrors bench/jobs/benchlib.py.
//
// Lateness (both scripts, two runs of LATE_JOBS jobs on a fresh queue, worker concurrency
// LATE_CONCURRENCY): job i is due at start + i * spreadMs / LATE_JOBS (whole ms, rounded down; start
// LATE_AHEAD_MS ahead) and carries its due ms in its payload (`{"due": <ms>, ...}`); the handler
// takes the clock first, then reads the due ms from the job: lateness = handler start - that job's
// due time (ms, this machine's clock).
// - spreadMs = LATE_SPREAD_MS (1 000): "2 000 jobs due in the same second", the metric:
//   lateness_p50_ms / lateness_p99_ms / lateness_min_ms (latenessSummary).
// - spreadMs = 0: all due at one instant (a burst): burst_p50_ms / burst_p99_ms (burstSummary).
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';

export const PAYLOAD_OBJ = { user_id: 123456, task: 'send_welcome_email', n: 1 };
export const PAYLOAD = Buffer.from(JSON.stringify(PAYLOAD_OBJ));
export const LATE_JOBS = 2000;
export const LATE_AHEAD_MS = 2000;
export const LATE_CONCURRENCY = 100;
// The main lateness run spreads the due times evenly over this window; the burst run uses 0.
export const LATE_SPREAD_MS = 1000;
// The idle window: 5 s as the issue asks; JOBS_BENCH_IDLE_S (run.py --idle-seconds) changes it.
export const IDLE_MS = Number(process.env.JOBS_BENCH_IDLE_S || 5) * 1000;
export const IDLE_CONCURRENCY = 10;
const START_MARK = 'tideq-bench-idle-start';

export function usage() {
  const [url, nArg] = process.argv.slice(2, 4);
  const n = Number(nArg);
  if (!url || !Number.isInteger(n) || n < 1) {
    console.error('usage: node SCRIPT URL N');
    process.exit(2);
  }
  return { url, n };
}

export const freshName = (tag) => `jb-${tag}-${randomUUID().replaceAll('-', '').slice(0, 12)}`;
export const rate = (n, ms) => (ms > 0 ? Math.round(n / (ms / 1000)) : 0);
/** Wall-clock ms since the epoch with sub-ms precision. */
export const nowMs = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.round((p / 100) * (sorted.length - 1));
  return sorted[Math.min(i, sorted.length - 1)];
}

export function latenessSummary(lateMs) {
  const v = [...lateMs].sort((a, b) => a - b);
  const r = (x) => Math.round(x * 100) / 100;
  return {
    lateness_p50_ms: r(percentile(v, 50)),
    lateness_p99_ms: r(percentile(v, 99)),
    lateness_min_ms: v.length ? r(v[0]) : NaN,
  };
}

export function burstSummary(lateMs) {
  const v = [...lateMs].sort((a, b) => a - b);
  const r = (x) => Math.round(x * 100) / 100;
  return { burst_p50_ms: r(percentile(v, 50)), burst_p99_ms: r(percentile(v, 99)) };
}

// Enqueue to start (every script that can): an idle worker at concurrency START_CONCURRENCY; the
// bench enqueues START_JOBS jobs one by one, paced at START_RATE per second, each carrying the ms
// it was enqueued at (`{"at": <epoch ms>, ...}`); the handler takes the clock first: start - at.
export const START_JOBS = 2000;
export const START_RATE = 1000;
export const START_CONCURRENCY = 10;

/** Calls `enqueue(i)` START_JOBS times, the i-th at START_RATE per second from now (awaiting each). */
export async function paced(enqueue) {
  const t0 = performance.now();
  for (let i = 0; i < START_JOBS; i++) {
    const wait = t0 + (i * 1000) / START_RATE - performance.now();
    if (wait > 1) await sleep(wait);
    await enqueue(i);
  }
}

export function startSummary(ms) {
  const v = [...ms].sort((a, b) => a - b);
  const r = (x) => Math.round(x * 100) / 100;
  return { start_p50_ms: r(percentile(v, 50)), start_p99_ms: r(percentile(v, 99)) };
}

/** Due times (epoch ms, whole) of the LATE_JOBS jobs of one lateness run: job i at
 * start + i * spreadMs / LATE_JOBS, rounded down to a whole ms (the queues take whole ms), start
 * LATE_AHEAD_MS from now. spreadMs = 0: all at one instant. */
export function lateDues(spreadMs) {
  const start = Math.round(nowMs() + LATE_AHEAD_MS);
  return Array.from({ length: LATE_JOBS }, (_, i) => start + Math.floor((i * spreadMs) / LATE_JOBS));
}

/** PAYLOAD_OBJ with the job's due time first: {"due": <epoch ms>, ...}. */
export const duePayloadObj = (dueMs) => ({ due: dueMs, ...PAYLOAD_OBJ });
/** duePayloadObj as JSON bytes (the tideq payload; the Python and Rust scripts write the same). */
export const duePayload = (dueMs) => Buffer.from(JSON.stringify(duePayloadObj(dueMs)));

export function rssMb(field = 'VmRSS') {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : NaN;
}

/**
 * worker_rss_mb: the peak RSS (VmHWM) of a process that only runs a worker at concurrency 100
 * over `n` jobs already enqueued in `queue`: this script again, as `SCRIPT URL N worker QUEUE`
 * (`workerMode` runs it), so the producer's buffers are not counted.
 */
export function workerRss(script, url, n, queue) {
  const out = execFileSync(process.execPath, [script, url, String(n), 'worker', queue], { encoding: 'utf8' });
  return Number(out.trim());
}

/** The worker process of `workerRss`, if this is one: the queue's name, else null. */
export function workerMode() {
  const [, , mode, queue] = process.argv.slice(2);
  return mode === 'worker' ? queue : null;
}

export function hostPort(url) {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0) };
}

export function emit(result) {
  console.log(JSON.stringify(result));
}

/** First-handler-call marker: [mark, get]. */
export function timedFirst() {
  let t = null;
  return [() => { if (t === null) t = performance.now(); }, () => t];
}

// ---- idle measurement -----------------------------------------------------------------------

function encode(args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return out;
}

/** A line-oriented RESP connection: enough for ECHO, CONFIG, INFO and MONITOR. */
class Resp {
  constructor(url) {
    const { host, port } = hostPort(url);
    this.sock = net.createConnection({ host, port });
    this.buf = Buffer.alloc(0);
    this.waiters = [];
    this.sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.pump(); });
  }

  pump() {
    while (this.waiters.length) {
      const r = this.tryReply();
      if (r === undefined) return;
      this.waiters.shift()(r);
    }
  }

  /** Parses one reply from the buffer (status, error, integer, bulk), or undefined if incomplete. */
  tryReply() {
    const eol = this.buf.indexOf('\r\n');
    if (eol < 0) return undefined;
    const head = this.buf.subarray(0, eol).toString();
    if (head[0] === '$') {
      const n = Number(head.slice(1));
      if (n < 0) { this.buf = this.buf.subarray(eol + 2); return null; }
      if (this.buf.length < eol + 2 + n + 2) return undefined;
      const data = this.buf.subarray(eol + 2, eol + 2 + n).toString();
      this.buf = this.buf.subarray(eol + 4 + n);
      return data;
    }
    this.buf = this.buf.subarray(eol + 2);
    if (head[0] === '-') return new Error(head.slice(1));
    return head.slice(1);
  }

  cmd(...args) {
    return new Promise((resolve, reject) => {
      this.waiters.push((r) => (r instanceof Error ? reject(r) : resolve(r)));
      this.sock.write(encode(args));
      this.pump();
    });
  }

  close() { this.sock.destroy(); }
}

function commandstatsCalls(info) {
  const out = {};
  for (const line of info.split(/\r?\n/)) {
    if (!line.startsWith('cmdstat_')) continue;
    const [name, fields] = line.slice(8).split(':');
    if (['info', 'config'].includes(name.split('|')[0])) continue;
    const m = /calls=(\d+)/.exec(fields);
    if (m) out[name] = Number(m[1]);
  }
  return out;
}

/** ECHO mark + CONFIG RESETSTAT, wait, INFO commandstats; meanwhile MONITOR on a second connection
 * counts the commands clients sent (script-internal calls are marked "lua" there).
 * idle_cmds_per_s: every call in commandstats (script-internal ones included);
 * idle_client_cmds_per_s: commands sent by clients (round trips). */
export async function measureIdle(url, ms = IDLE_MS) {
  const ctl = new Resp(url);
  const mon = new Resp(url);
  await mon.cmd('MONITOR');
  const lines = [];
  let partial = '';
  mon.sock.removeAllListeners('data');
  let sawInfo;
  const infoSeen = new Promise((r) => { sawInfo = r; });
  mon.sock.on('data', (d) => {
    const parts = (partial + d.toString()).split('\r\n');
    partial = parts.pop();
    for (const p of parts) {
      lines.push(p);
      if (/"info" "commandstats"/i.test(p)) sawInfo();
    }
  });
  await ctl.cmd('ECHO', START_MARK); // MONITOR does not show CONFIG: this marks the start
  await ctl.cmd('CONFIG', 'RESETSTAT');
  await sleep(ms);
  const info = await ctl.cmd('INFO', 'commandstats');
  await Promise.race([infoSeen, sleep(5000)]);
  ctl.close();
  mon.close();
  const calls = commandstatsCalls(info);
  const client = {};
  let counting = false;
  for (const text of lines) {
    if (text.includes(START_MARK)) { counting = true; continue; }
    if (/"info" "commandstats"/i.test(text)) break;
    if (!counting || / lua\]/.test(text)) continue;
    const cmd = (text.split('"')[1] || '?').toLowerCase();
    client[cmd] = (client[cmd] || 0) + 1;
  }
  const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
  return {
    idle_cmds_per_s: Math.round((sum(calls) / (ms / 1000)) * 100) / 100,
    idle_client_cmds_per_s: Math.round((sum(client) / (ms / 1000)) * 100) / 100,
    idle_detail: { commandstats: calls, client },
  };
}

// ---- where the time goes (diagnostics per work run) -----------------------------------------

const redisCpu = (info) => {
  const get = (k) => Number((new RegExp(`${k}:([\\d.]+)`).exec(info) || [0, 0])[1]);
  return get('used_cpu_sys') + get('used_cpu_user');
};

/** Redis and client CPU over one work run (see Phase in benchlib.py). */
export class Phase {
  constructor(url) { this.url = url; }

  async begin() {
    this.r = new Resp(this.url);
    await this.r.cmd('CONFIG', 'RESETSTAT');
    this.cpu0 = redisCpu(await this.r.cmd('INFO', 'cpu'));
    this.proc0 = process.cpuUsage();
    this.t0 = performance.now();
  }

  async end(n) {
    const wall = (performance.now() - this.t0) / 1000;
    const p = process.cpuUsage(this.proc0);
    const cpu = redisCpu(await this.r.cmd('INFO', 'cpu')) - this.cpu0;
    const calls = commandstatsCalls(await this.r.cmd('INFO', 'commandstats'));
    this.r.close();
    let scripts = 0;
    let all = 0;
    for (const [k, v] of Object.entries(calls)) {
      all += v;
      if (['evalsha', 'eval', 'fcall', 'evalsha_ro', 'eval_ro'].includes(k.split('|')[0])) scripts += v;
    }
    const r = (x, d) => Math.round(x * 10 ** d) / 10 ** d;
    return {
      redis_cpu: r(cpu / wall, 2),
      client_cpu: r((p.user + p.system) / 1e6 / wall, 2),
      redis_us_per_job: r((cpu * 1e6) / n, 1),
      calls_per_job: r(all / n, 2),
      scripts_per_job: r(scripts / n, 3),
    };
  }
}
