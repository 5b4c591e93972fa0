//! Seed 000's disk-scaling workload: rows of 32,524 bytes, so a load is bound by disk
//! writes, not by CPU.
//!
//! TDengine's report writes one super table of 100 subtables x 10,000 rows with the schema
//! TIMESTAMP (8 bytes), DOUBLE (8), BIGINT (8), five BINARY(5000) and three NCHAR(2500): 8 +
//! 8 + 8 + 5 x 5,000 + 3 x 2,500 = 32,524 bytes a row. Here that is table `large`, tag
//! `tbname` naming the subtable (`d0 …`), fields `f_double` (float), `f_bigint` (integer),
//! `b0`…`b4` (strings of 5,000 bytes) and `n0`…`n2` (strings of 2,500 characters, ASCII
//! here), millisecond timestamps from 1500000000000 with a 1 ms step per row of a subtable.
//!
//! The strings are fresh seeded random characters from a 64-letter alphabet in every row
//! (six bits of entropy a byte, as taosBenchmark's random binary columns): a row repeated
//! from a small pool would compress away and no longer load the disk. Each subtable's rows
//! come from its own seeded stream, so a subtable's data does not depend on how the
//! subtables are split between workers.

use std::ops::Range;

use crate::rng::Rng;
use crate::write_int;

/// Table name.
pub const TABLE: &str = "large";
/// Bytes of each BINARY column's value.
pub const BINARY_BYTES: usize = 5_000;
/// Characters of each NCHAR column's value.
pub const NCHAR_CHARS: usize = 2_500;
/// BINARY columns (`b0`…).
pub const BINARY_COLUMNS: usize = 5;
/// NCHAR columns (`n0`…).
pub const NCHAR_COLUMNS: usize = 3;
/// Field values a row carries: the double, the bigint and the eight strings.
pub const FIELDS_PER_ROW: u64 = 2 + (BINARY_COLUMNS + NCHAR_COLUMNS) as u64;
/// The row's size in TDengine's schema (seed 000's figure).
pub const ROW_BYTES: u64 =
    8 + 8 + 8 + (BINARY_COLUMNS * BINARY_BYTES + NCHAR_COLUMNS * NCHAR_CHARS) as u64;

/// Letters of the random strings: none needs escaping in a line-protocol string field.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// What to generate. Defaults are seed 000's disk test: 100 subtables x 10,000 rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeRowsConfig {
    /// Subtables (series).
    pub tables: u32,
    /// Rows per subtable.
    pub rows_per_table: u64,
    /// First timestamp, milliseconds since the epoch.
    pub start_ms: i64,
    /// Seed of every random value.
    pub seed: u64,
}

impl Default for LargeRowsConfig {
    fn default() -> Self {
        Self {
            tables: 100,
            rows_per_table: 10_000,
            start_ms: 1_500_000_000_000,
            seed: 0,
        }
    }
}

impl LargeRowsConfig {
    /// Rows in the whole run.
    pub fn rows_total(&self) -> u64 {
        u64::from(self.tables) * self.rows_per_table
    }

    /// Field values in the whole run.
    pub fn points_total(&self) -> u64 {
        self.rows_total() * FIELDS_PER_ROW
    }
}

/// Streaming generator over a range of subtables, each written whole before the next
/// (taosBenchmark's progressive order).
#[derive(Debug, Clone)]
pub struct LargeRows {
    config: LargeRowsConfig,
    tables: Range<u32>,
    /// The subtable being written, its stream and its next row.
    current: u32,
    rng: Rng,
    next_row: u64,
}

impl LargeRows {
    /// A generator for the subtables in `tables` (a worker's share).
    pub fn new(config: LargeRowsConfig, tables: Range<u32>) -> Self {
        let current = tables.start;
        let rng = table_rng(config.seed, current);
        Self {
            config,
            tables,
            current,
            rng,
            next_row: 0,
        }
    }

    /// The configuration this generator runs.
    pub fn config(&self) -> &LargeRowsConfig {
        &self.config
    }

    /// Rows this generator writes in all.
    pub fn rows_total(&self) -> u64 {
        u64::from(self.tables.end - self.tables.start) * self.config.rows_per_table
    }

    /// Appends the next row as a line (and a newline); false when every subtable is done.
    pub fn write_next(&mut self, out: &mut Vec<u8>) -> bool {
        if self.next_row >= self.config.rows_per_table {
            self.current += 1;
            self.next_row = 0;
            self.rng = table_rng(self.config.seed, self.current);
        }
        if self.current >= self.tables.end || self.config.rows_per_table == 0 {
            return false;
        }
        let timestamp = self.config.start_ms + self.next_row as i64;
        self.next_row += 1;
        out.extend_from_slice(TABLE.as_bytes());
        out.extend_from_slice(b",tbname=d");
        write_int(out, i64::from(self.current));
        out.extend_from_slice(b" f_double=");
        // Thousandths written as a three-decimal float: the bytes do not depend on how a
        // float library prints.
        let milli = self.rng.below(1_000_000) as i64;
        write_int(out, milli / 1000);
        out.push(b'.');
        out.extend_from_slice(format!("{:03}", milli % 1000).as_bytes());
        out.extend_from_slice(b",f_bigint=");
        write_int(out, (self.rng.next_u64() >> 1) as i64);
        out.push(b'i');
        for column in 0..BINARY_COLUMNS {
            self.write_string(out, b'b', column, BINARY_BYTES);
        }
        for column in 0..NCHAR_COLUMNS {
            self.write_string(out, b'n', column, NCHAR_CHARS);
        }
        out.push(b' ');
        write_int(out, timestamp);
        out.push(b'\n');
        true
    }

    /// `,<prefix><column>="<len random letters>"`.
    fn write_string(&mut self, out: &mut Vec<u8>, prefix: u8, column: usize, len: usize) {
        out.extend_from_slice(&[b',', prefix, b'0' + column as u8, b'=', b'"']);
        out.reserve(len + 1);
        let mut left = len;
        while left > 0 {
            // Ten letters from each 64-bit draw (six bits each).
            let mut bits = self.rng.next_u64();
            for _ in 0..left.min(10) {
                out.push(ALPHABET[(bits & 63) as usize]);
                bits >>= 6;
            }
            left -= left.min(10);
        }
        out.push(b'"');
    }

    /// Appends up to `max_rows` lines; returns how many were written (0 at the end).
    pub fn write_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> usize {
        let mut written = 0;
        while written < max_rows && self.write_next(out) {
            written += 1;
        }
        written
    }
}

fn table_rng(seed: u64, table: u32) -> Rng {
    Rng::new(seed ^ 0x1A26_E120_5EED ^ u64::from(table).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use strata_lineproto::{FieldValue, Line, ParseOptions, Precision, parse_lines};

    use super::*;

    fn config(tables: u32, rows: u64) -> LargeRowsConfig {
        LargeRowsConfig {
            tables,
            rows_per_table: rows,
            ..LargeRowsConfig::default()
        }
    }

    fn lines(generator: &mut LargeRows) -> Vec<String> {
        let mut out = Vec::new();
        generator.write_lines(usize::MAX, &mut out);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_row_is_seed_000s_32524_bytes() {
        assert_eq!(ROW_BYTES, 32_524);
        assert_eq!(FIELDS_PER_ROW, 10);
    }

    #[test]
    fn rows_follow_the_schema() {
        let mut generator = LargeRows::new(config(2, 3), 0..2);
        let lines = lines(&mut generator);
        assert_eq!(lines.len(), 6);
        for (i, line) in lines.iter().enumerate() {
            let options = ParseOptions {
                precision: Precision::Milliseconds,
                ..ParseOptions::default()
            };
            let mut lines = parse_lines(line.as_bytes(), &options);
            let mut parsed = Line::default();
            lines
                .next_into(&mut parsed)
                .unwrap()
                .unwrap_or_else(|e| panic!("line {i} does not parse: {e}"));
            assert_eq!(parsed.measurement, TABLE);
            assert_eq!(parsed.tags.len(), 1);
            assert_eq!(parsed.fields.len() as u64, FIELDS_PER_ROW, "line {i}");
            assert!(
                matches!(parsed.fields[0].1, FieldValue::Float(v) if (0.0..1000.0).contains(&v))
            );
            assert!(matches!(parsed.fields[1].1, FieldValue::Integer(v) if v >= 0));
            // The subtable changes after three rows; time restarts with it.
            let table = i / 3;
            assert!(
                line.starts_with(&format!("large,tbname=d{table} ")),
                "{line:.40}"
            );
            assert!(line.ends_with(&format!(" {}", 1_500_000_000_000i64 + (i % 3) as i64)));
            // Five strings of 5,000 letters and three of 2,500, from the alphabet only.
            let strings: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
            let lengths: Vec<usize> = strings.iter().map(|s| s.len()).collect();
            assert_eq!(lengths, [5000, 5000, 5000, 5000, 5000, 2500, 2500, 2500]);
            assert!(
                strings
                    .iter()
                    .all(|s| s.bytes().all(|b| ALPHABET.contains(&b)))
            );
        }
    }

    #[test]
    fn a_subtables_rows_do_not_depend_on_the_split() {
        let mut whole = LargeRows::new(config(4, 2), 0..4);
        let all = lines(&mut whole);
        let mut second_half = LargeRows::new(config(4, 2), 2..4);
        assert_eq!(lines(&mut second_half), all[4..]);
        // Another seed, other strings.
        let mut other = LargeRows::new(
            LargeRowsConfig {
                seed: 1,
                ..config(4, 2)
            },
            0..4,
        );
        assert_ne!(lines(&mut other), all);
        assert_eq!(whole.rows_total(), 8);
    }

    #[test]
    fn random_letters_do_not_compress_much() {
        let mut generator = LargeRows::new(config(1, 4), 0..1);
        let mut out = Vec::new();
        generator.write_lines(4, &mut out);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&out).unwrap();
        let packed = encoder.finish().unwrap();
        // Six bits of entropy per letter: no better than about 0.75 of the raw size.
        assert!(
            packed.len() as f64 > 0.70 * out.len() as f64,
            "{} of {}",
            packed.len(),
            out.len()
        );
    }
}
