// tideq dashboard: plain JavaScript, no framework, no build step. It polls /api/overview every
// 2 s (answered from the server's cache, so polling costs Redis nothing) and reads the other
// endpoints when the operator navigates or acts. Routes live in the hash: #/ (overview),
// #/q/<queue>[/<state>] (a job queue), #/j/<queue>/<id> (one job's page, with its actions: job
// ids everywhere link there), #/c/<queue> (a capped queue). Every value from Redis is put
// in the page as text (never as HTML). Light or dark follows the system unless the header's
// toggle chose one (kept in localStorage).
'use strict';

(() => {
  const TOKEN_KEY = 'tideq-dashboard-token';
  const POLL_MS = 2000;
  const PAGE = 50;
  // Schedules and workers in one page of a queue's view (the API's LISTED).
  const LISTED = 50;
  // Requests a tab makes for a page that comes back empty with more to look at, before it shows
  // it as it is (each request looks at a bounded number of jobs).
  const MAX_LOOKS = 5;
  const STATES = ['ready', 'delayed', 'active', 'waiting', 'dead', 'completed'];
  // Tabs whose jobs move on their own (workers take them, due times come): their page is read
  // again every LIVE_MS even when the counts look the same.
  const MOVING = ['ready', 'delayed', 'active', 'waiting'];
  const LIVE_MS = 10_000;
  const THEME_KEY = 'tideq-dashboard-theme';
  const SVG = 'http://www.w3.org/2000/svg';

  // The token, taken once from ?token= and kept for this tab only; the address bar loses it.
  const here = new URL(window.location.href);
  if (here.searchParams.has('token')) {
    sessionStorage.setItem(TOKEN_KEY, here.searchParams.get('token'));
    here.searchParams.delete('token');
    history.replaceState(null, '', here.pathname + here.search + here.hash);
  }

  // The theme: 'light' or 'dark' when the toggle chose one, else the system's.
  function applyTheme(theme) {
    if (theme) document.documentElement.dataset.theme = theme;
    else delete document.documentElement.dataset.theme;
  }
  applyTheme(localStorage.getItem(THEME_KEY));

  /** The header's light/dark toggle: flips what is shown now and remembers it. */
  function themeToggle() {
    const dark = () => (document.documentElement.dataset.theme || (window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')) === 'dark';
    const label = () => (dark() ? '☀ Light' : '☾ Dark');
    const b = h('button', { id: 'theme', type: 'button', class: 'link', title: 'Light or dark (remembered in this browser)' }, label());
    b.addEventListener('click', () => {
      const next = dark() ? 'light' : 'dark';
      localStorage.setItem(THEME_KEY, next);
      applyTheme(next);
      b.textContent = label();
    });
    return b;
  }

  const state = {
    overview: null,
    // The overview's health panel (/api/health): latency and failures per queue, Redis.
    health: null,
    healthAt: 0,
    // The tab's counts when its page was last read, and when: a change reads the page again.
    shownCounts: null,
    jobsAt: 0,
    route: { view: 'overview' },
    // Job queue view.
    info: null,
    tab: 'ready',
    // The walk of the tab's jobs: each shown page's cursor (null: the first page), newest last.
    pages: [null],
    jobs: null,
    // The history chart's window (seconds), and what it showed last.
    window: 3600,
    history: null,
    historyAt: null,
    // A search by task or group: what was asked, the jobs found so far, where to go on.
    search: null,
    // Job page.
    detail: null,
    // Capped queue view.
    capped: null,
    // Where the shown page of groups starts (a cursor from the page before; null: the first).
    groupsAt: null,
    // Where the shown pages of schedules and of workers start (an offset).
    schedulesAt: 0,
    workersAt: 0,
  };

  document.querySelector('header')?.append(themeToggle());

  // ---- helpers ----------------------------------------------------------------------------

  /** An element: attributes (on* are listeners, dataset an object), then children. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'class') el.className = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : String(c));
    }
    return el;
  }

  function svg(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  function $(sel) {
    return document.querySelector(sel);
  }

  function fill(el, ...children) {
    if (el) el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
  }

  function when(ms) {
    if (ms === null || ms === undefined) return '–';
    return new Date(ms).toLocaleString();
  }

  function num(v) {
    return v === null || v === undefined ? '–' : Number(v).toLocaleString();
  }

  /** A latency in seconds (the API's), to the ms. */
  function secs(v) {
    return v === null || v === undefined ? '–' : `${Number(v).toFixed(3)} s`;
  }

  /** A rate as people say it: `30 per min`, `5 per 10 s`, `100 per 250 ms`, and a token bucket's
   * `, burst 50`. */
  function rate(r) {
    if (!r) return '–';
    const burst = r.burst ? `, burst ${r.burst}` : '';
    const units = [[3600000, 'h'], [60000, 'min'], [1000, 's']];
    for (const [ms, unit] of units) {
      if (r.per_ms % ms === 0) {
        const n = r.per_ms / ms;
        return `${r.max} per ${n === 1 ? '' : `${n} `}${unit}${burst}`;
      }
    }
    return `${r.max} per ${r.per_ms} ms${burst}`;
  }

  function shown(value, format, compact) {
    if (value === null || value === undefined) return '–';
    if (format === 'json') return compact ? JSON.stringify(value) : JSON.stringify(value, null, 2);
    return String(value);
  }

  function say(text, kind) {
    const el = $('#status');
    el.textContent = text || '';
    el.className = kind || '';
  }

  /** `path` under api/, GET or POST (with `body` sent as JSON when given); resolves with the
   * answer's JSON, or throws an Error with its `status` and the API's message. */
  async function api(path, method, body) {
    const headers = { Accept: 'application/json' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    if (method === 'POST') headers['X-Tideq-Request'] = '1';
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetch(`api/${path}`, {
      method: method || 'GET',
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      // Same-origin cookies go along: mounted in an app, its login (a session cookie) decides.
      credentials: 'same-origin',
    });
    let got;
    try {
      got = await resp.json();
    } catch {
      got = { error: resp.statusText };
    }
    if (!resp.ok) {
      const err = new Error(got.error || `HTTP ${resp.status}`);
      err.status = resp.status;
      throw err;
    }
    return got;
  }

  function failed(err) {
    if (err.status === 401) {
      say('Unauthorized: open this page as …/?token=<the dashboard token>.', 'error');
    } else {
      say(err.message, 'error');
    }
    // What was loading will not come: say so instead of "Loading…" for ever.
    for (const p of document.querySelectorAll('#view p.muted')) {
      if (p.textContent === 'Loading…') p.textContent = 'Not loaded (see the message above).';
    }
  }

  const enc = encodeURIComponent;

  /** A link to a job's page (its queue's view, showing it). */
  function jobLink(queue, id) {
    return h('a', { href: `#/j/${enc(queue)}/${enc(id)}`, dataset: { jobLink: `${queue}/${id}` } }, id);
  }

  /** Table headers whose columns hold numbers are right-aligned, as their cells. */
  const NUMERIC = new Set(['Ready', 'Delayed', 'Active', 'Dead', 'Completed', 'Done/s', 'Groups', 'Pushed', 'Delivered',
    'Dropped', 'Discarded', 'Delivered/s', 'Attempts', 'Priority', 'Items', 'Bytes', 'Concurrency', 'Latency', 'Failed 1 h']);

  function thead(names) {
    return h('thead', {}, h('tr', {}, names.map((n) => h('th', { class: NUMERIC.has(n) ? 'num' : null }, n))));
  }

  // ---- routing ----------------------------------------------------------------------------

  function parseRoute() {
    const parts = window.location.hash.replace(/^#\/?/, '').split('/');
    try {
      if (parts[0] === 'q' && parts[1]) {
        const tab = STATES.includes(parts[2]) ? parts[2] : 'ready';
        return { view: 'jobs', name: decodeURIComponent(parts[1]), tab };
      }
      if (parts[0] === 'j' && parts[1] && parts[2]) {
        return { view: 'job', name: decodeURIComponent(parts[1]), id: decodeURIComponent(parts.slice(2).join('/')) };
      }
      if (parts[0] === 'c' && parts[1]) return { view: 'capped', name: decodeURIComponent(parts[1]) };
    } catch {
      // A malformed escape: the overview.
    }
    return { view: 'overview' };
  }

  function navigate() {
    const route = parseRoute();
    const same = route.view === state.route.view && route.name === state.route.name;
    state.route = route;
    if (!same) {
      state.groupsAt = null;
      state.schedulesAt = 0;
      state.workersAt = 0;
      state.search = null;
      state.history = null;
    }
    say('');
    document.title = {
      overview: 'Queues · tideq',
      jobs: `${route.name} · ${route.tab} · tideq`,
      job: `${route.id} · ${route.name} · tideq`,
      capped: `${route.name} · capped · tideq`,
    }[route.view];
    if (route.view === 'jobs') {
      if (!same) state.info = null;
      state.tab = route.tab;
      state.pages = [null];
      state.jobs = null;
      renderJobQueue();
      loadQueue();
      loadJobs();
      loadHistory();
    } else if (route.view === 'job') {
      state.detail = null;
      renderJobPage();
      loadJobPage();
    } else if (route.view === 'capped') {
      state.capped = null;
      renderCapped();
      loadCapped();
    } else {
      renderOverview();
    }
  }
