// The dashboard's operator views in a real browser (issue 43; see browser.mjs for the driver):
// lists and job pages that follow what workers do without Reload, the completed tab counting the
// jobs kept, waiting flow parents listed and cancelled from their page, the arguments column and
// search by arguments, the overview's health (latency, failures in the last hour, the Redis panel
// and its warning on an evicting policy), and dark mode. Screenshots go to target/screenshots/
// (the docs' are docs/img/dashboard-*.png).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { freshJobQueue, startRedis, tideq, useRedis } from './harness.mjs';
import { screenshot, until, useBrowser } from './browser.mjs';

const redis = useRedis();
// The dashboards start on `server.url`: the test's redis, or (`server.evicts`) one whose
// policy evicts.
let evicting;
const server = {
  evicts: false,
  get url() {
    return this.evicts ? evicting.url : redis.url;
  },
};
const { startDashboard, openPage } = useBrowser(server);
before(async () => {
  evicting = await startRedis(['--maxmemory-policy', 'allkeys-lru']);
});
after(async () => {
  if (evicting) await evicting.stop();
});

const text = (page, sel) => page.eval(`document.querySelector(${JSON.stringify(sel)})?.textContent ?? null`);
const rows = (page) => page.eval('document.querySelectorAll("#jobs tbody tr").length');

// Issue 43, defect 1: a paused queue's 25 ready rows stayed listed under "ready 0" after Resume
// while a worker ran them; a job page still said "active" after its job had died. The list now
// follows the counts, and a job page follows its job while it is on its way.
test('after Resume the ready rows go away without Reload, and a job page follows its job to the end', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.pause();
  await queue.enqueueMany(Array.from({ length: 25 }, (_, i) => ({ payload: Buffer.from(`{"n":${i}}`), id: `j${String(i).padStart(2, '0')}` })));
  // The 25 jobs wait for `go` once started, so the page's own reload after Resume sees them still
  // there: only following the counts can take them off.
  let go;
  const started = new Promise((resolve) => (go = resolve));
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const worker = queue.work(async (job) => {
    if (job.id === 'slow') {
      await gate;
      throw new Error('died again');
    }
    await started;
  }, { concurrency: 4, pollIntervalMs: 50, onError: () => {} });
  try {
    const base = await startDashboard(['--prefix', prefix], ['--refresh', '1']);
    const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}/ready`);
    await until(async () => (await rows(page)) === 25, '25 ready rows');
    assert.equal(await text(page, '[data-tab-count="ready"]'), '25');
    assert.equal(await text(page, 'tr[data-job="j03"] [data-field="args"]'), '{"n":3}', 'the arguments column');
    await page.eval('document.querySelector("#resume").click()');
    await until(async () => /Resumed/.test(await text(page, '#status')) && (await queue.stats()).active === 4, 'resumed, 4 jobs running');
    await until(async () => (await rows(page)) === 21, 'the page read again after Resume: 21 still ready');
    go();
    await until(async () => (await queue.stats()).completed === 25, 'the worker to run the 25 jobs');
    // No Reload: the rows follow the counts.
    await until(async () => (await rows(page)) === 0 && (await text(page, '[data-tab-count="ready"]')) === '0', 'the ready rows to go');
    assert.match(await text(page, '#jobs-empty'), /No ready jobs/);

    // A job page while its job runs, then dies (one attempt): it says dead without Reload.
    await queue.enqueue(Buffer.from('{"slow":true}'), { id: 'slow', maxAttempts: 1 });
    await until(async () => (await queue.get('slow'))?.state === 'active', 'slow to start');
    await page.eval(`location.hash = ${JSON.stringify(`#/j/${encodeURIComponent(queue.name)}/slow`)}`);
    await until(async () => (await text(page, '#job-detail [data-field="state"]')) === 'active', 'the page to say active');
    release();
    await until(async () => (await text(page, '#job-detail [data-field="state"]')) === 'dead', 'the page to say dead');
    assert.match(await text(page, '#job-detail [data-field="last_error"]'), /died again/);
  } finally {
    go();
    release();
    await worker.shutdown();
  }
});

// Issue 43, defect 3: the completed tab showed the lifetime counter over the jobs kept, and its
// last pages were empty.
test('the completed tab counts the 100 jobs kept of 250 completed, and its last page is not empty', async () => {
  const { queue, prefix } = freshJobQueue(redis.url, { keepCompleted: 100 });
  await queue.enqueueMany(Array.from({ length: 250 }, (_, i) => ({ payload: Buffer.from(`done ${i}`) })));
  for (;;) {
    const got = await queue.leaseJobs(100, { leaseMs: 60_000 });
    if (!got.length) break;
    for (const job of got) await queue.complete(job);
  }
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}/completed`);
  await until(async () => (await text(page, '[data-tab-count="completed"]')) === '100', 'the tab to say 100');
  assert.equal(await text(page, '#queue-counts [data-count="completed"]'), '100');
  assert.equal(await text(page, '#queue-counts [data-count="completed_total"]'), '250');
  await until(async () => (await rows(page)) === 50, 'the first page');
  await page.eval('document.querySelector("#next").click()');
  await until(async () => (await text(page, '#page-info')) === 'page 2' && (await rows(page)) === 50, 'the second page, full');
  assert.equal(await page.eval('document.querySelector("#next").disabled'), true, 'the last page');
  await page.eval('location.hash = "#/"');
  await until(async () => (await text(page, `tr[data-queue=${JSON.stringify(queue.name)}] [data-count="completed"]`)) === '100', 'the overview to say 100');
});

test('a waiting flow parent has its tab and a Cancel on its page that takes its held children with it', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const held = (id) => ({ payload: Buffer.from(id), id, delayMs: 3_600_000 });
  await queue.enqueueFlow({ payload: Buffer.from('{"report":"weekly"}'), id: 'parent', children: [held('k1'), held('k2')] });
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}/waiting`);
  await until(async () => (await text(page, '[data-tab-count="waiting"]')) === '1', 'the waiting count');
  await until(() => page.eval('document.querySelector(\'tr[data-job="parent"]\') !== null'), 'the parent listed');
  assert.equal(await text(page, 'tr[data-job="parent"] [data-field="args"]'), '{"report":"weekly"}');
  await screenshot(page, 'dashboard-waiting');
  await page.eval('document.querySelector(\'tr[data-job="parent"] a[data-job-link]\').click()');
  await until(async () => (await text(page, '#job-detail [data-field="state"]')) === 'waiting', 'the parent\'s page');
  assert.equal(await text(page, '#job-detail [data-field="children_pending"]'), '2');
  await page.eval('window.confirm = () => true; document.querySelector(\'button[data-action="cancel"]\').click()');
  await until(async () => (await queue.get('parent')) === null, 'the parent cancelled in Redis');
  // (Its children go in the calls that follow the parent's.)
  await until(async () => (await queue.get('k1')) === null && (await queue.get('k2')) === null, 'its children with it');
  await until(() => page.eval('document.querySelector("#job-missing") !== null'), 'the page to say it is gone');
});

test('the search form finds jobs by a piece of their arguments, shown cut short', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from(JSON.stringify({ to: 'ada@example.com', body: 'x'.repeat(5000) })), { id: 'mail-ada' });
  await queue.enqueue(Buffer.from(JSON.stringify({ to: 'bob@example.com' })), { id: 'mail-bob' });
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  await until(() => page.eval('document.querySelector("#search-by option[value=contains]") !== null'), 'the search form');
  await page.eval('document.querySelector("#search-by").value = "contains"; document.querySelector("#search-text").value = "ada@example"; document.querySelector("#search-go").click()');
  await until(async () => (await page.eval('document.querySelectorAll("#found tbody tr").length')) === 1, 'one job found');
  const args = await text(page, '#found tr[data-job="mail-ada"] [data-field="args"]');
  assert.equal([...args].length, 80);
  assert.ok(args.endsWith('…'), args);
});

test('the overview shows each queue\'s latency and failures in the last hour, and the Redis panel warns of an evicting policy', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'doomed', maxAttempts: 1 });
  const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
  await queue.fail(job, 'boom');
  await queue.enqueue(Buffer.from('y'), { id: 'waits' });
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/`);
  const cell = (k) => `tr[data-queue=${JSON.stringify(queue.name)}] [data-health="${k}"]`;
  await until(async () => /^\d+\.\d{3} s$/.test((await text(page, cell('latency'))) || ''), 'the latency');
  assert.equal(await text(page, cell('failed')), '1');
  await until(() => page.eval('document.querySelector(\'#redis-panel [data-redis="version"]\') !== null'), 'the Redis panel');
  assert.match(await text(page, '#redis-panel [data-redis="version"]'), /^redis 7/);
  assert.equal(await text(page, '#redis-panel [data-redis="policy"]'), 'noeviction');
  assert.equal(await page.eval('document.querySelector("#eviction-warning")'), null, 'no warning on noeviction');
  await screenshot(page, 'dashboard-health');

  // A server whose policy evicts: the panel says so, visibly.
  server.evicts = true;
  try {
    const other = new tideq.Queue('evictable', { client: new tideq.Client({ url: evicting.url, prefix, evictionCheck: 'off' }) });
    await other.enqueue(Buffer.from('z'));
    const warned = await openPage(`${await startDashboard(['--prefix', prefix])}/`);
    await until(async () => /allkeys-lru/.test((await text(warned, '#eviction-warning')) || ''), 'the eviction warning');
    assert.equal(await text(warned, '#redis-panel [data-redis="policy"]'), 'allkeys-lru');
    assert.equal(await warned.eval('document.querySelector("#eviction-warning").getBoundingClientRect().height > 0'), true, 'visible');
    await screenshot(warned, 'dashboard-eviction-warning', { viewport: true });
  } finally {
    server.evicts = false;
  }
});

test('dark mode: the system\'s by default, the toggle flips it and is remembered', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('{"hello":"dark"}'), { id: 'one' });
  const base = await startDashboard(['--prefix', prefix]);
  const bg = (p) => p.eval('getComputedStyle(document.body).backgroundColor');
  // The system asks for dark: dark without any choice.
  const page = await openPage('about:blank');
  await page.send('Emulation.setEmulatedMedia', { features: [{ name: 'prefers-color-scheme', value: 'dark' }] });
  await page.send('Page.navigate', { url: `${base}/#/q/${encodeURIComponent(queue.name)}` });
  await until(async () => (await rows(page)) === 1, 'the queue page');
  assert.equal(await bg(page), 'rgb(15, 20, 25)');
  await screenshot(page, 'dashboard-dark', { viewport: true });
  // The toggle: light, remembered across a reload.
  await page.eval('document.querySelector("#theme").click()');
  assert.equal(await bg(page), 'rgb(250, 250, 250)');
  assert.equal(await page.eval('localStorage.getItem("tideq-dashboard-theme")'), 'light');
  // (The old document is marked: the new one is told apart from it.)
  await page.eval('window.beforeReload = true; location.reload()');
  await until(async () => (await page.eval('window.beforeReload === undefined')) && (await rows(page)) === 1, 'the page again');
  assert.equal(await bg(page), 'rgb(250, 250, 250)');
  await screenshot(page, 'dashboard-light', { viewport: true });
  // Back to dark by the toggle.
  await page.eval('document.querySelector("#theme").click()');
  assert.equal(await bg(page), 'rgb(15, 20, 25)');
  assert.equal(await page.eval('localStorage.getItem("tideq-dashboard-theme")'), 'dark');
});
