//! Arrow's intervals and durations as Postgres's `interval`: months, days and microseconds,
//! kept apart as Postgres keeps them. A duration (`now() - time`) is split into days of 24
//! hours and the rest, both of its sign, as Postgres's `timestamp - timestamp` does
//! (`justify_hours`). Nanoseconds below a microsecond are cut, as for timestamps.
//!
//! Text is Postgres's default `IntervalStyle` (`postgres`): `1 year 2 mons -3 days
//! +04:05:06.7`, `-1 days -00:00:01`, `00:00:00`. Binary is the microseconds (int8), days
//! (int4) and months (int4). Clients decode either into their own type: psycopg and asyncpg
//! a `timedelta`, pgjdbc a `PGInterval`, node-postgres a `PostgresInterval`, pgx a
//! `pgtype.Interval`. Sent as text before, they read Arrow's `PT96003524.2S` as a string.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, IntervalDayTimeArray, IntervalMonthDayNanoArray,
    IntervalYearMonthArray,
};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Int64Type, IntervalUnit, TimeUnit,
};
use pgwire::api::Type;
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::{IsNull, ToSql, to_sql_checked};

use super::encode::put_micros_fraction;

const MICROS_PER_DAY: i64 = 86_400_000_000;
const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_MINUTE: i64 = 60_000_000;
const MICROS_PER_SECOND: i64 = 1_000_000;

/// One Postgres `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// A duration of `micros`, as days of 24 hours and the rest, both of its sign.
    fn of_duration(micros: i64) -> Self {
        Interval {
            months: 0,
            // |micros| / a day's is at most 106,751,991: it fits.
            days: (micros / MICROS_PER_DAY) as i32,
            micros: micros % MICROS_PER_DAY,
        }
    }

    /// The SQL literal of this interval that the engine reads back exactly:
    /// `INTERVAL '1 months -3 days 3600000000 microseconds'`.
    pub(super) fn literal(self) -> String {
        format!(
            "INTERVAL '{} months {} days {} microseconds'",
            self.months, self.days, self.micros
        )
    }

    /// A binary `interval`: microseconds, days, months. `None` when not 16 bytes.
    pub(super) fn from_binary(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; 16] = bytes.try_into().ok()?;
        let (micros, rest) = bytes.split_at(8);
        let (days, months) = rest.split_at(4);
        Some(Interval {
            micros: i64::from_be_bytes(micros.try_into().ok()?),
            days: i32::from_be_bytes(days.try_into().ok()?),
            months: i32::from_be_bytes(months.try_into().ok()?),
        })
    }

    /// An interval in Postgres's text forms that clients send: parts of a number and a
    /// unit (`1 day`, `-2 hours`, `1.5 weeks`, `3 mons`, `10 secs`), a time of day
    /// (`02:00:03.5`, `-1:30`), a bare number of seconds, an optional leading `@` and
    /// trailing `ago`; Postgres's own output (`1 year 2 mons -3 days +04:05:06.7`) among
    /// them. Fractions spill into the next smaller part as Postgres spills them (a month is
    /// 30 days, a day 24 hours). `None` for anything else.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut total = Parts::default();
        let mut words = text.split_whitespace().peekable();
        if words.peek() == Some(&"@") {
            words.next();
        }
        let mut ago = false;
        let mut seen = 0u16;
        let mut take = |bits: u16| {
            let repeated = seen & bits != 0;
            seen |= bits;
            (!repeated).then_some(())
        };
        while let Some(word) = words.next() {
            if ago {
                return None;
            }
            if word.eq_ignore_ascii_case("ago") {
                ago = true;
            } else if word.contains(':') {
                take(HOUR_BIT | MINUTE_BIT | SECOND_BIT)?;
                total.micros += time_of_day(word)?;
            } else {
                let number: f64 = word.parse().ok().filter(|n: &f64| n.is_finite())?;
                // A number alone is seconds.
                let (unit, bit) = match words.peek().and_then(|unit| unit_scale(unit)) {
                    Some(scaled) => {
                        words.next();
                        scaled
                    }
                    None => (Unit::Micros(MICROS_PER_SECOND as f64), SECOND_BIT),
                };
                take(bit)?;
                total.add(number, unit);
            }
        }
        // Nothing but `@` or white space is not an interval.
        if seen == 0 {
            return None;
        }
        let mut interval = total.interval()?;
        if ago {
            interval = Interval {
                months: interval.months.checked_neg()?,
                days: interval.days.checked_neg()?,
                micros: interval.micros.checked_neg()?,
            };
        }
        Some(interval)
    }
}

/// What one of a unit is in the part that holds it, and the bit of the units seen that
/// it takes (Postgres refuses a unit twice).
#[derive(Clone, Copy)]
enum Unit {
    Months(f64),
    Days(f64),
    Micros(f64),
}

const HOUR_BIT: u16 = 1 << 6;
const MINUTE_BIT: u16 = 1 << 7;
const SECOND_BIT: u16 = 1 << 8;

/// The scale of `unit`, and its bit among the units seen.
fn unit_scale(unit: &str) -> Option<(Unit, u16)> {
    let unit = unit.to_ascii_lowercase();
    Some(match unit.as_str() {
        "millennium" | "millennia" | "millenniums" => (Unit::Months(12_000.0), 1),
        "century" | "centuries" => (Unit::Months(1_200.0), 1 << 1),
        "decade" | "decades" => (Unit::Months(120.0), 1 << 2),
        "year" | "years" | "y" | "yr" | "yrs" => (Unit::Months(12.0), 1 << 3),
        "month" | "months" | "mon" | "mons" => (Unit::Months(1.0), 1 << 4),
        "week" | "weeks" | "w" => (Unit::Days(7.0), 1 << 11),
        "day" | "days" | "d" => (Unit::Days(1.0), 1 << 5),
        "hour" | "hours" | "h" | "hr" | "hrs" => (Unit::Micros(MICROS_PER_HOUR as f64), HOUR_BIT),
        "minute" | "minutes" | "m" | "min" | "mins" => {
            (Unit::Micros(MICROS_PER_MINUTE as f64), MINUTE_BIT)
        }
        "second" | "seconds" | "s" | "sec" | "secs" => {
            (Unit::Micros(MICROS_PER_SECOND as f64), SECOND_BIT)
        }
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => (Unit::Micros(1_000.0), 1 << 9),
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => (Unit::Micros(1.0), 1 << 10),
        _ => return None,
    })
}

/// `[+-]H:MM[:SS[.fraction]]` in microseconds.
fn time_of_day(word: &str) -> Option<f64> {
    let (negative, unsigned) = match word.as_bytes().first()? {
        b'-' => (true, &word[1..]),
        b'+' => (false, &word[1..]),
        _ => (false, word),
    };
    let mut fields = unsigned.split(':');
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let hours = fields.next().filter(|h| digits(h))?;
    let minutes = fields.next().filter(|m| digits(m) && m.len() <= 2)?;
    let seconds = match fields.next() {
        Some(s) => {
            let whole = s.split('.').next()?;
            if !digits(whole) || whole.len() > 2 {
                return None;
            }
            s.parse::<f64>().ok()?
        }
        None => 0.0,
    };
    // Postgres takes a 60th second (it carries into the minute), not a 60th minute.
    if minutes.parse::<u8>().ok()? > 59 || seconds > 60.0 {
        return None;
    }
    if fields.next().is_some() {
        return None;
    }
    let micros = hours.parse::<f64>().ok()? * MICROS_PER_HOUR as f64
        + minutes.parse::<f64>().ok()? * MICROS_PER_MINUTE as f64
        + seconds * MICROS_PER_SECOND as f64;
    Some(if negative { -micros } else { micros })
}

/// Parts summed as they are read, fractions spilled down.
#[derive(Default)]
struct Parts {
    months: f64,
    days: f64,
    micros: f64,
}

impl Parts {
    fn add(&mut self, number: f64, unit: Unit) {
        match unit {
            Unit::Months(scale) => {
                let months = number * scale;
                self.months += months.trunc();
                self.add(months.fract() * 30.0, Unit::Days(1.0));
            }
            Unit::Days(scale) => {
                let days = number * scale;
                self.days += days.trunc();
                self.micros += days.fract() * MICROS_PER_DAY as f64;
            }
            Unit::Micros(scale) => self.micros += number * scale,
        }
    }

    fn interval(&self) -> Option<Interval> {
        let whole = |value: f64, max: f64| (value.abs() <= max).then_some(value.round());
        Some(Interval {
            months: whole(self.months, f64::from(i32::MAX))? as i32,
            days: whole(self.days, f64::from(i32::MAX))? as i32,
            // Within ±2⁶³ (the next float below it converts without overflow).
            micros: whole(self.micros, 9.223_372_036_854_775e18)? as i64,
        })
    }
}

/// A column of intervals or durations, each row read as an [`Interval`]. The array's type
/// is settled once, here, not at every row.
pub(super) enum IntervalColumn {
    MonthDayNano(IntervalMonthDayNanoArray),
    DayTime(IntervalDayTimeArray),
    YearMonth(IntervalYearMonthArray),
    /// A duration's count of its unit.
    Duration(Int64Array, TimeUnit),
}

impl IntervalColumn {
    /// `None` when `array` holds neither intervals nor durations.
    pub(super) fn new(array: &ArrayRef) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Interval(IntervalUnit::MonthDayNano) => {
                IntervalColumn::MonthDayNano(array.as_primitive().clone())
            }
            DataType::Interval(IntervalUnit::DayTime) => {
                IntervalColumn::DayTime(array.as_primitive().clone())
            }
            DataType::Interval(IntervalUnit::YearMonth) => {
                IntervalColumn::YearMonth(array.as_primitive().clone())
            }
            DataType::Duration(unit) => {
                let counts = match unit {
                    TimeUnit::Second => durations::<DurationSecondType>(array),
                    TimeUnit::Millisecond => durations::<DurationMillisecondType>(array),
                    TimeUnit::Microsecond => durations::<DurationMicrosecondType>(array),
                    TimeUnit::Nanosecond => durations::<DurationNanosecondType>(array),
                };
                IntervalColumn::Duration(counts, *unit)
            }
            _ => return None,
        })
    }

    /// Row `row`'s interval; `None` for a NULL.
    #[inline]
    pub(super) fn value(&self, row: usize) -> Option<Interval> {
        Some(match self {
            IntervalColumn::MonthDayNano(a) => {
                let v = a.is_valid(row).then(|| a.value(row))?;
                Interval {
                    months: v.months,
                    days: v.days,
                    micros: v.nanoseconds / 1_000,
                }
            }
            IntervalColumn::DayTime(a) => {
                let v = a.is_valid(row).then(|| a.value(row))?;
                Interval {
                    months: 0,
                    days: v.days,
                    micros: i64::from(v.milliseconds) * 1_000,
                }
            }
            IntervalColumn::YearMonth(a) => Interval {
                months: a.is_valid(row).then(|| a.value(row))?,
                days: 0,
                micros: 0,
            },
            IntervalColumn::Duration(a, unit) => {
                let count = a.is_valid(row).then(|| a.value(row))?;
                Interval::of_duration(match unit {
                    TimeUnit::Second => count.saturating_mul(MICROS_PER_SECOND),
                    TimeUnit::Millisecond => count.saturating_mul(1_000),
                    TimeUnit::Microsecond => count,
                    TimeUnit::Nanosecond => count / 1_000,
                })
            }
        })
    }
}

/// A duration array of unit `T` as its counts (the same i64s, not copied).
fn durations<T: ArrowPrimitiveType<Native = i64>>(array: &ArrayRef) -> Int64Array {
    array.as_primitive::<T>().reinterpret_cast::<Int64Type>()
}

impl ToSql for Interval {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_i64(self.micros);
        out.put_i32(self.days);
        out.put_i32(self.months);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }

    to_sql_checked!();
}

impl ToSqlText for Interval {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        put_text(*self, out);
        Ok(IsNull::No)
    }
}

/// Writes `interval` as Postgres's `interval_out` does with `IntervalStyle` `postgres`:
/// each nonzero part of years, months and days with its unit (plural unless 1), a `+`
/// before a positive part that follows a negative one, then the time of day when it is
/// not zero or nothing came before it.
fn put_text(interval: Interval, out: &mut BytesMut) {
    let mut wrote = false;
    let mut after_negative = false;
    let parts = [
        (interval.months / 12, "year"),
        (interval.months % 12, "mon"),
        (interval.days, "day"),
    ];
    for (value, unit) in parts {
        if value == 0 {
            continue;
        }
        if wrote {
            out.put_u8(b' ');
        }
        if after_negative && value > 0 {
            out.put_u8(b'+');
        }
        out.put_slice(itoa::Buffer::new().format(value).as_bytes());
        out.put_u8(b' ');
        out.put_slice(unit.as_bytes());
        if value != 1 {
            out.put_u8(b's');
        }
        after_negative = value < 0;
        wrote = true;
    }
    let micros = interval.micros;
    if wrote && micros == 0 {
        return;
    }
    if wrote {
        out.put_u8(b' ');
    }
    if micros < 0 {
        out.put_u8(b'-');
    } else if after_negative {
        out.put_u8(b'+');
    }
    let magnitude = micros.unsigned_abs();
    let hours = magnitude / MICROS_PER_HOUR as u64;
    let minutes = magnitude % MICROS_PER_HOUR as u64 / MICROS_PER_MINUTE as u64;
    let seconds = magnitude % MICROS_PER_MINUTE as u64 / MICROS_PER_SECOND as u64;
    let fraction = magnitude % MICROS_PER_SECOND as u64;
    put_two_digits(hours, out);
    out.put_u8(b':');
    put_two_digits(minutes, out);
    out.put_u8(b':');
    put_two_digits(seconds, out);
    put_micros_fraction(fraction as u32, out);
}

/// At least two digits, as `%02d` writes them (hours may need more).
fn put_two_digits(value: u64, out: &mut BytesMut) {
    if value < 10 {
        out.put_u8(b'0');
    }
    out.put_slice(itoa::Buffer::new().format(value).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(months: i32, days: i32, micros: i64) -> String {
        let mut out = BytesMut::new();
        put_text(
            Interval {
                months,
                days,
                micros,
            },
            &mut out,
        );
        String::from_utf8(out.to_vec()).unwrap()
    }

    const S: i64 = MICROS_PER_SECOND;
    const H: i64 = MICROS_PER_HOUR;

    /// Postgres 15.18's `interval_out` of the same intervals (`SELECT interval '…'::text`).
    #[test]
    fn text_as_postgres_writes_it() {
        let cases = [
            ((0, 0, 0), "00:00:00"),
            ((0, 1, 2 * H + 3_500_000), "1 day 02:00:03.5"),
            ((-1, 0, 0), "-1 mons"),
            (
                (14, -3, 4 * H + 5 * 60 * S + 6_700_000),
                "1 year 2 mons -3 days +04:05:06.7",
            ),
            ((0, 0, -(4 * H + 5 * 60 * S + 6 * S)), "-04:05:06"),
            ((0, 0, 26 * H), "26:00:00"),
            ((-14, 0, 0), "-1 years -2 mons"),
            ((14, 0, 0), "1 year 2 mons"),
            ((0, 1, -S), "1 day -00:00:01"),
            ((0, -1, S), "-1 days +00:00:01"),
            ((0, 0, 1), "00:00:00.000001"),
            ((0, 0, -S / 2), "-00:00:00.5"),
            ((0, 3, 0), "3 days"),
            ((1, 0, 250_000), "1 mon 00:00:00.25"),
            ((0, -1, -S), "-1 days -00:00:01"),
            ((0, 0, i64::MAX), "2562047788:00:54.775807"),
        ];
        for ((months, days, micros), want) in cases {
            assert_eq!(text(months, days, micros), want, "{months} {days} {micros}");
        }
    }

    fn parsed(text: &str) -> Option<(i32, i32, i64)> {
        Interval::parse(text).map(|i| (i.months, i.days, i.micros))
    }

    /// Postgres 15.18 reads each text as the same months, days and microseconds
    /// (`SELECT interval '…'`, shown as Postgres writes it).
    #[test]
    fn text_is_read_as_postgres_reads_it() {
        let cases: [(&str, (i32, i32, i64)); 17] = [
            ("1 day 02:00:03.5", (0, 1, 2 * H + 3_500_000)),
            (
                "1 year 2 mons -3 days +04:05:06.7",
                (14, -3, 4 * H + 5 * 60 * S + 6_700_000),
            ),
            ("-1 days -00:00:01", (0, -1, -S)),
            ("1:00:01.5", (0, 0, H + 1_500_000)),
            ("-1:30", (0, 0, -(H + 30 * 60 * S))),
            ("10", (0, 0, 10 * S)),
            ("1.5 days", (0, 1, 12 * H)),
            ("1.5 weeks", (0, 10, 12 * H)),
            ("1.5 years", (18, 0, 0)),
            ("0.5 mons", (0, 15, 0)),
            ("@ 2 hours ago", (0, 0, -2 * H)),
            (
                "0 years 0 mons 1 days 2 hours 0 mins 3.5 secs",
                (0, 1, 2 * H + 3_500_000),
            ),
            ("3 mins 250 ms", (0, 0, 3 * 60 * S + 250_000)),
            ("00:00:00", (0, 0, 0)),
            ("2 mons 3 years", (38, 0, 0)),
            ("1 week 1 day", (0, 8, 0)),
            ("1:00:60", (0, 0, H + 60 * S)),
        ];
        for (text, want) in cases {
            assert_eq!(parsed(text), Some(want), "{text}");
        }
        // Postgres refuses these too: a unit twice, minutes or seconds past 59.
        for bad in [
            "",
            "1 fortnight",
            "1:2:3:4",
            "ago 1 day",
            "1 day ago ago",
            "nan days",
            "1:75",
            "1:00:61",
            "1 day 1 day",
            "1 hour 02:00",
        ] {
            assert_eq!(parsed(bad), None, "{bad}");
        }
        // What is written is read back.
        let interval = Interval {
            months: -14,
            days: 3,
            micros: -(5 * S + 1),
        };
        let mut out = BytesMut::new();
        put_text(interval, &mut out);
        assert_eq!(
            Interval::parse(std::str::from_utf8(&out).unwrap()),
            Some(interval)
        );
    }

    /// Every Arrow interval and duration type reads as the interval it holds; NULL as none.
    #[test]
    fn every_arrow_interval_and_duration_type_is_read() {
        use std::sync::Arc;

        use datafusion::arrow::array::{
            DurationMillisecondArray, DurationNanosecondArray, DurationSecondArray,
        };
        use datafusion::arrow::datatypes::{IntervalDayTime, IntervalMonthDayNano};

        let read = |array: ArrayRef| {
            let column = IntervalColumn::new(&array).expect("an interval type");
            (0..array.len())
                .map(|row| column.value(row).map(|i| (i.months, i.days, i.micros)))
                .collect::<Vec<_>>()
        };
        let month_day_nano = IntervalMonthDayNanoArray::from(vec![
            Some(IntervalMonthDayNano::new(14, -3, 1_500)),
            None,
        ]);
        assert_eq!(read(Arc::new(month_day_nano)), [Some((14, -3, 1)), None]);
        let day_time = IntervalDayTimeArray::from(vec![Some(IntervalDayTime::new(2, -250))]);
        assert_eq!(read(Arc::new(day_time)), [Some((0, 2, -250_000))]);
        let year_month = IntervalYearMonthArray::from(vec![Some(-14), None]);
        assert_eq!(read(Arc::new(year_month)), [Some((-14, 0, 0)), None]);
        let seconds = DurationSecondArray::from(vec![Some(90_000), Some(i64::MAX)]);
        assert_eq!(
            read(Arc::new(seconds)),
            [
                Some((0, 1, 3_600 * S)),
                Some((
                    0,
                    (i64::MAX / MICROS_PER_DAY) as i32,
                    i64::MAX % MICROS_PER_DAY
                )),
            ]
        );
        let millis = DurationMillisecondArray::from(vec![Some(-1_500)]);
        assert_eq!(read(Arc::new(millis)), [Some((0, 0, -1_500_000))]);
        let nanos = DurationNanosecondArray::from(vec![None, Some(-(25 * H * 1_000) - 999)]);
        assert_eq!(read(Arc::new(nanos)), [None, Some((0, -1, -H))]);
        let text: ArrayRef = Arc::new(datafusion::arrow::array::StringArray::from(vec!["1"]));
        assert!(IntervalColumn::new(&text).is_none());
    }

    /// `timestamp - timestamp` in Postgres: days of 24 hours, then the rest, one sign.
    #[test]
    fn durations_are_days_and_a_time_of_one_sign() {
        let forward = Interval::of_duration(25 * H);
        assert_eq!(
            (
                forward.days,
                forward.micros,
                text(0, forward.days, forward.micros)
            ),
            (1, H, "1 day 01:00:00".to_string())
        );
        let back = Interval::of_duration(-(25 * H + S / 2));
        assert_eq!(
            text(0, back.days, back.micros),
            "-1 days -01:00:00.5",
            "{back:?}"
        );
    }
}
