//! `COPY … FROM STDIN (FORMAT binary)`: Postgres's binary copy format, as asyncpg's
//! `copy_records_to_table`, pgx's `CopyFrom` and Npgsql's binary import write it.
//!
//! The data starts with a header: the 11-byte signature `PGCOPY\n\377\r\n\0`, a 32-bit
//! flags field (bit 16: rows carry OIDs, which Strata refuses; bits 17-31 must be clear),
//! and a 32-bit length of a header extension that is skipped. Each row is then a 16-bit
//! field count and, per field, a 32-bit length (-1 for NULL) and the value in its type's
//! binary form (`send` in Postgres's terms); a field count of -1 ends the data. All
//! integers are big-endian.
//!
//! Values are read as the type Strata describes for their column, which is what clients
//! look up before they copy: `timestamp` for `time` (microseconds since 2000-01-01), `text`
//! for tags and strings, `float8` for floats (a `float4` is taken too), `int8` for integers
//! (`int4` and `int2` too), `numeric` for unsigned integers (integral and not negative),
//! `bool` for booleans.

use strata_query::{ColumnType, RowValue};
use strata_storage::model::FieldType;

use super::copy_in::Read;
use super::encode::POSTGRES_EPOCH_MICROS;

/// The signature that starts binary copy data.
pub(super) const BINARY_SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The header's length at the start of `data`, `None` until all of it has come, or why
/// it is not a header Strata reads.
pub(super) fn header(data: &[u8]) -> Result<Option<usize>, String> {
    let signature = &data[..data.len().min(BINARY_SIGNATURE.len())];
    if !BINARY_SIGNATURE.starts_with(signature) {
        return Err("COPY file signature not recognized".to_owned());
    }
    let (Some(flags), Some(extension)) = (be_u32(data, 11), be_u32(data, 15)) else {
        return Ok(None);
    };
    if flags & (1 << 16) != 0 {
        return Err("COPY binary data with OIDs is not supported".to_owned());
    }
    if flags >> 17 != 0 {
        return Err("unrecognized critical flags in COPY file header".to_owned());
    }
    let length = 19 + extension as usize;
    Ok((data.len() >= length).then_some(length))
}

/// The row (or the trailer, [`Read::End`]) at the start of `data` and the bytes it takes;
/// `None` until all of it has come.
pub(super) fn record(data: &[u8]) -> Result<Option<(Read, usize)>, String> {
    let Some(count) = be_i16(data, 0) else {
        return Ok(None);
    };
    if count == -1 {
        return Ok(Some((Read::End, 2)));
    }
    let count = usize::try_from(count).map_err(|_| format!("invalid field count {count}"))?;
    let mut at = 2;
    let mut fields = Vec::with_capacity(count);
    for _ in 0..count {
        let Some(length) = be_i32(data, at) else {
            return Ok(None);
        };
        at += 4;
        if length == -1 {
            fields.push(None);
            continue;
        }
        let length = usize::try_from(length).map_err(|_| format!("invalid field size {length}"))?;
        let Some(value) = data.get(at..at + length) else {
            return Ok(None);
        };
        fields.push(Some(value.to_vec()));
        at += length;
    }
    Ok(Some((Read::Record(fields), at)))
}

/// A field's value, read as the binary form of the type Strata describes for `column`.
pub(super) fn value(bytes: &[u8], column: ColumnType) -> Result<RowValue<'_>, String> {
    let wrong_size = |type_name: &str, sizes: &str| {
        format!(
            "invalid binary representation: a {type_name} value takes {sizes} bytes, not {}",
            bytes.len()
        )
    };
    match column {
        ColumnType::Time => {
            let micros = be_i64(bytes).ok_or_else(|| wrong_size("timestamp", "8"))?;
            micros
                .checked_add(POSTGRES_EPOCH_MICROS)
                .and_then(|micros| micros.checked_mul(1_000))
                .map(RowValue::Time)
                .ok_or_else(|| {
                    "timestamp out of range: times run from 1677-09-21 to 2262-04-11".to_owned()
                })
        }
        ColumnType::Tag | ColumnType::Field(FieldType::String) => std::str::from_utf8(bytes)
            .map(RowValue::Text)
            .map_err(|_| "invalid byte sequence for encoding \"UTF8\"".to_owned()),
        ColumnType::Field(FieldType::Float) => match (be_i64(bytes), bytes) {
            (Some(bits), _) => Ok(RowValue::Float(f64::from_bits(bits as u64))),
            (None, &[a, b, c, d]) => Ok(RowValue::Float(f32::from_be_bytes([a, b, c, d]).into())),
            _ => Err(wrong_size("double precision", "8 (or 4)")),
        },
        ColumnType::Field(FieldType::Integer) => match *bytes {
            [a, b] => Ok(RowValue::Integer(i16::from_be_bytes([a, b]).into())),
            [a, b, c, d] => Ok(RowValue::Integer(i32::from_be_bytes([a, b, c, d]).into())),
            _ => be_i64(bytes)
                .map(RowValue::Integer)
                .ok_or_else(|| wrong_size("bigint", "8 (or 4 or 2)")),
        },
        ColumnType::Field(FieldType::Unsigned) => numeric_u64(bytes).map(RowValue::Unsigned),
        ColumnType::Field(FieldType::Boolean) => match *bytes {
            [byte] => Ok(RowValue::Boolean(byte != 0)),
            _ => Err(wrong_size("boolean", "1")),
        },
    }
}

/// A `numeric` in binary form (digit count, weight, sign, display scale, then base-10000
/// digits, the first worth 10000^weight) as an unsigned integer.
fn numeric_u64(bytes: &[u8]) -> Result<u64, String> {
    let word = |i: usize| be_i16(bytes, 2 * i).map(|w| w as u16);
    let (Some(digits), Some(weight), Some(sign)) = (word(0), word(1), word(2)) else {
        return Err("invalid binary representation of a numeric".to_owned());
    };
    let (digits, weight) = (usize::from(digits), weight as i16);
    if bytes.len() != 8 + 2 * digits {
        return Err("invalid binary representation of a numeric".to_owned());
    }
    let digit = |i: usize| word(4 + i).unwrap_or_default();
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => return Err("NaN is not an unsigned integer".to_owned()),
        _ => return Err("an infinite numeric is not an unsigned integer".to_owned()),
    }
    let mut value: u64 = 0;
    for i in 0..digits.max(usize::try_from(weight).map_or(0, |w| w + 1)) {
        let d = if i < digits { digit(i) } else { 0 };
        if d >= 10_000 {
            return Err("invalid binary representation of a numeric".to_owned());
        }
        if (i as i64) > i64::from(weight) {
            if d != 0 {
                return Err("an unsigned column takes integers, not fractions".to_owned());
            }
            continue;
        }
        value = value
            .checked_mul(10_000)
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or_else(|| "value is out of range for an unsigned integer".to_owned())?;
    }
    if sign == 0x4000 && value != 0 {
        return Err("an unsigned column takes no negative numbers".to_owned());
    }
    Ok(value)
}

fn be_i16(data: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn be_i32(data: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn be_u32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// The whole of `bytes` as an `i64`, if it is 8 bytes.
fn be_i64(bytes: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `numeric`'s binary form of base-10000 `digits` with `weight` and `sign`.
    fn numeric(digits: &[u16], weight: i16, sign: u16) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(digits.len() as u16).to_be_bytes());
        out.extend_from_slice(&weight.to_be_bytes());
        out.extend_from_slice(&sign.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    #[test]
    fn the_header_is_checked_and_skipped_with_its_extension() {
        let mut data = BINARY_SIGNATURE.to_vec();
        data.extend_from_slice(&0u32.to_be_bytes());
        data.extend_from_slice(&3u32.to_be_bytes());
        data.extend_from_slice(b"ext");
        for cut in 0..data.len() {
            assert_eq!(header(&data[..cut]), Ok(None), "cut at {cut}");
        }
        assert_eq!(header(&data), Ok(Some(22)));
        assert!(header(b"PGCOPX").unwrap_err().contains("signature"));
        let mut oids = data.clone();
        oids[11..15].copy_from_slice(&(1u32 << 16).to_be_bytes());
        assert!(header(&oids).unwrap_err().contains("OIDs"));
        oids[11..15].copy_from_slice(&(1u32 << 20).to_be_bytes());
        assert!(header(&oids).unwrap_err().contains("critical flags"));
    }

    #[test]
    fn rows_are_read_once_whole() {
        let mut data = 3i16.to_be_bytes().to_vec();
        data.extend_from_slice(&2i32.to_be_bytes());
        data.extend_from_slice(b"ab");
        data.extend_from_slice(&(-1i32).to_be_bytes());
        data.extend_from_slice(&0i32.to_be_bytes());
        data.extend_from_slice(&(-1i16).to_be_bytes());
        for cut in 0..data.len() - 2 {
            assert_eq!(record(&data[..cut]), Ok(None), "cut at {cut}");
        }
        let row = Read::Record(vec![Some(b"ab".to_vec()), None, Some(Vec::new())]);
        assert_eq!(record(&data), Ok(Some((row, 16))));
        assert_eq!(record(&data[16..]), Ok(Some((Read::End, 2))));
        assert!(
            record(&(-2i16).to_be_bytes())
                .unwrap_err()
                .contains("field count")
        );
        let mut bad = 1i16.to_be_bytes().to_vec();
        bad.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(record(&bad).unwrap_err().contains("field size"));
    }

    #[test]
    fn values_are_read_as_their_columns_types() {
        let float = ColumnType::Field(FieldType::Float);
        let integer = ColumnType::Field(FieldType::Integer);
        let unsigned = ColumnType::Field(FieldType::Unsigned);
        // 2016-01-01T00:00:00Z is 504,921,600 s after 2000-01-01.
        let time = 504_921_600_000_000i64.to_be_bytes();
        assert_eq!(
            value(&time, ColumnType::Time),
            Ok(RowValue::Time(1_451_606_400_000_000_000))
        );
        assert!(
            value(&i64::MAX.to_be_bytes(), ColumnType::Time)
                .unwrap_err()
                .contains("out of range")
        );
        assert_eq!(value(b"h1", ColumnType::Tag), Ok(RowValue::Text("h1")));
        assert!(
            value(&[0xff], ColumnType::Tag)
                .unwrap_err()
                .contains("UTF8")
        );
        assert_eq!(
            value(&1.5f64.to_be_bytes(), float),
            Ok(RowValue::Float(1.5))
        );
        assert_eq!(
            value(&(-2.5f32).to_be_bytes(), float),
            Ok(RowValue::Float(-2.5))
        );
        assert!(
            value(&[0; 5], float)
                .unwrap_err()
                .contains("8 (or 4) bytes, not 5")
        );
        assert_eq!(
            value(&(-7i64).to_be_bytes(), integer),
            Ok(RowValue::Integer(-7))
        );
        assert_eq!(
            value(&(-7i32).to_be_bytes(), integer),
            Ok(RowValue::Integer(-7))
        );
        assert_eq!(
            value(&(-7i16).to_be_bytes(), integer),
            Ok(RowValue::Integer(-7))
        );
        assert!(value(&[0; 3], integer).is_err());
        let flag = ColumnType::Field(FieldType::Boolean);
        assert_eq!(value(&[1], flag), Ok(RowValue::Boolean(true)));
        assert_eq!(value(&[0], flag), Ok(RowValue::Boolean(false)));
        assert!(value(&[], flag).is_err());
        // u64::MAX = 1844 6744 0737 0955 1615: weight 4.
        let max = numeric(&[1844, 6744, 737, 955, 1615], 4, 0);
        assert_eq!(value(&max, unsigned), Ok(RowValue::Unsigned(u64::MAX)));
        for (digits, weight, sign, want) in [
            (&[][..], 0, 0x0000, Ok(0)),
            (&[12][..], 2, 0x0000, Ok(12_0000_0000)),
            (&[5, 0][..], 0, 0x0000, Ok(5)),
            (&[][..], 0, 0x4000, Ok(0)),
            (&[5, 1][..], 0, 0x0000, Err("fractions")),
            (&[5][..], -1, 0x0000, Err("fractions")),
            (&[5][..], 0, 0x4000, Err("negative")),
            (&[][..], 0, 0xC000, Err("NaN")),
            (&[1844, 6744, 737, 955, 1616][..], 4, 0, Err("out of range")),
            (&[1][..], 5, 0, Err("out of range")),
            (&[10_000][..], 0, 0, Err("invalid")),
        ] {
            let got = numeric_u64(&numeric(digits, weight, sign));
            match want {
                Ok(n) => assert_eq!(got, Ok(n), "{digits:?} {weight}"),
                Err(why) => assert!(got.unwrap_err().contains(why), "{digits:?} {weight}"),
            }
        }
        assert!(numeric_u64(&[0; 7]).is_err());
        assert!(numeric_u64(&numeric(&[1], 0, 0)[..9]).is_err());
    }
}
