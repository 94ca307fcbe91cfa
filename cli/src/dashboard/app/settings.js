  // ---- settings: schedules' actions, limits and group limits, group pause, per-task metrics ----
  // Called at the end of renderInfo(): adds to the queue view's tables (by their ids) what
  // changes the queue's settings. Read-only dashboards show the values, never the forms.

  /** The queue view's settings parts, added to what renderInfo() built in `el`. */
  function renderSettings(el, info) {
    scheduleColumns(info);
    if (!readOnly()) {
      limitsForm(info);
      groupActions(info);
    }
  }

  /** A change with a JSON body (`body`: an object, or none), then the queue's view read again. */
  async function settingsAct(path, body, told) {
    const name = state.route.name;
    try {
      const out = await api(`queues/${enc(name)}/${path}`, 'POST', body || undefined);
      say(told(out), 'ok');
      loadQueue();
      poll();
      return true;
    } catch (err) {
      failed(err);
      return false;
    }
  }

  /** Paused, the last job and its outcome on each schedule's row, and its buttons. */
  function scheduleColumns(info) {
    const table = $('#schedules');
    if (!table || table.tagName !== 'TABLE') return;
    const head = table.querySelector('thead tr');
    for (const name of ['Paused', 'Last job', 'Outcome', readOnly() ? null : 'Actions']) {
      if (name) head.append(h('th', {}, name));
    }
    const byName = new Map(info.schedules.map((s) => [s.name, s]));
    for (const row of table.querySelectorAll('tbody tr')) {
      const s = byName.get(row.dataset.schedule);
      if (!s) continue;
      row.append(
        h('td', { dataset: { paused: String(s.paused) } }, s.paused ? 'paused' : ''),
        h('td', {}, s.last_job_id ? jobLink(state.route.name, s.last_job_id) : '–'),
        h('td', { dataset: { outcome: s.last_job_state || '' } }, s.last_job_state || '–'),
      );
      if (readOnly()) continue;
      const button = (action, label, extra) =>
        h('button', { type: 'button', dataset: { scheduleAction: action }, ...extra, onclick: () => scheduleAction(s.name, action) }, label);
      row.append(h('td', { class: 'actions' },
        button('run', 'Run now'),
        s.paused ? button('resume', 'Resume') : button('pause', 'Pause'),
        button('remove', 'Remove', { class: 'danger' })));
    }
  }

  function scheduleAction(name, action) {
    if (action === 'remove' && !window.confirm(`Remove the schedule "${name}"? It fires no more.`)) return null;
    const told = {
      run: (r) => `Ran schedule "${name}": job ${r.job}. Its next run is unchanged.`,
      pause: () => `Paused schedule "${name}": it keeps its next run and does not fire.`,
      resume: () => `Resumed schedule "${name}".`,
      remove: () => `Removed schedule "${name}".`,
    }[action];
    return settingsAct(`schedules/${enc(name)}/${action}`, null, told);
  }

  /** A number field's value as the API takes it: null when empty, a number when it reads as one,
   * else the text itself (the API says what is wrong with it). */
  function fieldValue(form, name) {
    const v = form.querySelector(`[name="${name}"]`).value.trim();
    if (v === '') return null;
    return /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  }

  /** A rate from its fields (`max`, `per_ms`, and `burst` for a token bucket): null when the
   * first two are empty. */
  function rateValue(form, prefix) {
    const max = fieldValue(form, `${prefix}_max`);
    const per = fieldValue(form, `${prefix}_per_ms`);
    const burst = fieldValue(form, `${prefix}_burst`);
    if (max === null && per === null) return null;
    return burst === null ? { max, per_ms: per } : { max, per_ms: per, burst };
  }

  function field(name, label, value) {
    return h('label', {}, `${label} `, h('input', { name, type: 'text', inputmode: 'numeric', size: 8, value: value ?? '' }));
  }

  /** An "Edit limits" button under the limits, opening their form (empty field: no limit). */
  function limitsForm(info) {
    const dl = $('#limits');
    if (!dl) return;
    const l = info.limits;
    const form = h('form', { id: 'limits-form', hidden: true },
      field('max_active', 'max active', l.max_active),
      field('rate_max', 'rate: starts', l.rate && l.rate.max),
      field('rate_per_ms', 'per ms', l.rate && l.rate.per_ms),
      field('rate_burst', 'burst', l.rate && l.rate.burst),
      field('group_concurrency', 'group concurrency', l.group_concurrency),
      field('group_rate_max', 'group rate: starts', l.group_rate && l.group_rate.max),
      field('group_rate_per_ms', 'per ms', l.group_rate && l.group_rate.per_ms),
      field('group_rate_burst', 'burst', l.group_rate && l.group_rate.burst),
      h('button', { type: 'submit', id: 'limits-save' }, 'Save limits'),
      h('span', { class: 'muted' }, ' An empty field is no limit; a burst makes the rate a token bucket.'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      settingsAct('limits', {
        max_active: fieldValue(form, 'max_active'),
        rate: rateValue(form, 'rate'),
        group_concurrency: fieldValue(form, 'group_concurrency'),
        group_rate: rateValue(form, 'group_rate'),
      }, () => `Saved the limits of "${state.route.name}".`);
    });
    const edit = h('button', { type: 'button', id: 'limits-edit', onclick: () => { form.hidden = !form.hidden; } }, 'Edit limits');
    dl.after(h('p', {}, edit), form);
  }

  /** Pause/Resume and a limits form on each group's row. */
  function groupActions(info) {
    const table = $('#groups');
    if (!table || table.tagName !== 'TABLE') return;
    table.querySelector('thead tr').append(h('th', {}, 'Actions'));
    const byName = new Map(info.groups.map((g) => [g.group, g]));
    for (const row of table.querySelectorAll('tbody tr')) {
      const g = byName.get(row.dataset.group);
      if (!g) continue;
      const path = `groups/${enc(g.group)}`;
      const form = h('form', { class: 'group-limits', hidden: true },
        field('concurrency', 'concurrency', g.concurrency),
        field('rate_max', 'rate: starts', g.rate && g.rate.max),
        field('rate_per_ms', 'per ms', g.rate && g.rate.per_ms),
        field('rate_burst', 'burst', g.rate && g.rate.burst),
        h('button', { type: 'submit', dataset: { groupAction: 'save' } }, 'Save'));
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        settingsAct(`${path}/limits`, { concurrency: fieldValue(form, 'concurrency'), rate: rateValue(form, 'rate') },
          () => `Saved the limits of group "${g.group}".`);
      });
      const toggle = g.paused ? 'resume' : 'pause';
      row.append(h('td', { class: 'actions' },
        h('button', {
          type: 'button', dataset: { groupAction: toggle },
          onclick: () => settingsAct(`${path}/${toggle}`, null, (r) => `${r.paused ? 'Paused' : 'Resumed'} group "${g.group}".`),
        }, toggle === 'pause' ? 'Pause' : 'Resume'),
        h('button', { type: 'button', dataset: { groupAction: 'limits' }, onclick: () => { form.hidden = !form.hidden; } }, 'Limits…'),
        form));
    }
  }
