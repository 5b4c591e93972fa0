//! Timestamp precision and the per-line limits the parser enforces.

use std::fmt;
use std::str::FromStr;

use crate::error::PrecisionError;

/// Unit of the timestamps in a write request (InfluxDB's `precision=` query parameter).
///
/// The parser multiplies every timestamp by [`Precision::nanos_per_unit`] so that
/// [`crate::Line::timestamp_ns`] is always in nanoseconds; a product that does not fit
/// in `i64` is an error, never a wrapped value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Timestamps are nanoseconds since the Unix epoch (InfluxDB's default).
    #[default]
    Nanoseconds,
    /// Timestamps are microseconds since the Unix epoch.
    Microseconds,
    /// Timestamps are milliseconds since the Unix epoch.
    Milliseconds,
    /// Timestamps are seconds since the Unix epoch.
    Seconds,
}

impl Precision {
    /// How many nanoseconds one unit of this precision is.
    pub const fn nanos_per_unit(self) -> i64 {
        match self {
            Precision::Nanoseconds => 1,
            Precision::Microseconds => 1_000,
            Precision::Milliseconds => 1_000_000,
            Precision::Seconds => 1_000_000_000,
        }
    }

    /// The canonical short name (`ns`, `us`, `ms`, `s`), as accepted by [`FromStr`].
    pub const fn as_str(self) -> &'static str {
        match self {
            Precision::Nanoseconds => "ns",
            Precision::Microseconds => "us",
            Precision::Milliseconds => "ms",
            Precision::Seconds => "s",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = PrecisionError;

    /// Accepts `ns`/`n`, `us`/`u`, `ms` and `s`: the spellings InfluxDB 1.x and 2.x
    /// accept for the `precision` parameter (minutes and hours are not supported).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ns" | "n" => Ok(Precision::Nanoseconds),
            "us" | "u" => Ok(Precision::Microseconds),
            "ms" => Ok(Precision::Milliseconds),
            "s" => Ok(Precision::Seconds),
            _ => Err(PrecisionError { got: s.to_owned() }),
        }
    }
}

/// Longest line accepted by default, in bytes, excluding the line terminator.
///
/// InfluxDB itself has no line limit, only a request body limit. InfluxDB 1.x capped a
/// string field at 64 KiB, so 1 MiB fits a line with a dozen maximal strings while
/// still bounding the work and memory one line can cost.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1024 * 1024;

/// Most fields accepted on one line by default.
///
/// InfluxDB 3 limits a table to 500 columns by default; TSBS's widest schema has
/// about 100 fields. 1024 is comfortably above both and bounds the per-line `Vec`.
pub const DEFAULT_MAX_FIELDS_PER_LINE: usize = 1024;

/// Most tags accepted on one line by default.
///
/// Series keys with hundreds of tags are a schema mistake, not a workload; 256 is
/// far above TSBS (10 tags) and bounds the series key a storage engine must hash.
pub const DEFAULT_MAX_TAGS_PER_LINE: usize = 256;

/// How [`crate::parse_lines`] reads its input. Limits are checked per line; a line
/// over a limit is reported as an error and parsing continues with the next line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// Unit of the timestamps in the input.
    pub precision: Precision,
    /// Longest accepted line in bytes, excluding `\n` or `\r\n`; applies to every
    /// line, comments included. See [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// Most fields on one line. See [`DEFAULT_MAX_FIELDS_PER_LINE`].
    pub max_fields_per_line: usize,
    /// Most tags on one line. See [`DEFAULT_MAX_TAGS_PER_LINE`].
    pub max_tags_per_line: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            precision: Precision::Nanoseconds,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_fields_per_line: DEFAULT_MAX_FIELDS_PER_LINE,
            max_tags_per_line: DEFAULT_MAX_TAGS_PER_LINE,
        }
    }
}
