// The console's page: asks serve's /console/api/ for JSON every few seconds and draws it.
// The bearer token lives in this tab's sessionStorage and goes only into the Authorization
// header of these requests, never into a URL. Every value is put in as text (no innerHTML):
// table names, error messages and statistics come from the catalog.

const tokenKey = 'offsetlake-token';
const $ = (id) => document.getElementById(id);
let everyMs = 3000;
let timer;
let openTable; // the table whose files are shown
let openFile; // the file whose columns are shown

/** An element with attributes and children (strings become text). */
function el(tag, attributes = {}, ...children) {
  const node = tag === 'svg' || ['polyline', 'line', 'text'].includes(tag) ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'onclick') node.addEventListener('click', value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
  return node;
}

class Refused extends Error {}

async function api(path) {
  const token = sessionStorage.getItem(tokenKey);
  const response = await fetch(`/console/api/${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {}, cache: 'no-store' });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (response.status === 401) throw new Refused(body.error);
  if (!response.ok) throw new Error(body.error ?? `${response.status} ${response.statusText}`);
  return body;
}

function askForToken(message) {
  clearTimeout(timer);
  $('content').hidden = true;
  $('forget').hidden = true;
  $('token-form').hidden = false;
  $('token-error').hidden = !message;
  $('token-error').textContent = message ?? '';
  $('state').textContent = 'waiting for the token';
  $('token-input').focus();
}

const bytes = (n) => {
  const value = Number(n);
  const [unit, scale] = [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]].find(([, at]) => value >= at) ?? ['B', 1];
  return unit === 'B' ? `${value} B` : `${(value / scale).toFixed(1)} ${unit}`;
};
const dash = (v) => (v === null || v === undefined ? '–' : String(v));

/** A line chart of `values` (numbers or null) at `times` (ms), drawn as SVG in a 600×160 box. */
function drawChart(svg, times, values, unit) {
  svg.replaceChildren();
  const known = values.map((v, i) => [times[i], v]).filter(([, v]) => v !== null);
  svg.dataset.points = String(known.length);
  if (known.length === 0) {
    svg.append(el('text', { x: 300, y: 85, 'text-anchor': 'middle', class: 'empty' }, 'no samples yet'));
    return;
  }
  const [left, right, top, bottom] = [48, 590, 12, 140];
  const t0 = known[0][0];
  const t1 = Math.max(known.at(-1)[0], t0 + 1);
  const max = Math.max(...known.map(([, v]) => v), 1);
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (right - left);
  const y = (v) => bottom - (v / max) * (bottom - top);
  const format = (v) => (v >= 100 ? Math.round(v).toLocaleString('en') : String(Math.round(v * 10) / 10));
  svg.append(
    el('line', { x1: left, y1: bottom, x2: right, y2: bottom, class: 'axis' }),
    el('line', { x1: left, y1: top, x2: left, y2: bottom, class: 'axis' }),
    el('text', { x: left - 4, y: top + 4, 'text-anchor': 'end' }, format(max)),
    el('text', { x: left - 4, y: bottom, 'text-anchor': 'end' }, '0'),
    el('text', { x: left, y: 156 }, `${Math.round((t1 - t0) / 1000)} s ago`),
    el('text', { x: right, y: 156, 'text-anchor': 'end' }, `now: ${format(known.at(-1)[1])} ${unit}`),
    el('polyline', { points: known.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' '), class: 'line' }),
  );
}

function drawCharts(view) {
  const times = view.chart.map((p) => p.at);
  drawChart($('lag-chart'), times, view.chart.map((p) => p.lagRecords), 'offsets');
  drawChart($('rate-chart'), times, view.chart.map((p) => p.offsetsPerSecond), 'offsets/s');
  $('history-note').textContent = `${view.chart.length} samples, one every ${view.sampleEveryMs / 1000} s; this serve keeps the last ${view.historySamples} (${Math.round((view.historySamples * view.sampleEveryMs) / 60000)} minutes) in memory.`;
}

function drawReader(reader) {
  const ratio = (v) => (v === null ? 'nothing read yet' : String(v));
  // [name, data-field, as shown, the number itself]
  const figures = [
    ['cache hit ratio', 'cacheHitRatio', ratio(reader.cacheHitRatio), reader.cacheHitRatio],
    ['Kafka bytes per served byte', 'kafkaBytesPerServedByte', ratio(reader.kafkaBytesPerServedByte), reader.kafkaBytesPerServedByte],
    ['requests', 'requests', reader.requests, reader.requests],
    ['served', 'bytesServed', bytes(reader.bytesServed), reader.bytesServed],
    ['read from Kafka', 'kafkaBytes', bytes(reader.kafkaBytes), reader.kafkaBytes],
    ['cache hits / misses', 'cache', `${reader.cacheHits} / ${reader.cacheMisses}`, undefined],
    ['mismatches (never served)', 'mismatches', reader.mismatches, reader.mismatches],
  ];
  $('reader-figures').replaceChildren(...figures.flatMap(([name, field, shown, value]) => [el('dt', {}, name), el('dd', { 'data-field': field, 'data-value': value }, shown)]));
}

// [heading, data-field, value]
const partitionColumns = [
  ['partition', 'partition', (p) => p.partition],
  ['indexed', 'indexed', (p) => `[${p.indexedStart}, ${p.indexedEnd})`],
  ['LSO', 'lso', (p) => (p.lastStableOffset === null ? `– (${p.lsoError})` : p.lastStableOffset)],
  ['lag', 'lag', (p) => dash(p.lag)],
  ['lag (s)', 'lagSeconds', (p) => (p.lagSeconds === null ? '–' : `${p.lagSecondsAtLeast ? '≥ ' : ''}${p.lagSeconds}`)],
  ['lease', 'lease', (p) => (p.lease ? `${p.lease.owner} #${p.lease.epoch}${p.lease.live ? '' : ' (free)'}` : '–')],
  ['open range', 'openRange', (p) => (p.openRange ? `${p.openRange.records} rec, ${bytes(p.openRange.bytes)}${p.openRange.holderGone ? ' (holder gone)' : ''}` : '–')],
  ['waiting', 'waiting', (p) => dash(p.waitingReason)],
  ['files', 'files', (p) => `${p.files}${p.expiredFiles !== '0' ? ` (+${p.expiredFiles} expired)` : ''}`],
  ['error rows', 'errorRows', (p) => p.errorRows],
  ['lost', 'lost', (p) => (p.lostOffsets === '0' ? '–' : `${p.lostOffsets} offsets in ${p.lostIntervals} interval(s)`)],
  ['earliest', 'earliest', (p) => dash(p.earliestOffset)],
  ['backfill', 'backfill', (p) => (p.backfill === null ? '–' : p.backfill.left === '0' ? `done (from ${p.backfill.target})` : `${p.backfill.left} left [${p.backfill.target}, ${p.backfill.cursor})`)],
];

function drawTables(tables) {
  if (tables.length === 0) return $('tables').replaceChildren(el('p', { class: 'note' }, 'no tables yet: offsetlake table create NAME --topic TOPIC'));
  $('tables').replaceChildren(...tables.map((t) => el('article', { class: 'table', 'data-table': t.name },
    el('h3', {}, t.name, el('span', { class: 'note' }, ` topic ${t.topic}, ${t.format}`),
      el('button', { type: 'button', onclick: () => showFiles(t.name) }, 'files')),
    el('p', { class: 'note settings' }, `file_bytes ${t.settings.file_bytes}, file_window ${t.settings.file_window}, file_age ${t.settings.file_age}, granularity ${t.settings.granularity}, history ${t.settings.history}, retention_check ${t.settings.retention_check}`),
    el('table', {},
      el('thead', {}, el('tr', {}, partitionColumns.map(([heading]) => el('th', {}, heading)))),
      el('tbody', {}, t.partitions.map((p) => el('tr', { 'data-partition': p.partition },
        partitionColumns.map(([, field, value]) => el('td', { 'data-field': field }, value(p))))))),
    t.partitions.filter((p) => p.topicProblem).map((p) => el('p', { class: 'error' }, `partition ${p.partition}: ${p.topicProblem}`)),
  )));
}

function drawIndexes(indexes) {
  if (indexes.length === 0) return $('indexes').replaceChildren(el('p', { class: 'note' }, 'no secondary indexes'));
  $('indexes').replaceChildren(el('table', {},
    el('thead', {}, el('tr', {}, ['index', 'kind', 'state', 'backfill', 'files with entries', 'reads used / skipped', 'last error'].map((h) => el('th', {}, h)))),
    el('tbody', {}, indexes.map((i) => el('tr', { 'data-index': `${i.table}.${i.index}` },
      el('td', {}, `${i.table}.${i.index}`), el('td', {}, i.kind.toUpperCase()), el('td', { 'data-field': 'state' }, i.state),
      el('td', { 'data-field': 'backfill' }, i.backfill.filesTotal === 0 ? '–' : [el('progress', { max: i.backfill.filesTotal, value: i.backfill.filesDone }), ` ${i.backfill.filesDone}/${i.backfill.filesTotal} files, ${i.backfill.granulesDone} granules, ${bytes(i.backfill.bytesRead)} read`]),
      el('td', {}, `${i.filesWithEntries} of ${i.filesWithEntries + i.filesWithout}`),
      el('td', {}, `${i.readsUsed} / ${i.readsSkipped}`),
      el('td', {}, dash(i.lastError)))))));
}

async function showFiles(table) {
  openTable = table;
  openFile = undefined;
  $('file-columns').replaceChildren();
  await drawFiles();
  $('files').scrollIntoView();
}

async function drawFiles() {
  if (!openTable) return;
  let answer;
  try {
    answer = await api(`tables/${encodeURIComponent(openTable)}/files`);
  } catch (error) {
    if (error instanceof Refused) throw error;
    // the table went away (dropped): its panel closes rather than failing every update
    $('files').hidden = true;
    openTable = undefined;
    $('state').textContent = `the files could not be listed: ${error.message}`;
    return;
  }
  const { files, total } = answer;
  $('files').hidden = false;
  $('files-title').textContent = `Files of ${openTable} (${files.length === total ? total : `the newest ${files.length} of ${total}`})`;
  $('file-list').replaceChildren(el('table', {},
    el('thead', {}, el('tr', {}, ['file', 'partition', 'offsets', 'bucket', 'sealed by', 'size', 'rows', 'encoder'].map((h) => el('th', {}, h)))),
    el('tbody', {}, files.map((f) => el('tr', { 'data-file': f.id, class: f.id === openFile ? 'chosen clickable' : 'clickable', title: 'its column statistics', onclick: () => showColumns(f.id) },
      el('td', {}, f.id), el('td', {}, f.partition), el('td', {}, `[${f.startOffset}, ${f.endOffset})`), el('td', {}, f.bucket),
      el('td', {}, f.sealReason), el('td', {}, bytes(f.sizeBytes)), el('td', { 'data-field': 'records' }, f.records), el('td', {}, f.encoderVersion))))));
}

/** A statistics bound as the catalog keeps it; `_timestamp`'s (epoch milliseconds) with its time beside. */
function bound(column, value) {
  if (value === null || value === undefined) return '–';
  return column.name === '_timestamp' && /^-?\d+$/.test(value) ? `${value} (${new Date(Number(value)).toISOString()})` : value;
}

async function showColumns(id) {
  openFile = id;
  const file = await api(`tables/${encodeURIComponent(openTable)}/files/${id}`);
  for (const row of document.querySelectorAll('#file-list tr[data-file]')) row.classList.toggle('chosen', row.dataset.file === id);
  $('file-columns').replaceChildren(el('h3', {}, `File ${file.id}: offsets [${file.startOffset}, ${file.endOffset}), ${file.records} rows, sha256 ${file.sha256.slice(0, 16)}…`),
    el('table', { class: 'columns' },
      el('thead', {}, el('tr', {}, ['column', 'values', 'nulls', 'NaNs', 'min', 'max'].map((h) => el('th', {}, h)))),
      el('tbody', {}, file.columns.map((c) => el('tr', { 'data-column': c.name },
        el('td', {}, c.name), el('td', {}, c.valueCount), el('td', {}, c.nullCount), el('td', {}, c.nanCount), el('td', {}, bound(c, c.min)), el('td', {}, bound(c, c.max)))))));
}

async function refresh() {
  clearTimeout(timer);
  try {
    const view = await api('overview');
    everyMs = view.sampleEveryMs;
    $('token-form').hidden = true;
    $('content').hidden = false;
    $('forget').hidden = !sessionStorage.getItem(tokenKey);
    $('state').textContent = `status of ${view.sampledAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}; updated every ${everyMs / 1000} s`;
    drawCharts(view);
    drawReader(view.reader);
    drawTables(view.tables);
    drawIndexes(view.indexes);
    await drawFiles();
  } catch (error) {
    if (error instanceof Refused) {
      const had = sessionStorage.getItem(tokenKey);
      sessionStorage.removeItem(tokenKey);
      return askForToken(had ? `the token was refused: ${error.message}` : undefined);
    }
    $('state').textContent = `could not update: ${error.message}; trying again in ${everyMs / 1000} s`;
  }
  timer = setTimeout(refresh, everyMs);
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(tokenKey, $('token-input').value.trim());
  $('token-input').value = '';
  void refresh();
});
$('forget').addEventListener('click', () => {
  sessionStorage.removeItem(tokenKey);
  askForToken();
});

// A server with --no-auth needs no token: ask for one only when a request is refused without it.
try {
  const access = await fetch('/console/api/access', { cache: 'no-store' }).then((r) => r.json());
  if (access.token === 'required' && !sessionStorage.getItem(tokenKey)) askForToken();
  else void refresh();
} catch (error) {
  $('state').textContent = `serve did not answer (${error.message}): is it still running? Reload the page once it is.`;
}
