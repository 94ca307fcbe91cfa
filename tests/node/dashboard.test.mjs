// `tideq dashboard` in a real browser: the npm package's `tideq` command serves the page, Debian's
// chromium (headless) loads it, and the test drives it over the Chrome DevTools Protocol spoken on
// the pipe chromium opens with --remote-debugging-pipe (fd 3: commands in, fd 4: replies and
// events out, each JSON message ended by a NUL byte): no puppeteer, no websocket library. The
// page must show the queue's counts; a click on a dead job's Requeue button must put the job
// back to ready in Redis; a job's page offers the actions its state allows, each confirmed first;
// search finds jobs by task and group; the queue page shows its history from Redis and its live
// workers, and its schedules 50 at a time. Mounted under /tideq in the Express example app, behind
// its cookie login, every request the page makes stays under the prefix and succeeds. Screenshots are saved to target/screenshots/ (the docs' are docs/img/dashboard-*.png).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ROOT, freePort, freshJobQueue, sleep, tideq, unique, useRedis } from './harness.mjs';
import { startExample } from './mounted.mjs';
import { screenshot, until, useBrowser } from './browser.mjs';

const redis = useRedis();
const { startDashboard, openPage } = useBrowser(redis);

test('the dashboard shows the counts and its Requeue button puts a dead job back to ready', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueueMany([
    { payload: Buffer.from('{"to":"ada"}'), id: 'dead-1', maxAttempts: 1 },
    { name: 'send-email', data: { to: 'bob' }, id: 'dead-2', maxAttempts: 1 },
  ]);
  for (const job of await queue.leaseJobs(2, { leaseMs: 60_000 })) {
    assert.equal(await queue.fail(job, 'smtp said no'), true);
  }
  for (const id of ['r1', 'r2', 'r3']) await queue.enqueue(Buffer.from(`hello ${id}`), { id });
  const stats = await queue.stats();
  assert.deepEqual([stats.ready, stats.dead], [3, 2]);

  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/`);
  const q = JSON.stringify(queue.name);
  const cell = (name) => `document.querySelector('tr[data-queue=' + JSON.stringify(${q}) + '] [data-count="${name}"]')?.textContent`;

  // The overview: the queue's row with its counts.
  await until(async () => (await page.eval(cell('ready'))) === '3' && (await page.eval(cell('dead'))) === '2', 'the overview counts');
  assert.equal(await page.eval(cell('delayed')), '0');
  assert.equal(await page.eval('document.querySelector("svg.chart") !== null'), true, 'a throughput chart');

  // The queue's dead letters, through the page's own link and tab.
  await page.eval(`document.querySelector('tr[data-queue=' + JSON.stringify(${q}) + '] a').click()`);
  await until(async () => (await page.eval('document.querySelector("#queue-view")?.dataset.queue')) === queue.name, 'the queue view');
  await until(() => page.eval('document.querySelector(\'[data-tab="dead"]\') !== null'), 'the tabs');
  await page.eval('document.querySelector(\'[data-tab="dead"]\').click()');
  await until(() => page.eval('document.querySelectorAll("button[data-requeue]").length === 2'), 'two Requeue buttons');
  const taskCell = (id) => page.eval(`document.querySelector('tr[data-job="${id}"] [data-field="task"]').textContent`);
  assert.deepEqual([await taskCell('dead-1'), await taskCell('dead-2')], ['–', 'send-email'], 'the Task column');
  // A job's page, through its id's link: its decoded payload and last error; back to the list.
  await page.eval('document.querySelector(\'tr[data-job="dead-1"] a[data-job-link]\').click()');
  await until(async () => /smtp said no/.test(await page.eval('document.querySelector("#job-detail")?.textContent || ""')), 'the job page');
  assert.match(await page.eval('document.querySelector(\'#job-detail [data-field="payload"]\').textContent'), /"to": "ada"/);
  await page.eval('history.back()');
  await until(() => page.eval('document.querySelectorAll("button[data-requeue]").length === 2'), 'the dead list again');

  // Requeue one: it is ready again in Redis, the other stays dead.
  await page.eval('window.confirm = () => true; document.querySelector(\'button[data-requeue="dead-1"]\').click()');
  await until(async () => (await queue.get('dead-1'))?.state === 'ready', 'dead-1 back to ready in Redis');
  assert.equal((await queue.get('dead-2')).state, 'dead');
  await until(() => page.eval('document.querySelectorAll("button[data-requeue]").length === 1'), 'the dead list to shrink');
  await until(async () => (await page.eval('document.querySelector(\'#queue-counts [data-count="ready"]\')?.textContent')) === '4', 'the page to show 4 ready');
  // The queue's latency (ready jobs wait): seconds to the ms.
  assert.match(await page.eval('document.querySelector(\'#queue-counts [data-count="latency"]\').textContent'), /^\d+\.\d{3} s$/);

  await page.eval('location.hash = "#/"');
  await until(() => page.eval('document.querySelector("#overview") !== null'), 'the overview');
  await screenshot(page, 'dashboard-overview');
});

test('with a token and --read-only the page takes the token from its URL once and shows no buttons', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'doomed', maxAttempts: 1 });
  const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
  await queue.fail(job, 'boom');
  const base = await startDashboard(['--prefix', prefix], ['--token', 'tok-123', '--read-only']);
  assert.equal((await fetch(`${base}/api/overview`)).status, 401);
  const page = await openPage(`${base}/?token=tok-123#/q/${encodeURIComponent(queue.name)}/dead`);
  await until(() => page.eval('document.querySelector(\'tr[data-job="doomed"]\') !== null'), 'the dead job listed');
  assert.equal(await page.eval('location.search'), '', 'the token left the address bar');
  assert.equal(await page.eval('location.hash'), `#/q/${encodeURIComponent(queue.name)}/dead`);
  assert.equal(await page.eval('sessionStorage.getItem("tideq-dashboard-token")'), 'tok-123');
  assert.equal(await page.eval('document.body.dataset.readOnly'), 'true');
  assert.equal(await page.eval('document.querySelectorAll("button[data-requeue], #purge, #requeue-all, #pause, #resume").length'), 0);
});

test('the dead letters fit an 800-px window, each page has its own title, no dead job disables Purge, and a page without its token says why instead of Loading…', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'), { id: 'long-error', maxAttempts: 1 });
  const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
  await queue.fail(job, `${'E'.repeat(40)} ${'x'.repeat(400)}`);
  await queue.setLimits({ rate: { max: 30, perMs: 60_000 } });
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage('about:blank');
  await page.send('Emulation.setDeviceMetricsOverride', { width: 800, height: 900, deviceScaleFactor: 1, mobile: false });
  await page.send('Page.navigate', { url: `${base}/#/q/${encodeURIComponent(queue.name)}/dead` });
  await until(() => page.eval('document.querySelectorAll("button[data-requeue]").length === 1'), 'the dead job listed');
  // The table overflowed the page (1405 px in a 1400-px window; Last error and Requeue were
  // off-screen at 800 px): the page itself never scrolls sideways now.
  assert.equal(await page.eval('document.documentElement.scrollWidth <= window.innerWidth'), true, 'no page-wide sideways scroll');
  assert.equal(await page.eval('document.title'), `${queue.name} · dead · tideq`);
  // Rates read as people say them ("30 per 60000 ms" before).
  await until(async () => /30 per min/.test(await page.eval('document.querySelector("#queue-info")?.textContent || ""')), 'the rate as 30 per min');
  assert.equal(await page.eval('document.querySelector("#purge").disabled'), false);
  await page.eval('window.confirm = () => true; document.querySelector(\'button[data-requeue="long-error"]\').click()');
  await until(async () => (await queue.get('long-error'))?.state === 'ready', 'requeued in Redis');
  // "Purge all 0 dead jobs?" was asked: with none dead, Purge and Requeue all are disabled.
  await until(() => page.eval('document.querySelector("#purge").disabled && document.querySelector("#requeue-all").disabled'), 'Purge disabled');
  await page.eval('location.hash = "#/"');
  await until(async () => (await page.eval('document.title')) === 'Queues · tideq', 'the overview title');

  // A dashboard with a token, opened without it: the 401 is said, and nothing stays "Loading…".
  const guarded = await startDashboard(['--prefix', prefix], ['--token', 'tok-456']);
  const bare = await openPage(`${guarded}/`);
  await until(async () => /Unauthorized/.test(await bare.eval('document.querySelector("#status").textContent')), 'the 401 message');
  assert.equal(await bare.eval('document.querySelector("#view").textContent.includes("Loading…")'), false);
});

test('a job has a page of its own whose actions ask first: run now, cancel, retry, delete', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('{"report":"monthly"}'), { id: 'later', delayMs: 3_600_000 });
  await queue.enqueue(Buffer.from('plain'), { id: 'waiting' });
  await queue.enqueueMany([
    { name: 'send-email', data: { to: 'ada' }, id: 'broken', maxAttempts: 1 },
    { payload: Buffer.from('x'), id: 'broken-2', maxAttempts: 1 },
  ]);
  // Fetch order: the plain ready job first; lease all three, fail the two dead-to-be.
  for (const job of await queue.leaseJobs(3, { leaseMs: 60_000 })) {
    if (job.id === 'waiting') await queue.release(job);
    else assert.equal(await queue.fail(job, 'smtp said no'), true);
  }
  assert.deepEqual(
    [(await queue.get('later')).state, (await queue.get('waiting')).state, (await queue.get('broken')).state],
    ['delayed', 'ready', 'dead'],
  );
  const base = await startDashboard(['--prefix', prefix]);
  const jobUrl = (id) => `${base}/#/j/${encodeURIComponent(queue.name)}/${encodeURIComponent(id)}`;
  const page = await openPage(jobUrl('later'));
  const buttons = () => page.eval('[...document.querySelectorAll("#job-actions button")].map((b) => b.dataset.action).join(",")');
  const field = (name) => page.eval(`document.querySelector('#job-detail [data-field="${name}"]')?.textContent`);

  // Opened by its address: the delayed job's page offers Run now and Cancel.
  await until(async () => (await field('state')) === 'delayed', 'the job page');
  assert.equal(await buttons(), 'run-now,cancel');
  await screenshot(page, 'dashboard-job');
  // Declining the confirmation changes nothing.
  await page.eval('window.confirm = () => false; document.querySelector(\'[data-action="run-now"]\').click()');
  await sleep(300);
  assert.equal((await queue.get('later')).state, 'delayed');
  // Accepting it makes the job ready now, and the page says so.
  await page.eval('window.confirm = () => true; document.querySelector(\'[data-action="run-now"]\').click()');
  await until(async () => (await queue.get('later'))?.state === 'ready', 'later to be ready in Redis');
  await until(async () => (await field('state')) === 'ready', 'the page to show it ready');
  assert.equal(await buttons(), 'cancel');

  // Cancel a ready job: it is gone, and its page says there is no such job.
  await page.eval(`location.hash = ${JSON.stringify(`#/j/${encodeURIComponent(queue.name)}/waiting`)}`);
  await until(async () => (await field('state')) === 'ready' && (await buttons()) === 'cancel', 'the ready job page');
  await page.eval('window.confirm = () => true; document.querySelector(\'[data-action="cancel"]\').click()');
  await until(async () => (await queue.get('waiting')) === null, 'waiting to be cancelled in Redis');
  await until(() => page.eval('document.querySelector("#job-missing") !== null'), 'the page to say the job is gone');

  // A dead job: Retry puts it back to ready; Delete removes another for good.
  await page.eval(`location.hash = ${JSON.stringify(`#/j/${encodeURIComponent(queue.name)}/broken`)}`);
  await until(async () => (await field('state')) === 'dead', 'the dead job page');
  assert.equal(await buttons(), 'retry,delete');
  assert.match(await field('last_error'), /smtp said no/);
  assert.match(await field('task'), /send-email/);
  await page.eval('window.confirm = () => true; document.querySelector(\'[data-action="retry"]\').click()');
  await until(async () => (await queue.get('broken'))?.state === 'ready', 'broken to be ready again');
  await page.eval(`location.hash = ${JSON.stringify(`#/j/${encodeURIComponent(queue.name)}/broken-2`)}`);
  await until(async () => (await field('state')) === 'dead', 'the second dead job page');
  await page.eval('window.confirm = () => true; document.querySelector(\'[data-action="delete"]\').click()');
  await until(async () => (await queue.get('broken-2')) === null, 'broken-2 to be deleted');
  assert.equal((await queue.stats()).dead, 0);

  // Job ids in the queue's lists link to their pages.
  await page.eval(`location.hash = ${JSON.stringify(`#/q/${encodeURIComponent(queue.name)}/ready`)}`);
  await until(() => page.eval('document.querySelector(\'tr[data-job="later"] a[data-job-link]\') !== null'), 'the ready list');
  await page.eval('document.querySelector(\'tr[data-job="later"] a[data-job-link]\').click()');
  await until(async () => (await page.eval('location.hash')) === `#/j/${encodeURIComponent(queue.name)}/later`, 'the link to the job page');
});

test('search finds every job of a task or group among 6,000, looking further on request; an id opens its page', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const batch = [];
  for (let i = 0; i < 6000; i++) {
    const needle = i % 1000 === 7;
    batch.push({
      name: needle ? 'resize-image' : 'send-email',
      data: { i },
      id: `job-${i}`,
      group: i % 1500 === 3 ? 'tenant-42' : `tenant-${i % 10}`,
      delayMs: i % 2 ? 3_600_000 : undefined,
    });
  }
  for (let i = 0; i < batch.length; i += 1000) await queue.enqueueMany(batch.slice(i, i + 1000));
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  await until(() => page.eval('document.querySelector("#search") !== null'), 'the search form');

  const search = async (by, text) => {
    await page.eval(`document.querySelector("#search-by").value = ${JSON.stringify(by)};
      document.querySelector("#search-text").value = ${JSON.stringify(text)};
      document.querySelector("#search-go").click()`);
    // Look further until the walk is over.
    await until(async () => {
      const heading = await page.eval('document.querySelector("#search-results h3")?.textContent || ""');
      if (!heading.includes(`${by} "${text}"`)) return false;
      const info = await page.eval('document.querySelector("#search-info")?.textContent || ""');
      if (/all of them/.test(info)) return true;
      await page.eval('document.querySelector("#search-more")?.click()');
      return false;
    }, `the search by ${by} to finish`, 60_000);
    return page.eval('[...document.querySelectorAll("#found tr[data-job]")].map((r) => r.dataset.job).sort()');
  };
  const expected = (pick) => batch.filter(pick).map((j) => j.id).sort();
  assert.deepEqual(await search('task', 'resize-image'), expected((j) => j.name === 'resize-image'));
  await screenshot(page, 'dashboard-search', { viewport: true });
  assert.deepEqual(await search('group', 'tenant-42'), expected((j) => j.group === 'tenant-42'));
  // Nothing found says so, after looking at every job: the 3,000 delayed ones, then the 3,000
  // ready ones with the delayed ones passed over again on the way (they are grouped).
  assert.deepEqual(await search('task', 'no-such-task'), []);
  assert.match(await page.eval('document.querySelector("#search-info").textContent'), /0 found among 9,000 jobs looked at \(all of them\)/);

  // By id: the job's page.
  await page.eval('document.querySelector("#search-by").value = "id"; document.querySelector("#search-text").value = "job-1007"; document.querySelector("#search-go").click()');
  await until(async () => (await page.eval('document.querySelector(\'#job-detail [data-field="task"]\')?.textContent')) === 'resize-image', 'the job page of job-1007');
});

test('the queue page shows its history from Redis, the same after a dashboard restart, and its live workers', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  const worker = queue.work(async (job) => {
    if (job.payload.toString() === 'bad') throw new Error('no good');
  }, { concurrency: 2, pollIntervalMs: 50 });
  try {
    await queue.enqueueMany([
      ...Array.from({ length: 30 }, (_, i) => ({ payload: Buffer.from(`ok ${i}`) })),
      ...Array.from({ length: 3 }, () => ({ payload: Buffer.from('bad'), maxAttempts: 1 })),
    ]);
    await until(async () => {
      const s = await queue.stats();
      return s.completed === 30 && s.dead === 3;
    }, 'the jobs to run');
    const totals = async (base) => {
      const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
      await until(() => page.eval('document.querySelector(\'tr[data-worker] td:nth-child(4)\')?.textContent === "node"'), 'the worker listed');
      const read = () => page.eval('Object.fromEntries([...document.querySelectorAll("#history-chart [data-total]")].map((e) => [e.dataset.total, e.textContent]))');
      await until(async () => /completed 30/.test((await read()).completed || ''), 'the history to count 30 completed', 30_000);
      return { page, shown: await read() };
    };
    const first = await totals(await startDashboard(['--prefix', prefix]));
    assert.match(first.shown.dead_lettered, /dead lettered 3/);
    assert.match(first.shown.failed, /failed 3/);
    await screenshot(first.page, 'dashboard-queue');
    // Another dashboard (as after a restart) reads the same history from Redis.
    const second = await totals(await startDashboard(['--prefix', prefix]));
    assert.deepEqual(second.shown, first.shown);
  } finally {
    await worker.shutdown();
  }
});

test('a queue with 120 schedules shows them 50 at a time, by name, with Prev and Next', async () => {
  const { queue, prefix } = freshJobQueue(redis.url);
  await queue.enqueue(Buffer.from('x'));
  for (let i = 0; i < 120; i++) {
    await queue.upsertSchedule(`s${String(i).padStart(3, '0')}`, Buffer.from('tick'), { everyMs: 3_600_000 });
  }
  const base = await startDashboard(['--prefix', prefix]);
  const page = await openPage(`${base}/#/q/${encodeURIComponent(queue.name)}`);
  const shown = () => page.eval('[...document.querySelectorAll("#schedules tr[data-schedule]")].map((r) => r.dataset.schedule)');
  const range = () => page.eval('document.querySelector("#schedules-pager span")?.textContent || ""');
  await until(async () => (await shown()).length === 50, 'the first 50 schedules');
  assert.deepEqual(await shown(), Array.from({ length: 50 }, (_, i) => `s${String(i).padStart(3, '0')}`));
  assert.match(await range(), /^1–50 of 120/);
  await page.eval('document.querySelector("#schedules-next").click()');
  await until(async () => (await shown())[0] === 's050', 'the next 50');
  await page.eval('document.querySelector("#schedules-next").click()');
  await until(async () => (await shown()).length === 20, 'the last 20');
  assert.match(await range(), /^101–120 of 120/);
  assert.equal(await page.eval('document.querySelector("#schedules-next")'), null, 'no Next on the last page');
  await page.eval('document.querySelector("#schedules-prev").click()');
  await until(async () => (await shown())[0] === 's050', 'back to the middle page');
});

test('mounted under /tideq in the Express example, behind its cookie login: every request succeeds and Requeue works', async () => {
  // The example's client uses the default key prefix.
  const queue = new tideq.Queue(unique('mounted'), { client: new tideq.Client({ url: redis.url }) });
  await queue.enqueue(Buffer.from('x'), { id: 'dead-m', maxAttempts: 1 });
  const [job] = await queue.leaseJobs(1, { leaseMs: 60_000 });
  assert.equal(await queue.fail(job, 'smtp said no'), true);
  const app = await startExample('express/app.mjs', { TIDEQ_REDIS_URL: redis.url });
  const responses = [];
  let page;
  try {
    page = await openPage('about:blank');
    page.cdp.on((msg) => {
      if (msg.sessionId === page.sessionId && msg.method === 'Network.responseReceived') {
        responses.push({ url: new URL(msg.params.response.url), status: msg.params.response.status });
      }
    });
    await page.send('Network.enable');
    // The app's login sets its session cookie and redirects to the dashboard; the page's API calls
    // carry the cookie (no token anywhere).
    await page.send('Page.navigate', { url: `${app.base}/login?user=alice` });
    const row = `document.querySelector('tr[data-queue=' + JSON.stringify(${JSON.stringify(queue.name)}) + ']')`;
    await until(() => page.eval(`${row} !== null`), 'the queue in the overview');
    await page.eval(`location.hash = '#/q/${encodeURIComponent(queue.name)}/dead'`);
    await until(() => page.eval('document.querySelectorAll("button[data-requeue]").length === 1'), 'the Requeue button');
    await page.eval('window.confirm = () => true; document.querySelector(\'button[data-requeue="dead-m"]\').click()');
    await until(async () => (await queue.get('dead-m'))?.state === 'ready', 'dead-m back to ready in Redis');
    // Redis changes before the browser reports the response: wait for its report too.
    await until(() => responses.some((r) => r.url.pathname.endsWith('/requeue')), 'the requeue response');

    const api = responses.filter((r) => r.url.pathname.startsWith('/tideq/api/'));
    assert.ok(api.some((r) => r.url.pathname === '/tideq/api/overview'), 'the overview was read');
    assert.ok(api.some((r) => r.url.pathname.endsWith('/requeue')), 'the requeue went through the prefix');
    for (const r of responses.filter((r) => r.url.protocol === 'http:')) {
      assert.ok(r.url.pathname.startsWith('/tideq/'), `a request outside the prefix: ${r.url}`);
      assert.equal(r.status, 200, `${r.url} answered ${r.status}`);
    }
  } catch (err) {
    // What the page asked and saw, for a failure's diagnosis.
    const shown = await page?.eval('document.body.innerText').catch(() => '?');
    err.message += `\n--- responses ---\n${responses.map((r) => `${r.status} ${r.url}`).join('\n')}\n--- page ---\n${shown}\n--- app ---\n${app.log()}`;
    throw err;
  } finally {
    await app.stop();
  }
});
