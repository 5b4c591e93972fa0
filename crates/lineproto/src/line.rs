//! The parsed form of one line: [`Line`] and its [`FieldValue`]s.

use std::borrow::Cow;

/// One parsed point. Everything borrows from the input; a key or value is only
/// copied (as [`Cow::Owned`]) when it contained an escape that had to be removed.
///
/// Duplicates are kept as written: if a field key appears twice, both entries are in
/// [`Line::fields`] in input order and, as in InfluxDB, **the last one wins**; the
/// same holds for duplicate tag keys. Consumers that build a row must apply that rule
/// (iterate in order and overwrite). The parser does not dedupe because the check
/// would cost every line a quadratic scan or a hash set for a case that is rare.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line<'a> {
    /// 1-based line number in the input.
    pub line_number: usize,
    /// Measurement and tag set exactly as written, escapes intact (e.g.
    /// `cpu,host=a\ b`), so storage can look a series up without allocating.
    /// Tags are in input order, not sorted: two lines naming the same tags in a
    /// different order have different series keys.
    pub series_key: &'a [u8],
    /// The measurement name, unescaped.
    pub measurement: Cow<'a, str>,
    /// Tag keys and values, unescaped, in input order.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// Field keys (unescaped) and values, in input order; never empty on a parsed line.
    pub fields: Vec<(Cow<'a, str>, FieldValue<'a>)>,
    /// Timestamp in nanoseconds since the Unix epoch, already scaled from the
    /// input precision; `None` when the line has none (the server picks the time).
    pub timestamp_ns: Option<i64>,
}

impl Line<'_> {
    /// Empties the line while keeping the capacity of its vectors, so a [`Line`]
    /// can be reused with [`crate::Lines::next_into`].
    pub fn clear(&mut self) {
        self.line_number = 0;
        self.series_key = &[];
        self.measurement = Cow::Borrowed("");
        self.tags.clear();
        self.fields.clear();
        self.timestamp_ns = None;
    }
}

/// A field value. Line protocol types each value by its spelling: `1.5` float,
/// `1i` integer, `1u` unsigned, `"x"` string, `t`/`false`/... boolean.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// A bare number (`1`, `-1.5`, `1e3`); always finite.
    Float(f64),
    /// A number with the `i` suffix.
    Integer(i64),
    /// A number with the `u` suffix.
    UInteger(u64),
    /// A double-quoted string with `\"` and `\\` unescaped.
    String(Cow<'a, str>),
    /// `t T true True TRUE` or `f F false False FALSE`.
    Boolean(bool),
}
