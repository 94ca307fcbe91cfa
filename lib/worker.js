#!/usr/bin/env node
// One worker process of `npx tideq worker TARGET`: the supervisor (the Rust command line, run by
// bin/tideq.js) starts this file as each of its children, as
//   node lib/worker.js TARGET --supervised [--url URL] [--queues a=10,b=2] [--concurrency C]
//     [--max-jobs N] [--shutdown-grace SECONDS] [--log-format text|json] [--log-level LEVEL]
// with the status pipe on the fd named by TIDEQ_SUPERVISOR_FD (the addon's `serve` writes it).
// This file only finds the handlers and starts the workers; what they do (leasing, readiness,
// recycling after `--max-jobs`, SIGINT/SIGTERM) is the core's, through `serve`.
//
// TARGET is a module: a path (resolved against the working directory) or a package name, ES
// module or CommonJS. Its `queues` export, else its default export, is one of
//   - an object of queue name -> a job handler `(job) => ...`, or an object of task handlers
//     `{ 'task-name': (data, job) => ... }`, or `{ queue, handler, options? }` (a `Queue` of
//     your own and its handler, `options` being `work()`'s options);
//   - an array of `{ queue, handler, options? }`;
//   - a function (sync or async) returning one of these.
// Queues given by name are opened on one Client on `--url`, else $TIDEQ_REDIS_URL, else a local
// Redis. Exit codes: 0 after a clean stop, 1 for a target that cannot be used (one line on
// stderr, before any worker starts) or a worker that stopped on an error, 2 for bad arguments.
'use strict';

const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { createRequire } = require('node:module');
const fs = require('node:fs');

const USAGE =
  'usage: tideq-worker TARGET [--supervised] [--url URL] [--queues NAME[=C],...] [--concurrency C] ' +
  '[--max-jobs N] [--shutdown-grace SECONDS] [--log-format text|json] [--log-level LEVEL]';

/** A failure that ends the process with `code` and one line `message` on stderr. */
class Exit extends Error {
  constructor(code, message, rethrow) {
    super(message);
    this.exitCode = code;
    // An error to throw again, uncaught, after the line: Node then prints a syntax error with its
    // file, line and a caret under the column, which it keeps out of the error's stack.
    this.rethrow = rethrow;
  }
}

const usageError = (message) => new Exit(2, `${message}\n${USAGE}`);

/** A whole number ≥ 1 from a flag's text. */
function positiveInt(flag, text) {
  if (!/^[0-9]+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw usageError(`${flag} must be a whole number of at least 1; got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

/** `--queues emails=10,reports=2,misc`: [[name, concurrency or undefined], ...]. */
function parseQueues(text) {
  const out = [];
  for (const part of text.split(',')) {
    const item = part.trim();
    if (!item) throw usageError(`--queues has an empty item: ${JSON.stringify(text)}`);
    const eq = item.indexOf('=');
    const name = (eq < 0 ? item : item.slice(0, eq)).trim();
    if (!name) throw usageError(`--queues has an item without a queue name: ${JSON.stringify(item)}`);
    if (out.some(([n]) => n === name)) throw usageError(`--queues names "${name}" twice`);
    const conc = eq < 0 ? undefined : positiveInt(`--queues ${name}=`, item.slice(eq + 1).trim());
    out.push([name, conc]);
  }
  return out;
}

const LOG_LEVELS = { off: 'off', error: 'error', warn: 'warn', warning: 'warn', info: 'info', debug: 'debug', trace: 'debug' };

/** The child's arguments (see the top of this file). */
function parseArgs(argv) {
  const args = { target: undefined, supervised: false, logFormat: 'text' };
  const takesValue = new Set(['--url', '--queues', '--concurrency', '--max-jobs', '--shutdown-grace', '--log-format', '--log-level']);
  for (let i = 0; i < argv.length; i++) {
    let flag = argv[i];
    let value;
    if (flag === '--help' || flag === '-h') throw new Exit(0, USAGE);
    if (flag.startsWith('--')) {
      const eq = flag.indexOf('=');
      if (eq > 0) {
        value = flag.slice(eq + 1);
        flag = flag.slice(0, eq);
      }
      if (flag === '--supervised') {
        if (value !== undefined) throw usageError('--supervised takes no value');
        args.supervised = true;
        continue;
      }
      if (!takesValue.has(flag)) throw usageError(`unknown flag ${flag}`);
      if (value === undefined) {
        if (i + 1 >= argv.length) throw usageError(`${flag} needs a value`);
        value = argv[++i];
      }
      switch (flag) {
        case '--url':
          args.url = value;
          break;
        case '--queues':
          args.queues = parseQueues(value);
          break;
        case '--concurrency':
          args.concurrency = positiveInt(flag, value);
          break;
        case '--max-jobs':
          args.maxJobs = positiveInt(flag, value);
          break;
        case '--shutdown-grace': {
          const s = Number(value);
          if (value.trim() === '' || !Number.isFinite(s) || s < 0) {
            throw usageError(`--shutdown-grace must be a number of seconds (0 or more); got ${JSON.stringify(value)}`);
          }
          args.graceMs = Math.round(s * 1000);
          break;
        }
        case '--log-format':
          if (value !== 'text' && value !== 'json') throw usageError(`--log-format must be text or json; got ${JSON.stringify(value)}`);
          args.logFormat = value;
          break;
        case '--log-level': {
          const level = LOG_LEVELS[value.toLowerCase()];
          if (!level) throw usageError(`--log-level must be one of off, error, warn, info, debug, trace; got ${JSON.stringify(value)}`);
          args.logLevel = level;
          break;
        }
      }
    } else if (flag.startsWith('-') && flag !== '-') {
      throw usageError(`unknown flag ${flag}`);
    } else if (args.target === undefined) {
      args.target = flag;
    } else {
      throw usageError(`one TARGET only; got ${JSON.stringify(args.target)} and ${JSON.stringify(flag)}`);
    }
  }
  if (args.target === undefined) throw usageError('missing TARGET (a module path such as ./tasks.mjs, or a package name)');
  return args;
}

/** A line on stderr in the chosen format. */
function say(format, level, message) {
  if (format === 'json') {
    process.stderr.write(`${JSON.stringify({ ts: new Date().toISOString(), level, target: 'tideq::worker', pid: process.pid, msg: message })}\n`);
  } else {
    process.stderr.write(`tideq worker: ${message}\n`);
  }
}

/** Whether TARGET names a file rather than a package. */
function isPath(target) {
  return (
    target.startsWith('.') ||
    path.isAbsolute(target) ||
    /\.(c|m)?js$/.test(target) ||
    fs.existsSync(path.resolve(target))
  );
}

/** Imports TARGET (ES module or CommonJS); its namespace. */
async function importTarget(target) {
  let url;
  if (isPath(target)) {
    const file = path.resolve(target);
    if (!fs.existsSync(file)) throw new Exit(1, `${target}: no such file (looked for ${file})`);
    url = pathToFileURL(file).href;
  } else {
    // A package: resolved from the working directory, as the user's own code would.
    try {
      url = pathToFileURL(createRequire(path.join(process.cwd(), 'noop.js')).resolve(target)).href;
    } catch {
      url = target; // an ES-only package (no `require` condition): let import() resolve it
    }
  }
  try {
    return await import(url);
  } catch (err) {
    if (err && err.code === 'ERR_MODULE_NOT_FOUND' && url === target) {
      throw new Exit(1, `${target}: cannot find this package from ${process.cwd()} (nor a file of that name)`);
    }
    if (err && err.name === 'SyntaxError') throw new Exit(1, `${target} failed to load: ${err}`, err);
    throw new Exit(1, `${target} failed to load: ${errorText(err)}`);
  }
}

/** An error as its first line (`Name: message`), then its stack when it has one. */
function errorText(err) {
  const head = String(err);
  const stack = err && typeof err.stack === 'string' ? err.stack : '';
  return stack && stack !== head ? `${head}\n${stack}` : head;
}

const isQueue = (v, tideq) => v instanceof tideq.Queue;
const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const describe = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'function' ? 'a function' : typeof v === 'object' ? (v.constructor && v.constructor.name !== 'Object' ? `a ${v.constructor.name}` : 'an object') : `${typeof v} ${JSON.stringify(v)}`);

/** Checks a handler: a job function or an object of task functions. */
function checkHandler(where, handler) {
  if (typeof handler === 'function') return;
  if (isPlainObject(handler)) {
    const names = Object.keys(handler);
    if (names.length === 0) throw new Exit(1, `${where}: the object of task handlers is empty`);
    for (const name of names) {
      if (typeof handler[name] !== 'function') {
        throw new Exit(1, `${where}: task "${name}" is ${describe(handler[name])}, not a function (data, job) => ...`);
      }
    }
    return;
  }
  throw new Exit(1, `${where} is ${describe(handler)}; expected a job handler (job) => ..., an object of task handlers { 'task-name': (data, job) => ... }, or { queue, handler }`);
}

/** `{ queue, handler, options? }`: a queue entry. */
function entryOf(where, v, tideq) {
  for (const key of Object.keys(v)) {
    if (!['queue', 'handler', 'options'].includes(key)) {
      throw new Exit(1, `${where}: unknown key "${key}" (expected { queue, handler, options? })`);
    }
  }
  if (!isQueue(v.queue, tideq)) {
    throw new Exit(1, `${where}: queue is ${describe(v.queue)}, not a tideq Queue`);
  }
  checkHandler(`${where}: handler`, v.handler);
  if (v.options !== undefined && !isPlainObject(v.options)) {
    throw new Exit(1, `${where}: options is ${describe(v.options)}, not an object of work() options`);
  }
  return { name: v.queue.name, queue: v.queue, handler: v.handler, options: v.options || {} };
}

/** The queues TARGET's export declares: [{ name, queue?, handler, options }]. */
async function resolveQueues(label, value, tideq) {
  for (let depth = 0; typeof value === 'function'; depth++) {
    if (depth >= 5) throw new Exit(1, `${label}: its function returned a function 5 times over`);
    try {
      value = await value();
    } catch (err) {
      throw new Exit(1, `${label}: its exported function threw: ${errorText(err)}`);
    }
  }
  const out = [];
  const add = (entry, where) => {
    if (out.some((e) => e.name === entry.name)) throw new Exit(1, `${where}: queue "${entry.name}" is given twice`);
    out.push(entry);
  };
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      const where = `${label}[${i}]`;
      if (!isPlainObject(v)) throw new Exit(1, `${where} is ${describe(v)}; expected { queue, handler }`);
      add(entryOf(where, v, tideq), where);
    });
  } else if (isPlainObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      const where = `${label}: queue "${key}"`;
      if (isQueue(v, tideq)) {
        throw new Exit(1, `${where} is a Queue without a handler; give { queue, handler } (or the handler alone)`);
      }
      if (isPlainObject(v) && 'queue' in v && 'handler' in v) {
        const entry = entryOf(where, v, tideq);
        if (entry.name !== key) throw new Exit(1, `${where}: its queue is named "${entry.name}"; use that name as the key`);
        add(entry, where);
      } else {
        checkHandler(where, v);
        add({ name: key, queue: undefined, handler: v, options: {} }, where);
      }
    }
  } else {
    throw new Exit(1, `${label} is ${describe(value)}; expected an object of queue name -> handler, an array of { queue, handler }, or a function returning one`);
  }
  if (out.length === 0) throw new Exit(1, `${label} declares no queue`);
  return out;
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof Exit)) throw err;
    if (err.exitCode === 0) process.stdout.write(`${err.message}\n`);
    else say('text', 'error', err.message);
    return err.exitCode;
  }
  // Read by the addon when it loads: set it first.
  if (args.logLevel) process.env.TIDEQ_LOG = args.logLevel;
  const rank = { off: 0, error: 1, warn: 2, info: 3, debug: 4 };
  const shown = rank[args.logLevel || process.env.TIDEQ_LOG || 'warn'] ?? 2;
  const log = (level, message) => {
    if (rank[level] <= shown) say(args.logFormat, level, message);
  };
  try {
    return await start(args, log);
  } catch (err) {
    if (err instanceof Exit) {
      if (err.exitCode === 0) process.stdout.write(`${err.message}\n`);
      else say(args.logFormat, 'error', err.message.replace(/\s+$/, ''));
      if (err.rethrow) return err; // thrown again below, uncaught: exit code 1
      return err.exitCode;
    }
    throw err;
  }
}

async function start(args, log) {
  const tideq = require('./index.js');
  const ns = await importTarget(args.target);
  let label;
  let value;
  if (ns.queues !== undefined) {
    label = `${args.target} (export "queues")`;
    value = ns.queues;
  } else if (ns.default !== undefined) {
    label = `${args.target} (default export)`;
    value = ns.default;
  } else {
    const names = Object.keys(ns);
    throw new Exit(1, `${args.target} has neither a default export nor an export named "queues"${names.length ? ` (it exports: ${names.join(', ')})` : ''}`);
  }
  let entries = await resolveQueues(label, value, tideq);
  const concurrencyOf = new Map();
  if (args.queues) {
    const known = entries.map((e) => e.name);
    const missing = args.queues.filter(([n]) => !known.includes(n)).map(([n]) => `"${n}"`);
    if (missing.length) {
      throw new Exit(1, `${args.target} has no queue ${missing.join(', ')}; its queues: ${known.join(', ')}`);
    }
    for (const [n, c] of args.queues) concurrencyOf.set(n, c);
    entries = args.queues.map(([n]) => entries.find((e) => e.name === n));
  }
  let client;
  const workers = [];
  try {
    for (const e of entries) {
      let queue = e.queue;
      if (!queue) {
        client = client || new tideq.Client(args.url ? { url: args.url } : {});
        queue = new tideq.Queue(e.name, { client });
      }
      const options = { ...e.options };
      const conc = concurrencyOf.get(e.name) ?? args.concurrency;
      if (conc !== undefined) options.concurrency = conc;
      if (args.maxJobs !== undefined) options.maxJobs = args.maxJobs;
      if (args.graceMs !== undefined) options.graceMs = args.graceMs;
      workers.push(queue.work(e.handler, options));
    }
  } catch (err) {
    for (const w of workers) w.abort();
    throw new Exit(1, `queue ${workers.length < entries.length ? `"${entries[workers.length].name}"` : ''}: cannot start its worker: ${err && err.message ? err.message : err}`);
  }
  log('info', `serving ${entries.map((e) => e.name).join(', ')} (pid ${process.pid})`);
  const serveOptions = {};
  if (args.maxJobs !== undefined) serveOptions.maxJobs = args.maxJobs;
  try {
    await tideq.serve(workers, serveOptions);
  } catch (err) {
    log('error', `stopped on an error: ${err && err.message ? err.message : err}`);
    return 1;
  }
  const failed = workers.map((w, i) => [entries[i].name, w.error]).filter(([, e]) => e);
  for (const [name, e] of failed) log('error', `queue "${name}": the worker stopped on an error: ${e.message}`);
  return failed.length ? 1 : 0;
}

main().then(
  (code) => {
    if (code instanceof Exit) {
      process.nextTick(() => {
        throw code.rethrow;
      });
      return;
    }
    // Every worker has stopped (its jobs finished or returned): nothing left to wait for.
    process.exit(code);
  },
  (err) => {
    process.stderr.write(`tideq worker: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
