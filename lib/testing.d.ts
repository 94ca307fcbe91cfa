// The types of `tideq/testing` (lib/testing.js), written by hand; the classes and objects they
// name are the addon's, declared in the package's index.d.ts.

/**
 * Testing code that enqueues: `fake()` records enqueues, `inline(handlers)` runs them at once,
 * `startRedis()` starts a private `redis-server` for integration tests.
 * @module tideq/testing
 */
import type { InlineOptions, TestHandlers, TestMode } from '../index.js';

export type {
  DrainOptions,
  DrainReport,
  InlineOptions,
  JobFilter,
  RecordedJob,
  TestHandlers,
  TestMode,
} from '../index.js';

/**
 * Fake mode, for the whole process until `stop()`: every enqueue of every `Queue` is checked
 * and encoded as against Redis (bad input still throws, nothing is recorded), then recorded
 * instead of sent. Inspect the record with `assertEnqueued`, `enqueued` and `jobs`; run it with
 * `drain(handlers)`. Throws `INVALID_ARGUMENT` when a mode is already on.
 */
export declare function fake(): TestMode

/**
 * Inline mode, for the whole process until `stop()`: every enqueue runs its job at once with
 * `handlers` and resolves when it is done (retried at once up to its attempts; `raiseErrors`,
 * the default, rejects the enqueue with `JOB_FAILED` when the job ends dead). A job of a queue
 * `handlers` has nothing for stays recorded, not run.
 */
export declare function inline(handlers: TestHandlers, options?: InlineOptions): TestMode

/** Options of `startRedis`. */
export interface StartRedisOptions {
  /** The server to run: a path, or a name found on the `PATH`. Default `redis-server`. */
  command?: string
  /** More arguments for it (`['--maxmemory', '10mb']`). */
  args?: string[]
  /** Set `TIDEQ_REDIS_URL` to the server's URL until `stop()` (which puts back the value before). Default true. */
  setEnv?: boolean
  /** How long the server may take to answer, in ms. Default 10000. */
  timeoutMs?: number
}

/** A private `redis-server` that `startRedis` started. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string
  readonly port: number
  /** The server's process id. */
  readonly pid: number
  /** The server's log so far. */
  log(): string
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its directory. Idempotent. */
  stop(): Promise<void>
  /** `await using redis = await startRedis()`: leaving the scope is `await redis.stop()`. */
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Starts a private `redis-server` on a free loopback port, with no persistence, in a temporary
 * directory, and resolves once it answers; sets `TIDEQ_REDIS_URL` to it (see `setEnv`), so
 * queues built without a `client` or `url` use it. Rejects with `NOT_SUPPORTED` when there is no
 * `redis-server` to run, saying how to install one. The server does not keep the process alive,
 * and is killed when the process exits.
 */
export declare function startRedis(options?: StartRedisOptions): Promise<RedisServer>
