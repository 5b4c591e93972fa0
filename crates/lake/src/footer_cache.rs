//! The lake reader's cache of file footers (Parquet metadata and series directory),
//! bounded by the memory they take rather than by their number: the footer of a file
//! holding 2,000 of TSBS's series (ten tags each) takes about 3.6 MB (its directory lists
//! every series with its tags and hour marks; measured with the `strata::lake` debug
//! log), one of a small table a few kilobytes. The oldest entries leave first.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Footers by file path, at most `limit` bytes of them (one bigger footer is kept alone).
pub(crate) struct FooterCache<T> {
    limit: usize,
    entries: HashMap<String, (Arc<T>, usize)>,
    /// Paths, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl<T> FooterCache<T> {
    /// An empty cache holding up to `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            entries: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
        }
    }

    /// The footer of `path`, if cached.
    pub(crate) fn get(&self, path: &str) -> Option<Arc<T>> {
        self.entries.get(path).map(|(footer, _)| Arc::clone(footer))
    }

    /// Caches `footer` (taking `bytes`) for `path`, evicting the oldest entries while the
    /// cache holds more than its limit; a path already cached keeps its entry.
    pub(crate) fn insert(&mut self, path: &str, footer: Arc<T>, bytes: usize) {
        if self.entries.contains_key(path) {
            return;
        }
        self.entries.insert(path.to_string(), (footer, bytes));
        self.order.push_back(path.to_string());
        self.bytes += bytes;
        while self.bytes > self.limit && self.order.len() > 1 {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = self.entries.remove(&oldest) {
                self.bytes -= freed;
            }
        }
    }

    /// Bytes of the footers cached.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_footers_leave_once_the_cache_holds_more_than_its_limit() {
        let mut cache = FooterCache::new(100);
        for (path, bytes) in [("a", 40), ("b", 40), ("a", 40), ("c", 30)] {
            cache.insert(path, Arc::new(path.to_string()), bytes);
        }
        // `a` again kept its entry: 110 bytes in a, b, c passed the limit, so `a` left.
        assert!(cache.get("a").is_none());
        assert_eq!(cache.get("b").as_deref().map(String::as_str), Some("b"));
        assert!(cache.get("c").is_some());
        assert_eq!(cache.bytes(), 70);
        // One footer over the limit stays alone.
        cache.insert("huge", Arc::new("huge".into()), 500);
        assert!(
            cache.get("huge").is_some() && cache.get("b").is_none() && cache.get("c").is_none()
        );
        assert_eq!(cache.bytes(), 500);
        cache.insert("d", Arc::new("d".into()), 10);
        assert!(cache.get("huge").is_none() && cache.get("d").is_some());
        assert_eq!(cache.bytes(), 10);
    }
}
