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
    if (state.route.view === 'overview') {
      renderOverview();
      // The health panel is read less often (the server reads Redis for it every 10 s at most).
      if (Date.now() - state.healthAt > HEALTH_MS) loadHealth();
    }
    else if (state.route.view === 'jobs') {
      renderLive();
      // The history gains a point a minute: read again after one.
      if (state.historyAt && Date.now() - state.historyAt > 60_000) loadHistory();
    } else if (state.route.view === 'job') {
      // A job still on its way (or waiting for its children) is read again at each poll: its
      // page shows where it is now, an action's outcome included.
      if (state.detail && ['ready', 'delayed', 'active', 'waiting'].includes(state.detail.state)) loadJobPage();
    } else if (state.route.view === 'capped') renderCappedLive();
  }

  const HEALTH_MS = 10_000;

  async function loadHealth() {
    state.healthAt = Date.now();
    try {
      state.health = await api('health');
    } catch (err) {
      failed(err);
    }
    if (state.route.view === 'overview') renderOverview();
  }

  /** The health of the queue named `name` (latency, failures in the last hour), if read. */
  function health(name) {
    return state.health && state.health.queues.find((q) => q.name === name);
  }

  /** The Redis panel: version, memory against its limit and policy, clients, ops/s; a warning
   * when the policy evicts keys (jobs are keys: they would be lost without a trace). */
  function redisPanel() {
    const r = state.health && state.health.redis;
    if (!r) return h('section', { id: 'redis-panel' }, h('h2', {}, 'Redis'), h('p', { class: 'muted' }, 'Loading…'));
    if (r.error) return h('section', { id: 'redis-panel' }, h('h2', {}, 'Redis'), h('p', { class: 'muted', id: 'redis-error' }, `Not read: ${r.error}`));
    const item = (k, v, field) => h('div', {}, h('dt', {}, k), h('dd', { dataset: { redis: field } }, v));
    return h('section', { id: 'redis-panel' },
      h('h2', {}, 'Redis'),
      r.evicts
        ? h('p', { class: 'warn', id: 'eviction-warning', role: 'alert' },
          `maxmemory-policy is ${r.maxmemory_policy}: under memory pressure Redis deletes keys, jobs with them, without any error. Set maxmemory-policy noeviction.`)
        : null,
      h('dl', { class: 'counts' },
        item('server', `${r.server} ${r.version}${r.nodes > 1 ? ` (${r.nodes} nodes)` : ''}`, 'version'),
        item('memory', `${bytes(r.used_memory)}${r.maxmemory ? ` of ${bytes(r.maxmemory)}` : ' (no limit)'}`, 'memory'),
        item('policy', r.maxmemory_policy, 'policy'),
        item('clients', num(r.connected_clients), 'clients'),
        item('ops/s', num(r.ops_per_sec), 'ops')));
  }

  /** Bytes as people read them. */
  function bytes(n) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = n;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return i ? `${v.toFixed(1)} ${units[i]}` : `${n} B`;
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
      const hq = health(q.name);
      return h(
        'tr',
        { dataset: { queue: q.name, kind: 'jobs' } },
        h('td', {}, h('a', { href: `#/q/${enc(q.name)}` }, q.name), q.error ? h('span', { class: 'bad', title: q.error }, ' ⚠') : null),
        ...['ready', 'delayed', 'active', 'dead', 'completed'].map((k) =>
          h('td', { class: k === 'dead' && s.dead > 0 ? 'num bad' : 'num', dataset: { count: k } }, num(k === 'completed' ? s.completed_kept : s[k])),
        ),
        h('td', { class: 'num', dataset: { health: 'latency' }, title: 'How long the oldest ready job has waited' }, hq ? secs(hq.latency) : '–'),
        h('td', { class: hq && hq.failed_last_hour > 0 ? 'num bad' : 'num', dataset: { health: 'failed' }, title: 'Failed attempts in the last hour (retried or dead-lettered)' },
          hq ? num(hq.failed_last_hour) : '–'),
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
        h('h2', {}, 'Throughput now, all queues'),
        chart(o.throughput, o.refresh_secs),
        h('p', { class: 'muted' }, 'Live, since this dashboard started. A job queue\'s page shows its history, kept in Redis for 14 days.'),
        capped.length ? h('p', { class: 'muted' }, 'Capped queues count in it with their delivered and pushed items.') : null,
        h('h2', {}, 'Job queues'),
        jobs.length
          ? h('table', { id: 'overview' },
            th('Queue', 'Ready', 'Delayed', 'Active', 'Dead', 'Completed', 'Latency', 'Failed 1 h', 'Paused', 'Done/s'),
            h('tbody', {}, jobRows))
          : h('p', { class: 'muted', id: 'no-queues' }, 'No job queues found under this prefix.'),
        capped.length
          ? [h('h2', {}, 'Capped queues'),
            h('table', { id: 'overview-capped' },
              th('Queue', 'Groups', 'Pushed', 'Delivered', 'Dropped', 'Discarded', 'Delivered/s'),
              h('tbody', {}, cappedRows))]
          : null,
        state.health && state.health.queues_not_read
          ? h('p', { class: 'muted' }, `Latency and failures are read for the first ${num(state.health.queues.length)} queues.`)
          : null,
        redisPanel(),
        h('p', { class: 'muted' },
          `Counts are read every ${o.refresh_secs} s; a new queue shows at the next refresh (on a big keyspace, within 20 times the time a discovery pass takes), or at once when its address is opened.`)),
    );
  }

  /** A line chart of [at_ms, completed/s, enqueued/s] points, as inline SVG; `names` of the two
   * series (a capped queue's are delivered and pushed items). */
  function chart(points, refreshSecs, names = ['completed', 'enqueued']) {
    const last = points[points.length - 1];
    return plot({
      label: 'throughput',
      at: points.map((p) => p[0]),
      lines: [[points.map((p) => p[2]), 'added'], [points.map((p) => p[1]), 'done']],
      empty: points.length < 2 ? `collecting: a point every ${refreshSecs} s` : null,
      stamp: (t) => new Date(t).toLocaleTimeString(),
      caption: [
        h('span', { class: 'key done' }, `${names[0]}/s`), ' ',
        h('span', { class: 'key added' }, `${names[1]}/s`),
        last ? ` · now ${num(last[1])} ${names[0]}/s, ${num(last[2])} ${names[1]}/s` : ''],
    });
  }

  /** Lines over time as inline SVG in a figure: `at` the times (ms), `lines` [values, class]
   * pairs (values by time), `stamp` how a time is written on the axis, `empty` a text shown
   * instead of the lines. */
  function plot({ label, at, lines, stamp, empty, caption, id }) {
    const W = 720;
    const H = 180;
    const pad = { l: 48, r: 8, t: 10, b: 22 };
    const box = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': label });
    box.dataset.points = String(at.length);
    const wrap = h('figure', { class: 'chart-wrap', id }, box, h('figcaption', {}, caption));
    const text = (content, attrs) => {
      const el = svg('text', { class: 'axis', ...attrs });
      el.textContent = content;
      box.append(el);
    };
    if (empty) {
      text(empty, { x: W / 2, y: H / 2, 'text-anchor': 'middle' });
      return wrap;
    }
    const t0 = at[0];
    const t1 = at[at.length - 1];
    const max = Math.max(1, ...lines.flatMap(([values]) => values));
    const x = (t) => pad.l + ((t - t0) / Math.max(1, t1 - t0)) * (W - pad.l - pad.r);
    const y = (v) => H - pad.b - (v / max) * (H - pad.t - pad.b);
    box.append(svg('line', { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, class: 'grid' }));
    box.append(svg('line', { x1: pad.l, y1: pad.t, x2: W - pad.r, y2: pad.t, class: 'grid' }));
    text(max.toLocaleString(undefined, { maximumFractionDigits: 1 }), { x: pad.l - 4, y: pad.t + 4, 'text-anchor': 'end' });
    text('0', { x: pad.l - 4, y: H - pad.b + 4, 'text-anchor': 'end' });
    text(stamp(t0), { x: pad.l, y: H - 6 });
    text(stamp(t1), { x: W - pad.r, y: H - 6, 'text-anchor': 'end' });
    for (const [values, cls, name] of lines) {
      const line = values.map((v, i) => `${x(at[i]).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
      const el = svg('polyline', { points: line, class: `series ${cls}` });
      if (name) el.dataset.series = name;
      box.append(el);
    }
    return wrap;
  }

