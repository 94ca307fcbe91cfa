
  // ---- bulk actions (a job queue's page) --------------------------------------------------
  // A checkbox per row and one for the page (bulkRows, after renderJobs), a bar with the
  // actions on the selected rows and the queue-wide ones (bulkBar, in renderJobQueue), and
  // "… all found" after a search (bulkFound, in renderSearch). Each asks first; none shows
  // on a read-only page.

  /** Which tab each action on selected rows applies to. */
  const BULK_TABS = { retry: ['dead'], delete: ['dead', 'completed'], cancel: ['delayed', 'ready', 'active'] };
  const BULK_DONE = { retry: 'Requeued', delete: 'Deleted', cancel: 'Cancelled' };

  function bulkBar(name) {
    if (readOnly()) return null;
    return h('div', { id: 'bulk-bar', class: 'bar', dataset: { queue: name } },
      h('span', { id: 'bulk-count', class: 'muted' }),
      Object.keys(BULK_TABS).map((a) =>
        h('button', { id: `bulk-${a}`, type: 'button', hidden: true, class: a === 'delete' ? 'danger' : null, onclick: () => bulkSelected(a) },
          `${a[0].toUpperCase()}${a.slice(1)} selected`)),
      h('button', { id: 'promote-all', type: 'button', onclick: bulkPromoteAll }, 'Promote all delayed'),
      h('button', { id: 'clean-completed', type: 'button', onclick: bulkClean }, 'Delete completed older than…'),
      h('button', { id: 'empty-queue', type: 'button', class: 'danger', onclick: bulkEmpty }, 'Empty'),
      h('button', { id: 'obliterate', type: 'button', class: 'danger', onclick: bulkObliterate }, 'Obliterate'));
  }

  /** Checkboxes on the rows of the jobs table just drawn. */
  function bulkRows() {
    const table = $('#jobs');
    if (table && !readOnly()) {
      const boxes = () => [...table.querySelectorAll('input[data-select]')];
      table.querySelector('thead tr').prepend(h('th', {},
        h('input', { type: 'checkbox', id: 'select-page', 'aria-label': 'select all on this page',
          onchange: (ev) => { for (const b of boxes()) b.checked = ev.target.checked; bulkUpdate(); } })));
      for (const tr of table.querySelectorAll('tbody tr')) {
        tr.prepend(h('td', {}, h('input', { type: 'checkbox', dataset: { select: tr.dataset.job }, 'aria-label': `select ${tr.dataset.job}`, onchange: bulkUpdate })));
      }
    }
    bulkUpdate();
  }

  function bulkChosen() {
    return [...document.querySelectorAll('#jobs input[data-select]:checked')].map((b) => b.dataset.select);
  }

  function bulkUpdate() {
    const n = bulkChosen().length;
    fill($('#bulk-count'), n ? `${n} selected` : '');
    for (const [a, tabs] of Object.entries(BULK_TABS)) {
      const b = $(`#bulk-${a}`);
      if (!b) continue;
      b.hidden = !tabs.includes(state.tab);
      b.disabled = n === 0;
    }
  }

  /** A POST with a JSON body. */
  function bulkPost(path, body) {
    return api(path, 'POST', body);
  }

  async function bulkSelected(action) {
    const ids = bulkChosen();
    const name = state.route.name;
    if (!ids.length || !window.confirm(`${action[0].toUpperCase()}${action.slice(1)} ${ids.length} selected job(s) of "${name}"?`)) return;
    try {
      const r = await bulkPost(`queues/${enc(name)}/bulk/${action}`, { ids });
      const left = ids.length - r.done;
      say(`${BULK_DONE[action]} ${r.done} job(s)${left ? `; ${left} had moved on or were gone` : ''}.`, 'ok');
    } catch (err) {
      failed(err);
    }
    await poll();
    loadQueue();
    loadJobs();
  }

  /** Every page of `action` on a search's jobs, saying how far it got. */
  async function bulkFoundAll(action, s) {
    const name = state.route.name;
    let cursor = null;
    let done = 0;
    try {
      do {
        const q = new URLSearchParams({ [s.by]: s.text });
        if (s.state) q.set('state', s.state);
        if (cursor) q.set('cursor', cursor);
        const page = await api(`queues/${enc(name)}/bulk-found/${action}?${q}`, 'POST');
        done += page.done;
        cursor = page.cursor;
        say(`${BULK_DONE[action]} ${done} job(s)${cursor ? '…' : '.'}`, 'ok');
      } while (cursor && state.route.name === name);
    } catch (err) {
      failed(err);
    }
    await poll();
    loadQueue();
    loadJobs();
  }

  /** "Retry / Delete / Cancel all found" under a search's results. */
  function bulkFound(el, s) {
    if (readOnly() || !s || !s.jobs.length) return;
    const n = s.done ? num(s.jobs.length) : `${num(s.jobs.length)}+`;
    const applies = (a) => !s.state || BULK_TABS[a].includes(s.state);
    el.append(h('div', { class: 'bar', id: 'bulk-found' },
      Object.keys(BULK_TABS).filter(applies).map((a) =>
        h('button', { id: `found-${a}`, type: 'button', class: a === 'delete' ? 'danger' : null,
          onclick: () => window.confirm(`${a[0].toUpperCase()}${a.slice(1)} every job this search finds (${n} so far) in "${state.route.name}"?`) && bulkFoundAll(a, s) },
        `${a[0].toUpperCase()}${a.slice(1)} all ${n} found`))));
  }

  function bulkPromoteAll() {
    const e = entry('jobs', state.route.name);
    const n = e && e.stats ? e.stats.delayed : '?';
    if (window.confirm(`Run all ${n} delayed jobs of "${state.route.name}" now?`)) {
      act('promote-all', (r) => `Promoted ${r.promoted} delayed jobs.`);
    }
  }

  function bulkClean() {
    const hours = window.prompt(`Delete the completed jobs of "${state.route.name}" that finished more than how many hours ago?`, '24');
    if (hours === null) return;
    const secs = Math.round(Number(hours) * 3600);
    if (!Number.isFinite(secs) || secs < 0 || hours.trim() === '') {
      say(`"${hours}" is not a number of hours.`, 'error');
      return;
    }
    act(`clean?state=completed&older_than=${secs}`, (r) => `Deleted ${r.deleted} completed jobs.`);
  }

  function bulkEmpty() {
    if (window.confirm(`Cancel every delayed and ready job of "${state.route.name}"?`)) {
      (async () => {
        await bulkFoundAll('cancel', { by: 'state', text: 'delayed', state: '' });
        await bulkFoundAll('cancel', { by: 'state', text: 'ready', state: '' });
      })();
    }
  }

  function bulkObliterate() {
    const name = state.route.name;
    const typed = window.prompt(`Obliterate "${name}": every job, schedule, setting and its history, for good. Type the queue's name to confirm:`);
    if (typed === null) return;
    if (typed !== name) {
      say('The name typed is not the queue\'s: nothing done.', 'error');
      return;
    }
    act('obliterate', (r) => `Obliterated "${name}": ${r.keys} keys deleted.`);
  }
