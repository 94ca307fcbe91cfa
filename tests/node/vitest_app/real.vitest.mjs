// Real mode under Vitest: the queue, built without a URL, is on the globalSetup's private server.
import { expect, test } from 'vitest';
import { Queue } from 'tideq';

test('a worker runs the job on the private redis-server', async () => {
  expect(process.env.TIDEQ_REDIS_URL).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
  expect(process.env.TIDEQ_REDIS_URL).not.toBe(process.env.TIDEQ_OUTER_REDIS_URL);
  const emails = new Queue('vitest-welcome');
  const { id } = await emails.enqueueTask('send-welcome', { to: 'eve@example.com' });
  const worker = emails.work({ 'send-welcome': async ({ to }) => `sent to ${to}` }, { stopWhenDrained: true });
  expect(await emails.wait(id)).toBe('sent to eve@example.com');
  await worker.join();
});
