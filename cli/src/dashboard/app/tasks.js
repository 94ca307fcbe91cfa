  // ---- per-task metrics (tasks.js) -------------------------------------------------------
  // A table on the queue page: per task, jobs completed, failed attempts, dead-lettered, runs
  // and run times over the history chart's window, read at most every 30 s.

  const TASKS_FRESH_MS = 30_000;
  const tasksShown = { key: null, at: 0, got: null, busy: false };

  /** Appends the per-task section to the queue's info `el` (called by renderInfo). */
  function renderTasks(el) {
    const key = `${state.route.name}|${state.window}`;
    el.append(h('h3', {}, 'Tasks'), h('div', { id: 'tasks' }));
    if (tasksShown.key !== key || Date.now() - tasksShown.at > TASKS_FRESH_MS) loadTasks(key);
    else fillTasks();
  }

  async function loadTasks(key) {
    if (tasksShown.busy) return;
    tasksShown.busy = true;
    const { name } = state.route;
    const win = state.window;
    try {
      const got = await api(`queues/${enc(name)}/tasks?window=${win}`);
      if (`${state.route.name}|${state.window}` !== key) return;
      tasksShown.key = key;
      tasksShown.at = Date.now();
      tasksShown.got = got;
    } catch (err) {
      failed(err);
    } finally {
      tasksShown.busy = false;
    }
    fillTasks();
  }

  /** A run time in ms as people read it. */
  function runMs(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return `${ms.toFixed(1)} ms`;
    return `${(ms / 1000).toFixed(2)} s`;
  }

  function fillTasks() {
    const el = $('#tasks');
    if (!el) return;
    const got = tasksShown.got;
    if (!got || tasksShown.key !== `${state.route.name}|${state.window}`) {
      fill(el, h('p', { class: 'muted' }, 'Loading…'));
      return;
    }
    if (!got.tasks.length) {
      fill(el, h('p', { class: 'muted', id: 'tasks-table' }, 'No task ran in this window (counts come with the workers\' reports, every 15 s).'));
      return;
    }
    fill(el, h('table', { id: 'tasks-table' },
      thead(['Task', 'Completed', 'Failed', 'Dead', 'Runs', 'Avg run', 'Total run']),
      h('tbody', {}, got.tasks.map((t) => h('tr', { dataset: { task: t.task } },
        h('td', {}, t.task === '' ? '(none)' : t.task),
        h('td', { class: 'num' }, num(t.completed)), h('td', { class: 'num' }, num(t.failed)),
        h('td', { class: 'num' }, num(t.dead_lettered)), h('td', { class: 'num' }, num(t.runs)),
        h('td', { class: 'num' }, runMs(t.run_ms_avg)), h('td', { class: 'num' }, runMs(t.run_ms_sum)))))));
  }
