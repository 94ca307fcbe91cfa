// A headless chromium for the dashboard's browser tests, driven over the Chrome DevTools Protocol
// spoken on the pipe chromium opens with --remote-debugging-pipe (fd 3: commands in, fd 4: replies
// and events out, each JSON message ended by a NUL byte): no puppeteer, no websocket library.
// `useBrowser(redis)` starts chromium before a test file's tests and stops it (and every dashboard
// it started) after them.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

import { ROOT, freePort, sleep } from './harness.mjs';

const bin = fileURLToPath(new URL('../../bin/tideq.js', import.meta.url));
const CHROMIUM = process.env.CHROMIUM || 'chromium';
const haveChromium = spawnSync('sh', ['-c', `command -v ${CHROMIUM}`]).status === 0;

/** Polls `probe` (async, returns a truthy value when done) until it is, or fails at the deadline. */
export async function until(probe, what, timeoutMs = 20_000) {
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

/** Starts chromium before the file's tests and stops it after; returns `startDashboard(conn, args)`
 * (the npm package's `tideq --url <redis> <conn...> dashboard`, resolving with its base URL) and
 * `openPage(url)`. */
export function useBrowser(redis) {
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

  return { startDashboard, openPage };
}

/** Saves a screenshot of `page` as target/screenshots/NAME.png (docs/img holds the published ones):
 * the whole page, or with `viewport` what fits in the window. */
export async function screenshot(page, name, { viewport = false } = {}) {
  const shot = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: !viewport });
  mkdirSync(join(ROOT, 'target', 'screenshots'), { recursive: true });
  writeFileSync(join(ROOT, 'target', 'screenshots', `${name}.png`), Buffer.from(shot.data, 'base64'));
}
