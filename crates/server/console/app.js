// Strata's web console: the page's wiring. Everything that can be computed without the
// page (requests, answers, highlighting, series, time ranges, metrics, bench reports,
// history, CSV) is in lib/ and unit-tested in node; this file holds the DOM and the
// network, and stays free of logic worth testing on its own.
//
// No framework and no build step: the server embeds these files as they are. The page
// must log no error in normal use (the browser test reads the console), so every event
// handler goes through `guard`, which shows a failure on the page instead of throwing.

import { buildRequest, normalise } from './lib/api.js';
import { summarise } from './lib/bench.js';
import { toCsv } from './lib/csv.js';
import * as explore from './lib/explore.js';
import { formatBytes, formatCell, formatMs, formatShort, formatStatus } from './lib/format.js';
import { escapeHtml, highlight } from './lib/highlight.js';
import { addEntry, entryLabel, loadHistory, saveHistory } from './lib/history.js';
import { FIGURES, databaseBytes, figures, parseExposition, pushPoint, readings } from './lib/metrics.js';
import { buildSeries, chartable } from './lib/series.js';
import { columnWidths, scrollHeight, visibleWindow } from './lib/table.js';
import { autoStep, isoFromMs, promRange, rewriteTimeRange } from './lib/timerange.js';

const $ = (id) => document.getElementById(id);
const el = {
  language: $('language'), database: $('database'), editor: $('editor'), highlight: $('highlight'),
  run: $('run'), status: $('status'), error: $('error'), viewTable: $('view-table'),
  viewChart: $('view-chart'), table: $('results-table'), chart: $('chart'), logScale: $('log-scale'),
  exportCsv: $('export-csv'), exportPng: $('export-png'), history: $('history'),
  historyClear: $('history-clear'), explore: $('explore'), exploreRefresh: $('explore-refresh'),
  server: $('server'), sparks: $('sparks'), diskDbs: $('disk-dbs'), serverInfo: $('server-info'), serverState: $('server-state'),
  version: $('version'), benchFile: $('bench-file'), bench: $('bench'), theme: $('theme'),
  themeIcon: $('theme-icon'), tokenDialog: $('token-dialog'), tokenInput: $('token-input'),
  tokenMessage: $('token-message'), tokenButton: $('token-button'), tokenCancel: $('token-cancel'), promRange: $('prom-range'),
  promRangeText: $('prom-range-text'), promRangeReset: $('prom-range-reset'),
};

const KEYS = {
  token: 'strata.console.token', // sessionStorage: gone when the tab closes
  theme: 'strata.console.theme',
  draft: 'strata.console.draft',
};

const ROW_HEIGHT = 26; // px; the same as --row-h in console.css
const PALETTE = ['#2f7ed8', '#e8590c', '#2b9348', '#c2255c', '#7048e8', '#0c8599', '#e67700',
  '#5c940d', '#d6336c', '#1864ab', '#a61e4d', '#087f5b'];

const state = {
  language: 'sql',
  result: null, // the last answer, normalised (lib/api.js)
  resultLanguage: 'sql',
  resultQuery: '', // the text that produced `result`: what a zoom rewrites
  view: 'table',
  chart: null, // the uPlot instance of the result
  running: null, // AbortController of the run in flight
  promWindow: null, // a zoomed PromQL window {start, end, step}; null: the last hour
  errorMark: null, // {line, column} marked in the editor
  history: [],
  benchCharts: [], // [{chart, spec, holder}]
  benchSections: null,
};

// ---------------------------------------------------------------------------------------
// Failures never escape to the console.

/** `fn` as an event handler whose failure (sync or async) is shown on the page. */
function guard(fn) {
  return (...args) => {
    try {
      const out = fn(...args);
      if (out && typeof out.catch === 'function') out.catch(internalError);
    } catch (e) {
      internalError(e);
    }
  };
}

function internalError(e) {
  showError({ message: `The console failed: ${e && e.message ? e.message : e}`, line: null, column: null });
  console.warn(e); // a warning, not an error: the page still works
}

// ---------------------------------------------------------------------------------------
// Network: the token, fetch, and the three languages.

let token = sessionStorage.getItem(KEYS.token) || '';
let tokenPrompt = null; // the open dialog's promise, shared by every request that got 401
let authDeclined = false; // Cancel pressed: stop asking until the token button is used

/** Opens the token dialog (once for any number of waiting requests); true when saved. */
function askToken(message) {
  if (tokenPrompt) return tokenPrompt;
  tokenPrompt = new Promise((resolve) => {
    el.tokenMessage.textContent = message;
    el.tokenInput.value = '';
    el.tokenDialog.returnValue = '';
    el.tokenDialog.addEventListener('close', () => {
      tokenPrompt = null;
      const value = el.tokenInput.value.trim();
      if (el.tokenDialog.returnValue === 'save' && value) {
        token = value;
        sessionStorage.setItem(KEYS.token, token);
        authDeclined = false;
        el.tokenButton.hidden = true;
        resolve(true);
      } else {
        authDeclined = true;
        el.tokenButton.hidden = false;
        resolve(false);
      }
    }, { once: true });
    el.tokenDialog.showModal();
    el.tokenInput.focus();
  });
  return tokenPrompt;
}

/**
 * fetch with the token. A 401 opens the token dialog and, once a token is saved, the
 * request is sent again: whatever asked goes on as if nothing happened. Credentials are
 * omitted so that the server's `WWW-Authenticate: Basic` never opens the browser's own
 * login prompt; the token travels in the Authorization header instead.
 */
async function apiFetch(url, init = {}, signal = undefined) {
  for (;;) {
    const headers = new Headers(init.headers || {});
    if (token) headers.set('Authorization', `Token ${token}`);
    const response = await fetch(url, { ...init, headers, signal, credentials: 'omit', cache: 'no-store' });
    if (response.status !== 401 || authDeclined) return response;
    const saved = await askToken(token ? 'That token was refused. Try again.' : '');
    if (!saved) return response;
  }
}

/** Runs `text` in `language`; the normalised answer ({ok, result} or {ok, error}). */
async function query(language, text, { db = el.database.value, range, signal } = {}) {
  const { url, init } = buildRequest(language, text, { db, range });
  const response = await apiFetch(url, init, signal);
  const raw = await response.text();
  if (response.status === 401) {
    return { ok: false, error: { message: 'Authorization required: this server needs a token (use "Enter token").', line: null, column: null } };
  }
  let body = raw;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {
    // not JSON: normalise reports the status and the text
  }
  return normalise(language, response.status, body);
}

// ---------------------------------------------------------------------------------------
// Theme.

function effectiveTheme() {
  return document.documentElement.dataset.theme
    || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  const dark = effectiveTheme() === 'dark';
  el.themeIcon.textContent = dark ? '☀' : '☾';
  const label = dark ? 'Switch to the light theme' : 'Switch to the dark theme';
  el.theme.title = label;
  el.theme.setAttribute('aria-label', label);
}

/** Colours for canvas drawing, read from the CSS variables of the current theme. */
function themeColours() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  return { text: v('--text'), muted: v('--muted'), grid: v('--grid'), panel: v('--panel'), accent: v('--accent'), accentSoft: v('--accent-soft') };
}

function redrawAll() {
  if (state.view === 'chart') renderChart();
  if (state.benchSections) renderBench(state.benchSections.sections, state.benchSections.errors);
  drawAllSparks();
}

// ---------------------------------------------------------------------------------------
// Editor: a textarea over its highlighted copy.

function renderHighlight() {
  // The trailing newline lets the copy show an empty last line as tall as the textarea's.
  el.highlight.innerHTML = `${highlight(el.editor.value, state.language, state.errorMark)}\n`;
  syncScroll();
}

function syncScroll() {
  el.highlight.scrollTop = el.editor.scrollTop;
  el.highlight.scrollLeft = el.editor.scrollLeft;
}

function setEditor(text) {
  el.editor.value = text;
  state.errorMark = null;
  renderHighlight();
  saveDraft();
}

/** Inserts `text` at the cursor (replacing a selection), as typing would. */
function insertAtCursor(text) {
  const { selectionStart: start, selectionEnd: end, value } = el.editor;
  const before = value[start - 1];
  const pad = start > 0 && before && !/[\s(,.]/.test(before) ? ' ' : '';
  el.editor.setRangeText(pad + text, start, end, 'end');
  el.editor.focus();
  state.errorMark = null;
  renderHighlight();
  saveDraft();
}

function saveDraft() {
  try {
    localStorage.setItem(KEYS.draft, JSON.stringify({ language: state.language, query: el.editor.value }));
  } catch {
    // storage full or refused: the draft is not kept
  }
}

function loadDraft() {
  try {
    const d = JSON.parse(localStorage.getItem(KEYS.draft) || 'null');
    if (d && typeof d.query === 'string') return d;
  } catch {
    // unreadable: start afresh
  }
  return null;
}

function setLanguage(language) {
  state.language = language;
  el.language.value = language;
  el.editor.placeholder = {
    sql: 'SELECT time, host, usage FROM cpu WHERE time > now() - interval \'1 hour\'',
    influxql: 'SELECT mean(usage) FROM cpu WHERE time > now() - 1h GROUP BY time(1m), host',
    promql: 'rate(cpu_usage[5m])',
  }[language];
  el.promRange.hidden = language !== 'promql';
  showPromWindow();
  renderHighlight();
}

// ---------------------------------------------------------------------------------------
// Running a query.

function setStatus(text, kind = '') {
  el.status.textContent = text;
  el.status.className = kind ? `status status-${kind}` : 'status';
}

function showError(error) {
  if (!error) {
    el.error.hidden = true;
    el.error.textContent = '';
    return;
  }
  const where = error.line ? `line ${error.line}, column ${error.column}` : '';
  el.error.innerHTML = `${where ? `<span class="error-pos">${escapeHtml(where)}</span>` : ''}<pre>${escapeHtml(error.message)}</pre>`;
  el.error.hidden = false;
}

/** The PromQL window of the next run: the zoomed one, or the hour up to now. */
function promWindow() {
  if (state.promWindow) return state.promWindow;
  const end = Math.ceil(Date.now() / 1000);
  const start = end - 3600;
  return { start, end, step: autoStep(start, end) };
}

function showPromWindow() {
  const w = state.promWindow;
  el.promRangeText.textContent = w
    ? `${isoFromMs(w.start * 1000).replace('.000Z', 'Z')} → ${isoFromMs(w.end * 1000).replace('.000Z', 'Z')}, step ${w.step}s`
    : 'last hour';
  el.promRangeReset.hidden = !w;
}

async function run() {
  const text = el.editor.value;
  if (!text.trim()) {
    el.editor.focus();
    return;
  }
  const language = state.language;
  const db = el.database.value;
  if (state.running) state.running.abort();
  const controller = new AbortController();
  state.running = controller;
  showError(null);
  state.errorMark = null;
  renderHighlight();
  setStatus('running…', 'running');
  el.run.setAttribute('aria-busy', 'true');
  remember({ language, query: text, db, at: Date.now() });
  const range = language === 'promql' ? promWindow() : undefined;
  const started = performance.now();
  let answer;
  try {
    answer = await query(language, text, { db, range, signal: controller.signal });
  } catch (e) {
    if (controller.signal.aborted) return; // a newer run replaced this one
    answer = { ok: false, error: { message: `The request failed: ${e.message} (is the server running?)`, line: null, column: null } };
  }
  if (state.running !== controller) return;
  state.running = null;
  el.run.removeAttribute('aria-busy');
  const ms = performance.now() - started;
  if (!answer.ok) {
    showError(answer.error);
    if (answer.error.line) {
      state.errorMark = { line: answer.error.line, column: answer.error.column };
      renderHighlight();
    }
    setStatus(`error · ${formatMs(ms)}`, 'error');
    return;
  }
  const result = answer.result;
  state.result = result;
  state.resultLanguage = language;
  state.resultQuery = text;
  setStatus(formatStatus(result.rowCount, ms), 'ok');
  el.status.title = result.notices.join('\n');
  if (result.error) showError(result.error);
  el.exportCsv.disabled = false;
  // Statements that change the catalog change what the pickers and explore show.
  if (language !== 'promql' && /^\s*(create|drop|alter)\b/i.test(text)) loadDatabases().catch(internalError);
  // A result with a time column is a time series: the chart shows it first.
  setView(chartable(result) ? 'chart' : 'table', true);
}

/** A drag on the chart: the query reads only the window chosen, and runs again. */
function zoomTo(fromMs, toMs) {
  if (!(toMs > fromMs)) return undefined;
  if (state.resultLanguage === 'promql') {
    state.promWindow = promRange(fromMs, toMs);
    setLanguage('promql');
    if (el.editor.value !== state.resultQuery) setEditor(state.resultQuery);
    showPromWindow();
    return run();
  }
  const rewritten = rewriteTimeRange(state.resultLanguage, state.resultQuery, fromMs, toMs);
  if (rewritten === state.resultQuery) return undefined; // not a SELECT: nothing to narrow
  setLanguage(state.resultLanguage);
  setEditor(rewritten);
  return run();
}

// ---------------------------------------------------------------------------------------
// Results: table and chart views.

function setView(view, fresh = false) {
  state.view = view;
  el.viewTable.setAttribute('aria-selected', String(view === 'table'));
  el.viewChart.setAttribute('aria-selected', String(view === 'chart'));
  el.table.hidden = view !== 'table';
  el.chart.hidden = view !== 'chart';
  if (fresh) {
    tableView.result = null;
    destroyChart();
  }
  if (view === 'table') renderTable();
  else renderChart();
  el.exportPng.disabled = !(view === 'chart' && state.chart);
}

const tableView = { result: null, scroll: null, header: null, body: null, window: null, last: '' };

/** Builds the table's frame for the current result; rows are painted by paintRows. */
function renderTable() {
  const r = state.result;
  if (tableView.result === r && tableView.scroll) {
    paintRows();
    return;
  }
  tableView.result = r;
  tableView.last = '';
  el.table.textContent = '';
  if (!r) {
    el.table.innerHTML = '<p class="empty">Run a query: its rows appear here.</p>';
    tableView.scroll = null;
    return;
  }
  const scroll = document.createElement('div');
  scroll.className = 'table-scroll';
  scroll.dataset.scroll = '';
  scroll.tabIndex = 0; // arrow keys and Page Down scroll it
  scroll.setAttribute('role', 'table');
  scroll.setAttribute('aria-rowcount', String(r.rowCount + 1));
  scroll.setAttribute('aria-colcount', String(r.columns.length));
  const widths = columnWidths(r.columns, r.rows, formatCell);
  scroll.style.setProperty('--cols', widths.map((w) => `calc(${w}ch + 16px)`).join(' '));
  const header = document.createElement('div');
  header.className = 'result-header';
  header.setAttribute('role', 'row');
  header.innerHTML = r.columns.map((c) => `<div class="result-head" role="columnheader" title="${escapeHtml(`${c.name} (${c.type})`)}">${escapeHtml(c.name)}<span class="type">${escapeHtml(c.type || '')}</span></div>`).join('');
  const body = document.createElement('div');
  body.className = 'table-body';
  body.style.height = `${scrollHeight(r.rowCount, ROW_HEIGHT)}px`;
  const win = document.createElement('div');
  win.className = 'table-window';
  body.append(win);
  scroll.append(header, body);
  if (r.rowCount === 0) {
    const none = document.createElement('p');
    none.className = 'empty';
    none.textContent = 'No rows.';
    scroll.append(none);
  }
  el.table.append(scroll);
  Object.assign(tableView, { scroll, header, body, window: win });
  let pending = false;
  scroll.addEventListener('scroll', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      paintRows();
    });
  }, { passive: true });
  paintRows();
}

/** Puts the rows in view (and a few around them) in the page; the others are not there. */
function paintRows() {
  const { result: r, scroll, header, window: win } = tableView;
  if (!r || !scroll || el.table.hidden) return;
  const w = visibleWindow({
    total: r.rowCount,
    rowHeight: ROW_HEIGHT,
    scrollTop: Math.max(0, scroll.scrollTop - header.offsetHeight),
    viewport: scroll.clientHeight || 400,
    overscan: 8,
  });
  const key = `${w.start}:${w.end}:${Math.round(w.top)}`;
  if (key === tableView.last) return;
  tableView.last = key;
  const numeric = r.columns.map((c) => c.role === 'value');
  let html = '';
  for (let i = w.start; i < w.end; i++) {
    const row = r.rows[i];
    html += `<div class="result-row${i % 2 ? ' odd' : ''}" role="row" aria-rowindex="${i + 2}">`;
    for (let c = 0; c < r.columns.length; c++) {
      const v = row[c];
      const text = v === null || v === undefined ? '<span class="null">NULL</span>' : escapeHtml(formatCell(v, r.columns[c]));
      html += `<div class="result-cell${numeric[c] ? ' num' : ''}" role="cell">${text}</div>`;
    }
    html += '</div>';
  }
  win.innerHTML = html;
  win.style.transform = `translateY(${w.top}px)`;
}

function destroyChart() {
  if (state.chart) {
    state.chart.destroy();
    state.chart = null;
  }
}

/** uPlot options shared by the result chart and the bench charts, in the theme's colours. */
function baseOptions(width, height, colours) {
  const axis = { stroke: colours.muted, grid: { stroke: colours.grid, width: 1 }, ticks: { stroke: colours.grid, width: 1 } };
  return {
    width,
    height,
    axes: [{ ...axis }, { ...axis, size: 56, values: (u, splits) => splits.map((v) => (v === null ? '' : formatShort(v))) }],
    legend: { live: true },
  };
}

function chartHeight() {
  return window.innerWidth <= 760 ? 240 : 300;
}

/** Draws the result as one line per series; dragging across it zooms (and re-runs). */
function renderChart() {
  if (state.chart && state.chart._for === state.result && state.chart._log === el.logScale.checked
    && state.chart._theme === effectiveTheme()) return;
  destroyChart();
  el.chart.textContent = '';
  const r = state.result;
  const data = r ? buildSeries(r, { log: el.logScale.checked, maxSeries: 50 }) : null;
  if (!data || data.x.length === 0 || typeof uPlot === 'undefined') {
    const p = document.createElement('p');
    p.className = 'empty';
    p.textContent = !r ? 'Run a query: a result with a time column is drawn here.'
      : typeof uPlot === 'undefined' ? 'The charting library did not load.'
        : 'Nothing to draw: the chart needs a time column and a numeric column.';
    el.chart.append(p);
    el.exportPng.disabled = true;
    return;
  }
  const colours = themeColours();
  const width = Math.max(200, el.chart.clientWidth);
  const log = el.logScale.checked;
  const opts = {
    ...baseOptions(width, chartHeight(), colours),
    scales: { x: { time: true }, y: log ? { distr: 3, log: 10 } : { auto: true } },
    series: [
      { label: 'time' },
      ...data.series.map((s, i) => ({
        label: s.label,
        stroke: PALETTE[i % PALETTE.length],
        width: 1.5,
        spanGaps: true, // series of other tag sets leave gaps on the shared axis
        points: { show: data.x.length <= 60 },
        value: (u, v) => (v === null || v === undefined ? '–' : formatShort(v)),
      })),
    ],
    cursor: { drag: { x: true, y: false, setScale: false } },
    hooks: {
      setSelect: [(u) => {
        const { left, width: w } = u.select;
        if (w < 3) return;
        const from = u.posToVal(left, 'x') * 1000;
        const to = u.posToVal(left + w, 'x') * 1000;
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        guard(zoomTo)(from, to);
      }],
    },
  };
  const chart = new uPlot(opts, [data.x, ...data.series.map((s) => s.values)], el.chart);
  chart._for = r;
  chart._log = log;
  chart._theme = effectiveTheme();
  state.chart = chart;
  if (data.dropped) {
    const note = document.createElement('p');
    note.className = 'chart-note';
    note.textContent = `Showing ${data.series.length} of ${data.series.length + data.dropped} series.`;
    el.chart.append(note);
  }
  const hint = document.createElement('p');
  hint.className = 'chart-note';
  hint.textContent = 'Drag across the chart to zoom (the query is rewritten and run again); click a legend entry to hide its line.';
  el.chart.append(hint);
  el.exportPng.disabled = false;
}

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const stamp = () => new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);

function exportCsv() {
  const r = state.result;
  if (!r) return;
  download(new Blob([toCsv(r.columns, r.rows)], { type: 'text/csv;charset=utf-8' }), `strata-${stamp()}.csv`);
}

/** The chart as PNG: uPlot's canvas on the theme's background, with the legend drawn below. */
function exportPng() {
  const u = state.chart;
  if (!u) return;
  const src = u.ctx.canvas;
  const ratio = src.width / u.width;
  const colours = themeColours();
  const shown = u.series.slice(1).map((s, i) => ({ s, i })).filter(({ s }) => s.show);
  const lineH = 18 * ratio;
  const out = document.createElement('canvas');
  out.width = src.width;
  out.height = src.height + Math.ceil((shown.length + 1) * lineH);
  const ctx = out.getContext('2d');
  ctx.fillStyle = colours.panel || '#fff';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(src, 0, 0);
  ctx.font = `${12 * ratio}px ${getComputedStyle(document.body).fontFamily}`;
  shown.forEach(({ s, i }, k) => {
    const y = src.height + (k + 1) * lineH;
    ctx.fillStyle = PALETTE[i % PALETTE.length];
    ctx.fillRect(8 * ratio, y - 9 * ratio, 14 * ratio, 3 * ratio);
    ctx.fillStyle = colours.text || '#000';
    ctx.fillText(s.label, 28 * ratio, y - 4 * ratio);
  });
  out.toBlob((blob) => blob && download(blob, `strata-chart-${stamp()}.png`), 'image/png');
}

// ---------------------------------------------------------------------------------------
// History.

function remember(entry) {
  state.history = addEntry(state.history, entry);
  saveHistory(localStorage, state.history);
  renderHistory();
}

const LANGUAGE_NAMES = { sql: 'SQL', influxql: 'InfluxQL', promql: 'PromQL' };

function renderHistory() {
  if (state.history.length === 0) {
    el.history.innerHTML = '<li class="empty small">Queries you run appear here.</li>';
    return;
  }
  el.history.innerHTML = state.history.map((e, i) => `<li><button type="button" data-index="${i}" title="${escapeHtml(e.query)}"><span class="lang">${escapeHtml(LANGUAGE_NAMES[e.language] || e.language)}</span><span class="q">${escapeHtml(entryLabel(e))}</span></button></li>`).join('');
}

function loadHistoryEntry(index) {
  const e = state.history[index];
  if (!e) return;
  setLanguage(e.language);
  setEditor(e.query);
  if (e.db && e.db !== el.database.value && [...el.database.options].some((o) => o.value === e.db)) {
    el.database.value = e.db;
    loadExplore();
  }
  el.editor.focus();
}

// ---------------------------------------------------------------------------------------
// Databases and the explore panel.

async function loadDatabases() {
  const answer = await query('influxql', explore.SHOW_DATABASES, { db: '' });
  if (!answer.ok) {
    el.explore.innerHTML = `<p class="error-text small">${escapeHtml(answer.error.message)}</p>`;
    return;
  }
  const names = explore.databaseNames(answer.result);
  const previous = el.database.value;
  el.database.innerHTML = names.map((n) => `<option value="${escapeHtml(n)}">${escapeHtml(n)}</option>`).join('')
    || '<option value="">(no database yet)</option>';
  el.database.value = names.includes(previous) ? previous : explore.defaultDatabase(names);
  await loadExplore();
}

let exploreSeq = 0;

async function loadExplore() {
  const seq = ++exploreSeq;
  const db = el.database.value;
  if (!db) {
    el.explore.innerHTML = '<p class="muted small">No database yet: write some data (line protocol, Prometheus, SQL INSERT) and reload.</p>';
    return;
  }
  el.explore.innerHTML = '<p class="muted small">Loading…</p>';
  const answer = await query('sql', explore.showTables(), { db });
  if (seq !== exploreSeq) return; // another database was picked meanwhile
  if (!answer.ok) {
    el.explore.innerHTML = `<p class="error-text small">${escapeHtml(answer.error.message)}</p>`;
    return;
  }
  const tables = explore.column(answer.result, 'table_name');
  if (tables.length === 0) {
    el.explore.innerHTML = `<p class="muted small">Database ${escapeHtml(db)} has no tables yet.</p>`;
    return;
  }
  const filter = tables.length > 12 ? '<input class="explore-filter" type="search" placeholder="Filter tables" aria-label="Filter tables">' : '';
  el.explore.innerHTML = `${filter}<ul class="explore-tables">${tables.map((t) => `<li data-name="${escapeHtml(t)}"><button type="button" class="explore-table" data-table="${escapeHtml(t)}" aria-expanded="false"><span class="caret" aria-hidden="true">▸</span><span class="name">${escapeHtml(t)}</span></button><div class="explore-detail" hidden></div></li>`).join('')}</ul>`;
}

const NUMERIC_FIELDS = new Set(['float', 'integer', 'unsigned']);

/** Opens (or closes) a table: its tags with their value counts, its fields with types. */
async function toggleTable(button) {
  const detail = button.nextElementSibling;
  const open = button.getAttribute('aria-expanded') === 'true';
  button.setAttribute('aria-expanded', String(!open));
  if (open) {
    detail.hidden = true;
    return;
  }
  detail.hidden = false;
  detail.innerHTML = '<p class="muted small">Loading…</p>';
  const db = el.database.value;
  const table = button.dataset.table;
  const [tags, fieldsAnswer] = await Promise.all([
    query('sql', explore.showTags(table), { db }),
    query('sql', explore.showFields(table), { db }),
  ]);
  if (!tags.ok || !fieldsAnswer.ok) {
    detail.innerHTML = `<p class="error-text small">${escapeHtml((tags.error || fieldsAnswer.error).message)}</p>`;
    return;
  }
  const tagKeys = explore.column(tags.result, 'tag_key');
  // One small count per tag (see lib/explore.js), all at once.
  const counts = await Promise.all(tagKeys.map(async (k) => {
    const a = await query('influxql', explore.tagCardinality(db, table, k), { db });
    return a.ok ? explore.cardinality(a.result) : null;
  }));
  const fieldList = explore.fields(fieldsAnswer.result);
  const tagHtml = tagKeys.map((k, i) => {
    const n = counts[i];
    const badge = n === null ? '' : `${n.toLocaleString('en-US')} ${n === 1 ? 'value' : 'values'}`;
    return `<li><button type="button" class="explore-tag" data-name="${escapeHtml(k)}" data-table="${escapeHtml(table)}" title="Insert ${escapeHtml(k)}"><span class="name">${escapeHtml(k)}</span><span class="badge">${badge}</span></button></li>`;
  }).join('');
  const fieldHtml = fieldList.map((f) => {
    const quick = NUMERIC_FIELDS.has(f.type)
      ? `<button type="button" class="explore-quick" data-field="${escapeHtml(f.name)}" data-table="${escapeHtml(table)}" title="Chart ${escapeHtml(f.name)} over the last hour" aria-label="Chart ${escapeHtml(f.name)} over the last hour">1h</button>` : '';
    return `<li class="explore-field-row"><button type="button" class="explore-field" data-name="${escapeHtml(f.name)}" data-table="${escapeHtml(table)}" title="Insert ${escapeHtml(f.name)}"><span class="name">${escapeHtml(f.name)}</span><span class="badge">${escapeHtml(f.type)}</span></button>${quick}</li>`;
  }).join('');
  detail.dataset.tags = JSON.stringify(tagKeys);
  detail.innerHTML = `<h3>Tags</h3><ul>${tagHtml || '<li class="muted small">none</li>'}</ul><h3>Fields</h3><ul>${fieldHtml || '<li class="muted small">none</li>'}</ul>`;
}

function onExploreClick(event) {
  const button = event.target.closest('button');
  if (!button || !el.explore.contains(button)) return;
  if (button.classList.contains('explore-table')) {
    toggleTable(button).catch(internalError);
  } else if (button.classList.contains('explore-quick')) {
    const detail = button.closest('.explore-detail');
    const tags = JSON.parse(detail.dataset.tags || '[]');
    setLanguage('sql');
    setEditor(explore.lastHour(button.dataset.table, button.dataset.field, tags));
    return run();
  } else if (button.classList.contains('explore-tag') || button.classList.contains('explore-field')) {
    const kind = button.classList.contains('explore-tag') ? 'tag' : 'field';
    insertAtCursor(explore.insertText(state.language, button.dataset.name, { table: button.dataset.table, kind }));
  }
  return undefined;
}

function onExploreFilter(event) {
  if (!event.target.classList.contains('explore-filter')) return;
  const needle = event.target.value.trim().toLowerCase();
  for (const li of el.explore.querySelectorAll('.explore-tables > li')) {
    li.hidden = needle !== '' && !li.dataset.name.toLowerCase().includes(needle);
  }
}

// ---------------------------------------------------------------------------------------
// Server panel: live sparklines from /metrics, version and settings.

const sparks = {}; // figure key → {canvas, value, points}
const dbSparks = new Map(); // database → {row, canvas, value, points}, in the panel's order
let previousReadings = null;
let previousAt = 0;
let serverInView = true;
let scraping = false;

function buildServerPanel() {
  for (const f of FIGURES) {
    const card = document.createElement('div');
    card.className = 'spark';
    card.innerHTML = `<div class="spark-head"><span>${escapeHtml(f.label)}</span><span>${escapeHtml(f.unit === 'bytes' ? '' : f.unit)}</span></div><span class="spark-value">–</span>`;
    const canvas = document.createElement('canvas');
    canvas.className = 'sparkline';
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', `${f.label}, last two minutes`);
    card.append(canvas);
    el.sparks.append(card);
    sparks[f.key] = { canvas, value: card.querySelector('.spark-value'), points: [] };
  }
}

function formatFigure(f, v) {
  if (v === null || v === undefined) return '–';
  return f.unit === 'bytes' ? formatBytes(v) : formatShort(v);
}

function drawAllSparks() {
  for (const f of FIGURES) drawSpark(sparks[f.key]);
  for (const s of dbSparks.values()) drawSpark(s);
}

function drawSpark(s) {
  if (!s) return;
  const { canvas, points } = s;
  const ratio = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(canvas.clientWidth * ratio));
  const h = Math.max(1, Math.round(canvas.clientHeight * ratio));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, w, h);
  const colours = themeColours();
  ctx.strokeStyle = colours.grid;
  ctx.lineWidth = ratio;
  ctx.beginPath();
  ctx.moveTo(0, h - ratio / 2);
  ctx.lineTo(w, h - ratio / 2);
  ctx.stroke();
  const values = points.filter((v) => Number.isFinite(v));
  if (values.length === 0) return;
  const min = Math.min(...values, 0);
  const max = Math.max(...values);
  const span = max - min || 1;
  const pad = 3 * ratio;
  const x = (i) => (points.length === 1 ? w - pad : (i / (points.length - 1)) * (w - 2 * pad) + pad);
  const y = (v) => h - pad - ((v - min) / span) * (h - 2 * pad);
  ctx.beginPath();
  points.forEach((v, i) => (i === 0 ? ctx.moveTo(x(i), y(v)) : ctx.lineTo(x(i), y(v))));
  ctx.strokeStyle = colours.accent;
  ctx.lineWidth = 1.5 * ratio;
  ctx.stroke();
  ctx.lineTo(x(points.length - 1), h);
  ctx.lineTo(x(0), h);
  ctx.closePath();
  ctx.fillStyle = colours.accentSoft;
  ctx.fill();
  ctx.fillStyle = colours.accent;
  ctx.beginPath();
  ctx.arc(x(points.length - 1), y(points[points.length - 1]), 2 * ratio, 0, Math.PI * 2);
  ctx.fill();
}

async function scrape() {
  if (scraping || (authDeclined && token === '')) return;
  scraping = true;
  try {
    const response = await apiFetch('/metrics');
    if (!response.ok) {
      el.serverState.textContent = `metrics: HTTP ${response.status}`;
      return;
    }
    const text = await response.text();
    const now = performance.now();
    const current = readings(parseExposition(text));
    const values = figures(previousReadings, current, (now - previousAt) / 1000);
    previousReadings = current;
    previousAt = now;
    for (const f of FIGURES) {
      const s = sparks[f.key];
      const v = values[f.key];
      if (v !== null) s.points = pushPoint(s.points, v, 60);
      s.value.textContent = formatFigure(f, v);
      drawSpark(s);
    }
    showDatabaseBytes(databaseBytes(parseExposition(text)));
    el.serverState.textContent = `live · every 2 s`;
  } catch {
    el.serverState.textContent = 'unreachable';
  } finally {
    scraping = false;
  }
}

/**
 * One row per database (largest first): its name, disk bytes, share of the total and a
 * sparkline of its bytes. Databases that no longer report leave the list.
 */
function showDatabaseBytes(databases) {
  const all = databases.reduce((sum, d) => sum + d.bytes, 0);
  const seen = new Set();
  for (const { database, bytes } of databases) {
    seen.add(database);
    let s = dbSparks.get(database);
    if (!s) {
      const row = document.createElement('li');
      row.className = 'disk-db';
      row.dataset.database = database;
      row.innerHTML = `<span class="disk-db-name"></span><span class="disk-db-value"></span><canvas class="sparkline disk-db-spark" role="img"></canvas>`;
      row.querySelector('.disk-db-name').textContent = database;
      row.querySelector('canvas').setAttribute('aria-label', `Disk bytes of ${database}, last two minutes`);
      s = { row, canvas: row.querySelector('canvas'), value: row.querySelector('.disk-db-value'), points: [] };
      dbSparks.set(database, s);
    }
    s.points = pushPoint(s.points, bytes, 60);
    const share = all > 0 ? Math.round((bytes / all) * 100) : 0;
    s.value.textContent = `${formatBytes(bytes)} · ${share}%`;
    s.row.dataset.bytes = String(bytes);
  }
  for (const [database, s] of dbSparks) {
    if (!seen.has(database)) {
      s.row.remove();
      dbSparks.delete(database);
    }
  }
  const list = el.diskDbs.querySelector('ol');
  for (const { database } of databases) list.append(dbSparks.get(database).row);
  el.diskDbs.hidden = databases.length === 0;
  for (const s of dbSparks.values()) drawSpark(s);
}

/** Version, health and settings: what the server says about itself. */
async function loadServerInfo() {
  const rows = [];
  try {
    const health = await fetch('/health', { credentials: 'omit', cache: 'no-store' });
    const body = await health.json();
    el.version.textContent = `Strata ${body.version || ''}`;
    rows.push(['Version', `Strata ${body.version || '?'}`]);
    const api = health.headers.get('X-Influxdb-Version');
    if (api) rows.push(['InfluxDB API', api]);
    rows.push(['Health', `${body.status}: ${body.message}`]);
  } catch {
    rows.push(['Health', 'unreachable']);
  }
  const diagnostics = await query('influxql', 'SHOW DIAGNOSTICS', { db: '' }).catch(() => null);
  if (diagnostics && diagnostics.ok) {
    const uptime = explore.column(diagnostics.result, 'uptime').find((v) => v);
    if (uptime) rows.push(['Uptime', uptime]);
  }
  // Known by now: the statements above were refused (and the token asked for) when it is on.
  rows.push(['Auth', authDeclined ? 'on: no token given' : token ? 'token sent from this tab' : 'off']);
  const dbs = await query('sql', 'SHOW DATABASES', { db: '' }).catch(() => null);
  if (dbs && dbs.ok) {
    const names = explore.column(dbs.result, 'database_name');
    const retention = explore.column(dbs.result, 'retention');
    const source = explore.column(dbs.result, 'retention_source');
    names.forEach((n, i) => rows.push([`Retention of ${n}`, `${retention[i]} (${source[i]})`]));
  }
  // The settings the server runs with, named as `strata serve`'s flags (tokens only as
  // "set" or "none").
  try {
    const flags = await apiFetch('/api/v1/status/flags');
    const body = flags.ok ? await flags.json() : null;
    for (const [name, value] of Object.entries((body && body.data) || {})) {
      rows.push([`--${name}`, value]);
    }
  } catch {
    rows.push(['Settings', 'unavailable']);
  }
  el.serverInfo.innerHTML = rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('');
}

function startScraping() {
  // Only while the panel is on screen and the tab visible: a console left open in a
  // background tab costs the server nothing.
  if ('IntersectionObserver' in window) {
    new IntersectionObserver((entries) => {
      serverInView = entries.some((e) => e.isIntersecting);
    }).observe(el.server);
  }
  scrape();
  setInterval(() => {
    if (document.visibilityState === 'visible' && serverInView) scrape();
  }, 2000);
}

// ---------------------------------------------------------------------------------------
// Bench reports.

async function openBenchFiles() {
  const files = [...el.benchFile.files];
  if (files.length === 0) return;
  const parsed = await Promise.all(files.map(async (f) => {
    try {
      return { name: f.name, data: JSON.parse(await f.text()) };
    } catch (e) {
      return { name: f.name, data: undefined, error: `${f.name}: not JSON (${e.message})` };
    }
  }));
  const { sections, errors } = summarise(parsed.filter((p) => p.data !== undefined));
  errors.unshift(...parsed.filter((p) => p.error).map((p) => p.error));
  state.benchSections = { sections, errors };
  renderBench(sections, errors);
  el.bench.closest('section').scrollIntoView({ block: 'start' });
}

function renderBench(sections, errors) {
  for (const b of state.benchCharts) b.chart.destroy();
  state.benchCharts = [];
  el.bench.textContent = '';
  if (errors.length) {
    const p = document.createElement('p');
    p.className = 'bench-errors';
    p.textContent = errors.join('; ');
    el.bench.append(p);
  }
  for (const s of sections) {
    const article = document.createElement('article');
    article.className = 'bench-section';
    const numericCol = s.table.columns.map((_, i) => s.table.rows.every((r) => /^[\d,.%–n/a -]*$/.test(r[i]) && /\d/.test(r[i])));
    article.innerHTML = `<h3>${escapeHtml(s.title)}</h3>${s.notes.length ? `<ul class="bench-notes">${s.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>` : ''}
      <div class="bench-body"><div class="table-wrap"><table class="bench-table"><thead><tr>${s.table.columns.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join('')}</tr></thead><tbody>${s.table.rows.map((r) => `<tr>${r.map((v, i) => `<td${numericCol[i] ? ' class="num"' : ''}>${escapeHtml(v)}</td>`).join('')}</tr>`).join('')}</tbody></table></div><div class="bench-charts"></div></div>`;
    el.bench.append(article);
    const holder = article.querySelector('.bench-charts');
    for (const spec of s.charts) {
      const figure = document.createElement('figure');
      figure.innerHTML = `<figcaption>${escapeHtml(spec.title)}</figcaption>`;
      const box = document.createElement('div');
      figure.append(box);
      holder.append(figure);
      if (typeof uPlot !== 'undefined') {
        state.benchCharts.push({ chart: benchChart(spec, box), spec, box });
      }
    }
  }
}

/** One bench chart: categories (percentiles) or numbers (cores, clients) on x. */
function benchChart(spec, box) {
  const colours = themeColours();
  const width = Math.max(220, box.clientWidth || box.parentElement.clientWidth);
  const labels = spec.xLabels;
  const xs = spec.x;
  const pad = labels ? 0.5 : Math.max(0.5, (Math.max(...xs) - Math.min(...xs)) * 0.05);
  const base = baseOptions(width, 220, colours);
  base.axes[0] = {
    ...base.axes[0],
    splits: () => xs,
    values: (u, splits) => splits.map((v) => (labels ? labels[v] ?? '' : formatShort(v))),
    label: spec.xLabel,
    labelSize: 18,
  };
  base.axes[1] = { ...base.axes[1], label: spec.yLabel, labelSize: 18 };
  const opts = {
    ...base,
    scales: {
      x: { time: false, range: () => [Math.min(...xs) - pad, Math.max(...xs) + pad] },
      y: { range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
    },
    series: [
      { label: spec.xLabel, value: (u, v) => (v === null ? '–' : labels ? labels[v] ?? '' : formatShort(v)) },
      ...spec.series.map((s, i) => ({
        label: s.label,
        stroke: PALETTE[i % PALETTE.length],
        width: 2,
        dash: /ideal/.test(s.label) ? [6, 4] : undefined,
        points: { show: true, size: 6 },
        spanGaps: true,
        value: (u, v) => (v === null || v === undefined ? '–' : formatShort(v)),
      })),
    ],
    cursor: { drag: { x: false, y: false } },
  };
  return new uPlot(opts, [xs, ...spec.series.map((s) => s.values)], box);
}

// ---------------------------------------------------------------------------------------
// Start.

function wire() {
  el.language.addEventListener('change', guard(() => {
    setLanguage(el.language.value);
    saveDraft();
  }));
  el.database.addEventListener('change', guard(() => loadExplore()));
  el.editor.addEventListener('input', guard(() => {
    state.errorMark = null;
    renderHighlight();
    saveDraft();
  }));
  el.editor.addEventListener('scroll', syncScroll, { passive: true });
  el.editor.addEventListener('keydown', guard((e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      return run();
    }
    return undefined;
  }));
  el.run.addEventListener('click', guard(run));
  el.viewTable.addEventListener('click', guard(() => setView('table')));
  el.viewChart.addEventListener('click', guard(() => setView('chart')));
  // Arrow keys move between the two tabs, as a tablist should.
  for (const tab of [el.viewTable, el.viewChart]) {
    tab.addEventListener('keydown', guard((e) => {
      if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
      const next = tab === el.viewTable ? el.viewChart : el.viewTable;
      next.focus();
      setView(next === el.viewTable ? 'table' : 'chart');
    }));
  }
  el.logScale.addEventListener('change', guard(() => {
    destroyChart();
    if (state.view === 'chart') renderChart();
  }));
  el.exportCsv.addEventListener('click', guard(exportCsv));
  el.exportPng.addEventListener('click', guard(exportPng));
  el.history.addEventListener('click', guard((e) => {
    const b = e.target.closest('button[data-index]');
    if (b) loadHistoryEntry(Number(b.dataset.index));
  }));
  el.historyClear.addEventListener('click', guard(() => {
    state.history = [];
    saveHistory(localStorage, state.history);
    renderHistory();
  }));
  el.explore.addEventListener('click', guard(onExploreClick));
  el.explore.addEventListener('input', guard(onExploreFilter));
  el.exploreRefresh.addEventListener('click', guard(loadDatabases));
  el.benchFile.addEventListener('change', guard(openBenchFiles));
  el.theme.addEventListener('click', guard(() => {
    const next = effectiveTheme() === 'dark' ? 'light' : 'dark';
    try {
      localStorage.setItem(KEYS.theme, next);
    } catch {
      // not remembered; applied all the same
    }
    applyTheme(next);
    redrawAll();
  }));
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', guard(() => {
    applyTheme(null);
    redrawAll();
  }));
  el.promRangeReset.addEventListener('click', guard(() => {
    state.promWindow = null;
    showPromWindow();
    if (state.language === 'promql' && el.editor.value.trim()) return run();
    return undefined;
  }));
  el.tokenButton.addEventListener('click', guard(async () => {
    authDeclined = false;
    if (await askToken('')) await reloadAll();
  }));
  el.tokenCancel.addEventListener('click', () => el.tokenDialog.close('cancel'));
  // Charts follow their container's width (window resized, phone rotated). The resize is
  // done in the next frame: resizing what is observed inside the observer's callback makes
  // the browser report a "ResizeObserver loop" error.
  let frame = 0;
  const resize = () => {
    frame = 0;
    const w = el.chart.clientWidth;
    if (state.chart && w > 0 && Math.abs(w - state.chart.width) > 1) state.chart.setSize({ width: w, height: chartHeight() });
    for (const b of state.benchCharts) {
      const bw = b.box.clientWidth;
      if (bw > 0 && Math.abs(bw - b.chart.width) > 2) b.chart.setSize({ width: bw, height: 220 });
    }
    drawAllSparks();
  };
  new ResizeObserver(() => {
    if (!frame) frame = requestAnimationFrame(guard(resize));
  }).observe(document.documentElement);
}

async function reloadAll() {
  await Promise.all([loadDatabases(), loadServerInfo(), scrape()]);
}

function start() {
  const stored = (() => {
    try {
      return localStorage.getItem(KEYS.theme);
    } catch {
      return null;
    }
  })();
  applyTheme(stored === 'dark' || stored === 'light' ? stored : null);
  buildServerPanel();
  wire();
  state.history = loadHistory(localStorage);
  renderHistory();
  const draft = loadDraft();
  setLanguage(draft && ['sql', 'influxql', 'promql'].includes(draft.language) ? draft.language : 'sql');
  setEditor(draft ? draft.query : 'SHOW TABLES');
  renderTable();
  loadDatabases().catch(internalError);
  loadServerInfo().catch(internalError);
  startScraping();
}

start();
