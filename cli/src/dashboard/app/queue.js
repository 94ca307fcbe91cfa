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
        h('div', { class: 'bar' },
          h('h3', {}, 'History'),
          HISTORY_WINDOWS.map(([secs, label]) =>
            h('button', { type: 'button', class: 'window', dataset: { window: String(secs) }, onclick: () => { state.window = secs; loadHistory(); } }, label))),
        h('div', { id: 'history' }),
        searchForm(name),
        h('section', { id: 'search-results', hidden: true }),
        h('nav', { id: 'tabs', class: 'tabs' },
          STATES.map((s) => h('a', { href: `#/q/${enc(name)}/${s}`, dataset: { tab: s } }, s, ' ', h('span', { class: 'n', dataset: { tabCount: s } })))),
        h('div', { id: 'dead-actions', class: 'bar', hidden: true },
          readOnly() ? null : h('button', { id: 'requeue-all', type: 'button', onclick: requeueAll }, 'Requeue all'),
          readOnly() ? null : h('button', { id: 'purge', type: 'button', class: 'danger', onclick: purge }, 'Purge')),
        bulkBar(name),
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
    renderHistory();
    renderSearch();
    renderInfo();
  }

  /** The parts of a job queue's view that come from the overview (every 2 s). */
  function renderLive() {
    const e = entry('jobs', state.route.name);
    const s = (e && e.stats) || {};
    // Completed: the jobs kept (what the tab lists), and apart, labelled, every job ever done.
    const counts = [['ready'], ['delayed'], ['active'], ['waiting'], ['dead'], ['completed', 'completed (kept)', 'completed_kept'],
      ['completed_total', 'done in all', 'completed'], ['enqueued'], ['retried'], ['dead_lettered', 'dead lettered']];
    fill($('#queue-counts'), counts.map(([k, label, field]) =>
      h('div', {}, h('dt', {}, label || k), h('dd', { dataset: { count: k } }, num(s[field || k])))),
      // How long the job next in line that waited longest has been ready: what autoscalers use.
      h('div', { title: 'How long the job next in line that waited longest has been ready to start' },
        h('dt', {}, 'latency'), h('dd', { dataset: { count: 'latency' } }, secs(state.info && state.info.name === state.route.name ? state.info.stats.latency : null))));
    for (const st of STATES) fill($(`[data-tab-count="${st}"]`), num(tabCount(s, st)));
    // Nothing dead: nothing to requeue or purge ("Purge all 0 dead jobs?" asked before).
    for (const id of ['#requeue-all', '#purge']) if ($(id)) $(id).disabled = s.dead === 0;
    for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('on', a.dataset.tab === state.tab);
    const paused = Boolean(e && e.paused);
    const badge = $('#paused-badge');
    if (badge) badge.hidden = !paused;
    if ($('#pause')) $('#pause').hidden = paused;
    if ($('#resume')) $('#resume').hidden = !paused;
    if (!e && state.overview) say(`No job queue "${state.route.name}" here.`, 'error');
    if (e && e.stats) followCounts(e.stats);
  }

  /** What the shown page is compared on: the tab's count and the counters of every move. */
  function countsKey(s) {
    return [tabCount(s, state.tab), s.enqueued, s.completed, s.dead_lettered, s.retried, s.cancelled, s.dead, s.lost].join();
  }

  /** How many jobs the tab of `st` lists: completed ones kept, not every one ever completed. */
  function tabCount(s, st) {
    return st === 'completed' ? s.completed_kept : s[st];
  }

  /** The shown page follows the counts: read again (the same page) when the tab's count or the
   * queue's lifetime counters moved since it was read, and every LIVE_MS on a tab whose jobs
   * move on their own; not while rows are selected. */
  function followCounts(s) {
    if (!state.jobs || state.jobsBusy) return;
    // Rows the operator has selected stay as they are until the selection is acted on.
    if (document.querySelector('#jobs input[type="checkbox"]:checked')) return;
    const now = countsKey(s);
    const moved = state.shownCounts !== null && state.shownCounts !== now;
    state.shownCounts = now;
    if (moved || (MOVING.includes(state.tab) && Date.now() - state.jobsAt > LIVE_MS)) loadJobs();
  }

  async function loadQueue() {
    const name = state.route.name;
    try {
      const q = new URLSearchParams();
      if (state.groupsAt) q.set('groups', state.groupsAt);
      if (state.schedulesAt) q.set('schedules', String(state.schedulesAt));
      if (state.workersAt) q.set('workers', String(state.workersAt));
      const info = await api(`queues/${enc(name)}${q.toString() ? `?${q}` : ''}`);
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
    let at = pages[pages.length - 1];
    state.jobsBusy = true;
    state.jobsAt = Date.now();
    const e = entry('jobs', name);
    state.shownCounts = e && e.stats ? countsKey(e.stats) : null;
    try {
      // A page may come back empty with a cursor: none found yet (grouped ready jobs are looked
      // for among the delayed and running ones, a bounded number a request). Look on a few
      // times, saying so, before showing the page as it is.
      for (let looks = 1; ; looks++) {
        const cursor = at === null ? '' : `&cursor=${enc(at)}`;
        const got = await api(`queues/${enc(name)}/jobs?state=${tab}&limit=${PAGE}${cursor}`);
        if (state.route.name !== name || state.tab !== tab || state.pages !== pages) return;
        got.looks = looks;
        state.jobs = got;
        if (got.jobs.length || !got.cursor || looks >= MAX_LOOKS) break;
        renderJobs(true);
        at = got.cursor;
      }
      renderJobs();
    } catch (err) {
      failed(err);
    } finally {
      state.jobsBusy = false;
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

  function renderJobs(looking) {
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
        h('td', {}, jobLink(state.route.name, j.id)),
        h('td', { dataset: { field: 'task' } }, j.task ?? '–'),
        h('td', { class: 'num' }, `${j.attempts}/${j.max_attempts}`),
        h('td', { class: 'num' }, j.priority ?? '–'),
        h('td', {}, j.group ?? '–'),
        h('td', { class: 'when' }, when(j.state_since_or_until ?? j.enqueued_at)),
        argsCell(j),
        h('td', { class: 'err', title: j.last_error || '' }, j.last_error ? j.last_error.slice(0, 120) : ''),
        dead && !readOnly()
          ? h('td', {}, h('button', { type: 'button', dataset: { requeue: j.id }, onclick: () => requeue(j.id) }, 'Requeue'))
          : null),
    );
    const since = { delayed: 'Due', active: 'Lease until', dead: 'Died', completed: 'Finished' }[state.tab] || 'Enqueued';
    fill(
      $('#jobs-wrap'),
      rows.length
        ? h('table', { id: 'jobs', dataset: { state: state.tab } },
          thead(['Id', 'Task', 'Attempts', 'Priority', 'Group', since, 'Arguments', 'Last error', dead && !readOnly() ? '' : null].filter((c) => c !== null)),
          h('tbody', {}, rows))
        : got.cursor
          // None found yet, and more to look at: say so, never "No jobs".
          ? h('p', { class: 'muted', id: 'jobs-looking' }, looking
            ? `Looking for ${state.tab} jobs…`
            : `No ${state.tab} jobs found yet; more to look at (Next →).`)
          : h('p', { class: 'muted', id: 'jobs-empty' }, `No ${state.tab} jobs${state.pages.length > 1 ? ' on this page' : ''}.`),
    );
    fill($('#page-info'), got.jobs.length || state.pages.length > 1 ? `page ${state.pages.length}` : '');
    if ($('#prev')) $('#prev').disabled = state.pages.length < 2;
    if ($('#next')) $('#next').disabled = !got.cursor;
    bulkRows();
  }

  /** A job's arguments in a list: the first characters the API sent (the job's page has them
   * whole). */
  function argsCell(j) {
    return h('td', { class: 'args', dataset: { field: 'args' }, title: j.args_cut ? 'cut: the job\'s page shows them whole' : null }, j.args ?? '');
  }

  // ---- one job's page ---------------------------------------------------------------------

  function renderJobPage() {
    const { name, id } = state.route;
    fill($('#crumb'), h('span', {}, ' / job queue '), h('a', { href: `#/q/${enc(name)}` }, name), h('span', {}, ' / job '), h('strong', {}, id));
    fill($('#view'), h('section', { id: 'job-page', dataset: { queue: name, job: id } },
      h('div', { class: 'bar' },
        h('h2', {}, 'Job ', h('code', {}, id)),
        h('span', { id: 'job-actions', class: 'bar' }),
        h('button', { id: 'reload-job', type: 'button', onclick: loadJobPage }, 'Reload')),
      h('section', { id: 'job-detail' }, h('p', { class: 'muted' }, 'Loading…'))));
  }

  async function loadJobPage() {
    const { name, id } = state.route;
    try {
      const got = await api(`queues/${enc(name)}/jobs/${enc(id)}`);
      if (state.route.view !== 'job' || state.route.id !== id) return;
      state.detail = got;
    } catch (err) {
      if (state.route.view !== 'job' || state.route.id !== id) return;
      state.detail = null;
      if (err.status === 404) {
        fill($('#job-detail'), h('p', { class: 'muted', id: 'job-missing' },
          `No job "${id}" in "${name}": it finished and was not kept, was deleted or cancelled, or never existed. `,
          h('a', { href: `#/q/${enc(name)}` }, `Back to ${name}`)));
        fill($('#job-actions'));
        return;
      }
      failed(err);
    }
    renderDetail();
  }

  /** The actions a job in `st` allows: [name in the API, button label, confirmation, what was done]. */
  function jobActions(st) {
    const a = [];
    if (st === 'delayed') a.push(['run-now', 'Run now', 'Make it ready now instead of at its due time?', 'is ready now']);
    if (st === 'dead') a.push(['retry', 'Retry', 'Move it back to ready, its attempts reset?', 'is ready again']);
    if (['delayed', 'ready', 'active', 'waiting'].includes(st)) {
      a.push(['cancel', 'Cancel', {
        active: 'Ask its worker to stop it? It ends cancelled and is never retried.',
        waiting: 'Cancel this flow job and the children it waits for? None of them will run.',
      }[st] || 'Remove it from the queue? It will not run.', st === 'active' ? 'was asked to stop' : 'was cancelled']);
    }
    if (['dead', 'completed'].includes(st)) a.push(['delete', 'Delete', 'Delete it for good?', 'was deleted']);
    return a;
  }

  async function jobAction(action, question, told) {
    const { name, id } = state.route;
    if (!window.confirm(`Job "${id}" of "${name}": ${question}`)) return;
    try {
      await api(`queues/${enc(name)}/jobs/${enc(id)}/${action}`, 'POST');
      say(`Job ${id} ${told}.`, 'ok');
    } catch (err) {
      failed(err);
    }
    await loadJobPage();
    poll();
  }

  function renderDetail() {
    const el = $('#job-detail');
    if (!el) return;
    const j = state.detail;
    if (!j) return;
    fill($('#job-actions'), readOnly()
      ? null
      : jobActions(j.state).map(([action, label, question, told]) =>
        h('button', { type: 'button', class: action === 'delete' || action === 'cancel' ? 'danger' : null, dataset: { action }, onclick: () => jobAction(action, question, told) }, label)));
    const row = (k, v, attrs) => h('div', {}, h('dt', {}, k), h('dd', attrs || {}, v));
    const pre = (value, format, len) =>
      h('pre', {}, `(${format || 'none'}${len !== undefined ? `, ${len} bytes` : ''})\n${shown(value, format)}`);
    fill(
      el,
      h('dl', { class: 'detail', dataset: { job: j.id } },
        row('queue', h('a', { href: `#/q/${enc(state.route.name)}` }, state.route.name)),
        row('task', j.task ?? '–', { dataset: { field: 'task' } }),
        row('state', j.state, { dataset: { field: 'state' } }),
        row('attempts', `${j.attempts} of ${j.max_attempts}`, { dataset: { field: 'attempts' } }),
        row('enqueued', when(j.enqueued_at)),
        row({ delayed: 'due', active: 'lease until', dead: 'died', completed: 'finished' }[j.state] || 'since', when(j.state_since_or_until)),
        row('priority', j.priority ?? '–'),
        row('group', j.group ?? '–'),
        (j.parents || []).length > 1
          ? row('parents', j.parents.flatMap((p, i) => [i ? ', ' : '', jobLink(p.queue, p.id), ` (queue ${p.queue})`]), { dataset: { field: 'parent' } })
          : j.parent ? row('parent', [jobLink(j.parent.queue, j.parent.id), ` (queue ${j.parent.queue})`], { dataset: { field: 'parent' } }) : null,
        j.children_pending !== null && j.children_pending !== undefined
          ? row('children pending', num(j.children_pending), { dataset: { field: 'children_pending' } })
          : null,
        row('last error', j.last_error ? h('pre', {}, j.last_error) : '–', { dataset: { field: 'last_error' } }),
        j.unreadable ? row('unreadable', j.unreadable) : null,
        row('payload', pre(j.payload, j.payload_format, j.payload_len), { dataset: { field: 'payload' } }),
        row('result', j.result_format ? pre(j.result, j.result_format) : '–', { dataset: { field: 'result' } }),
        row('progress', j.progress_format ? pre(j.progress, j.progress_format) : '–', { dataset: { field: 'progress' } })),
      renderChildren(j),
      renderJobRun(j), // jobpage.js
    );
  }

  // ---- history (kept in Redis) -----------------------------------------------------------

  const HISTORY_WINDOWS = [[3600, 'Last hour'], [86400, 'Last day'], [1209600, '14 days']];
  const HISTORY_SERIES = [['enqueued', 'added'], ['completed', 'done'], ['failed', 'failed'], ['dead_lettered', 'dead']];

  async function loadHistory() {
    const { name } = state.route;
    const win = state.window;
    try {
      const got = await api(`queues/${enc(name)}/history?window=${win}`);
      if (state.route.view !== 'jobs' || state.route.name !== name || state.window !== win) return;
      state.history = got;
      state.historyAt = Date.now();
    } catch (err) {
      failed(err);
    }
    renderHistory();
  }

  function renderHistory() {
    for (const b of document.querySelectorAll('button.window')) b.classList.toggle('on', Number(b.dataset.window) === state.window);
    const el = $('#history');
    if (!el) return;
    const got = state.history;
    if (!got) {
      fill(el, h('p', { class: 'muted' }, 'Loading…'));
      return;
    }
    fill(el, lineChart(got.points, got.step_secs));
  }

  /** History points as lines, one per counter, with the window's totals in the caption. */
  function lineChart(points, stepSecs) {
    const sum = (k) => points.reduce((a, p) => a + (p[k] || 0), 0);
    const late = points.filter((p) => p.lateness_ms !== null && p.lateness_ms !== undefined);
    const per = stepSecs >= 3600 ? `${stepSecs / 3600} h` : `${stepSecs / 60} min`;
    return plot({
      id: 'history-chart',
      label: 'history',
      at: points.map((p) => p.at_ms),
      lines: HISTORY_SERIES.map(([k, cls]) => [points.map((p) => p[k] || 0), cls, k]),
      empty: points.length ? null : 'no history yet: it is recorded while a worker runs',
      stamp: (t) => (stepSecs >= 3600 ? new Date(t).toLocaleString() : new Date(t).toLocaleTimeString()),
      caption: [
        HISTORY_SERIES.map(([k, cls]) => [h('span', { class: `key ${cls}`, dataset: { total: k } }, `${k.replace('_', ' ')} ${num(sum(k))}`), ' ']),
        ` · per ${per}`,
        late.length ? ` · promoted late by ${num(Math.round(late.reduce((a, p) => a + p.lateness_ms, 0) / late.length))} ms on average` : ''],
    });
  }

  // ---- search -----------------------------------------------------------------------------

  function searchForm(name) {
    const go = (ev) => {
      ev.preventDefault();
      const by = $('#search-by').value;
      const text = $('#search-text').value.trim();
      if (!text) return;
      if (by === 'id') {
        window.location.hash = `#/j/${enc(name)}/${enc(text)}`;
        return;
      }
      state.search = { by, text, state: $('#search-state').value, jobs: [], cursor: null, scanned: 0, done: false };
      renderSearch();
      searchMore();
    };
    return h('form', { id: 'search', class: 'bar', onsubmit: go, role: 'search' },
      h('label', { for: 'search-text' }, 'Find jobs by'),
      h('select', { id: 'search-by', 'aria-label': 'search by' },
        h('option', { value: 'id' }, 'id'), h('option', { value: 'task' }, 'task'), h('option', { value: 'group' }, 'group'),
        h('option', { value: 'contains' }, 'arguments containing')),
      h('input', { id: 'search-text', type: 'search', placeholder: 'an id, a task, a group or a piece of the arguments', size: 40 }),
      h('select', { id: 'search-state', 'aria-label': 'in state' },
        h('option', { value: '' }, 'any state'), STATES.map((st) => h('option', { value: st }, st))),
      h('button', { type: 'submit', id: 'search-go' }, 'Find'));
  }

  async function searchMore() {
    const s = state.search;
    // One request at a time: each goes on from the cursor the last one gave.
    if (!s || s.busy) return;
    s.busy = true;
    renderSearch();
    const q = new URLSearchParams({ [s.by]: s.text, limit: String(PAGE) });
    if (s.state) q.set('state', s.state);
    if (s.cursor) q.set('cursor', s.cursor);
    try {
      const got = await api(`queues/${enc(state.route.name)}/search?${q}`);
      if (state.search !== s) return;
      s.jobs = s.jobs.concat(got.jobs);
      s.cursor = got.cursor;
      s.scanned += got.scanned;
      s.done = !got.cursor;
    } catch (err) {
      failed(err);
    }
    s.busy = false;
    renderSearch();
  }

  function renderSearch() {
    const el = $('#search-results');
    if (!el) return;
    const s = state.search;
    el.hidden = !s;
    if (!s) return;
    fill(el,
      h('div', { class: 'bar' },
        h('h3', {}, `Jobs with ${s.by === 'contains' ? 'arguments containing' : s.by} "${s.text}"${s.state ? `, ${s.state}` : ''}`),
        h('span', { class: 'muted', id: 'search-info' },
          `${num(s.jobs.length)} found among ${num(s.scanned)} jobs looked at${s.done ? ' (all of them)' : ''}`),
        s.done ? null : h('button', { type: 'button', id: 'search-more', onclick: searchMore, disabled: s.busy }, s.busy ? 'Looking…' : 'Look further'),
        h('button', { type: 'button', id: 'search-close', onclick: () => { state.search = null; renderSearch(); } }, 'Close')),
      s.jobs.length
        ? h('table', { id: 'found' },
          thead(['Id', 'State', 'Task', 'Group', 'Attempts', 'Enqueued', 'Arguments', 'Last error']),
          h('tbody', {}, s.jobs.map((j) => h('tr', { dataset: { job: j.id, state: j.state } },
            h('td', {}, jobLink(state.route.name, j.id)), h('td', {}, j.state), h('td', {}, j.task ?? '–'),
            h('td', {}, j.group ?? '–'), h('td', { class: 'num' }, `${j.attempts}/${j.max_attempts}`),
            h('td', { class: 'when' }, when(j.enqueued_at)), argsCell(j),
            h('td', { class: 'err', title: j.last_error || '' }, j.last_error ? j.last_error.slice(0, 120) : '')))))
        : null);
    bulkFound(el, s);
  }

  /** A flow parent's children (the first page the API gave), each linked to its job. */
  function renderChildren(j) {
    if (!j.children_total) return null;
    const shown = j.children.length;
    const more = shown < j.children_total ? ` (the first ${num(shown)} shown)` : '';
    return h('div', { id: 'children-wrap' },
      h('h4', {}, `Children: ${num(j.children_total)}${more}`),
      h('table', { id: 'children' },
        thead(['Queue', 'Id', 'Outcome', 'Error']),
        h('tbody', {}, j.children.map((c) =>
          h('tr', { dataset: { child: c.id, outcome: c.outcome } },
            h('td', {}, c.queue),
            h('td', {}, jobLink(c.queue, c.id)),
            h('td', {}, c.outcome),
            h('td', { class: 'err', title: c.error || '' }, c.error ? c.error.slice(0, 120) : ''))))));
  }

  function renderInfo() {
    const el = $('#queue-info');
    if (!el) return;
    const info = state.info;
    if (!info) {
      fill(el);
      return;
    }
    // The latency comes with the queue's info (the refresh loop does not read it).
    fill($('#queue-counts [data-count="latency"]'), secs(info.stats.latency));
    const l = info.limits;
    const table = (id, head, rows, empty) =>
      rows.length
        ? h('table', { id }, thead(head), h('tbody', {}, rows))
        : h('p', { class: 'muted', id }, empty);
    fill(
      el,
      h('h3', {}, 'Limits'),
      h('dl', { id: 'limits', class: 'counts' },
        [['max active', l.max_active ?? '–'], ['rate', rate(l.rate)], ['group concurrency', l.group_concurrency ?? '–'], ['group rate', rate(l.group_rate)], ['shared limiter', l.limiter ?? '–']]
          .map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, String(v))))),
      h('h3', {}, 'Schedules', count(info.schedules_total)),
      listPager('schedules', info.schedules_offset, info.schedules.length, info.schedules_total),
      table('schedules', ['Name', 'When', 'Next run', 'Task', 'Group'],
        info.schedules.map((s) => h('tr', { dataset: { schedule: s.name } },
          h('td', {}, s.name), h('td', {}, s.every), h('td', { class: 'when' }, when(s.next_run_ms)),
          h('td', {}, s.task ?? '–'), h('td', {}, s.group ?? '–'))),
        'No schedules.'),
      h('h3', {}, 'Workers', count(info.workers_total)),
      listPager('workers', info.workers_offset, info.workers.length, info.workers_total),
      table('workers', ['ID', 'Host', 'PID', 'Runtime', 'Concurrency', 'Running', 'Started', 'Last seen'],
        (info.workers || []).map((w) => h('tr', { dataset: { worker: w.id } },
          h('td', {}, h('code', {}, w.id)), h('td', {}, w.host), h('td', { class: 'num' }, String(w.pid)),
          h('td', {}, w.runtime), h('td', { class: 'num' }, num(w.concurrency)),
          h('td', { class: 'num', title: w.running_ids.join(', ') }, num(w.running)),
          h('td', { class: 'when' }, when(w.started_at)), h('td', { class: 'when' }, when(w.last_seen_at)))),
        'No workers seen in the last 45 s.'),
      h('h3', {}, 'Groups'),
      groupPager(info.groups_cursor, loadQueue),
      table('groups', ['Group', 'Ready', 'Active', 'Paused', 'Concurrency', 'Rate', 'Limiter'],
        info.groups.map((g) => h('tr', { dataset: { group: g.group } },
          h('td', {}, g.group), h('td', { class: 'num' }, num(g.ready)), h('td', { class: 'num' }, num(g.active)),
          h('td', { dataset: { paused: String(g.paused) } }, g.paused ? 'paused' : ''),
          h('td', { class: 'num' }, g.concurrency ?? '–'), h('td', {}, rate(g.rate)),
          h('td', {}, g.limiter ?? '–'))),
        'No groups.'),
    );
    renderSettings(el, info); // settings.js
    renderTasks(el); // tasks.js
  }

  /** ` (n)` after a heading, when there are some. */
  function count(n) {
    return n ? h('span', { class: 'n' }, ` (${num(n)})`) : null;
  }

  /** The shown range of a list the queue view pages by offset (schedules, workers), with buttons
   * to the pages before and after. */
  function listPager(what, offset, shown, total) {
    if (!total || total <= shown) return null;
    const key = `${what}At`;
    const go = (at) => () => {
      state[key] = at;
      loadQueue();
    };
    return h('p', { class: 'pager', id: `${what}-pager` },
      h('span', { class: 'muted' }, `${num(offset + 1)}–${num(offset + shown)} of ${num(total)} `),
      offset > 0 ? h('button', { type: 'button', id: `${what}-prev`, onclick: go(Math.max(0, offset - LISTED)) }, '← Prev') : null,
      offset + shown < total ? h('button', { type: 'button', id: `${what}-next`, onclick: go(offset + shown) }, 'Next →') : null);
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
    if (n === 0) {
      say('No dead jobs to requeue.');
      return;
    }
    if (window.confirm(`Requeue all ${n} dead jobs of "${state.route.name}"?`)) {
      act('dead/requeue-all', (r) => `Requeued ${r.requeued} dead jobs.`);
    }
  }

  function purge() {
    const e = entry('jobs', state.route.name);
    const n = e && e.stats ? e.stats.dead : '?';
    if (n === 0) {
      say('No dead jobs to delete.');
      return;
    }
    if (window.confirm(`Delete all ${n} dead jobs of "${state.route.name}" for good?`)) {
      act('dead/purge', (r) => `Deleted ${r.purged} dead jobs.`);
    }
  }

