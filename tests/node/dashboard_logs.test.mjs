// The job page's run, attempts and logs in a real browser (issue 43, "Attempts and logs per
// job"): a job that failed twice (a Node error with its stack) then succeeded shows started-at
// and run time, an Attempts table whose error cells open to the whole stack, and its Logs; markup
// planted in the error, the stack and the log lines stays text.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, useRedis } from './harness.mjs';
import { screenshot, until, useBrowser } from './browser.mjs';

const redis = useRedis();
const { startDashboard, openPage } = useBrowser(redis);

const MARKUP = '<img src=x onerror="window.__planted=1">';

test('a job that failed twice then succeeded shows each attempt with its stack, and its logs, as text', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, { backoff: { type: 'fixed', delayMs: 20 } });
  await queue.enqueue(Buffer.from('{"to":"ada"}'), { id: 'flaky', maxAttempts: 5 });
  const stats = await queue.run(
    async (job) => {
      await job.log(`try ${job.attempt} ${MARKUP}`);
      if (job.attempt < 3) throw new Error(`smtp down ${MARKUP}`);
    },
    { stopWhenDrained: true, pollIntervalMs: 50, onError: () => {} },
  );
  assert.deepEqual([stats.failed, stats.completed], [2, 1]);

  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/j/${encodeURIComponent(queue.name)}/flaky`);
  await until(() => page.eval('document.querySelectorAll("#attempts tbody tr").length === 3'), 'the attempts table');
  const rows = JSON.parse(await page.eval(`JSON.stringify([...document.querySelectorAll('#attempts tbody tr')].map((r) => [r.dataset.attempt, r.dataset.outcome]))`));
  assert.deepEqual(rows, [['1', 'failed'], ['2', 'failed'], ['3', 'completed']]);
  // The error's first line shows; the stack is there whole, behind a <details>.
  const summary = await page.eval('document.querySelector("#attempts tr[data-attempt=\\"1\\"] details summary").textContent');
  assert.equal(summary, `Error: smtp down ${MARKUP}`);
  const stack = await page.eval('document.querySelector("#attempts tr[data-attempt=\\"1\\"] details pre").textContent');
  assert.match(stack, /smtp down/);
  assert.match(stack, /dashboard_logs\.test\.mjs/, 'the stack names where it was thrown');
  await page.eval('document.querySelector("#attempts tr[data-attempt=\\"2\\"] details").open = true');
  // Started at and run time.
  assert.notEqual(await page.eval('document.querySelector(\'#job-run [data-field="started_at"]\').textContent'), '–');
  assert.match(await page.eval('document.querySelector(\'#job-run [data-field="run_ms"]\').textContent'), /\d+(\.\d)? (ms|s)/);
  // The logs: one line per attempt, in order.
  const logs = JSON.parse(await page.eval(`JSON.stringify([...document.querySelectorAll('#job-logs tbody tr')].map((r) => [r.children[1].textContent, r.children[2].textContent]))`));
  assert.deepEqual(logs, [1, 2, 3].map((n) => [String(n), `try ${n} ${MARKUP}`]));
  // No planted markup became an element or ran.
  assert.equal(await page.eval('document.querySelectorAll("#job-detail img").length'), 0);
  assert.equal(await page.eval('window.__planted === undefined'), true);
  await screenshot(page, 'dashboard-attempts-and-logs');
});
