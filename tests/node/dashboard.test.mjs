// `tideq dashboard` in a real browser: the npm package's `tideq` command serves the page, Debian's
// chromium (headless) loads it, and the test drives it over the Chrome DevTools Protocol spoken on
// the pipe chromium opens with --remote-debugging-pipe (fd 3: commands in, fd 4: replies and
// events out, each JSON message ended by a NUL byte): no puppeteer, no websocket library. The
// page must show the queue's counts; a click on a dead job's Requeue button must put the job
// back to ready in Redis. A screenshot is saved to target/dashboard-test.png.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { ROOT, freePort, freshJobQueue, sleep, useRedis } from './harness.mjs';

const redis = useRedis();
const bin = fileURLToPath(new URL('../../bin/tideq.js', import.meta.url));
const CHROMIUM = process.env.CHROMIUM || 'chromium';
const haveChromium = spawnSync('sh', ['-c', `command -v ${CHROMIUM}`]).status === 0;

/** Polls `probe` (async, returns a truthy value when done) until it is, or fails at the deadline. */
async function until(probe, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await sleep(50);
  }
}

/** A Chrome DevTools Protocol connection over chromium's debugging pipe. */
class Cdp {
  constructor(proc) {
    this.proc = proc;
    this.out = proc.stdio[3];
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = [];
    let buf = Buffer.alloc(0);
    proc.stdio[4].on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      for (let end = buf.indexOf(0); end >= 0; end = buf.indexOf(0)) {
        const msg = JSON.parse(buf.subarray(0, end).toString('utf8'));
        buf = buf.subarray(end + 1);
        this.dispatch(msg);
      }
    });
    proc.once('exit', (code, signal) => {
      for (const { reject } of this.pending.values()) reject(new Error(`chromium exited (${code ?? signal})`));
      this.pending.clear();
    });
  }

  dispatch(msg) {
    if (msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
      return;
    }
    for (const l of this.listeners) l(msg);
  }

  /** Sends `method` (to the page's session when `sessionId` is given); resolves with its result. */
  send(method, params = {}, sessionId) {
    const id = this.nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.out.write(`${JSON.stringify(msg)}\0`);
    });
  }

  on(listener) {
    this.listeners.push(listener);
  }
}

/** A page in chromium: evaluate expressions in it, take screenshots. */
class Page {
  constructor(cdp, sessionId) {
    this.cdp = cdp;
    this.sessionId = sessionId;
  }

  send(method, params) {
    return this.cdp.send(method, params, this.sessionId);
  }

  /** The value of `expression` evaluated in the page (awaited when it is a Promise). */
  async eval(expression) {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  }
}

let chromium;
let cdp;
let profile;
const dashboards = [];

/** Starts `tideq --url <redis> <conn...> dashboard --listen 127.0.0.1:<free> <args...>` (the npm
 * package's command); resolves with its base URL once it answers. */
async function startDashboard(conn, args = []) {
  const port = await freePort();
  const child = spawn(process.execPath, [bin, '--url', redis.url, ...conn, 'dashboard', '--listen', `127.0.0.1:${port}`, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  dashboards.push(child);
  const base = `http://127.0.0.1:${port}`;
  try {
    await until(async () => (await fetch(`${base}/`)).ok, 'the dashboard to answer');
  } catch (err) {
    err.message += `\n--- dashboard stderr ---\n${log}`;
    throw err;
  }
  return base;
}

async function openPage(url) {
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
  const page = new Page(cdp, sessionId);
  // confirm() and friends are accepted (the page asks before requeue-all and purge).
  cdp.on((msg) => {
    if (msg.sessionId === sessionId && msg.method === 'Page.javascriptDialogOpening') {
      page.send('Page.handleJavaScriptDialog', { accept: true }).catch(() => {});
    }
  });
  await page.send('Page.enable');
  await page.send('Runtime.enable');
  await page.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 1000, deviceScaleFactor: 1, mobile: false });
  await page.send('Page.navigate', { url });
  return page;
}

before(async () => {
  if (!haveChromium) throw new Error(`${CHROMIUM} not found: scripts/test-node.sh installs it (apt-get install chromium)`);
  profile = mkdtempSync(join(tmpdir(), 'tideq-chromium-'));
  chromium = spawn(
    CHROMIUM,
    [
      '--headless=new', '--no-sandbox', '--disable-gpu', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
      '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-quic', '--disable-default-apps', '--mute-audio', 'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  chromium.stderr.resume();
  cdp = new Cdp(chromium);
  await until(async () => (await cdp.send('Browser.getVersion')).product, 'chromium to answer');
});

after(async () => {
  for (const d of dashboards) if (d.exitCode === null) d.kill('SIGKILL');
  if (chromium && chromium.exitCode === null) {
    const exited = new Promise((resolve) => chromium.once('exit', resolve));
    try {
      await Promise.race([cdp.send('Browser.close'), sleep(2000)]);
    } catch {
      // Gone already.
    }
    await Promise.race([exited, sleep(3000)]);
    if (chromium.exitCode === null) chromium.kill('SIGKILL');
  }
  if (profile) rmSync(profile, { recursive: true, force: true });
});

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
  // A job's detail: its decoded payload and last error.
  await page.eval('document.querySelector(\'button[data-show="dead-1"]\').click()');
  await until(async () => /smtp said no/.test(await page.eval('document.querySelector("#job-detail")?.textContent || ""')), 'the job detail');
  assert.match(await page.eval('document.querySelector(\'#job-detail [data-field="payload"]\').textContent'), /"to": "ada"/);

  // Requeue one: it is ready again in Redis, the other stays dead.
  await page.eval('window.confirm = () => true; document.querySelector(\'button[data-requeue="dead-1"]\').click()');
  await until(async () => (await queue.get('dead-1'))?.state === 'ready', 'dead-1 back to ready in Redis');
  assert.equal((await queue.get('dead-2')).state, 'dead');
  await until(() => page.eval('document.querySelectorAll("button[data-requeue]").length === 1'), 'the dead list to shrink');
  await until(async () => (await page.eval('document.querySelector(\'#queue-counts [data-count="ready"]\')?.textContent')) === '4', 'the page to show 4 ready');

  // The screenshot (git-ignored target/).
  const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
  mkdirSync(join(ROOT, 'target'), { recursive: true });
  writeFileSync(join(ROOT, 'target', 'dashboard-test.png'), Buffer.from(shot.data, 'base64'));
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
