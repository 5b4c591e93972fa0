//! What an InfluxQL statement answers: series of rows, as InfluxDB 1.x shapes them.

use std::sync::Arc;

use smallvec::SmallVec;

use super::select::ArrowRows;

/// One row of an answer: its cells, held inline up to four (time and three values, which
/// TSBS's and Grafana's aggregates fit in), so that building an answer of thousands of
/// rows does not allocate once per row.
pub(crate) type Row = SmallVec<[Value; 4]>;

/// One cell of an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// No value (a missing field, an empty bucket under `fill(null)`).
    Null,
    /// A float.
    Float(f64),
    /// A signed integer.
    Integer(i64),
    /// An unsigned integer.
    Unsigned(u64),
    /// A string (a string field, a tag value, a name). Shared: a tag value read from a
    /// dictionary column is one allocation for all the rows that hold it.
    String(Arc<str>),
    /// A boolean.
    Boolean(bool),
    /// A timestamp, nanoseconds since the epoch: written as RFC 3339 or in the `epoch` unit.
    Time(i64),
}

impl Value {
    /// A string value.
    pub(crate) fn text(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// The value as a float, for arithmetic and numeric aggregates.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Float(v) => Some(v),
            Value::Integer(v) => Some(v as f64),
            Value::Unsigned(v) => Some(v as f64),
            _ => None,
        }
    }

    /// Whether this is [`Value::Null`].
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// A series' tag values, one per key: held inline for one tag (TSBS's and Grafana's
/// `GROUP BY host`), so that a series per host is one allocation, its host's name.
pub(crate) type TagValues = SmallVec<[String; 1]>;

/// A series' tag set: its keys, shared by the series of one statement (a series per host
/// must not copy the key per host), and this series' value of each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tags {
    keys: Arc<[String]>,
    values: TagValues,
}

impl Tags {
    /// The value `values[i]` for each key `keys[i]`.
    pub(crate) fn new(keys: Arc<[String]>, values: impl Into<TagValues>) -> Self {
        let values = values.into();
        debug_assert_eq!(keys.len(), values.len());
        Tags { keys, values }
    }

    /// A tag set of (key, value) pairs.
    pub(crate) fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let (keys, values): (Vec<String>, Vec<String>) =
            pairs.into_iter().map(|(k, v)| (k.into(), v.into())).unzip();
        Tags::new(keys.into(), values)
    }

    /// The (key, value) pairs, in the keys' order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.keys
            .iter()
            .zip(&self.values)
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value of tag `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.iter().find_map(|(k, v)| (k == key).then_some(v))
    }

    /// The values, in the keys' order.
    pub(crate) fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether there is no tag.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Tag sets compare pair by pair, as a list of (key, value) does.
impl Ord for Tags {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.keys, &other.keys) {
            // The series of one statement: the same keys, so the values decide.
            return self.values.cmp(&other.values);
        }
        self.iter().cmp(other.iter())
    }
}

impl PartialOrd for Tags {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Tags {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Tags {}

/// One series of an answer: a measurement (or the name a `SHOW` gives), the tag set it is
/// grouped by, and its rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Series {
    /// `name`; empty for answers without one (`SHOW DATABASES` has one, `SHOW STATS` too).
    /// Shared: the series of one measurement are named once.
    pub name: Arc<str>,
    /// `tags`, sorted by key; left out of the answer when empty.
    pub tags: Tags,
    /// `columns`: shared by the series of one statement.
    pub columns: Arc<[String]>,
    /// `values`, one row each, as long as `columns`; empty when `arrow` holds them.
    pub values: Vec<Row>,
    /// The rows still in the engine's Arrow batches (a raw `SELECT` at the top level),
    /// written to JSON from there; `None` when `values` holds them.
    pub arrow: Option<ArrowRows>,
}

impl Series {
    /// A series named `name` with `columns` and no tags.
    pub(crate) fn new(name: &str, columns: &[&str]) -> Self {
        Series {
            name: name.into(),
            tags: Tags::default(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            values: Vec::new(),
            arrow: None,
        }
    }

    /// How many rows.
    pub(crate) fn row_count(&self) -> usize {
        self.arrow
            .as_ref()
            .map_or(self.values.len(), ArrowRows::len)
    }

    /// Drops the first `n` rows (`OFFSET`).
    pub(crate) fn skip_rows(&mut self, n: usize) {
        match &mut self.arrow {
            Some(rows) => rows.skip(n),
            None => drop(self.values.drain(..n.min(self.values.len()))),
        }
    }

    /// Keeps the first `n` rows (`LIMIT`).
    pub(crate) fn truncate_rows(&mut self, n: usize) {
        match &mut self.arrow {
            Some(rows) => rows.truncate(n),
            None => self.values.truncate(n),
        }
    }

    /// Moves rows kept as Arrow batches into `values`, for what writes cells (CSV,
    /// chunks).
    pub(crate) fn materialize(&mut self) -> Result<(), String> {
        if let Some(rows) = self.arrow.take() {
            self.values = rows.to_values()?;
        }
        Ok(())
    }
}

/// The answer of one statement: its series, or its error.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct StatementResult {
    /// Position of the statement in the query, from 0.
    pub statement_id: usize,
    /// The series (none for a statement that only acts, like `CREATE DATABASE`).
    pub series: Vec<Series>,
    /// Why the statement failed; then `series` is empty.
    pub error: Option<String>,
    /// `messages`: warnings for the client, as (level, text).
    pub messages: Vec<(String, String)>,
    /// Whether `chunked=true` may cut the answer (a `SELECT`'s; metadata comes whole).
    pub chunkable: bool,
}

impl StatementResult {
    /// A failed statement.
    pub(crate) fn failed(statement_id: usize, error: impl Into<String>) -> Self {
        StatementResult {
            statement_id,
            error: Some(error.into()),
            ..StatementResult::default()
        }
    }
}
