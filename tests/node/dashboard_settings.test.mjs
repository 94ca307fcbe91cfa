// The dashboard's settings in a real browser (issue 43, "Settings from the UI"): a schedule's
// Run now enqueues a job and leaves its next run, Pause and Resume change it in Redis, Remove asks
// first; the listing shows the last job's outcome; a limit edited in the form is what `tideq
// limits` shows, a bad number is refused with the reason and nothing written; a group's Pause and
// limits form land in Redis; a read-only dashboard shows none of the forms or buttons.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, freshJobQueue, runNode, useRedis } from './harness.mjs';
import { screenshot, until, useBrowser } from './browser.mjs';

const redis = useRedis();
const { startDashboard, openPage } = useBrowser(redis);
const BIN = join(ROOT, 'bin', 'tideq.js');

/** Clicks the element `sel` (confirm dialogs answered yes). */
async function click(page, sel) {
  await page.eval(`window.confirm = () => true; document.querySelector(${JSON.stringify(sel)}).click()`);
}

test('schedule buttons run now without moving the next run, pause, resume and remove; the last outcome shows', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const next = await queue.upsertSchedule('nightly', Buffer.from('{}'), { cron: '0 3 * * *' });
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  const row = 'tr[data-schedule="nightly"]';
  await until(() => page.eval(`document.querySelector('${row} button[data-schedule-action="run"]') !== null`), 'the Run now button');

  await click(page, `${row} button[data-schedule-action="run"]`);
  await until(async () => (await queue.schedules())[0].lastJobId !== null, 'a job run now');
  const [s] = await queue.schedules();
  assert.match(s.lastJobId, /^nightly@run-/);
  assert.equal(s.nextRunMs, next, 'Run now moved the next run');
  assert.equal((await queue.get(s.lastJobId)).state, 'ready');
  await until(async () => (await page.eval(`document.querySelector('${row} [data-outcome]')?.dataset.outcome`)) === 'ready', 'the outcome shown');
  assert.match(await page.eval('document.querySelector("#status").textContent'), /next run is unchanged/);

  await click(page, `${row} button[data-schedule-action="pause"]`);
  await until(async () => (await queue.schedules())[0].paused, 'paused in Redis');
  await until(() => page.eval(`document.querySelector('${row} button[data-schedule-action="resume"]') !== null`), 'the Resume button');
  assert.equal(await page.eval(`document.querySelector('${row} [data-paused]').dataset.paused`), 'true');
  await screenshot(page, 'dashboard-settings');
  await click(page, `${row} button[data-schedule-action="resume"]`);
  await until(async () => !(await queue.schedules())[0].paused, 'resumed in Redis');
  assert.equal((await queue.schedules())[0].nextRunMs, next);

  // Remove asks first: a "no" keeps it.
  await page.eval(`window.confirm = () => false; document.querySelector('${row} button[data-schedule-action="remove"]').click()`);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await queue.schedules()).length, 1);
  await until(() => page.eval(`document.querySelector('${row} button[data-schedule-action="remove"]') !== null`), 'the Remove button');
  await click(page, `${row} button[data-schedule-action="remove"]`);
  await until(async () => (await queue.schedules()).length === 0, 'removed in Redis');
});

test('a limit edited in the form is what tideq limits shows; a bad number is refused and writes nothing; a group pauses from its row', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { group: 'acme' });
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  await until(() => page.eval('document.querySelector("#limits-edit") !== null'), 'the Edit limits button');
  await click(page, '#limits-edit');
  const set = (name, v) => page.eval(`document.querySelector('#limits-form [name="${name}"]').value = ${JSON.stringify(v)}`);

  // A bad number: the API's reason, nothing written.
  await set('max_active', '0');
  await click(page, '#limits-save');
  await until(async () => /max_active must be a whole number/.test(await page.eval('document.querySelector("#status").textContent')), 'the refusal');
  assert.equal((await queue.limits()).maxActive, null);

  // The form stays open, as it was typed.
  assert.equal(await page.eval('document.querySelector("#limits-form").hidden'), false);
  await set('max_active', '7');
  await set('rate_max', '30');
  await set('rate_per_ms', '60000');
  await set('rate_burst', '45');
  await click(page, '#limits-save');
  await until(async () => (await queue.limits()).maxActive === 7, 'the limit in Redis');
  const shown = await runNode([BIN, '--url', redis.url, '--prefix', prefix, 'limits', queue.name, '--json']);
  assert.equal(shown.code, 0, shown.stderr);
  const limits = JSON.parse(shown.stdout);
  assert.equal(limits.max_active, 7);
  assert.deepEqual(limits.rate, { max: 30, per_ms: 60000, burst: 45 });
  await until(async () => /7/.test(await page.eval('document.querySelector("#limits").textContent')), 'the page to show 7');
  await until(async () => /30 per min, burst 45/.test(await page.eval('document.querySelector("#limits").textContent')), 'the page to show the bucket');

  // The group's row: Pause, then its limits.
  const grow = 'tr[data-group="acme"]';
  await until(() => page.eval(`document.querySelector('${grow} button[data-group-action="pause"]') !== null`), 'the group Pause button');
  await click(page, `${grow} button[data-group-action="pause"]`);
  await until(async () => (await queue.group('acme')).paused, 'the group paused in Redis');
  // The view is read again after a change: the row's Resume button shows it is the new row.
  await until(() => page.eval(`document.querySelector('${grow} button[data-group-action="resume"]') !== null`), 'the group Resume button');
  await click(page, `${grow} button[data-group-action="limits"]`);
  await page.eval(`document.querySelector('${grow} form [name="concurrency"]').value = '3'`);
  await click(page, `${grow} button[data-group-action="save"]`);
  await until(async () => (await queue.group('acme')).concurrency === 3, 'the group limit in Redis');
});

test('a read-only dashboard shows the schedules and limits but no settings button or form', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.upsertSchedule('nightly', Buffer.from('{}'), { cron: '0 3 * * *' });
  await queue.enqueue(Buffer.from('x'), { group: 'acme' });
  const base = await startDashboard(['--prefix', prefix], ['--read-only']);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  await until(() => page.eval('document.querySelector(\'tr[data-schedule="nightly"] [data-paused]\') !== null'), 'the schedule row with its columns');
  await until(() => page.eval('document.querySelector(\'tr[data-group="acme"]\') !== null'), 'the group row');
  assert.equal(await page.eval('document.querySelectorAll("[data-schedule-action], [data-group-action], #limits-edit, #limits-form").length'), 0);
});
