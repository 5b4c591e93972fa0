// The query history, kept in the browser (localStorage): newest first, each query once
// (running it again moves it to the top), at most `MAX_HISTORY` entries. The storage is
// passed in, so that the functions are tested with a stand-in.

/** The localStorage key. */
export const HISTORY_KEY = 'strata.console.history';
/** Entries kept. */
export const MAX_HISTORY = 100;

/** `list` with `entry` ({language, query, db, at}) on top, its older copy removed. */
export function addEntry(list, entry, max = MAX_HISTORY) {
  const query = String(entry.query || '').trim();
  if (!query) return list;
  const rest = list.filter((e) => !(e.language === entry.language && e.query.trim() === query));
  return [{ ...entry, query }, ...rest].slice(0, max);
}

/** The history in `storage`; empty when missing or unreadable (never throws). */
export function loadHistory(storage) {
  try {
    const list = JSON.parse(storage.getItem(HISTORY_KEY) || '[]');
    return Array.isArray(list)
      ? list.filter((e) => e && typeof e.query === 'string' && typeof e.language === 'string')
      : [];
  } catch {
    return [];
  }
}

/** Writes the history; a full or refused storage loses it, quietly (the page still works). */
export function saveHistory(storage, list) {
  try {
    storage.setItem(HISTORY_KEY, JSON.stringify(list));
    return true;
  } catch {
    return false;
  }
}

/** An entry's one-line label: whitespace runs as one space, cut at `max` characters. */
export function entryLabel(entry, max = 160) {
  const text = entry.query.replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
