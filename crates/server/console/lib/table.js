// The virtualised table's arithmetic: which rows are in view and where they go. Only those
// rows (plus a few above and below) are in the page, so 100,000 rows scroll as smoothly as
// 100.
//
// Browsers cap an element's height (Chromium near 33.5 million pixels), so past
// `MAX_SCROLL_PX` the scroll range is compressed: the scroll fraction picks the first row,
// and rows are placed relative to the scroll position.

/** The tallest scroll area made. */
export const MAX_SCROLL_PX = 8_000_000;

/** The scroll area's height for `total` rows of `rowHeight` pixels. */
export function scrollHeight(total, rowHeight) {
  return Math.min(total * rowHeight, MAX_SCROLL_PX);
}

/**
 * The rows to render: `{start, end, top}`: rows [start, end) go at `top + k * rowHeight`
 * (k from 0). `scrollTop` and `viewport` are the body's scroll offset and visible height.
 */
export function visibleWindow({ total, rowHeight, scrollTop, viewport, overscan = 6 }) {
  if (total <= 0 || rowHeight <= 0) return { start: 0, end: 0, top: 0 };
  const height = scrollHeight(total, rowHeight);
  const inView = Math.ceil(viewport / rowHeight) + 1;
  if (height === total * rowHeight) {
    const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
    const start = Math.max(0, first - overscan);
    const end = Math.min(total, first + inView + overscan);
    return { start, end, top: start * rowHeight };
  }
  // Compressed: the fraction scrolled picks the (fractional) first row in view.
  const range = Math.max(1, height - viewport);
  const fraction = Math.min(1, Math.max(0, scrollTop / range));
  const exact = fraction * Math.max(0, total - Math.floor(viewport / rowHeight));
  const start = Math.max(0, Math.floor(exact) - overscan);
  const end = Math.min(total, Math.floor(exact) + inView + overscan);
  return { start, end, top: Math.max(0, scrollTop - (exact - start) * rowHeight) };
}

/**
 * Column widths in characters, from the header and a sample of cells (the first and last
 * rows: enough to size, cheap for any number of rows), between `min` and `max`.
 */
export function columnWidths(columns, rows, format, { sample = 200, min = 4, max = 48 } = {}) {
  // The header shows the name and the type.
  const widths = columns.map((c) => Math.min(max, Math.max(min, String(c.name).length + String(c.type || '').length + 3)));
  const pick = rows.length <= sample ? rows : rows.slice(0, sample / 2).concat(rows.slice(-sample / 2));
  for (const row of pick) {
    for (let i = 0; i < columns.length; i++) {
      const len = format(row[i], columns[i]).length + 1;
      if (len > widths[i]) widths[i] = Math.min(max, len);
    }
  }
  return widths;
}
