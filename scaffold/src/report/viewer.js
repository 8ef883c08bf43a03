(function () {
  'use strict';
  // The cells table shows a page of rows at a time (the HTML hides the
  // rest): `matches` are the rows the filters let through, in order,
  // `shown` the ones on view. Nothing here reads or writes every row's
  // layout: a 10,000-cell page stays as quick as a 100-cell one.
  var PAGE = 100;
  var rows = [].slice.call(document.querySelectorAll('tr.cell'));
  var current = -1;
  var filters = { variant: '', case: '', tag: '', status: '', search: '' };
  var info = [];
  var matches = [];
  var shown = [];
  var page = 0;
  var pager = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function data(id) {
    var s = document.getElementById('t-' + id);
    if (!s) return null;
    try { return JSON.parse(s.textContent); } catch (e) { return null; }
  }
  function tags(r) {
    try { return JSON.parse(r.getAttribute('data-tags') || '[]'); } catch (e) { return []; }
  }
  // What the filters read of row `i`, read once.
  function meta(i) {
    var m = info[i];
    if (!m) {
      var r = rows[i];
      m = info[i] = {
        variant: r.getAttribute('data-variant'), case: r.getAttribute('data-case'),
        trial: r.getAttribute('data-trial'), status: (r.getAttribute('data-status') || '').split(' '),
        tags: tags(r), text: null
      };
    }
    return m;
  }
  function text(i) {
    var m = meta(i);
    if (m.text === null) m.text = rows[i].textContent.toLowerCase();
    return m.text;
  }

  // ------------------------------------------------------------ filters and pages
  function options(select, values) {
    var frag = document.createDocumentFragment();
    values.sort().forEach(function (v) {
      var o = el('option', null, v);
      o.value = v;
      frag.appendChild(o);
    });
    select.appendChild(frag);
  }
  function setUpFilters() {
    var seen = { variant: {}, case: {}, tag: {}, status: {} };
    rows.forEach(function (r, i) {
      var m = meta(i);
      seen.variant[m.variant] = 1;
      seen.case[m.case] = 1;
      m.tags.forEach(function (t) { seen.tag[t] = 1; });
      m.status.forEach(function (s) { seen.status[s] = 1; });
    });
    Object.keys(seen).forEach(function (key) {
      var select = document.getElementById('filter-' + key);
      if (!select) return;
      options(select, Object.keys(seen[key]));
      select.addEventListener('change', function () { filters[key] = select.value; applyFilters(); });
    });
    var search = document.getElementById('filter-search');
    if (search) {
      search.addEventListener('input', function () {
        filters.search = search.value.trim().toLowerCase();
        applyFilters();
      });
    }
  }
  function passes(i) {
    var m = meta(i);
    return (!filters.variant || m.variant === filters.variant) &&
      (!filters.case || m.case === filters.case) &&
      (!filters.tag || m.tags.indexOf(filters.tag) >= 0) &&
      (!filters.status || m.status.indexOf(filters.status) >= 0) &&
      (!filters.search || text(i).indexOf(filters.search) >= 0);
  }
  function applyFilters() {
    matches = [];
    for (var i = 0; i < rows.length; i++) if (passes(i)) matches.push(i);
    page = 0;
    showPage();
    var count = document.getElementById('filter-count');
    if (count) count.textContent = matches.length + ' of ' + rows.length + ' cells';
  }
  function setFilter(key, value) {
    filters[key] = value;
    var input = document.getElementById('filter-' + key);
    if (input) input.value = value;
    if (key === 'search') filters.search = value.trim().toLowerCase();
  }
  function pages() { return Math.max(1, Math.ceil(matches.length / PAGE)); }
  function setShown(i, on) {
    var r = rows[i];
    if (r.hidden !== on) return;
    r.hidden = !on;
    var d = detailOf(r);
    if (d) d.hidden = !on;
  }
  // Show page `page` of the matching rows, touching only the rows that change.
  function showPage() {
    page = Math.max(0, Math.min(page, pages() - 1));
    var next = matches.slice(page * PAGE, (page + 1) * PAGE);
    var on = {};
    next.forEach(function (i) { on[i] = 1; });
    shown.forEach(function (i) { if (!on[i]) setShown(i, false); });
    next.forEach(function (i) { setShown(i, true); });
    shown = next;
    drawPager();
  }
  function drawPager() {
    if (!rows.length || (rows.length <= PAGE && !pager)) return;
    if (!pager) {
      pager = el('div', 'pager');
      var table = rows[0].closest('table');
      table.parentNode.insertBefore(pager, table.nextSibling);
    }
    pager.textContent = '';
    var from = matches.length ? page * PAGE + 1 : 0, to = Math.min(matches.length, (page + 1) * PAGE);
    var prev = el('button', 'prev', '‹ Previous');
    prev.type = 'button';
    prev.disabled = page === 0;
    prev.addEventListener('click', function () { page -= 1; showPage(); });
    var next = el('button', 'next', 'Next ›');
    next.type = 'button';
    next.disabled = page >= pages() - 1;
    next.addEventListener('click', function () { page += 1; showPage(); });
    pager.appendChild(prev);
    pager.appendChild(el('span', null, 'Cells ' + from + '–' + to + ' of ' + matches.length +
      ' (page ' + (page + 1) + ' of ' + pages() + ')'));
    pager.appendChild(next);
  }

  // ------------------------------------------------------------ transcript
  function detailOf(r) {
    var n = r.nextElementSibling;
    while (n && n.tagName === 'SCRIPT') n = n.nextElementSibling;
    return n && n.classList.contains('detail') ? n : null;
  }
  function renderText(part) {
    var pre = el('pre', part.d ? 'diff' : null);
    if (!part.d) { pre.textContent = part.x; return pre; }
    part.x.split('\n').forEach(function (line) {
      var c = line.charAt(0) === '+' ? 'add' : line.charAt(0) === '-' ? 'del' : 'same';
      pre.appendChild(el('span', 'line ' + c, line + '\n'));
    });
    return pre;
  }
  function renderEntry(e) {
    var li = el('li', 'entry k-' + e.k + (e.e ? ' failed' : ''));
    li.setAttribute('data-i', e.i.join(' '));
    var head = el('div', 'head');
    head.appendChild(el('span', 'at', e.at + ' ms'));
    head.appendChild(el('span', 'kind', e.k));
    head.appendChild(el('span', 'title', e.t));
    if (e.a) head.appendChild(el('span', 'agent', e.a));
    if (e.m) head.appendChild(el('span', 'meta', e.m));
    li.appendChild(head);
    (e.parts || []).forEach(function (p) {
      var d = el('details', 'part');
      if (p.x.length <= 240 && p.x.split('\n').length <= 6) d.open = true;
      d.appendChild(el('summary', null, p.l));
      d.appendChild(renderText(p));
      li.appendChild(d);
    });
    return li;
  }
  function renderTimeline(t) {
    var ol = el('ol', 'timeline');
    t.entries.forEach(function (e) { ol.appendChild(renderEntry(e)); });
    if (t.dropped) ol.appendChild(el('li', 'entry dropped', '… ' + t.dropped + ' more signals not shown (truncated)'));
    return ol;
  }
  function highlight(box, indices) {
    var set = {};
    indices.forEach(function (i) { set[i] = 1; });
    [].forEach.call(box.querySelectorAll('.timeline > li.entry'), function (li) {
      // Indices are this cell's: the other side of a comparison has its own.
      var mine = !li.parentNode.classList.contains('other');
      var hit = mine && (li.getAttribute('data-i') || '').split(' ').some(function (i) { return set[i]; });
      li.classList.toggle('matched', hit);
    });
  }
  function renderAssertions(d, box) {
    var ul = el('ul', 'assertions');
    var failing = [];
    (d.assertions || []).forEach(function (a) {
      var li = el('li', 'assertion ' + (a.passed ? 'pass' : 'fail'));
      li.tabIndex = 0;
      li.appendChild(el('span', 'verdict', a.passed ? 'PASS' : 'FAIL'));
      li.appendChild(el('code', null, a.type));
      li.appendChild(el('span', 'message', a.message));
      if (a.m && a.m.length) li.appendChild(el('span', 'refs', 'signals #' + a.m.join(', #')));
      li.setAttribute('data-m', (a.m || []).join(' '));
      if (!a.passed) failing = failing.concat(a.m || []);
      li.addEventListener('click', function () { highlight(box, a.m || []); });
      li.addEventListener('keydown', function (ev) {
        if (ev.key === 'Enter') { highlight(box, a.m || []); ev.preventDefault(); ev.stopPropagation(); }
      });
      ul.appendChild(li);
    });
    return { list: ul, failing: failing };
  }
  function searchIn(box, query) {
    [].forEach.call(box.querySelectorAll('mark'), function (m) {
      m.parentNode.replaceChild(document.createTextNode(m.textContent), m);
    });
    [].forEach.call(box.querySelectorAll('li.entry'), function (li) { li.normalize(); li.classList.remove('nomatch'); });
    var q = query.toLowerCase();
    if (!q) return;
    [].forEach.call(box.querySelectorAll('li.entry'), function (li) {
      if (li.textContent.toLowerCase().indexOf(q) < 0) { li.classList.add('nomatch'); return; }
      var walker = document.createTreeWalker(li, NodeFilter.SHOW_TEXT);
      var nodes = [];
      while (walker.nextNode()) nodes.push(walker.currentNode);
      nodes.forEach(function (node) {
        var text = node.nodeValue, lower = text.toLowerCase(), at = lower.indexOf(q);
        if (at < 0) return;
        var frag = document.createDocumentFragment(), from = 0;
        while (at >= 0) {
          frag.appendChild(document.createTextNode(text.slice(from, at)));
          frag.appendChild(el('mark', null, text.slice(at, at + q.length)));
          from = at + q.length;
          at = lower.indexOf(q, from);
        }
        frag.appendChild(document.createTextNode(text.slice(from)));
        var details = node.parentNode.closest('details');
        if (details) details.open = true;
        node.parentNode.replaceChild(frag, node);
      });
    });
  }
  function siblings(r) {
    var mine = meta(rows.indexOf(r));
    return rows.filter(function (o, i) {
      var m = meta(i);
      return o !== r && m.case === mine.case && m.trial === mine.trial && document.getElementById('t-' + o.id);
    });
  }
  function signature(e) {
    return e.k + '|' + e.t + '|' + (e.parts || []).map(function (p) { return p.l + ':' + p.x; }).join('|');
  }
  function byPhase(t) {
    var order = [], groups = {};
    t.entries.forEach(function (e) {
      if (!groups[e.p]) { groups[e.p] = []; order.push(e.p); }
      groups[e.p].push(e);
    });
    return { order: order, groups: groups };
  }
  function sideBySide(left, right, leftName, rightName) {
    var box = el('div', 'sbs');
    var head = el('div', 'sbs-row sbs-head');
    head.appendChild(el('div', 'col', leftName));
    head.appendChild(el('div', 'col', rightName));
    box.appendChild(head);
    var a = byPhase(left), b = byPhase(right);
    var phases = a.order.slice();
    b.order.forEach(function (p) { if (phases.indexOf(p) < 0) phases.push(p); });
    phases.forEach(function (p) {
      var row = el('div', 'sbs-row');
      row.appendChild(el('div', 'sbs-phase', p ? 'phase ' + p : 'before any phase'));
      var sides = [a.groups[p] || [], b.groups[p] || []];
      var sigs = sides.map(function (s) { return s.map(signature); });
      sides.forEach(function (entries, side) {
        var col = el('ol', side ? 'col timeline other' : 'col timeline');
        var other = sigs[1 - side].slice();
        entries.forEach(function (e) {
          var li = renderEntry(e);
          var k = other.indexOf(signature(e));
          if (k >= 0) other.splice(k, 1); else li.classList.add('differs');
          col.appendChild(li);
        });
        if (!entries.length) col.appendChild(el('li', 'entry missing differs', 'no such phase'));
        row.appendChild(col);
      });
      box.appendChild(row);
    });
    return box;
  }
  function renderDetail(r) {
    var td = el('td');
    td.colSpan = r.children.length;
    var d = data(r.id);
    if (!d) {
      td.appendChild(el('p', 'meta', 'No transcript embedded for this cell: the report embeds failing, flaky and ' +
        'regressed cells by default (SCAFFOLD_REPORT_TRANSCRIPTS=all embeds every cell; ' +
        '`cargo scaffold sessions show ID --html` shows one session).'));
      return td;
    }
    var box = el('div', 'transcript');
    var bar = el('div', 'bar');
    var search = el('input', 't-search');
    search.type = 'search';
    search.placeholder = 'Search this transcript';
    search.setAttribute('aria-label', 'Search this transcript');
    bar.appendChild(search);
    var compare = el('select', 't-compare');
    compare.setAttribute('aria-label', 'Compare with');
    compare.appendChild(el('option', null, 'Compare with…')).value = '';
    siblings(r).forEach(function (o) {
      compare.appendChild(el('option', null, o.getAttribute('data-variant'))).value = o.id;
    });
    if (d.b) compare.appendChild(el('option', null, 'baseline')).value = '#baseline';
    if (compare.options.length > 1) bar.appendChild(compare);
    bar.appendChild(el('span', 'meta', 'session ' + d.session));
    if (d.fork) bar.appendChild(el('span', 'meta fork', 'forked from session ' + d.fork.parent + ' at ' + d.fork.at));
    box.appendChild(bar);
    if (d.cause) {
      // A cell that could not be played back: that cause alone.
      var cause = el('div', 'cause');
      cause.appendChild(el('strong', null, 'Could not be played back: '));
      cause.appendChild(el('pre', null, d.cause));
      if (d.unjudged) {
        cause.appendChild(el('p', 'meta', d.unjudged + ' failed assertion' + (d.unjudged === 1 ? '' : 's') +
          ' not shown: they failed for want of the recorded answers.'));
      }
      box.appendChild(cause);
    }
    var asserts = renderAssertions(d, box);
    box.appendChild(asserts.list);
    var view = el('div', 'view');
    view.appendChild(renderTimeline(d.t));
    box.appendChild(view);
    highlight(box, asserts.failing);
    search.addEventListener('input', function () { searchIn(box, search.value); });
    compare.addEventListener('change', function () {
      view.textContent = '';
      var v = compare.value;
      if (!v) { view.appendChild(renderTimeline(d.t)); highlight(box, asserts.failing); return; }
      var other = v === '#baseline' ? { t: d.b, variant: 'baseline' } : data(v);
      var name = v === '#baseline' ? 'baseline' : other.variant;
      view.appendChild(sideBySide(d.t, other.t, d.variant, name));
      highlight(box, asserts.failing);
    });
    td.appendChild(box);
    return td;
  }
  function toggle(r, open) {
    var d = detailOf(r);
    if (d && open !== true) { d.parentNode.removeChild(d); r.setAttribute('aria-expanded', 'false'); return; }
    if (d) return;
    var tr = el('tr', 'detail');
    tr.appendChild(renderDetail(r));
    var next = r.nextElementSibling;
    while (next && next.tagName === 'SCRIPT') next = next.nextElementSibling;
    r.parentNode.insertBefore(tr, next);
    r.setAttribute('aria-expanded', 'true');
  }

  // ------------------------------------------------------------ keyboard and links
  function setCurrent(i) {
    if (current >= 0 && rows[current]) rows[current].classList.remove('current');
    current = i;
    if (i >= 0) rows[i].classList.add('current');
  }
  // Focus the matching row at `pos`, turning the page to it.
  function focusAt(pos) {
    if (!matches.length) return;
    pos = Math.max(0, Math.min(matches.length - 1, pos));
    var want = Math.floor(pos / PAGE);
    if (want !== page) { page = want; showPage(); }
    setCurrent(matches[pos]);
    rows[current].focus();
  }
  function step(by) {
    var at = matches.indexOf(current);
    focusAt(at < 0 ? page * PAGE : at + by);
  }
  document.addEventListener('keydown', function (ev) {
    var t = ev.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) {
      if (ev.key === 'Escape') t.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === 'j') { step(1); ev.preventDefault(); }
    else if (ev.key === 'k') { step(-1); ev.preventDefault(); }
    else if (ev.key === 'Enter' && t && t.classList && t.classList.contains('cell')) { toggle(t); ev.preventDefault(); }
    else if (ev.key === 'Enter' && current >= 0 && (!t || t === document.body)) { toggle(rows[current]); ev.preventDefault(); }
    else if (ev.key === '/') {
      var open = current >= 0 && detailOf(rows[current]);
      var s = open ? open.querySelector('.t-search') : document.getElementById('filter-search');
      if (s) { s.focus(); ev.preventDefault(); }
    }
  });
  function rowOf(target) {
    var r = target && target.closest ? target.closest('tr.cell') : null;
    return r && rows.indexOf(r) >= 0 ? r : null;
  }
  document.addEventListener('click', function (ev) {
    var r = rowOf(ev.target);
    if (!r || ev.target.closest('a')) return;
    setCurrent(rows.indexOf(r));
    toggle(r);
  });
  document.addEventListener('focusin', function (ev) {
    var r = rowOf(ev.target);
    if (r && ev.target === r) setCurrent(rows.indexOf(r));
  });
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var r = id && document.getElementById(id);
    var i = r ? rows.indexOf(r) : -1;
    if (i < 0) return;
    if (matches.indexOf(i) < 0) {
      Object.keys(filters).forEach(function (k) { setFilter(k, ''); });
      applyFilters();
    }
    toggle(r, true);
    focusAt(matches.indexOf(i));
    r.scrollIntoView();
  }
  [].forEach.call(document.querySelectorAll('a[data-status]'), function (a) {
    a.addEventListener('click', function () { setFilter('status', a.getAttribute('data-status')); applyFilters(); });
  });
  window.addEventListener('hashchange', openHash);
  shown = rows.map(function (r, i) { return r.hidden ? -1 : i; }).filter(function (i) { return i >= 0; });
  setUpFilters();
  applyFilters();
  openHash();
  // A page of one transcript opens it (side by side with what
  // `data-open-with` names, when it says so).
  if (rows.length === 1 && !detailOf(rows[0])) {
    setCurrent(0);
    toggle(rows[0], true);
    var with_ = rows[0].getAttribute('data-open-with');
    var pick = detailOf(rows[0]).querySelector('.t-compare');
    if (with_ && pick) { pick.value = with_; pick.dispatchEvent(new Event('change')); }
  }
})();
