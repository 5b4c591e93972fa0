//! Hand-written number parsing for integers, unsigned integers, timestamps and a
//! fast path for short decimal floats.
//!
//! `str::parse` validates and handles cases line protocol forbids (`+1`, `inf`,
//! `nan`, `1.`-style spellings differ per type), so the grammar is checked here and
//! the standard library is only used for the float conversions the fast path cannot
//! do exactly.

/// Why a number token was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberError {
    /// Not the expected spelling.
    Invalid,
    /// Well-formed but out of range for the type.
    Overflow,
}

/// Parses a non-empty run of ASCII digits into a `u64`.
#[inline]
pub(crate) fn parse_digits(d: &[u8]) -> Result<u64, NumberError> {
    if d.is_empty() {
        return Err(NumberError::Invalid);
    }
    // 19 digits are at most 9_999_999_999_999_999_999 < u64::MAX, so short inputs
    // need no overflow checks: the common case (timestamps are 19 digits) is one
    // multiply-add per byte.
    if d.len() <= 19 {
        let mut v: u64 = 0;
        for &c in d {
            let digit = c.wrapping_sub(b'0');
            if digit > 9 {
                return Err(NumberError::Invalid);
            }
            v = v * 10 + u64::from(digit);
        }
        return Ok(v);
    }
    if !d.iter().all(u8::is_ascii_digit) {
        return Err(NumberError::Invalid);
    }
    let mut v: u64 = 0;
    for &c in d {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(NumberError::Overflow)?;
    }
    Ok(v)
}

/// Parses `-?digits` into an `i64`, accepting `i64::MIN`.
#[inline]
pub(crate) fn parse_i64(t: &[u8]) -> Result<i64, NumberError> {
    let (negative, digits) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    let magnitude = parse_digits(digits)?;
    if negative {
        // i64::MIN's magnitude is one more than i64::MAX.
        if magnitude <= i64::MAX as u64 {
            Ok(-(magnitude as i64))
        } else if magnitude == i64::MIN.unsigned_abs() {
            Ok(i64::MIN)
        } else {
            Err(NumberError::Overflow)
        }
    } else {
        i64::try_from(magnitude).map_err(|_| NumberError::Overflow)
    }
}

/// Exact powers of ten for the float fast path (all exactly representable in f64).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parses a line protocol float: `-?` then digits with an optional `.` (at least
/// one digit overall), then an optional exponent `e`/`E`, optional sign, digits.
/// The result is always finite.
#[inline]
pub(crate) fn parse_f64(t: &[u8]) -> Result<f64, NumberError> {
    let mut i = 0;
    let negative = t.first() == Some(&b'-');
    if negative {
        i = 1;
    }
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    let mut frac_digits = 0usize;
    while i < t.len() && t[i].is_ascii_digit() {
        mantissa = mantissa
            .wrapping_mul(10)
            .wrapping_add(u64::from(t[i] - b'0'));
        digits += 1;
        i += 1;
    }
    if i < t.len() && t[i] == b'.' {
        i += 1;
        while i < t.len() && t[i].is_ascii_digit() {
            mantissa = mantissa
                .wrapping_mul(10)
                .wrapping_add(u64::from(t[i] - b'0'));
            digits += 1;
            frac_digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        return Err(NumberError::Invalid);
    }
    let mut has_exponent = false;
    if i < t.len() && (t[i] == b'e' || t[i] == b'E') {
        has_exponent = true;
        i += 1;
        if i < t.len() && (t[i] == b'+' || t[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < t.len() && t[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return Err(NumberError::Invalid);
        }
    }
    if i != t.len() {
        return Err(NumberError::Invalid);
    }
    // Clinger's fast path: with at most 15 significant digits the mantissa is an
    // exact f64 (< 2^53) and 10^k (k <= 22) is exact, so one IEEE division is
    // correctly rounded, i.e. bit-identical to `str::parse`.
    if !has_exponent && digits <= 15 {
        let v = mantissa as f64 / POW10[frac_digits];
        return Ok(if negative { -v } else { v });
    }
    // The grammar was checked above, so the standard parser only sees spellings it
    // agrees on; it is correctly rounded for every input.
    let s = std::str::from_utf8(t).map_err(|_| NumberError::Invalid)?;
    let v: f64 = s.parse().map_err(|_| NumberError::Invalid)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(NumberError::Overflow)
    }
}

/// True for `nan`, `inf`, `infinity` in any case with an optional sign: spellings
/// that deserve a clearer error than "invalid value".
pub(crate) fn is_non_finite_spelling(t: &[u8]) -> bool {
    let t = match t.first() {
        Some(b'-' | b'+') => &t[1..],
        _ => t,
    };
    t.eq_ignore_ascii_case(b"nan")
        || t.eq_ignore_ascii_case(b"inf")
        || t.eq_ignore_ascii_case(b"infinity")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_fast_path_matches_std() {
        for s in [
            "0",
            "1",
            "-1",
            "1.5",
            "0.1",
            "123456789012345",
            "1.",
            ".5",
            "-0",
            "9.999999999999999",
        ] {
            let want: f64 = s.parse().unwrap();
            assert_eq!(
                parse_f64(s.as_bytes()).unwrap().to_bits(),
                want.to_bits(),
                "{s}"
            );
        }
    }

    #[test]
    fn digits_boundaries() {
        assert_eq!(parse_digits(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            parse_digits(b"18446744073709551616"),
            Err(NumberError::Overflow)
        );
        assert_eq!(parse_digits(b"000000000000000000000001"), Ok(1));
        assert_eq!(parse_i64(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(
            parse_i64(b"-9223372036854775809"),
            Err(NumberError::Overflow)
        );
        assert_eq!(
            parse_i64(b"9223372036854775808"),
            Err(NumberError::Overflow)
        );
        assert_eq!(parse_i64(b"-"), Err(NumberError::Invalid));
    }
}
