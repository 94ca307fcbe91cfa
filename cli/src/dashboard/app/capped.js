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
