// The package's TypeScript definitions under `tsc --strict` (scripts/test-node.sh): this file is
// compiled, never run. Each `// @ts-expect-error` line must fail to compile (tsc reports an
// unused one), so the lines below pin what the types refuse as well as what they accept.
import {
  BackOff,
  CappedQueue,
  Client,
  DontRetry,
  Limiter,
  MAX_COST,
  MAX_PRIORITY,
  OverLimit,
  Queue,
  Snooze,
  chain,
  serve,
  chord,
  type ChildResult,
  type Enqueued,
  type ErrorCode,
  type Event,
  type Flow,
  type HistoryPoint,
  type FlowSpec,
  type Job,
  type JobInfo,
  type LimitSlot,
  type TaskHandler,
  type TideqError,
  type WorkerInfo,
  type WorkerStats,
} from 'tideq';  // the package by name: its exports map's `types` entry

type Email = { to: string; subject: string };

async function producer(q: Queue): Promise<void> {
  const { id, created }: { id: string; created: boolean } = await q.enqueue(Buffer.from('x'), {
    id: 'a',
    priority: MAX_PRIORITY,
    backoff: { type: 'fixed', delayMs: 100 },
    dedup: { key: 'k', ttlMs: 10 },
    cost: MAX_COST,
  });
  await q.enqueueTask('send-email', { to: 'ada', subject: 'hi' } satisfies Email, { format: 'msgpack' });
  await q.enqueueMany([{ name: 't', data: 1 }, { payload: new Uint8Array(2) }, Buffer.from('raw')]);
  // @ts-expect-error a raw payload is bytes: a task by name is enqueueTask
  await q.enqueue('send-email', {});
  // @ts-expect-error the backoff kind is one of two
  await q.enqueue(Buffer.from('x'), { backoff: { type: 'linear' } });
  // @ts-expect-error a format is 'json' or 'msgpack'
  await q.enqueueTask('t', 1, { format: 'xml' });

  // wait: the result's type is unknown unless the caller names it.
  const result = await q.wait(id);
  const unknownResult: unknown = result;
  // @ts-expect-error without a type argument the result is unknown, not the type asked for
  const n: number = await q.wait(id);
  // @ts-expect-error nor does the context pick it
  const receipt: { total: number } = await q.wait(id, { timeoutMs: 1000 });
  const total: number = (await q.wait<{ total: number }>(id, { timeoutMs: null })).total;
  // @ts-expect-error an unknown result has no fields
  (await q.wait(id)).total;
  void [created, unknownResult, n, receipt, total];
}

async function admin(q: Queue): Promise<void> {
  const info: JobInfo | null = await q.get('a');
  if (info) {
    const state: 'delayed' | 'ready' | 'active' | 'dead' | 'completed' | 'waiting' = info.state;
    const stored: unknown = info.result;
    const cost: number = info.cost;
    // @ts-expect-error a stored result is unknown: narrow it first
    info.result.total;
    // @ts-expect-error so is a stored progress
    const p: string = info.progress;
    void [state, stored, p];
  }
  // @ts-expect-error the states are a closed set
  await q.jobs('running');
  const page = await q.jobsPage('dead', { cursor: null, limit: 10 });
  const next: string | null = page.cursor;
  await q.promote('a');
  await q.delete('a');
  // The latency, in ms: the queue's, and a group's (null in a list of groups).
  const latency: number = (await q.stats()).latencyMs + ((await q.group('g')).latencyMs ?? 0);
  // @ts-expect-error a group's latency may be null
  const groupLatency: number = (await q.groupsPage()).groups[0].latencyMs;
  void [latency, groupLatency];
  const found = await q.findJobs({ task: 'send', state: 'dead', cursor: next, limit: 20 });
  const more: string | null = found.cursor;
  const scanned: number = found.scanned;
  const foundIds: string[] = found.jobs.map((j) => j.id);
  void [more, scanned, foundIds];
  // @ts-expect-error the states are a closed set
  await q.findJobs({ state: 'running' });
  const live: WorkerInfo[] = await q.workers();
  for (const w of live) {
    const seen: number = w.lastSeenAtMs;
    const ids: string[] = w.runningIds;
    // @ts-expect-error a worker's pid is a number
    const pid: string = w.pid;
    void [seen, ids, pid];
  }
  const history: HistoryPoint[] = await q.history({ windowMs: 86_400_000, stepMs: 3_600_000 });
  for (const p of history) {
    const late: number | null = p.latenessMs;
    const failed: number = p.failed;
    void [late, failed];
  }
  // @ts-expect-error durations are ms numbers
  await q.history({ windowMs: '1h' });
  for await (const event of q.events({ fromStart: true })) {
    const e: Event = event;
    const value: unknown = e.value;
    // @ts-expect-error an event's value is unknown
    e.value.length;
    void value;
  }
  void next;
}

function worker(q: Queue): void {
  // One handler for every job.
  q.work(async (job: Job) => {
    const id: string = job.id;
    const payload: Buffer = job.payload;
    const signal: AbortSignal = job.signal;
    const data: unknown = job.data;
    // @ts-expect-error task data is unknown until the handler says what it is
    job.data.to;
    const order = job.json<{ sku: string }>();
    const sku: string = order.sku;
    // @ts-expect-error json() is unknown without a type argument, whatever the context
    const other: { sku: string } = job.json();
    await job.progress({ done: 1 });
    void [id, payload, signal, data, sku, other];
    return { ok: true };
  }, { concurrency: 4, onError: (err: unknown, job: Job) => void [err, job] });

  // Task handlers by name: the data's type is the handler's to declare, `unknown` when it does
  // not.
  const sendEmail: TaskHandler<Email> = async (email, job) => {
    const to: string = email.to;
    void [to, job.attempt];
  };
  const w = q.work({
    'send-email': sendEmail,
    resize: (data: { width: number }, job) => data.width + job.attempt,
    log: (data) => {
      const d: unknown = data;
      // @ts-expect-error undeclared task data is unknown
      data.anything;
      return d;
    },
  });
  // @ts-expect-error a task handler is a function
  q.work({ 'send-email': 'not a function' });
  // @ts-expect-error the handler is a function or an object of them
  q.work(42);

  const err: TideqError | null = w.error;
  if (err) {
    const code: ErrorCode = err.code;
    const message: string = err.message;
    void [code, message];
  }
  void w.shutdown().then((s: WorkerStats) => s.completed + s.failed);

  q.workBatches(async (jobs: Job[]) => new Map([[jobs[0].id, new Error('no')]]), { size: 10 });
  q.workBatches(async (jobs: Job[]) => ({ [jobs[0].id]: 'failed' }));
  // @ts-expect-error a batch handler resolves with nothing or the failed jobs' errors
  q.workBatches(async () => 42);
}

function errors(e: unknown): ErrorCode | undefined {
  const codes: ErrorCode[] = ['INVALID_ARGUMENT', 'JOB_NOT_FOUND', 'TIMEOUT', 'NOT_SUPPORTED'];
  // @ts-expect-error error codes are the core's, no others
  const bad: ErrorCode = 'NOT_A_CODE';
  void [codes, bad];
  if (e instanceof Error && 'code' in e) return (e as TideqError).code;
  return undefined;
}

async function capped(): Promise<void> {
  const client = new Client({ url: 'redis://127.0.0.1:6379', prefix: 't' });
  // Credentials that rotate: a function returning credentials, a password, or a Promise of one.
  const tokens = [
    new Client({ credentialsProvider: () => ({ username: 'app', password: 'token' }) }),
    new Client({ credentialsProvider: async () => 'token' }),
    // @ts-expect-error the provider returns credentials, not a number
    new Client({ credentialsProvider: () => 42 }),
  ];
  void tokens;
  const cq = new CappedQueue('q', { client, capacity: 10 });
  await cq.pushMany([['g', 'text'], ['g', Buffer.from('bytes')]]);
  const batch = await cq.nextBatch(10);
  if (batch) {
    const items: Buffer[] = batch.items;
    void items;
  }
  // @ts-expect-error items are bytes or text
  await cq.push('g', 42);
  const c = cq.consume(async (group: string, items: Buffer[]) => void [group, items]);
  const stopped: TideqError | null = c.error;
  void stopped;
  const sealed = new CappedQueue('q', { client, encryption: { currentKey: 'k1', keys: { k1: Buffer.alloc(32) } } });
  const kept: { group: string; keyId: string; error: string; atMs: number; item: Buffer }[] = await sealed.unreadable({ max: 10 });
  const back: number = await sealed.requeueUnreadable();
  const why: string | undefined = (await sealed.peek('g'))[0]?.unreadable ?? undefined;
  void [kept, back, why];
}

function outcomes(q: Queue): void {
  q.work(async (job: Job) => {
    if (job.attempt === 1) throw new Snooze(1_000);
    if (job.attempt === 2) throw new BackOff(60_000, { group: true });
    throw new DontRetry('card declined', { cause: new Error('402') });
  });
  const s: Snooze = new Snooze(0);
  const ms: number = s.delayMs;
  const group: boolean = new BackOff(5).group;
  // @ts-expect-error the delay is a number of ms
  void new Snooze('5s');
  void [ms, group];
  void q.enqueue(Buffer.from('x'), { expiresAfterMs: 60_000 });
  void q.enqueueMany([{ payload: Buffer.from('x'), expiresAt: new Date(Date.now() + 1000) }]);
}

async function flows(q: Queue, parts: Queue): Promise<void> {
  // A flow: tasks and raw jobs, on other queues, to any depth.
  const root: FlowSpec = {
    name: 'report',
    data: { title: 'sums' },
    id: 'report-1',
    children: [
      { payload: Buffer.from('p'), queue: parts, onFailure: 'continue', children: [{ name: 'leaf', delayMs: 10 }] },
      { name: 'part', data: 1, format: 'msgpack', onFailure: 'ignore', priority: 1 },
      { payload: new Uint8Array(1), onFailure: 'fail', expiresAfterMs: 1000 },
    ],
  };
  const made: Enqueued = await q.enqueueFlow(root);
  // @ts-expect-error onFailure is 'fail', 'ignore' or 'continue'
  await q.enqueueFlow({ payload: Buffer.from('x'), onFailure: 'retry' });
  // @ts-expect-error a flow's jobs take no dedup (each is written once)
  await q.enqueueFlow({ payload: Buffer.from('x'), dedup: 'k' });
  // @ts-expect-error a child's queue is a Queue, not its name
  await q.enqueueFlow({ payload: Buffer.from('x'), children: [{ name: 't', queue: 'parts' }] });
  // @ts-expect-error children are flow jobs, not bare Buffers
  await q.enqueueFlow({ payload: Buffer.from('x'), children: [Buffer.from('y')] });
  // @ts-expect-error enqueueMany's jobs have no children
  await q.enqueueMany([{ payload: Buffer.from('x'), children: [] }]);

  // Chains and chords: built flows, given to enqueueFlow or used as children and first links.
  const chained: Flow = chain([{ name: 'fetch', data: 'https://example.com' }, { name: 'parse', queue: parts }]);
  const kind: 'chain' | 'chord' = chord([chained, { name: 'part', data: 2 }], { name: 'total', id: 't' }).kind;
  void kind;
  await q.enqueueFlow(chain([chord([{ name: 'a', data: 1 }], { name: 'b' }), { name: 'c' }]));
  await q.enqueueFlow({ name: 'sum', children: [chained] });
  // @ts-expect-error a chord's callback is a flow spec, not a built flow
  chord([{ name: 'a' }], chained);

  const kids: ChildResult[] = await q.childrenResults(made.id);
  for (const c of kids) {
    const outcome: 'completed' | 'failed' | 'expired' | 'cancelled' | 'lost' | 'ignored' = c.outcome;
    const result: unknown = c.result;
    const bytes: Buffer | null = c.resultBytes;
    const error: string | null = c.error;
    const where: string = `${c.queue}/${c.id}`;
    // @ts-expect-error a child's result is unknown: narrow it first
    c.result.length;
    void bytes;
    void [outcome, result, error, where];
  }
  const info = await q.get(made.id);
  if (info) {
    const parent: { queue: string; id: string } | null = info.parent;
    const pending: number | null = info.childrenPending;
    // @ts-expect-error a flow job may be 'waiting' too
    const state: 'delayed' | 'ready' | 'active' | 'dead' | 'completed' = info.state;
    void [parent, pending, state];
  }
  q.work(async (job: Job) => {
    const done: ChildResult[] = await job.childrenResults();
    return done.length;
  });
}

// A worker process's main loop: serve, maxJobs, isReady.
async function serving(a: Queue, b: Queue) {
  const workers = [a.work(() => {}, { concurrency: 20, maxJobs: 1000 }), b.workBatches(() => {}, { size: 5, maxJobs: 100 })];
  const ready: boolean = workers[0].isReady();
  const stats: WorkerStats[] = await serve(workers, { health: '127.0.0.1:8080', maxJobs: 2000 });
  await serve(workers);
  // @ts-expect-error serve takes Workers
  await serve([a]);
  // @ts-expect-error health is an address string
  await serve(workers, { health: 8080 });
  void [ready, stats];
}

// `await using`: a worker and a consumer are async-disposable (their shutdown).
async function disposable(q: Queue, c: CappedQueue) {
  await using w = q.work(() => {});
  await using consumer = c.consume(() => {});
  const dispose: () => Promise<void> = w[Symbol.asyncDispose];
  void [dispose, consumer];
}

void [producer, admin, worker, errors, capped, outcomes, flows, serving, disposable];

// Shared limiters: acquire gives a LimitSlot, run a function's result; OverLimit is a Snooze.
async function limiters(client: Client): Promise<void> {
  const limiter = new Limiter(client);
  await limiter.concurrent('stripe', 5, 60_000);
  await limiter.bucket('emails', 100, 10);
  const slot: LimitSlot = await limiter.acquire('stripe');
  const until: number | null = slot.leaseDeadlineMs;
  await slot.release();
  const n: number = await limiter.run('emails', async () => 1, 2);
  const s: Snooze = new OverLimit('stripe', 100);
  void until, n, s;
  // @ts-expect-error a limiter's name is a string
  await limiter.acquire(5);
  // A group's starts taking from a limiter (null stops it); its GroupInfo names it.
  const q = new Queue('limited', { client });
  await q.setGroupLimiter('acme', 'stripe');
  await q.setGroupLimiter('acme', null);
  const named: string | null = (await q.group('acme')).limiter;
  void named;
}
void limiters;
