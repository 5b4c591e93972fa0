// Tokenizer and highlighter for SQL, InfluxQL and PromQL.
//
// One small hand-written scanner serves the three languages: they share numbers, names,
// operators and punctuation, and differ in comments, quoting, durations and regexes. The
// tokens cover the text exactly (concatenated they give it back), which is what both the
// editor overlay (it must line up with the textarea character for character) and the
// time-range rewriter (it edits the text at token offsets) need. Never throws: text that
// does not lex (an unterminated string, a stray character) still yields tokens.

const SQL_KEYWORDS = new Set(`
  all alter and any array as asc between by case cast create database databases default
  delete desc describe distinct drop else end except exists explain false fields first
  following from full group having if ilike in inner insert intersect interval into is join
  key last lateral left like limit natural not null nulls offset on or order outer over
  partition preceding range recursive retention right row rows select set show similar table
  tables tag tags then timestamp to true union unbounded unnest update using values when
  where window with downsample downsamples aggregates value`.trim().split(/\s+/));

const INFLUXQL_KEYWORDS = new Set(`
  all alter and any as asc begin by cardinality create continuous database databases default
  delete desc destinations diagnostics distinct drop duration end every exact explain field
  fill for from grant grants group groups in inf insert into key keys kill limit measurement
  measurements name none not null offset on or order password policies policy previous linear
  privileges queries query read replication resample retention revoke select series set shard
  shards slimit soffset show stats subscription subscriptions tag to tz user users values
  where with write true false`.trim().split(/\s+/));

const PROMQL_KEYWORDS = new Set(`
  by without on ignoring group_left group_right offset bool and or unless
  sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk
  limit_ratio`.trim().split(/\s+/));

const KEYWORDS = { sql: SQL_KEYWORDS, influxql: INFLUXQL_KEYWORDS, promql: PROMQL_KEYWORDS };

/** The keywords of `language` (lower case), for callers that look for clause words. */
export function keywords(language) {
  return KEYWORDS[language] || SQL_KEYWORDS;
}

// Longest first, so that `>=` wins over `>`.
const OPERATORS = ['<>', '>=', '<=', '!=', '==', '=~', '!~', '::', '||', '->', '+', '-', '*',
  '/', '%', '=', '<', '>', '!', '&', '|', '^', '~', '@'];
const PUNCT = '(),;.[]{}';

const isDigit = (c) => c >= '0' && c <= '9';
const isIdentStart = (c) => /[A-Za-z_\u00C0-\uFFFF]/.test(c);
const isIdentPart = (c, promql) => /[A-Za-z0-9_\u00C0-\uFFFF]/.test(c) || (promql && c === ':');

// Duration units of InfluxQL (`5m`, `100ms`, `1u`) and PromQL (`1h30m`, `5y`).
const DURATION = /^[0-9]+(?:ns|us|µs|µ|u|ms|s|m|h|d|w|y)(?:[0-9]+(?:ms|s|m|h|d|w|y))*(?![A-Za-z0-9_])/;
const NUMBER = /^(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)/;

/**
 * Splits `text` into tokens `{type, text, start, end}`. Types: `ws`, `comment`, `string`,
 * `quoted` (a quoted identifier), `number`, `duration`, `keyword`, `function`, `ident`,
 * `operator`, `punct`, `regex` (InfluxQL `/re/`), `param` (`$name`, `$1`), `other`.
 */
export function tokenize(text, language = 'sql') {
  const promql = language === 'promql';
  const influxql = language === 'influxql';
  const words = keywords(language);
  const tokens = [];
  let i = 0;
  const push = (type, end) => {
    tokens.push({ type, text: text.slice(i, end), start: i, end });
    i = end;
  };
  // The last token that is not whitespace or a comment: decides whether `/` starts an
  // InfluxQL regex (after `=~`, `FROM`, `,` …) or is a division.
  const previous = () => {
    for (let k = tokens.length - 1; k >= 0; k--) {
      if (tokens[k].type !== 'ws' && tokens[k].type !== 'comment') return tokens[k];
    }
    return null;
  };
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i, i + 2);
    if (/\s/.test(c)) {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j])) j++;
      push('ws', j);
    } else if ((!promql && rest === '--') || (promql && c === '#')) {
      const nl = text.indexOf('\n', i);
      push('comment', nl < 0 ? text.length : nl);
    } else if (!promql && rest === '/*') {
      const close = text.indexOf('*/', i + 2);
      push('comment', close < 0 ? text.length : close + 2);
    } else if (c === "'" || (promql && (c === '"' || c === '`'))) {
      push('string', endOfQuoted(text, i, c, language));
    } else if (c === '"') {
      push('quoted', endOfQuoted(text, i, c, language));
    } else if (influxql && c === '/' && regexAllowed(previous())) {
      push('regex', endOfQuoted(text, i, '/', language));
    } else if (c === '$') {
      let j = i + 1;
      while (j < text.length && isIdentPart(text[j], false)) j++;
      push(j > i + 1 ? 'param' : 'other', j);
    } else if (isDigit(c) || (c === '.' && isDigit(text[i + 1] || ''))) {
      const tail = text.slice(i);
      const duration = !language.startsWith('sql') && DURATION.exec(tail);
      if (duration) {
        push('duration', i + duration[0].length);
      } else {
        push('number', i + (NUMBER.exec(tail) || [c])[0].length);
      }
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < text.length && isIdentPart(text[j], promql)) j++;
      const word = text.slice(i, j);
      let k = j;
      while (k < text.length && (text[k] === ' ' || text[k] === '\t')) k++;
      const lower = word.toLowerCase();
      let type = 'ident';
      if (text[k] === '(') {
        // A keyword before `(` is still a keyword (`IN (`, `by (`), unless it names a
        // function too (`count(`, `sum(`, `first(`).
        type = words.has(lower) && !FUNCTION_LIKE.has(lower) ? 'keyword' : 'function';
      } else if (promql && FUNCTION_LIKE.has(lower)) {
        type = 'function'; // `sum by (job) (…)`: an aggregation, whatever follows it
      } else if (words.has(lower)) {
        type = 'keyword';
      }
      push(type, j);
    } else {
      const op = OPERATORS.find((o) => text.startsWith(o, i));
      if (op) push('operator', i + op.length);
      else if (PUNCT.includes(c)) push('punct', i + 1);
      else push('other', i + 1);
    }
  }
  return tokens;
}

// Keywords that also name functions: before `(` they read as functions.
const FUNCTION_LIKE = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar',
  'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio', 'first',
  'last', 'cast', 'left', 'right']);

/** Whether an InfluxQL `/` after token `prev` starts a regex rather than a division. */
function regexAllowed(prev) {
  if (!prev) return true;
  if (prev.type === 'operator') return prev.text === '=~' || prev.text === '!~';
  if (prev.type === 'punct') return prev.text === ',' || prev.text === '(';
  if (prev.type === 'keyword') return true; // FROM /cpu.*/, BY /host/, SELECT /usage/
  return false;
}

/** The end (exclusive) of the quoted text opened by `quote` at `start`. */
function endOfQuoted(text, start, quote, language) {
  // SQL doubles a quote to escape it ('it''s', "a""b"); InfluxQL and PromQL use backslashes.
  const doubling = language === 'sql' && quote !== '`';
  let j = start + 1;
  while (j < text.length) {
    const ch = text[j];
    if (!doubling && ch === '\\' && quote !== '`') {
      j += 2;
      continue;
    }
    if (ch === quote) {
      if (doubling && text[j + 1] === quote) {
        j += 2;
        continue;
      }
      return j + 1;
    }
    if (ch === '\n' && quote === '/') return j; // a regex does not span lines
    j++;
  }
  return text.length;
}

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` safe to put in HTML (element content or a quoted attribute). */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/**
 * The UTF-16 offset in `text` of a 1-based line and column, the column counted in
 * characters (code points), as the server reports positions. Clamped to the text.
 */
export function offsetOf(text, line, column) {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', offset);
    if (nl < 0) return text.length;
    offset = nl + 1;
  }
  for (let c = 1; c < column && offset < text.length && text[offset] !== '\n'; c++) {
    offset += text.codePointAt(offset) > 0xffff ? 2 : 1;
  }
  return offset;
}

/**
 * `text` as HTML: each token in a `<span class="tok-TYPE">` (whitespace and punctuation
 * bare), everything escaped. With `mark` ({line, column}), the token at that position (or
 * a space after the end) is wrapped in `<mark class="tok-error">` to show where an error
 * points.
 */
export function highlight(text, language = 'sql', mark = null) {
  const tokens = tokenize(text, language);
  let at = -1;
  if (mark && mark.line > 0 && mark.column > 0) at = offsetOf(text, mark.line, mark.column);
  let html = '';
  let marked = false;
  for (const t of tokens) {
    let piece = t.type === 'ws' || t.type === 'punct' ? escapeHtml(t.text)
      : `<span class="tok-${t.type}">${escapeHtml(t.text)}</span>`;
    if (!marked && at >= t.start && at < t.end) {
      marked = true;
      if (t.type === 'ws') {
        // Point at the blank itself: one character, not the whole run of spaces.
        const k = at - t.start;
        piece = escapeHtml(t.text.slice(0, k)) + '<mark class="tok-error">'
          + escapeHtml(t.text[k]) + '</mark>' + escapeHtml(t.text.slice(k + 1));
      } else {
        piece = `<mark class="tok-error">${piece}</mark>`;
      }
    }
    html += piece;
  }
  if (at >= 0 && !marked) html += '<mark class="tok-error"> </mark>';
  return html;
}
