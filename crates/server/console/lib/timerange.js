// Zooming the chart rewrites the query's time range, so that the new run reads only the
// window chosen (and the editor shows what was run, ready to be edited or kept in history).
//
// SQL gets `time >= '…' AND time < '…'`, InfluxQL `time >= …ms AND time <= …ms`; the
// predicates on `time` already in the top-level WHERE are replaced, the others kept.
// PromQL's range is not in its text: it becomes the start/end/step of the range query.
// The rewrite works on tokens (highlight.js), so strings, comments and subqueries are never
// cut, and only the outermost WHERE of each SELECT is touched.

import { tokenize } from './highlight.js';

/** An instant as RFC 3339 in UTC, millisecond precision. */
export function isoFromMs(ms) {
  return new Date(ms).toISOString();
}

/** SQL's predicate for [fromMs, toMs). */
export function sqlTimePredicate(fromMs, toMs) {
  return `time >= '${isoFromMs(Math.floor(fromMs))}' AND time < '${isoFromMs(Math.ceil(toMs))}'`;
}

/** InfluxQL's predicate for [fromMs, toMs] (integers with a unit are durations since 1970). */
export function influxqlTimePredicate(fromMs, toMs) {
  return `time >= ${Math.floor(fromMs)}ms AND time <= ${Math.ceil(toMs)}ms`;
}

/** A PromQL step (seconds) giving about `points` points over [start, end] seconds. */
export function autoStep(start, end, points = 250) {
  return Math.max(1, Math.round((end - start) / points));
}

/** The PromQL range query window {start, end, step} (seconds) of a zoom to [fromMs, toMs]. */
export function promRange(fromMs, toMs, points = 250) {
  const start = Math.floor(fromMs / 1000);
  const end = Math.max(start + 1, Math.ceil(toMs / 1000));
  return { start, end, step: autoStep(start, end, points) };
}

// Words that end a WHERE clause (at the statement's top level).
const CLAUSE_END = new Set(['group', 'order', 'limit', 'offset', 'having', 'window',
  'union', 'except', 'intersect', 'qualify', 'fetch', 'slimit', 'soffset', 'tz', 'fill']);
const COMPARISON = new Set(['>', '>=', '<', '<=', '=', '==']);

const isWord = (t, word) => (t.type === 'keyword' || t.type === 'ident') && t.text.toLowerCase() === word;
const isTime = (t) => (t.type === 'ident' && t.text.toLowerCase() === 'time')
  || (t.type === 'quoted' && t.text === '"time"');

/** Whether a conjunct (its significant tokens) compares `time`: it is replaced. */
function isTimeCondition(toks) {
  if (toks.length < 3) return false;
  const [first, second] = toks;
  if (isTime(first) && ((second.type === 'operator' && COMPARISON.has(second.text)) || isWord(second, 'between'))) return true;
  const last = toks[toks.length - 1];
  const before = toks[toks.length - 2];
  return isTime(last) && before.type === 'operator' && COMPARISON.has(before.text);
}

/**
 * `query` with its time range set to [fromMs, toMs] (see the module comment). PromQL text
 * is returned as is.
 */
export function rewriteTimeRange(language, query, fromMs, toMs) {
  if (language === 'promql') return query;
  const predicate = language === 'influxql' ? influxqlTimePredicate(fromMs, toMs) : sqlTimePredicate(fromMs, toMs);
  const tokens = tokenize(query, language).filter((t) => t.type !== 'ws' && t.type !== 'comment');
  // Statements split at top-level `;`; edits are applied from the end, so offsets hold.
  const statements = [];
  let depth = 0;
  let current = [];
  for (const t of tokens) {
    if (t.type === 'punct' && (t.text === '(' || t.text === '[')) depth++;
    if (t.type === 'punct' && (t.text === ')' || t.text === ']')) depth = Math.max(0, depth - 1);
    if (depth === 0 && t.type === 'punct' && t.text === ';') {
      statements.push(current);
      current = [];
    } else {
      current.push({ ...t, depth: t.type === 'punct' && t.text === '(' ? depth - 1 : depth });
    }
  }
  statements.push(current);
  const edits = [];
  for (const st of statements) {
    const edit = rewriteStatement(st, query, predicate);
    if (edit) edits.push(edit);
  }
  let out = query;
  for (const e of edits.sort((a, b) => b.start - a.start)) {
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
  }
  return out;
}

/** The edit {start, end, text} setting one statement's time range, or null (not a SELECT). */
function rewriteStatement(st, query, predicate) {
  if (st.length === 0) return null;
  const head = st[0];
  if (!isWord(head, 'select') && !isWord(head, 'with')) return null;
  const top = st.filter((t) => t.depth === 0);
  // The last top-level SELECT … FROM: after a WITH's definitions, the main query.
  let from = -1;
  for (let i = 0; i < top.length; i++) if (isWord(top[i], 'from')) from = i;
  if (from < 0) return null;
  let where = -1;
  let end = -1;
  for (let i = from + 1; i < top.length; i++) {
    if (where < 0 && isWord(top[i], 'where')) where = i;
    else if (CLAUSE_END.has(top[i].text.toLowerCase()) && (top[i].type === 'keyword' || top[i].type === 'ident')) {
      end = i;
      break;
    }
  }
  const stmtEnd = st[st.length - 1].end;
  if (where < 0) {
    // No WHERE: one goes before the clause that follows FROM, or at the end.
    if (end >= 0) return { start: top[end].start, end: top[end].start, text: `WHERE ${predicate} ` };
    return { start: stmtEnd, end: stmtEnd, text: ` WHERE ${predicate}` };
  }
  const condStart = top[where].end;
  const condEndToken = end >= 0 ? top[end] : null;
  // The condition's tokens (all depths), between WHERE and the clause end.
  const limit = condEndToken ? condEndToken.start : stmtEnd;
  const cond = st.filter((t) => t.start >= condStart && t.end <= limit);
  if (cond.length === 0) {
    return { start: condStart, end: limit, text: ` ${predicate}${condEndToken ? ' ' : ''}` };
  }
  // Split at top-level AND (the AND of a BETWEEN belongs to it); a top-level OR means the
  // condition cannot be taken apart: it is kept whole, in parentheses.
  const conjuncts = [];
  let part = [];
  let between = false;
  let hasOr = false;
  for (const t of cond) {
    if (t.depth === 0 && isWord(t, 'or')) hasOr = true;
    if (t.depth === 0 && isWord(t, 'between')) between = true;
    if (t.depth === 0 && isWord(t, 'and')) {
      if (between) {
        between = false;
      } else {
        conjuncts.push(part);
        part = [];
        continue;
      }
    }
    part.push(t);
  }
  conjuncts.push(part);
  const text = (toks) => query.slice(toks[0].start, toks[toks.length - 1].end);
  let kept;
  if (hasOr) {
    kept = [`(${text(cond)})`];
  } else {
    kept = conjuncts.filter((c) => c.length && !isTimeCondition(c)).map(text);
  }
  const condition = [...kept, predicate].join(' AND ');
  return { start: condStart, end: cond[cond.length - 1].end, text: ` ${condition}` };
}
