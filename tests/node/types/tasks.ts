// Typed tasks under `tsc --strict` (scripts/test-node.sh compiles this file with api.ts; it is
// never run). Each `// @ts-expect-error planted: <text>` line marks a mistake the types must
// catch on the next line: tsc fails if one of them stops being an error, and
// tests/node/typed_tasks.test.mjs compiles this file with the markers removed and checks that
// tsc then reports each mistake, on its line, with <text> in the message.
import { Queue, defineTasks, type Job, type TaskId, type TypedQueue } from 'tideq';

// A spec written as a type: each task's signature, `(args) => result`.
type EmailTasks = {
  'send-email': (args: { to: string; subject?: string }) => Promise<void>;
  render: (args: { template: string; n?: number }) => Promise<string>;
  ping: () => number;
};

async function declared(queue: Queue): Promise<void> {
  const emails: TypedQueue<EmailTasks> = queue.typed<EmailTasks>();
  const sent = await emails.enqueueTask('send-email', { to: 'ada@example.com' });
  const rendered = await emails.enqueueTask('render', { template: 'welcome' }, { delayMs: 10, priority: 2 });
  await emails.enqueueTask('ping');
  const id: TaskId<'render'> = rendered.id;
  const plain: string = rendered.id; // a task id is a string
  const created: boolean = rendered.created;

  // wait: the result of the id's task (null for a task that returns nothing).
  const html: string = await emails.wait(rendered.id, { timeoutMs: 1000 });
  const nothing: null = await emails.wait(sent.id);
  const pong: number = await emails.wait((await emails.enqueueTask('ping')).id);
  // Any other string: one of the tasks' results; or the task named.
  const any: string | number | null = await emails.wait('an-id');
  const named: string = await emails.wait<'render'>('an-id');

  await emails.enqueueMany([
    { name: 'render', data: { template: 'a' }, delayMs: 5 },
    { name: 'ping' },
    { payload: Buffer.from('raw') },
    Buffer.from('raw'),
  ]);

  // A handler for each task, with its signature (the job comes second).
  const worker = emails.work({
    'send-email': async ({ to, subject }, job: Job) => {
      void [to.toUpperCase(), subject?.length, job.id];
    },
    render: async (args) => `<p>${args.template} ${args.n ?? 0}</p>`,
    ping: () => 1,
  });
  await worker.shutdown();
  // Everything else is the queue's.
  const stats = await emails.stats();
  void [id, plain, created, html, nothing, pong, any, named, stats];

  // @ts-expect-error planted: "send-mail"
  await emails.enqueueTask('send-mail', { to: 'ada@example.com' });
  // @ts-expect-error planted: Type 'number' is not assignable to type 'string'
  await emails.enqueueTask('send-email', { to: 42 });
  // @ts-expect-error planted: Expected 2-3 arguments, but got 1
  await emails.enqueueTask('send-email');
  // @ts-expect-error planted: Property 'to' is missing
  await emails.enqueueTask('send-email', { subject: 'hi' });
  // @ts-expect-error planted: Type 'string' is not assignable to type 'number'
  const count: number = await emails.wait(rendered.id);
  // @ts-expect-error planted: Type 'null' is not assignable to type 'string'
  const text: string = await emails.wait(sent.id);
  emails.work({
    'send-email': async () => {},
    // @ts-expect-error planted: Types of parameters 'args' and 'args' are incompatible
    render: async (args: { template: number }) => `${args.template}`,
    ping: () => 1,
  });
  emails.work({
    'send-email': async () => {},
    // @ts-expect-error planted: Type 'number' is not assignable to type 'string'
    render: async () => 404,
    ping: () => 1,
  });
  // @ts-expect-error planted: Property 'render' is missing
  emails.work({ 'send-email': async () => {}, ping: () => 1 });
  // @ts-expect-error planted: The types of 'data.template' are incompatible
  await emails.enqueueMany([{ name: 'render', data: { template: 1 } }]);
  void [count, text];
}

// A spec inferred from the handlers themselves: defineTasks returns them as they are.
export const reports = defineTasks({
  build: async (args: { month: string }, job) => {
    void job.attempt;
    return { month: args.month, rows: 3 };
  },
  cleanup: async () => {},
});

async function inferred(queue: Queue): Promise<void> {
  const q = queue.typed(reports);
  const built = await q.enqueueTask('build', { month: '2026-11' });
  const report: { month: string; rows: number } = await q.wait(built.id);
  await q.enqueueTask('cleanup');
  q.work(reports);
  void report;

  // @ts-expect-error planted: Type 'number' is not assignable to type 'string'
  await q.enqueueTask('build', { month: 11 });
  // @ts-expect-error planted: Type '{ month: string; rows: number; }' is not assignable to type 'string'
  const wrong: string = await q.wait(built.id);
  // @ts-expect-error planted: "rebuild"
  await q.enqueueTask('rebuild', { month: '2026-11' });
  void wrong;
}

void [declared, inferred];
