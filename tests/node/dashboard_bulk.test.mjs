// The dashboard's bulk actions in a real browser (tests/node/browser.mjs): three dead rows
// selected by their checkboxes and "Retry selected" put them back to ready in Redis; "select all
// on this page" checks every row; a read-only dashboard shows no bulk buttons.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { freshJobQueue, useRedis } from './harness.mjs';
import { until, useBrowser } from './browser.mjs';

const redis = useRedis();
const { startDashboard, openPage } = useBrowser(redis);

async function deadJobs(queue, ids) {
  await queue.enqueueMany(ids.map((id) => ({ payload: Buffer.from('x'), id, maxAttempts: 1 })));
  for (const job of await queue.leaseJobs(ids.length, { leaseMs: 60_000 })) {
    assert.equal(await queue.fail(job, 'no'), true);
  }
}

test('three dead rows selected and Retry selected are ready again in Redis', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await deadJobs(queue, ['d1', 'd2', 'd3', 'd4']);
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}/dead`);
  await until(() => page.eval('document.querySelectorAll("#jobs input[data-select]").length === 4'), 'a checkbox per dead row');
  assert.equal(await page.eval('document.querySelector("#bulk-retry").hidden'), false);
  assert.equal(await page.eval('document.querySelector("#bulk-cancel").hidden'), true, 'no cancel on the dead tab');
  await page.eval(`window.confirm = () => true;
    for (const id of ["d1", "d2", "d3"]) document.querySelector('input[data-select="' + id + '"]').click();
    document.querySelector("#bulk-retry").click()`);
  await until(async () => (await Promise.all(['d1', 'd2', 'd3'].map((id) => queue.get(id)))).every((j) => j.state === 'ready'), 'three jobs ready in Redis');
  assert.equal((await queue.get('d4')).state, 'dead');
  // Select all on this page: every row's box.
  await until(() => page.eval('document.querySelectorAll("#jobs input[data-select]").length === 1'), 'the one dead row left');
  await page.eval('document.querySelector("#select-page").click()');
  assert.equal(await page.eval('document.querySelectorAll("#jobs input[data-select]:checked").length'), 1);
  assert.match(await page.eval('document.querySelector("#bulk-count").textContent'), /1 selected/);
});

test('a read-only dashboard shows no bulk buttons nor checkboxes', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await deadJobs(queue, ['r1']);
  const base = await startDashboard(['--prefix', prefix], ['--read-only']);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}/dead`);
  await until(() => page.eval('document.querySelector(\'tr[data-job="r1"]\') !== null'), 'the dead row');
  assert.equal(await page.eval('document.querySelector("#bulk-bar")'), null);
  assert.equal(await page.eval('document.querySelectorAll("input[data-select]").length'), 0);
  assert.equal(await page.eval('document.querySelector("#obliterate")'), null);
});
