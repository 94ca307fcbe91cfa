// `tideq/testing` under `tsc --strict` (scripts/test-node.sh; compiled, never run): the modes,
// their record and drain, typed task handlers accepted by drain and inline, startRedis.
import { Queue, defineTasks, type Job } from 'tideq';
import {
  fake,
  inline,
  startRedis,
  type DrainReport,
  type JobFilter,
  type RecordedJob,
  type RedisServer,
  type TestMode,
} from 'tideq/testing';

const emails = defineTasks({
  'send-email': async (args: { to: string }, job: Job) => `sent to ${args.to} (${job.id})`,
});

async function modes(): Promise<void> {
  const mode: TestMode = fake();
  const kind: 'fake' | 'inline' = mode.mode;
  await new Queue('emails').typed(emails).enqueueTask('send-email', { to: 'ada@example.com' });
  const filter: JobFilter = { task: 'send-email', args: { to: 'ada@example.com' }, queue: 'emails', delayMs: 0 };
  const job: RecordedJob = mode.assertEnqueued(filter);
  const state: 'enqueued' | 'completed' | 'dead' = job.state;
  const errors: string[] = job.errors;
  const pending: RecordedJob[] = mode.enqueued({ queue: 'emails' });
  const report: DrainReport = await mode.drain({ emails, other: (j: Job) => j.id }, { onError: (err, j) => void [err, j.id] });
  const left: number = report.left;
  // @ts-expect-error a filter's delay is delayMs
  mode.jobs({ delay: 5 });
  // @ts-expect-error a queue's handlers are task handlers or one job handler
  await mode.drain({ emails: 'send-email' });
  mode.clear();
  mode.stop();
  const inl = inline({ emails }, { raiseErrors: false });
  inl[Symbol.dispose]();
  // @ts-expect-error raiseErrors is a boolean
  inline({ emails }, { raiseErrors: 'no' });
  void [kind, state, errors, pending, left];
}

async function real(): Promise<void> {
  const redis: RedisServer = await startRedis({ args: ['--maxmemory', '10mb'], setEnv: false, timeoutMs: 5000 });
  const url: string = redis.url;
  await redis.stop();
  // @ts-expect-error args are strings
  await startRedis({ args: [1] });
  void url;
}

void [modes, real];
