// `tideq/testing`: the three ways to test code that enqueues, with no change to that code.
//   - fake(): enqueues are recorded, not run; `assertEnqueued`, `enqueued`, `jobs` inspect them
//     and `drain(handlers)` runs them (and what they enqueue) to the end;
//   - inline(handlers): each enqueue runs its handler at once, in the caller;
//   - startRedis(): a private redis-server on a free loopback port, for integration tests.
// The two test modes are the core's (`tideq::testing`), so a recorded job went through the same
// validation and encoding as a real enqueue, and a drained or inline job is retried, dead-lettered
// and given its result as a worker would. They hold for the whole process, every `Queue`
// included, until `stop()`.
'use strict';

const { spawn } = require('node:child_process');
const { closeSync, mkdtempSync, openSync, readFileSync, rmSync } = require('node:fs');
const net = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const tideq = require('./index.js');

/** An `Error` with one of tideq's codes. */
function failure(Cls, code, message, cause) {
  const e = new Cls(message, cause === undefined ? undefined : { cause });
  e.code = code;
  return e;
}

/** What `value` is, for an error message. */
function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

/** Throws unless `options` is undefined or an object whose keys are all in `known`. */
function checkOptions(what, options, known) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw failure(TypeError, 'INVALID_ARGUMENT', `${what} options must be an object, not ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw failure(TypeError, 'INVALID_ARGUMENT', `${what}: unknown option "${key}" (known: ${known.join(', ')})`);
  }
  return options;
}

/**
 * Fake mode: every enqueue (of any `Queue` of this process) is checked and encoded as it would be,
 * then recorded instead of written to Redis. Returns the mode (`TestMode`); `stop()` ends it.
 */
function fake() {
  return tideq.TestMode.fake();
}

/**
 * Inline mode: every enqueue runs the job's handler at once, in the caller, and resolves when it
 * is done: retried at once up to its attempts, then dead-lettered with the error a worker would
 * record. `handlers`: `{ [queueName]: { [taskName]: (args, job) => ... } }` (a `defineTasks`
 * object per queue) or `{ [queueName]: (job) => ... }`. With `raiseErrors` (the default) an
 * enqueue whose job ends dead rejects with `JOB_FAILED` and the job's error.
 */
function inline(handlers, options) {
  return tideq.TestMode.inline(handlers, options);
}

/** A loopback port nobody listens on right now. */
function freePort() {
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

/** Resolves with whether a Redis answers PING on `port` (one short connection). */
function pings(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let got = '';
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('*1\r\n$4\r\nPING\r\n'));
    sock.on('data', (d) => {
      got += d;
      if (got.includes('\r\n')) done(got.startsWith('+PONG'));
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Servers still running (process -> directory), killed if the process exits without stopping
 * them. */
const running = new Map();
let exitHook = false;

/**
 * Starts a private `redis-server` on a free loopback port, with no persistence, in a temporary
 * directory; resolves once it answers. `TIDEQ_REDIS_URL` is set to its URL (so queues built
 * without a `client` or `url` use it) until `stop()`, which puts back the value before, unless
 * `setEnv: false`. Options: `command` (default `redis-server`, found on `PATH`), `args` (more
 * arguments for it), `setEnv`, `timeoutMs` (how long it may take to answer, default 10000).
 */
async function startRedis(options) {
  const { command = 'redis-server', args = [], setEnv = true, timeoutMs = 10_000 } = checkOptions('startRedis', options, [
    'command',
    'args',
    'setEnv',
    'timeoutMs',
  ]);
  if (typeof command !== 'string' || command === '') {
    throw failure(TypeError, 'INVALID_ARGUMENT', `startRedis: command must be a non-empty string, not ${describe(command)}`);
  }
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
    throw failure(TypeError, 'INVALID_ARGUMENT', 'startRedis: args must be an array of strings');
  }
  if (typeof setEnv !== 'boolean') throw failure(TypeError, 'INVALID_ARGUMENT', `startRedis: setEnv must be a boolean, not ${describe(setEnv)}`);
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) {
    throw failure(TypeError, 'INVALID_ARGUMENT', `startRedis: timeoutMs must be a positive number of ms, not ${String(timeoutMs)}`);
  }
  // A port found free may be taken before redis-server binds it: then try another.
  for (let tries = 1; ; tries++) {
    try {
      return await startOn(await freePort(), command, args, setEnv, timeoutMs);
    } catch (err) {
      if (!err.portTaken || tries === 3) throw err;
    }
  }
}

async function startOn(port, command, args, setEnv, timeoutMs) {
  const dir = mkdtempSync(join(tmpdir(), 'tideq-redis-'));
  const logfile = join(dir, 'redis.log');
  // What the server says before its log file is open (a bad argument), to a file: a pipe would
  // keep this process alive.
  const errfile = join(dir, 'stderr.log');
  const read = (file) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const log = () => read(errfile) + read(logfile);
  const argv = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', logfile, ...args];
  const err = openSync(errfile, 'w');
  let proc;
  try {
    proc = spawn(command, argv, { stdio: ['ignore', 'ignore', err] });
  } finally {
    closeSync(err);
  }
  // Not kept alive by the server: a test run that forgets stop() still ends (the exit hook
  // below kills the server then).
  proc.unref();
  let spawnError = null;
  proc.once('error', (err) => (spawnError = err));
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await sleep(spawnError || proc.exitCode !== null || proc.signalCode !== null ? 0 : 10);
    if (spawnError) {
      cleanup();
      if (spawnError.code === 'ENOENT') {
        throw failure(
          Error,
          'NOT_SUPPORTED',
          `startRedis: ${command} was not found${command.includes('/') ? '' : ' on the PATH'}. It needs a redis-server ` +
            '(Redis 7 or later): install Redis (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis), ' +
            "or pass its path: startRedis({ command: '/path/to/redis-server' })",
          spawnError,
        );
      }
      throw failure(Error, 'NOT_SUPPORTED', `startRedis: could not run ${command}: ${spawnError.message}`, spawnError);
    }
    if (proc.exitCode !== null || proc.signalCode !== null) {
      const text = log();
      cleanup();
      const err = failure(Error, 'CONNECTION', `startRedis: ${command} exited (${proc.exitCode ?? proc.signalCode}) before it answered on port ${port}\n${text}`);
      err.portTaken = /Address already in use/.test(text);
      throw err;
    }
    if (await pings(port)) break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      await exited;
      const text = log();
      cleanup();
      throw failure(Error, 'TIMEOUT', `startRedis: ${command} did not answer on port ${port} within ${timeoutMs} ms\n${text}`);
    }
  }

  const url = `redis://127.0.0.1:${port}`;
  const before = process.env.TIDEQ_REDIS_URL;
  if (setEnv) process.env.TIDEQ_REDIS_URL = url;
  running.set(proc, dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const [p, d] of running) {
        p.kill('SIGKILL');
        rmSync(d, { recursive: true, force: true });
      }
    });
  }
  let stopped = null;
  const stop = () => {
    stopped ??= (async () => {
      running.delete(proc);
      if (setEnv && process.env.TIDEQ_REDIS_URL === url) {
        if (before === undefined) delete process.env.TIDEQ_REDIS_URL;
        else process.env.TIDEQ_REDIS_URL = before;
      }
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      cleanup();
    })();
    return stopped;
  };
  const server = { url, port, pid: proc.pid, log, stop };
  // `await using redis = await startRedis()`: leaving the scope stops it.
  if (typeof Symbol.asyncDispose === 'symbol') server[Symbol.asyncDispose] = stop;
  return server;
}

module.exports = { fake, inline, startRedis };
