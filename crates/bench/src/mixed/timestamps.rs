//! Timestamps as RFC 3339 text, both ways: the literals the reads send
//! ([`time_literal`], [`rfc3339_ms`]) and the server's answers ([`parse_rfc3339_ns`]),
//! over Howard Hinnant's civil-date algorithms (`civil_from_days` is shared with the TSBS
//! query generator).

use crate::queries::tsbs::civil_from_days;

/// `'2022-01-01T00:00:05.000Z'`: an RFC 3339 literal, which the direct path accepts.
pub fn time_literal(ms: i64) -> String {
    format!("'{}'", rfc3339_ms(ms))
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_ms(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60,
        ms.rem_euclid(1000)
    )
}

/// Nanoseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (the server's answers),
/// or `None` when the text is not that.
pub fn parse_rfc3339_ns(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if bytes.len() < 20 || separators.iter().any(|(at, c)| bytes[*at] != *c) {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let rest = text.get(19..)?.strip_suffix('Z')?;
    let fraction_ns = match rest.strip_prefix('.') {
        None if rest.is_empty() => 0,
        None => return None,
        Some(digits) if digits.len() > 9 => return None,
        Some(digits) => number(20..20 + digits.len())? * 10_i64.pow(9 - digits.len() as u32),
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    seconds.checked_mul(1_000_000_000)?.checked_add(fraction_ns)
}

/// Days since 1970-01-01 of a date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_both_ways() {
        assert_eq!(
            rfc3339_ms(crate::iot::DEFAULT_START_MS),
            "2021-12-31T16:00:00.000Z"
        );
        assert_eq!(rfc3339_ms(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
        assert_eq!(time_literal(0), "'1970-01-01T00:00:00.000Z'");
        for ms in [
            0,
            1_709_210_096_789,
            crate::iot::DEFAULT_START_MS,
            4_102_444_799_999,
        ] {
            let ns = parse_rfc3339_ns(&rfc3339_ms(ms)).unwrap();
            assert_eq!(ns, ms * 1_000_000, "{ms}");
        }
        assert_eq!(
            parse_rfc3339_ns("2024-02-29T12:34:56.789000001Z"),
            Some(1_709_210_096_789_000_001)
        );
        assert_eq!(
            parse_rfc3339_ns("2024-02-29T12:34:56Z"),
            Some(1_709_210_096_000_000_000)
        );
        for bad in [
            "",
            "2024-02-29 12:34:56Z",
            "2024-02-29T12:34:56",
            "2024-13-01T00:00:00Z",
            "2024-02-29T12:34:56.1234567890Z",
            "2024-02-29T12:34:56.x1Z",
            "2024-02-29T12:34:56+01:00",
        ] {
            assert_eq!(parse_rfc3339_ns(bad), None, "{bad}");
        }
    }
}
