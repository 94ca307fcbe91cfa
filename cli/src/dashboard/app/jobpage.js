  // ---- a job's run, attempts and log (the job page; jobpage.js) ----------------------------
  // Everything goes in through h() as text: an error, a trace or a log line is never markup.

  function jpDuration(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
    if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.floor((ms % 60000) / 1000)} s`;
    return `${Math.floor(ms / 3600000)} h ${Math.floor((ms % 3600000) / 60000)} min`;
  }

  // The job's last run (started at, run time, worker), its attempts and its log.
  function renderJobRun(j) {
    const attempts = j.attempt_history || [];
    const logs = j.logs || [];
    const row = (k, v, field) => h('div', {}, h('dt', {}, k), h('dd', { dataset: { field } }, v));
    const firstLine = (s) => (s || '').split('\n')[0];
    return h('div', { id: 'job-run' },
      h('dl', { class: 'detail' },
        row('started at', when(j.started_at), 'started_at'),
        row('run time', jpDuration(j.run_ms), 'run_ms'),
        row('worker', j.worker ?? '–', 'worker')),
      attempts.length
        ? h('div', { id: 'attempts-wrap' },
          h('h4', {}, `Attempts: ${num(attempts.length)}`),
          h('table', { id: 'attempts' },
            thead(['#', 'Started', 'Ended', 'Duration', 'Worker', 'Outcome', 'Error']),
            h('tbody', {}, attempts.map((a) =>
              h('tr', { dataset: { attempt: a.attempt, outcome: a.outcome } },
                h('td', {}, a.attempt),
                h('td', {}, when(a.started_at)),
                h('td', {}, when(a.ended_at)),
                h('td', {}, jpDuration(a.duration_ms)),
                h('td', {}, a.worker ?? '–'),
                h('td', {}, a.outcome),
                h('td', { class: 'err' },
                  a.trace
                    ? h('details', {}, h('summary', {}, firstLine(a.error)), h('pre', {}, a.trace))
                    : (a.error || '')))))))
        : null,
      h('div', { id: 'logs-wrap' },
        h('h4', {}, `Logs: ${num(logs.length)}`),
        logs.length
          ? h('table', { id: 'job-logs' },
            thead(['Time', 'Attempt', 'Line']),
            h('tbody', {}, logs.map((l) =>
              h('tr', { dataset: { attempt: l.attempt } },
                h('td', {}, when(l.at_ms)),
                h('td', {}, l.attempt),
                h('td', {}, h('pre', { class: 'log-line' }, l.line))))))
          : h('p', { class: 'muted' }, 'Nothing logged (job.log in a handler writes here).')));
  }
