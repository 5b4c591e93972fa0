//! Floats in text as Postgres writes them (`float8out`, `float4out`, with
//! `extra_float_digits` above 0, its default since Postgres 12 and what pgjdbc sets): the
//! fewest digits that read back as the same value, in fixed point while the first digit's
//! decimal exponent is from -4 up to 14 (`float4`: 5), else as `1.5e+20` with the
//! exponent's sign and at least two of its digits; `Infinity`, `-Infinity`, `NaN`, and
//! `-0` for negative zero.
//!
//! pgwire's own text writes Rust's shortest form instead (`2.0`, `1e20`, `inf`), which
//! clients parse otherwise: Java's `Double.parseDouble` refuses `inf`, so pgjdbc failed on
//! an infinite value, and JavaScript's `parseFloat("inf")` is `NaN`, so node-postgres read
//! +Inf (Prometheus writes it) as NaN.

use bytes::{BufMut, BytesMut};

/// The decimal exponent of the first digit from which `float8out` writes an exponent.
const FLOAT8_EXPONENT_FROM: i32 = 15;
/// The same for `float4out`.
const FLOAT4_EXPONENT_FROM: i32 = 6;

/// Writes `value` as Postgres's `float8out` does.
pub(super) fn put_f64(value: f64, out: &mut BytesMut) {
    if !put_special(value, out) {
        let mut digits = ryu::Buffer::new();
        put_shortest(digits.format_finite(value), FLOAT8_EXPONENT_FROM, out);
    }
}

/// Writes `value` as Postgres's `float4out` does: its own shortest digits, which are
/// fewer than its `f64`'s.
pub(super) fn put_f32(value: f32, out: &mut BytesMut) {
    if !put_special(f64::from(value), out) {
        let mut digits = ryu::Buffer::new();
        put_shortest(digits.format_finite(value), FLOAT4_EXPONENT_FROM, out);
    }
}

/// Writes NaN, an infinity or a zero as Postgres does (`NaN`, `-Infinity`, `-0`); `false`,
/// writing nothing, for any other value.
fn put_special(value: f64, out: &mut BytesMut) -> bool {
    let text: &[u8] = if value.is_nan() {
        b"NaN"
    } else if value.is_infinite() {
        if value > 0.0 {
            b"Infinity"
        } else {
            b"-Infinity"
        }
    } else if value == 0.0 {
        if value.is_sign_negative() {
            b"-0"
        } else {
            b"0"
        }
    } else {
        return false;
    };
    out.put_slice(text);
    true
}

/// Writes ryu's shortest form of a finite, nonzero value in Postgres's layout. Most values
/// take the short way: ryu writes them in fixed point as Postgres does, but for the `.0` of
/// a whole number (`2.0`), and only that is cut; the rest go through [`put_digits`]. The
/// short way costs about what pgwire's own text did; [`put_digits`] for every value cost
/// 190 more instructions per value (callgrind, a 400,000-row text `SELECT`).
#[inline]
fn put_shortest(shortest: &str, exponent_from: i32, out: &mut BytesMut) {
    if !shortest.contains('e') {
        let unsigned = shortest.strip_prefix('-').unwrap_or(shortest);
        // The decimal exponent of the first significant digit.
        let first_exponent = match unsigned.strip_prefix("0.") {
            Some(fraction) => -(fraction.bytes().take_while(|&b| b == b'0').count() as i32) - 1,
            None => unsigned.find('.').unwrap_or(unsigned.len()) as i32 - 1,
        };
        if (-4..exponent_from).contains(&first_exponent) {
            let layout = shortest.strip_suffix(".0").unwrap_or(shortest);
            out.put_slice(layout.as_bytes());
            return;
        }
    }
    put_digits(shortest, exponent_from, out);
}

/// Rewrites ryu's shortest form of a finite, nonzero value (`-1.5`, `2.0`, `1e20`,
/// `1.234e-7`: the same digits Postgres's own ryu finds) in Postgres's layout.
fn put_digits(shortest: &str, exponent_from: i32, out: &mut BytesMut) {
    let (negative, unsigned) = match shortest.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, shortest),
    };
    let (mantissa, exponent) = match unsigned.split_once('e') {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The significant digits, and where the decimal point falls among them: after `point`
    // digits (before the first when 0, with zeros between when negative).
    let mut point = whole.len() as i32 + exponent;
    // At most 17 significant digits; on the stack, as this runs for every float of a text
    // result.
    let mut buffer = [0u8; 24];
    let mut len = 0;
    for &digit in whole.as_bytes().iter().chain(fraction.as_bytes()) {
        if len == 0 && digit == b'0' {
            point -= 1;
        } else if len < buffer.len() {
            buffer[len] = digit;
            len += 1;
        }
    }
    while len > 0 && buffer[len - 1] == b'0' {
        len -= 1;
    }
    let digits = &buffer[..len];
    // ryu writes a nonzero value with a nonzero digit; a zero is written before this.
    let Some(&first) = digits.first() else {
        out.put_u8(b'0');
        return;
    };
    if negative {
        out.put_u8(b'-');
    }
    let first_exponent = point - 1;
    if (-4..exponent_from).contains(&first_exponent) {
        put_fixed(digits, point, out);
    } else {
        out.put_u8(first);
        if digits.len() > 1 {
            out.put_u8(b'.');
            out.put_slice(&digits[1..]);
        }
        out.put_u8(b'e');
        out.put_u8(if first_exponent < 0 { b'-' } else { b'+' });
        let magnitude = first_exponent.unsigned_abs();
        if magnitude < 10 {
            out.put_u8(b'0');
        }
        out.put_slice(itoa::Buffer::new().format(magnitude).as_bytes());
    }
}

fn put_fixed(digits: &[u8], point: i32, out: &mut BytesMut) {
    if point <= 0 {
        out.put_slice(b"0.");
        out.put_bytes(b'0', point.unsigned_abs() as usize);
        out.put_slice(digits);
    } else if point as usize >= digits.len() {
        out.put_slice(digits);
        out.put_bytes(b'0', point as usize - digits.len());
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        out.put_slice(whole);
        out.put_u8(b'.');
        out.put_slice(fraction);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64_text(value: f64) -> String {
        let mut out = BytesMut::new();
        put_f64(value, &mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    fn f32_text(value: f32) -> String {
        let mut out = BytesMut::new();
        put_f32(value, &mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    /// Postgres 15.18's `float8out` of each value (`SELECT 2::float8, …` in psql).
    #[test]
    fn float8_as_postgres_writes_it() {
        let cases: [(f64, &str); 21] = [
            (2.0, "2"),
            (1e20, "1e+20"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456789012345.0, "123456789012345"),
            (999999999999999.0, "999999999999999"),
            (1234567890123456.0, "1.234567890123456e+15"),
            (-0.0, "-0"),
            (0.0, "0"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (-1.5e-7, "-1.5e-07"),
            (-7.125, "-7.125"),
            (0.00012, "0.00012"),
        ];
        for (value, text) in cases {
            assert_eq!(f64_text(value), text, "{value:e}");
        }
    }

    /// Postgres 15.18's `float4out`.
    #[test]
    fn float4_as_postgres_writes_it() {
        let cases: [(f32, &str); 9] = [
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (999999.0, "999999"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0"),
            (f32::INFINITY, "Infinity"),
            (f32::MAX, "3.4028235e+38"),
            (1e-45, "1e-45"),
        ];
        for (value, text) in cases {
            assert_eq!(f32_text(value), text, "{value:e}");
        }
    }

    /// The short way writes what the general way does, over values of every size.
    #[test]
    fn the_short_way_writes_what_the_general_way_does() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for i in 0..200_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Every exponent, and values whose digits are few (whole numbers, halves).
            let value = match i % 3 {
                0 => f64::from_bits(state),
                1 => (state % 1_000_000) as f64 / 4.0 * 10f64.powi((state >> 40) as i32 % 24 - 12),
                _ => (state % 100_000) as f64,
            };
            if !value.is_finite() || value == 0.0 {
                continue;
            }
            let shortest = ryu::Buffer::new().format_finite(value).to_owned();
            for exponent_from in [FLOAT8_EXPONENT_FROM, FLOAT4_EXPONENT_FROM] {
                let (mut short, mut general) = (BytesMut::new(), BytesMut::new());
                put_shortest(&shortest, exponent_from, &mut short);
                put_digits(&shortest, exponent_from, &mut general);
                assert_eq!(short, general, "{shortest}");
            }
        }
    }

    /// Every text reads back as the value it was written from, over values spread across
    /// the whole range of exponents (a seeded generator).
    #[test]
    fn texts_read_back_exactly() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = f64::from_bits(state);
            if value.is_finite() {
                assert_eq!(f64_text(value).parse::<f64>().unwrap(), value);
            }
            let single = f32::from_bits(state as u32);
            if single.is_finite() {
                assert_eq!(f32_text(single).parse::<f32>().unwrap(), single);
            }
        }
    }
}
