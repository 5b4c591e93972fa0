//! Pre-aggregates of one column of one chunk (TDengine's "SMA"): enough to answer count, sum,
//! min, max, first and last over whole chunks without decoding them.

use crate::column::Values;
use crate::model::FieldType;

use super::format::{CursorError, IndexCursor, put_i64, put_i128, put_u64, put_varint};

/// Pre-aggregates of one column in one chunk; `count` (present values) is always at least 1,
/// since a chunk stores no column without values.
///
/// Float semantics, chosen so that a caller can always tell when the numbers are not the
/// answer it wants and fall back to decoding the block:
/// - `min`/`max` ignore NaN and order the other values by IEEE total order, so `-0.0 < 0.0`
///   and infinities take part; when every value is NaN both are NaN.
/// - `has_nan` is set when any value is NaN.
/// - `sum` is the left-to-right f64 sum in row order, so it is NaN if any value is NaN or
///   both infinities occur, and may differ in the last bits from another summation order.
/// - `first`/`last` are the values of the first and last present rows, NaN included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PreAgg {
    /// A float column.
    Float {
        /// Present values.
        count: u32,
        /// Smallest non-NaN value (NaN when all are NaN).
        min: f64,
        /// Largest non-NaN value (NaN when all are NaN).
        max: f64,
        /// Row-order f64 sum.
        sum: f64,
        /// Value of the first present row.
        first: f64,
        /// Value of the last present row.
        last: f64,
        /// Whether any value is NaN.
        has_nan: bool,
    },
    /// A signed integer column.
    Integer {
        /// Present values.
        count: u32,
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
        /// Exact sum.
        sum: i128,
        /// Value of the first present row.
        first: i64,
        /// Value of the last present row.
        last: i64,
    },
    /// An unsigned integer column.
    Unsigned {
        /// Present values.
        count: u32,
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
        /// Exact sum.
        sum: u128,
        /// Value of the first present row.
        first: u64,
        /// Value of the last present row.
        last: u64,
    },
    /// A boolean column.
    Boolean {
        /// Present values.
        count: u32,
        /// Value of the first present row.
        first: bool,
        /// Value of the last present row.
        last: bool,
        /// How many values are true.
        trues: u32,
    },
    /// A string column: only the count (min/max of strings would cost index bytes that no
    /// planned query uses).
    String {
        /// Present values.
        count: u32,
    },
}

impl PreAgg {
    /// Number of present values.
    pub fn count(&self) -> u32 {
        match *self {
            Self::Float { count, .. }
            | Self::Integer { count, .. }
            | Self::Unsigned { count, .. }
            | Self::Boolean { count, .. }
            | Self::String { count } => count,
        }
    }

    /// The column type these pre-aggregates are of.
    pub fn field_type(&self) -> FieldType {
        match self {
            Self::Float { .. } => FieldType::Float,
            Self::Integer { .. } => FieldType::Integer,
            Self::Unsigned { .. } => FieldType::Unsigned,
            Self::Boolean { .. } => FieldType::Boolean,
            Self::String { .. } => FieldType::String,
        }
    }

    /// Pre-aggregates of `values[from..to]`; `None` when the range is empty.
    pub(crate) fn compute(values: &Values, from: usize, to: usize) -> Option<Self> {
        if from >= to {
            return None;
        }
        let count = u32::try_from(to - from).ok()?;
        Some(match values {
            Values::Float(v) => {
                let v = &v[from..to];
                let mut min = f64::NAN;
                let mut max = f64::NAN;
                let mut sum = 0.0;
                let mut has_nan = false;
                for &x in v {
                    sum += x;
                    if x.is_nan() {
                        has_nan = true;
                        continue;
                    }
                    if min.is_nan() || x.total_cmp(&min).is_lt() {
                        min = x;
                    }
                    if max.is_nan() || x.total_cmp(&max).is_gt() {
                        max = x;
                    }
                }
                Self::Float {
                    count,
                    min,
                    max,
                    sum,
                    first: v[0],
                    last: v[v.len() - 1],
                    has_nan,
                }
            }
            Values::Integer(v) => {
                let v = &v[from..to];
                Self::Integer {
                    count,
                    min: v.iter().copied().min()?,
                    max: v.iter().copied().max()?,
                    sum: v.iter().map(|&x| i128::from(x)).sum(),
                    first: v[0],
                    last: v[v.len() - 1],
                }
            }
            Values::Unsigned(v) => {
                let v = &v[from..to];
                Self::Unsigned {
                    count,
                    min: v.iter().copied().min()?,
                    max: v.iter().copied().max()?,
                    sum: v.iter().map(|&x| u128::from(x)).sum(),
                    first: v[0],
                    last: v[v.len() - 1],
                }
            }
            Values::Boolean(v) => {
                let v = &v[from..to];
                Self::Boolean {
                    count,
                    first: v[0],
                    last: v[v.len() - 1],
                    trues: v.iter().filter(|&&b| b).count() as u32,
                }
            }
            Values::String(_) => Self::String { count },
        })
    }

    /// Appends the format `version` index encoding (layout in the module docs of
    /// [`super`]), without the count when `with_count` is false (format 2, when every row of
    /// the chunk has the field). Integers store max, first and last as offsets from min, and
    /// in format 2 the sum as its excess over `count * min`: they are close to those, so the
    /// varints are short.
    pub(crate) fn encode(&self, out: &mut Vec<u8>, version: u32, with_count: bool) {
        if with_count {
            put_u64(out, u64::from(self.count()));
        }
        match *self {
            Self::Float {
                min,
                max,
                sum,
                first,
                last,
                has_nan,
                ..
            } => {
                out.push(u8::from(has_nan));
                for x in [min, max, sum, first, last] {
                    out.extend_from_slice(&x.to_bits().to_le_bytes());
                }
            }
            Self::Integer {
                min,
                max,
                sum,
                first,
                last,
                ..
            } => {
                put_i64(out, min);
                for x in [max, first, last] {
                    put_u64(out, x.wrapping_sub(min) as u64);
                }
                if version >= 2 {
                    // Every value is at least min, so the excess is not negative.
                    let count = i128::from(self.count());
                    put_varint(out, (sum - count * i128::from(min)) as u128);
                } else {
                    put_i128(out, sum);
                }
            }
            Self::Unsigned {
                min,
                max,
                sum,
                first,
                last,
                ..
            } => {
                put_u64(out, min);
                for x in [max, first, last] {
                    put_u64(out, x - min);
                }
                if version >= 2 {
                    put_varint(out, sum - u128::from(self.count()) * u128::from(min));
                } else {
                    put_varint(out, sum);
                }
            }
            Self::Boolean {
                first, last, trues, ..
            } => {
                put_u64(out, u64::from(trues));
                out.push(u8::from(first) | u8::from(last) << 1);
            }
            Self::String { .. } => {}
        }
    }

    /// Moves past the pre-aggregates of a `field_type` column without reading them (the
    /// index was checked at open): for the columns a read does not ask for.
    pub(crate) fn skip(
        c: &mut IndexCursor<'_>,
        field_type: FieldType,
        count_implied: bool,
    ) -> Result<(), CursorError> {
        if !count_implied {
            c.skip_varints(1)?;
        }
        match field_type {
            // flags, then min, max, sum, first, last as raw f64
            FieldType::Float => c.skip(1 + 5 * 8),
            // min, max-min, first-min, last-min, sum (whatever the version)
            FieldType::Integer | FieldType::Unsigned => c.skip_varints(5),
            // trues, flags
            FieldType::Boolean => c.skip_varints(1).and_then(|()| c.skip(1)),
            FieldType::String => Ok(()),
        }
    }

    /// Parses format `version` pre-aggregates of a `field_type` column and checks that they
    /// are consistent (count in `1..=rows`, min <= first, last <= max, ...); `count` is the
    /// count when the entry leaves it out.
    pub(crate) fn decode(
        c: &mut IndexCursor<'_>,
        field_type: FieldType,
        rows: u32,
        version: u32,
        count: Option<u32>,
    ) -> Result<Self, String> {
        let count = match count {
            Some(count) => count,
            None => c.u32()?,
        };
        if count == 0 || count > rows {
            return Err(format!("column count {count} not in 1..={rows}"));
        }
        let agg = match field_type {
            FieldType::Float => {
                let flags = c.byte()?;
                if flags > 1 {
                    return Err(format!("float pre-aggregate flags {flags:#x}"));
                }
                let (min, max, sum) = (c.f64_le()?, c.f64_le()?, c.f64_le()?);
                let (first, last) = (c.f64_le()?, c.f64_le()?);
                Self::Float {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                    has_nan: flags == 1,
                }
            }
            FieldType::Integer => {
                let min = c.i64()?;
                let max = min.wrapping_add(c.u64()? as i64);
                let first = min.wrapping_add(c.u64()? as i64);
                let last = min.wrapping_add(c.u64()? as i64);
                let sum = if version >= 2 {
                    // At most count * (max - min) < 2^77: the sum cannot overflow i128.
                    let excess = c.varint()?;
                    let spread = u128::from(max.wrapping_sub(min) as u64);
                    if excess > u128::from(count) * spread {
                        return Err("integer sum over count * max".into());
                    }
                    i128::from(count) * i128::from(min) + excess as i128
                } else {
                    c.i128()?
                };
                if !(min <= first && first <= max && min <= last && last <= max) {
                    return Err("integer min/first/last/max out of order".into());
                }
                Self::Integer {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                }
            }
            FieldType::Unsigned => {
                let min = c.u64()?;
                let mut offset = || -> Result<u64, String> {
                    min.checked_add(c.u64()?)
                        .ok_or_else(|| "unsigned pre-aggregate over u64".into())
                };
                let (max, first, last) = (offset()?, offset()?, offset()?);
                let sum = if version >= 2 {
                    let excess = c.varint()?;
                    if excess > u128::from(count) * u128::from(max - min) {
                        return Err("unsigned sum over count * max".into());
                    }
                    u128::from(count) * u128::from(min) + excess
                } else {
                    c.varint()?
                };
                if first > max || last > max {
                    return Err("unsigned first/last over max".into());
                }
                Self::Unsigned {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                }
            }
            FieldType::Boolean => {
                let trues = c.u32()?;
                let flags = c.byte()?;
                let (first, last) = (flags & 1 == 1, flags & 2 == 2);
                let falses = count.checked_sub(trues).ok_or("more trues than values")?;
                if flags > 3 || (trues == 0 && (first || last)) || (falses == 0 && !(first && last))
                {
                    return Err("boolean pre-aggregates disagree".into());
                }
                Self::Boolean {
                    count,
                    first,
                    last,
                    trues,
                }
            }
            FieldType::String => Self::String { count },
        };
        Ok(agg)
    }
}
