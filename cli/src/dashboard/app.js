// tideq dashboard: plain JavaScript, no framework, no build step. It polls /api/overview every
// 2 s (answered from the server's cache, so polling costs Redis nothing) and reads the other
// endpoints when the operator navigates or acts. Routes live in the hash: #/ (overview),
// #/q/<queue>[/<state>] (a job queue), #/c/<queue> (a capped queue). Every value from Redis is
// put in the page as text (never as HTML).
'use strict';

(() => {
  const TOKEN_KEY = 'tideq-dashboard-token';
  const POLL_MS = 2000;
  const PAGE = 50;
  const STATES = ['ready', 'delayed', 'active', 'dead', 'completed'];
  const SVG = 'http://www.w3.org/2000/svg';

  // The token, taken once from ?token= and kept for this tab only; the address bar loses it.
  const here = new URL(window.location.href);
  if (here.searchParams.has('token')) {
    sessionStorage.setItem(TOKEN_KEY, here.searchParams.get('token'));
    here.searchParams.delete('token');
    history.replaceState(null, '', here.pathname + here.search + here.hash);
  }

  const state = {
    overview: null,
    route: { view: 'overview' },
    // Job queue view.
    info: null,
    tab: 'ready',
    // The walk of the tab's jobs: each shown page's cursor (null: the first page), newest last.
    pages: [null],
    jobs: null,
    detail: null,
    // Capped queue view.
    capped: null,
    // Where the shown page of groups starts (a cursor from the page before; null: the first).
    groupsAt: null,
  };

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
    for (const c of children.flat()) {
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

  function rate(r) {
    return r ? `${r.max} per ${r.per_ms} ms` : '–';
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

  async function api(path, method) {
    const headers = { Accept: 'application/json' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    if (method === 'POST') headers['X-Tideq-Request'] = '1';
    const resp = await fetch(`api/${path}`, {
      method: method || 'GET',
      headers,
      cache: 'no-store',
      credentials: 'omit',
    });
    let body;
    try {
      body = await resp.json();
    } catch {
      body = { error: resp.statusText };
    }
    if (!resp.ok) {
      const err = new Error(body.error || `HTTP ${resp.status}`);
      err.status = resp.status;
      throw err;
    }
    return body;
  }

  function failed(err) {
    if (err.status === 401) {
      say('Unauthorized: open this page as …/?token=<the dashboard token>.', 'error');
    } else {
      say(err.message, 'error');
    }
  }

  const enc = encodeURIComponent;

  /** Table headers whose columns hold numbers are right-aligned, as their cells. */
  const NUMERIC = new Set(['Ready', 'Delayed', 'Active', 'Dead', 'Completed', 'Done/s', 'Groups', 'Pushed', 'Delivered',
    'Dropped', 'Discarded', 'Delivered/s', 'Attempts', 'Priority', 'Items', 'Bytes', 'Concurrency']);

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
    if (!same) state.groupsAt = null;
    say('');
    if (route.view === 'jobs') {
      if (!same) {
        state.info = null;
        state.detail = null;
      }
      state.tab = route.tab;
      state.pages = [null];
      state.jobs = null;
      renderJobQueue();
      loadQueue();
      loadJobs();
    } else if (route.view === 'capped') {
      state.capped = null;
      renderCapped();
      loadCapped();
    } else {
      renderOverview();
    }
  }

  // ---- the overview -----------------------------------------------------------------------

  async function poll() {
    try {
      state.overview = await api('overview');
      document.body.dataset.readOnly = String(state.overview.read_only);
      document.body.dataset.refreshes = String(state.overview.refreshes);
      fill($('#refreshed'), `read ${new Date(state.overview.refreshed_at_ms).toLocaleTimeString()}`);
      if (state.overview.error) say(`Last refresh: ${state.overview.error}`, 'error');
      else if ($('#status').className === 'error' && /^Last refresh/.test($('#status').textContent)) say('');
      live();
    } catch (err) {
      failed(err);
    }
  }

  /** Updates what comes from the overview in the current view. */
  function live() {
    if (state.route.view === 'overview') renderOverview();
    else if (state.route.view === 'jobs') renderLive();
    else renderCappedLive();
  }

  function entry(kind, name) {
    const o = state.overview;
    return o && o.queues.find((q) => q.kind === kind && q.name === name);
  }

  function readOnly() {
    return Boolean(state.overview && state.overview.read_only);
  }

  function renderOverview() {
    fill($('#crumb'));
    const o = state.overview;
    if (!o) return;
    const jobs = o.queues.filter((q) => q.kind === 'jobs');
    const capped = o.queues.filter((q) => q.kind === 'capped');
    const last = (series, i) => (series.length ? series[series.length - 1][i] : null);
    const jobRows = jobs.map((q) => {
      const s = q.stats || {};
      return h(
        'tr',
        { dataset: { queue: q.name, kind: 'jobs' } },
        h('td', {}, h('a', { href: `#/q/${enc(q.name)}` }, q.name), q.error ? h('span', { class: 'bad', title: q.error }, ' ⚠') : null),
        ...['ready', 'delayed', 'active', 'dead', 'completed'].map((k) =>
          h('td', { class: k === 'dead' && s.dead > 0 ? 'num bad' : 'num', dataset: { count: k } }, num(s[k])),
        ),
        h('td', { dataset: { paused: String(Boolean(q.paused)) } }, q.paused ? 'paused' : ''),
        h('td', { class: 'num', dataset: { rate: 'completed' } }, num(last(q.throughput, 1))),
      );
    });
    const cappedRows = capped.map((q) => {
      const s = q.stats || {};
      return h(
        'tr',
        { dataset: { queue: q.name, kind: 'capped' } },
        h('td', {}, h('a', { href: `#/c/${enc(q.name)}` }, q.name), q.error ? h('span', { class: 'bad', title: q.error }, ' ⚠') : null),
        ...['groups', 'pushed', 'delivered', 'dropped', 'discarded'].map((k) =>
          h('td', { class: 'num', dataset: { count: k } }, num(s[k])),
        ),
        h('td', { class: 'num', dataset: { rate: 'delivered' } }, num(last(q.throughput, 1))),
      );
    });
    const th = (...names) => thead(names);
    fill(
      $('#view'),
      h('section', { id: 'overview-view' },
        h('h2', {}, 'Throughput, all queues'),
        chart(o.throughput, o.refresh_secs),
        capped.length ? h('p', { class: 'muted' }, 'Capped queues count in it with their delivered and pushed items.') : null,
        h('h2', {}, 'Job queues'),
        jobs.length
          ? h('table', { id: 'overview' },
            th('Queue', 'Ready', 'Delayed', 'Active', 'Dead', 'Completed', 'Paused', 'Done/s'),
            h('tbody', {}, jobRows))
          : h('p', { class: 'muted', id: 'no-queues' }, 'No job queues found under this prefix.'),
        capped.length
          ? [h('h2', {}, 'Capped queues'),
            h('table', { id: 'overview-capped' },
              th('Queue', 'Groups', 'Pushed', 'Delivered', 'Dropped', 'Discarded', 'Delivered/s'),
              h('tbody', {}, cappedRows))]
          : null,
        h('p', { class: 'muted' },
          `Counts are read every ${o.refresh_secs} s; queues are discovered every minute.`)),
    );
  }

  /** A line chart of [at_ms, completed/s, enqueued/s] points, as inline SVG; `names` of the two
   * series (a capped queue's are delivered and pushed items). */
  function chart(points, refreshSecs, names = ['completed', 'enqueued']) {
    const W = 640;
    const H = 160;
    const pad = { l: 48, r: 8, t: 10, b: 22 };
    const box = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': 'throughput' });
    box.dataset.points = String(points.length);
    const wrap = h('figure', { class: 'chart-wrap' }, box,
      h('figcaption', {},
        h('span', { class: 'key done' }, `${names[0]}/s`), ' ',
        h('span', { class: 'key added' }, `${names[1]}/s`),
        points.length ? ` · now ${num(points[points.length - 1][1])} ${names[0]}/s, ${num(points[points.length - 1][2])} ${names[1]}/s` : ''));
    if (points.length < 2) {
      const t = svg('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'axis' });
      t.textContent = `collecting: a point every ${refreshSecs} s`;
      box.append(t);
      return wrap;
    }
    const t0 = points[0][0];
    const t1 = points[points.length - 1][0];
    const max = Math.max(1, ...points.map((p) => Math.max(p[1], p[2])));
    const x = (t) => pad.l + ((t - t0) / Math.max(1, t1 - t0)) * (W - pad.l - pad.r);
    const y = (v) => H - pad.b - (v / max) * (H - pad.t - pad.b);
    box.append(svg('line', { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, class: 'grid' }));
    box.append(svg('line', { x1: pad.l, y1: pad.t, x2: W - pad.r, y2: pad.t, class: 'grid' }));
    const label = (text, attrs) => {
      const el = svg('text', attrs);
      el.textContent = text;
      box.append(el);
    };
    label(max.toLocaleString(undefined, { maximumFractionDigits: 1 }), { x: pad.l - 4, y: pad.t + 4, 'text-anchor': 'end', class: 'axis' });
    label('0', { x: pad.l - 4, y: H - pad.b + 4, 'text-anchor': 'end', class: 'axis' });
    label(new Date(t0).toLocaleTimeString(), { x: pad.l, y: H - 6, class: 'axis' });
    label(new Date(t1).toLocaleTimeString(), { x: W - pad.r, y: H - 6, 'text-anchor': 'end', class: 'axis' });
    for (const [i, cls] of [[2, 'added'], [1, 'done']]) {
      const line = points.map((p) => `${x(p[0]).toFixed(1)},${y(p[i]).toFixed(1)}`).join(' ');
      box.append(svg('polyline', { points: line, class: `series ${cls}` }));
    }
    return wrap;
  }

  // ---- a job queue ------------------------------------------------------------------------

  function renderJobQueue() {
    const name = state.route.name;
    fill($('#crumb'), h('span', {}, ' / job queue '), h('strong', {}, name));
    fill(
      $('#view'),
      h('section', { id: 'queue-view', dataset: { queue: name } },
        h('div', { class: 'bar' },
          h('h2', {}, name),
          h('span', { id: 'paused-badge', class: 'badge', hidden: true }, 'paused'),
          readOnly() ? null : h('button', { id: 'pause', type: 'button', onclick: () => pauseResume('pause') }, 'Pause'),
          readOnly() ? null : h('button', { id: 'resume', type: 'button', onclick: () => pauseResume('resume') }, 'Resume')),
        h('dl', { id: 'queue-counts', class: 'counts' }),
        h('div', { id: 'queue-chart' }),
        h('nav', { id: 'tabs', class: 'tabs' },
          STATES.map((s) => h('a', { href: `#/q/${enc(name)}/${s}`, dataset: { tab: s } }, s, ' ', h('span', { class: 'n', dataset: { tabCount: s } })))),
        h('div', { id: 'dead-actions', class: 'bar', hidden: true },
          readOnly() ? null : h('button', { id: 'requeue-all', type: 'button', onclick: requeueAll }, 'Requeue all'),
          readOnly() ? null : h('button', { id: 'purge', type: 'button', class: 'danger', onclick: purge }, 'Purge')),
        h('section', { id: 'job-detail', hidden: true }),
        h('div', { id: 'jobs-wrap' }),
        h('div', { class: 'bar pager' },
          h('button', { id: 'prev', type: 'button', onclick: () => page(-1) }, '← Prev'),
          h('span', { id: 'page-info' }),
          h('button', { id: 'next', type: 'button', onclick: () => page(1) }, 'Next →'),
          h('button', { id: 'reload', type: 'button', onclick: () => { loadJobs(); loadQueue(); } }, 'Reload')),
        h('div', { id: 'queue-info' })),
    );
    renderLive();
    renderJobs();
    renderDetail();
    renderInfo();
  }

  /** The parts of a job queue's view that come from the overview (every 2 s). */
  function renderLive() {
    const e = entry('jobs', state.route.name);
    const s = (e && e.stats) || {};
    const counts = ['ready', 'delayed', 'active', 'dead', 'completed', 'enqueued', 'retried', 'dead_lettered'];
    fill($('#queue-counts'), counts.map((k) => h('div', {}, h('dt', {}, k.replace('_', ' ')), h('dd', { dataset: { count: k } }, num(s[k])))));
    for (const st of STATES) fill($(`[data-tab-count="${st}"]`), num(s[st]));
    for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('on', a.dataset.tab === state.tab);
    const paused = Boolean(e && e.paused);
    const badge = $('#paused-badge');
    if (badge) badge.hidden = !paused;
    if ($('#pause')) $('#pause').hidden = paused;
    if ($('#resume')) $('#resume').hidden = !paused;
    fill($('#queue-chart'), e ? chart(e.throughput, state.overview.refresh_secs) : null);
    if (!e && state.overview) say(`No job queue "${state.route.name}" here.`, 'error');
  }

  async function loadQueue() {
    const name = state.route.name;
    try {
      const at = state.groupsAt;
      const info = await api(`queues/${enc(name)}${at ? `?groups=${enc(at)}` : ''}`);
      if (state.route.name !== name) return;
      state.info = info;
      renderInfo();
    } catch (err) {
      failed(err);
    }
  }

  async function loadJobs() {
    const { name } = state.route;
    const { tab, pages } = state;
    const at = pages[pages.length - 1];
    try {
      const cursor = at === null ? '' : `&cursor=${enc(at)}`;
      const got = await api(`queues/${enc(name)}/jobs?state=${tab}&limit=${PAGE}${cursor}`);
      if (state.route.name !== name || state.tab !== tab || state.pages !== pages) return;
      state.jobs = got;
      renderJobs();
    } catch (err) {
      failed(err);
    }
  }

  // Pages go by cursor: the next page starts after the last job shown, so jobs moving meanwhile
  // are neither shown twice nor skipped; going back shows the earlier page's jobs as they are now.
  function page(dir) {
    if (dir > 0) {
      if (!state.jobs || !state.jobs.cursor) return;
      state.pages = [...state.pages, state.jobs.cursor];
    } else {
      if (state.pages.length < 2) return;
      state.pages = state.pages.slice(0, -1);
    }
    loadJobs();
  }

  function renderJobs() {
    const dead = state.tab === 'dead';
    const da = $('#dead-actions');
    if (da) da.hidden = !dead || readOnly();
    const got = state.jobs;
    if (!got) {
      fill($('#jobs-wrap'), h('p', { class: 'muted' }, 'Loading…'));
      return;
    }
    const rows = got.jobs.map((j) =>
      h('tr', { dataset: { job: j.id, state: j.state } },
        h('td', {}, h('button', { type: 'button', class: 'link', dataset: { show: j.id }, onclick: () => showJob(j.id, true) }, j.id)),
        h('td', { class: 'num' }, `${j.attempts}/${j.max_attempts}`),
        h('td', { class: 'num' }, j.priority ?? '–'),
        h('td', {}, j.group ?? '–'),
        h('td', { class: 'when' }, when(j.state_since_or_until ?? j.enqueued_at)),
        h('td', { class: 'err', title: j.last_error || '' }, j.last_error ? j.last_error.slice(0, 120) : ''),
        dead && !readOnly()
          ? h('td', {}, h('button', { type: 'button', dataset: { requeue: j.id }, onclick: () => requeue(j.id) }, 'Requeue'))
          : null),
    );
    const since = { delayed: 'Due', active: 'Lease until' }[state.tab] || 'Since';
    fill(
      $('#jobs-wrap'),
      rows.length
        ? h('table', { id: 'jobs', dataset: { state: state.tab } },
          thead(['Id', 'Attempts', 'Priority', 'Group', since, 'Last error', dead && !readOnly() ? '' : null].filter((c) => c !== null)),
          h('tbody', {}, rows))
        : h('p', { class: 'muted', id: 'jobs-empty' }, `No ${state.tab} jobs${state.pages.length > 1 ? ' on this page' : ''}.`),
    );
    fill($('#page-info'), got.jobs.length || state.pages.length > 1 ? `page ${state.pages.length}` : '');
    if ($('#prev')) $('#prev').disabled = state.pages.length < 2;
    if ($('#next')) $('#next').disabled = !got.cursor;
  }

  async function showJob(id, scroll) {
    try {
      state.detail = await api(`queues/${enc(state.route.name)}/jobs/${enc(id)}`);
    } catch (err) {
      state.detail = null;
      failed(err);
    }
    renderDetail();
    if (scroll && state.detail) $('#job-detail').scrollIntoView({ block: 'nearest' });
  }

  function renderDetail() {
    const el = $('#job-detail');
    if (!el) return;
    const j = state.detail;
    el.hidden = !j;
    if (!j) return;
    const row = (k, v, attrs) => h('div', {}, h('dt', {}, k), h('dd', attrs || {}, v));
    const pre = (value, format, len) =>
      h('pre', {}, `(${format || 'none'}${len !== undefined ? `, ${len} bytes` : ''})\n${shown(value, format)}`);
    fill(
      el,
      h('div', { class: 'bar' },
        h('h3', {}, 'Job ', h('code', {}, j.id)),
        h('button', { type: 'button', id: 'close-detail', onclick: () => { state.detail = null; renderDetail(); } }, 'Close')),
      h('dl', { class: 'detail', dataset: { job: j.id } },
        row('state', j.state, { dataset: { field: 'state' } }),
        row('attempts', `${j.attempts} of ${j.max_attempts}`, { dataset: { field: 'attempts' } }),
        row('enqueued', when(j.enqueued_at)),
        row({ delayed: 'due', active: 'lease until' }[j.state] || 'since', when(j.state_since_or_until)),
        row('priority', j.priority ?? '–'),
        row('group', j.group ?? '–'),
        row('last error', j.last_error ? h('pre', {}, j.last_error) : '–', { dataset: { field: 'last_error' } }),
        j.unreadable ? row('unreadable', j.unreadable) : null,
        row('payload', pre(j.payload, j.payload_format, j.payload_len), { dataset: { field: 'payload' } }),
        row('result', j.result_format ? pre(j.result, j.result_format) : '–', { dataset: { field: 'result' } }),
        row('progress', j.progress_format ? pre(j.progress, j.progress_format) : '–', { dataset: { field: 'progress' } })),
    );
  }

  function renderInfo() {
    const el = $('#queue-info');
    if (!el) return;
    const info = state.info;
    if (!info) {
      fill(el);
      return;
    }
    const l = info.limits;
    const table = (id, head, rows, empty) =>
      rows.length
        ? h('table', { id }, thead(head), h('tbody', {}, rows))
        : h('p', { class: 'muted', id }, empty);
    fill(
      el,
      h('h3', {}, 'Limits'),
      h('dl', { id: 'limits', class: 'counts' },
        [['max active', l.max_active ?? '–'], ['rate', rate(l.rate)], ['group concurrency', l.group_concurrency ?? '–'], ['group rate', rate(l.group_rate)]]
          .map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, String(v))))),
      h('h3', {}, 'Schedules'),
      table('schedules', ['Name', 'When', 'Next run', 'Task', 'Group'],
        info.schedules.map((s) => h('tr', { dataset: { schedule: s.name } },
          h('td', {}, s.name), h('td', {}, s.every), h('td', { class: 'when' }, when(s.next_run_ms)),
          h('td', {}, s.task ?? '–'), h('td', {}, s.group ?? '–'))),
        'No schedules.'),
      h('h3', {}, 'Groups'),
      groupPager(info.groups_cursor, loadQueue),
      table('groups', ['Group', 'Ready', 'Active', 'Paused', 'Concurrency', 'Rate'],
        info.groups.map((g) => h('tr', { dataset: { group: g.group } },
          h('td', {}, g.group), h('td', { class: 'num' }, num(g.ready)), h('td', { class: 'num' }, num(g.active)),
          h('td', { dataset: { paused: String(g.paused) } }, g.paused ? 'paused' : ''),
          h('td', { class: 'num' }, g.concurrency ?? '–'), h('td', {}, rate(g.rate)))),
        'No groups.'),
    );
  }

  /** Buttons to the next page of groups (when there is one) and back to the first. */
  function groupPager(next, reload) {
    const go = (at) => () => {
      state.groupsAt = at;
      reload();
    };
    if (!next && !state.groupsAt) return null;
    return h('p', { class: 'pager' },
      state.groupsAt ? h('button', { type: 'button', id: 'groups-first', onclick: go(null) }, 'First groups') : null,
      next ? h('button', { type: 'button', id: 'groups-next', onclick: go(next) }, 'Next groups') : null);
  }

  // ---- actions ----------------------------------------------------------------------------

  /** A change, then everything it may have changed read again; `told(result)` says what was done. */
  async function act(path, told) {
    const name = state.route.name;
    try {
      say(told(await api(`queues/${enc(name)}/${path}`, 'POST')), 'ok');
    } catch (err) {
      failed(err);
    }
    await poll();
    loadQueue();
    loadJobs();
    if (state.detail) showJob(state.detail.id);
  }

  function pauseResume(what) {
    return act(what, (r) => (r.paused ? `Paused "${state.route.name}": workers start none of its jobs.` : `Resumed "${state.route.name}".`));
  }

  function requeue(id) {
    return act(`dead/${enc(id)}/requeue`, () => `Requeued ${id}: it is ready again.`);
  }

  function requeueAll() {
    const e = entry('jobs', state.route.name);
    const n = e && e.stats ? e.stats.dead : '?';
    if (window.confirm(`Requeue all ${n} dead jobs of "${state.route.name}"?`)) {
      act('dead/requeue-all', (r) => `Requeued ${r.requeued} dead jobs.`);
    }
  }

  function purge() {
    const e = entry('jobs', state.route.name);
    const n = e && e.stats ? e.stats.dead : '?';
    if (window.confirm(`Delete all ${n} dead jobs of "${state.route.name}" for good?`)) {
      act('dead/purge', (r) => `Deleted ${r.purged} dead jobs.`);
    }
  }

  // ---- a capped queue ---------------------------------------------------------------------

  function renderCapped() {
    const name = state.route.name;
    fill($('#crumb'), h('span', {}, ' / capped queue '), h('strong', {}, name));
    fill(
      $('#view'),
      h('section', { id: 'capped-view', dataset: { queue: name } },
        h('div', { class: 'bar' }, h('h2', {}, name),
          h('button', { id: 'reload', type: 'button', onclick: () => loadCapped() }, 'Reload')),
        h('dl', { id: 'capped-counts', class: 'counts' }),
        h('div', { id: 'queue-chart' }),
        h('div', { id: 'capped-groups-wrap' }),
        h('section', { id: 'peek', hidden: true })),
    );
    renderCappedLive();
    renderCappedGroups();
  }

  function renderCappedLive() {
    const e = entry('capped', state.route.name);
    const s = (e && e.stats) || {};
    fill($('#capped-counts'), ['groups', 'pushed', 'delivered', 'dropped', 'discarded']
      .map((k) => h('div', {}, h('dt', {}, k), h('dd', { dataset: { count: k } }, num(s[k])))));
    fill($('#queue-chart'), e ? chart(e.throughput, state.overview.refresh_secs, ['delivered', 'pushed']) : null);
    if (!e && state.overview) say(`No capped queue "${state.route.name}" here.`, 'error');
  }

  async function loadCapped(peek) {
    const name = state.route.name;
    try {
      const q = new URLSearchParams();
      if (state.groupsAt) q.set('groups', state.groupsAt);
      if (peek) q.set('peek', peek);
      const got = await api(`capped/${enc(name)}${q.size ? `?${q}` : ''}`);
      if (state.route.name !== name) return;
      state.capped = got;
      renderCappedGroups();
    } catch (err) {
      failed(err);
    }
  }

  function renderCappedGroups() {
    const c = state.capped;
    if (!c) {
      fill($('#capped-groups-wrap'), h('p', { class: 'muted' }, 'Loading…'));
      return;
    }
    fill(
      $('#capped-groups-wrap'),
      h('h3', {}, 'Groups', c.groups_total > c.groups.length ? ` (${c.groups.length} of ${c.groups_total} shown)` : ''),
      groupPager(c.groups_cursor, () => loadCapped()),
      c.groups.length
        ? h('table', { id: 'capped-groups' },
          thead(['Group', 'Items', '']),
          h('tbody', {}, c.groups.map((g) => h('tr', { dataset: { group: g.group } },
            h('td', {}, g.group), h('td', { class: 'num', dataset: { count: 'len' } }, num(g.len)),
            h('td', {}, h('button', { type: 'button', dataset: { peek: g.group }, onclick: () => loadCapped(g.group) }, 'Peek'))))))
        : h('p', { class: 'muted', id: 'capped-groups' }, 'No groups hold items.'),
    );
    const el = $('#peek');
    el.hidden = !c.peek;
    if (!c.peek) return;
    fill(
      el,
      h('h3', {}, 'Oldest items of ', h('code', {}, c.peek.group)),
      c.peek.items.length
        ? h('table', {},
          thead(['Pushed', 'Format', 'Bytes', 'Item']),
          h('tbody', {}, c.peek.items.map((it) => h('tr', {},
            h('td', { class: 'when' }, when(it.pushed_at_ms)), h('td', {}, it.item_format),
            h('td', { class: 'num' }, num(it.item_len)), h('td', {}, h('code', {}, shown(it.item, it.item_format, true)))))))
        : h('p', { class: 'muted' }, 'Empty.'),
    );
  }

  // ---- start ------------------------------------------------------------------------------

  window.addEventListener('hashchange', navigate);
  poll().then(navigate);
  setInterval(() => {
    if (!document.hidden) poll();
  }, POLL_MS);
})();
