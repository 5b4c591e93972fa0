//! Label sets: sorted (name, value) pairs.

use promql_parser::label::METRIC_NAME;

/// A label set, sorted by name; no empty values.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Labels(pub Vec<(String, String)>);

impl Labels {
    /// Labels from pairs in any order; empty values are dropped.
    pub fn new(mut pairs: Vec<(String, String)>) -> Self {
        pairs.retain(|(_, v)| !v.is_empty());
        pairs.sort();
        pairs.dedup_by(|a, b| a.0 == b.0);
        Labels(pairs)
    }

    /// The value of `name`, or "" (PromQL's value of a missing label).
    pub fn get(&self, name: &str) -> &str {
        self.0
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .map_or("", |i| self.0[i].1.as_str())
    }

    /// Sets `name` (removes it when `value` is empty).
    pub fn set(&mut self, name: &str, value: &str) {
        match self.0.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) if value.is_empty() => {
                self.0.remove(i);
            }
            Ok(i) => self.0[i].1 = value.to_string(),
            Err(_) if value.is_empty() => {}
            Err(i) => self.0.insert(i, (name.to_string(), value.to_string())),
        }
    }

    /// Without `__name__`.
    pub fn without_name(mut self) -> Self {
        self.0.retain(|(n, _)| n != METRIC_NAME);
        self
    }

    /// Only the labels named in `names`.
    pub fn keep(&self, names: &[String]) -> Self {
        Labels(
            self.0
                .iter()
                .filter(|(n, _)| names.iter().any(|k| k == n))
                .cloned()
                .collect(),
        )
    }

    /// Without the labels named in `names` (and without `__name__`).
    pub fn drop(&self, names: &[String]) -> Self {
        Labels(
            self.0
                .iter()
                .filter(|(n, _)| n != METRIC_NAME && !names.iter().any(|k| k == n))
                .cloned()
                .collect(),
        )
    }

    /// Prometheus' text form: `{a="1", b="2"}`.
    pub fn render(&self) -> String {
        let inner: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
        format!("{{{}}}", inner.join(", "))
    }
}
