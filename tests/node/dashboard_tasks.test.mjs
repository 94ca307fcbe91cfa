// The dashboard's per-task table in a real browser (issue 43, "Queue health at a glance": per-task
// counts and run times): a queue's page lists each task with its counts, a job without a task as
// "(none)", and a task name holding markup as text.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, useRedis } from './harness.mjs';
import { screenshot, until, useBrowser } from './browser.mjs';

const redis = useRedis();
const { startDashboard, openPage } = useBrowser(redis);

const MARKUP = '<img src=x id=planted onerror=alert(1)>';

test("a queue's page shows each task's counts, with names as text", async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  for (let i = 0; i < 3; i++) await queue.enqueueTask('mail', { to: i });
  await queue.enqueueTask(MARKUP, 1, { maxAttempts: 1 });
  await queue.enqueue(Buffer.from('raw'));
  // The worker's last report (when it stops) carries its counts.
  await queue
    .work(async (job) => {
      if (job.task === MARKUP) throw new Error('no');
    }, { stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} })
    .join();
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  await until(() => page.eval('document.querySelector(\'#tasks-table tr[data-task="mail"]\') !== null'), 'the mail row');
  const cells = (task) =>
    page.eval(`[...[...document.querySelectorAll('#tasks-table tbody tr')].find((r) => r.dataset.task === ${JSON.stringify(task)}).cells].map((c) => c.textContent)`);
  const mail = await cells('mail');
  assert.deepEqual(mail.slice(0, 5), ['mail', '3', '0', '0', '3']);
  const none = await cells('');
  assert.deepEqual(none.slice(0, 2), ['(none)', '1']);
  const planted = await cells(MARKUP);
  assert.deepEqual(planted.slice(0, 4), [MARKUP, '0', '1', '1'], 'the name shown as text');
  assert.equal(await page.eval('document.querySelector("#planted")'), null, 'no element from the name');
  await page.eval('document.querySelector("#tasks-table").scrollIntoView()');
  await screenshot(page, 'dashboard-tasks', { viewport: true });
});
