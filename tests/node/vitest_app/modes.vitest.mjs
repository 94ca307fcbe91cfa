// Fake and inline modes under Vitest, started and stopped in beforeEach/afterEach.
import { afterEach, describe, expect, test } from 'vitest';
import { Queue, defineTasks } from 'tideq';
import { fake, inline } from 'tideq/testing';

const emails = new Queue('vitest-modes');
const tasks = defineTasks({ 'send-welcome': async ({ to }) => `welcomed ${to}` });
let mode;
afterEach(() => mode.stop());

describe('fake', () => {
  test('records the enqueue, and drain runs it', async () => {
    mode = fake();
    await emails.enqueueTask('send-welcome', { to: 'ada@example.com' });
    expect(mode.assertEnqueued({ task: 'send-welcome', args: { to: 'ada@example.com' } }).state).toBe('enqueued');
    expect(() => mode.assertEnqueued({ task: 'send-goodbye' })).toThrow(/expected a job with task "send-goodbye" to be enqueued/);
    expect((await mode.drain({ 'vitest-modes': tasks })).completed).toBe(1);
    expect(mode.jobs()[0].result).toBe('welcomed ada@example.com');
  });
});

describe('inline', () => {
  test('runs the job in its enqueue', async () => {
    mode = inline({ 'vitest-modes': tasks });
    const { id } = await emails.enqueueTask('send-welcome', { to: 'bob@example.com' });
    expect(await emails.wait(id)).toBe('welcomed bob@example.com');
  });
});
