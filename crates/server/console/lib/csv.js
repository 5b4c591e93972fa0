// A result as CSV (RFC 4180: a header line, fields quoted when they hold a comma, a quote
// or a line break, quotes doubled), for the export button.

import { formatCell } from './format.js';

/** One CSV field. NULL is an empty field, as the server's own CSV writes it. */
export function csvField(text) {
  const s = text === null || text === undefined ? '' : String(text);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * The result (see api.js) as CSV text, lines ending in CRLF as RFC 4180 says; cells as
 * the table shows them (millisecond times as RFC 3339).
 */
export function toCsv(columns, rows) {
  const lines = [columns.map((c) => csvField(c.name)).join(',')];
  for (const row of rows) {
    lines.push(row.map((v, i) => csvField(formatCell(v, columns[i]))).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}
