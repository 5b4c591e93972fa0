//! The payload of a WAL record: one shard's share of one write, in binary.
//!
//! Built inside the shard's critical section (it is an append of a few varints per row),
//! after series ids are known, so rows name their series by id (a few bytes) and only series
//! created by this write carry their tags. Replay applies the new series first, then the rows,
//! through the same code as a live write. Layout (all integers LEB128 varints, signed ones
//! zig-zag):
//!
//! ```text
//! kind u8 = 1 (write batch)
//! new series count, then per series: id, table id, tag count, per tag: key (len + UTF-8), value (len + UTF-8)
//! row count, then per row: series id, time (zig-zag), field count,
//!   per field: field id, type tag u8 (model::FieldType), value:
//!     float: 8 bytes LE | integer: zig-zag varint | unsigned: varint | boolean: u8 0/1 | string: len + UTF-8
//! ```

use crate::model::{FieldId, FieldType, SeriesId, TableId, Timestamp, Value};
use crate::varint::{Reader, put_i64, put_str, put_u64};

const KIND_WRITE_BATCH: u8 = 1;

/// Builds one WAL batch payload.
#[derive(Debug, Default)]
pub struct BatchEncoder {
    series: Vec<u8>,
    series_count: u64,
    rows: Vec<u8>,
    row_count: u64,
}

impl BatchEncoder {
    /// An empty batch with room for `rows` rows of `fields` number fields in all (a row's
    /// series, time and field count rarely take more than 21 bytes, a number field with its
    /// id and type more than 12), so that encoding under the shard's lock seldom grows it.
    pub fn with_room_for(rows: usize, fields: usize) -> Self {
        Self {
            rows: Vec::with_capacity(rows * 21 + fields * 12),
            ..Self::default()
        }
    }

    /// Records a series created by this write.
    pub fn new_series<'t>(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: impl ExactSizeIterator<Item = (&'t str, &'t str)>,
    ) {
        self.series_count += 1;
        put_u64(&mut self.series, u64::from(id));
        put_u64(&mut self.series, u64::from(table));
        put_u64(&mut self.series, tags.len() as u64);
        for (key, value) in tags {
            put_str(&mut self.series, key);
            put_str(&mut self.series, value);
        }
    }

    /// Records a row.
    pub fn row(&mut self, series: SeriesId, time: Timestamp, fields: &[(FieldId, Value)]) {
        self.row_count += 1;
        put_u64(&mut self.rows, u64::from(series));
        put_i64(&mut self.rows, time);
        put_u64(&mut self.rows, fields.len() as u64);
        for (field, value) in fields {
            put_u64(&mut self.rows, u64::from(*field));
            self.rows.push(value.field_type() as u8);
            match value {
                Value::Float(v) => self.rows.extend_from_slice(&v.to_le_bytes()),
                Value::Integer(v) => put_i64(&mut self.rows, *v),
                Value::Unsigned(v) => put_u64(&mut self.rows, *v),
                Value::Boolean(v) => self.rows.push(u8::from(*v)),
                Value::String(v) => put_str(&mut self.rows, v),
            }
        }
    }

    /// Rows recorded.
    pub fn rows(&self) -> u64 {
        self.row_count
    }

    /// The finished payload.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.series.len() + self.rows.len() + 24);
        out.push(KIND_WRITE_BATCH);
        put_u64(&mut out, self.series_count);
        out.extend_from_slice(&self.series);
        put_u64(&mut out, self.row_count);
        out.extend_from_slice(&self.rows);
        out
    }
}

/// Receives the contents of a batch during replay.
pub trait BatchVisitor {
    /// A series created by the write.
    fn series(&mut self, id: SeriesId, table: TableId, tags: &[(&str, &str)])
    -> Result<(), String>;
    /// A row.
    fn row(
        &mut self,
        series: SeriesId,
        time: Timestamp,
        fields: Vec<(FieldId, Value)>,
    ) -> Result<(), String>;
}

/// Decodes `payload`, calling `visitor` for each series and row; an error names the offset.
pub fn decode_batch(payload: &[u8], visitor: &mut impl BatchVisitor) -> Result<(), String> {
    let mut r = Reader::new(payload);
    let bad =
        |r: &Reader<'_>, what: &str| format!("bad WAL batch at byte {}: {what}", r.position());
    let kind = r.u8().ok_or_else(|| bad(&r, "empty"))?;
    if kind != KIND_WRITE_BATCH {
        return Err(bad(&r, &format!("unknown record kind {kind}")));
    }
    let series_count = r.u64().ok_or_else(|| bad(&r, "series count"))?;
    let mut tags: Vec<(&str, &str)> = Vec::new();
    for _ in 0..series_count {
        let id = r.u32().ok_or_else(|| bad(&r, "series id"))?;
        let table = r.u32().ok_or_else(|| bad(&r, "table id"))?;
        let tag_count = r.u64().ok_or_else(|| bad(&r, "tag count"))?;
        tags.clear();
        for _ in 0..tag_count {
            let key = r.str().ok_or_else(|| bad(&r, "tag key"))?;
            let value = r.str().ok_or_else(|| bad(&r, "tag value"))?;
            tags.push((key, value));
        }
        visitor.series(id, table, &tags)?;
    }
    let row_count = r.u64().ok_or_else(|| bad(&r, "row count"))?;
    for _ in 0..row_count {
        let series = r.u32().ok_or_else(|| bad(&r, "row series"))?;
        let time = r.i64().ok_or_else(|| bad(&r, "row time"))?;
        let field_count = r.u64().ok_or_else(|| bad(&r, "field count"))?;
        // Bounded by the payload: every field takes at least three bytes.
        if field_count > payload.len() as u64 {
            return Err(bad(&r, "field count larger than the record"));
        }
        let mut fields = Vec::with_capacity(field_count as usize);
        for _ in 0..field_count {
            let field = r.u32().ok_or_else(|| bad(&r, "field id"))?;
            let tag = r.u8().ok_or_else(|| bad(&r, "field type"))?;
            let value = match FieldType::from_tag(tag) {
                Some(FieldType::Float) => r.f64().map(Value::Float),
                Some(FieldType::Integer) => r.i64().map(Value::Integer),
                Some(FieldType::Unsigned) => r.u64().map(Value::Unsigned),
                Some(FieldType::Boolean) => match r.u8() {
                    Some(0) => Some(Value::Boolean(false)),
                    Some(1) => Some(Value::Boolean(true)),
                    _ => None,
                },
                Some(FieldType::String) => r.str().map(|s| Value::String(s.to_string())),
                None => return Err(bad(&r, &format!("unknown field type {tag}"))),
            };
            fields.push((field, value.ok_or_else(|| bad(&r, "field value"))?));
        }
        visitor.row(series, time, fields)?;
    }
    if !r.is_done() {
        return Err(bad(&r, "trailing bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type SeenSeries = (SeriesId, TableId, Vec<(String, String)>);
    type SeenRow = (SeriesId, Timestamp, Vec<(FieldId, Value)>);

    #[derive(Default)]
    struct Collect {
        series: Vec<SeenSeries>,
        rows: Vec<SeenRow>,
    }

    impl BatchVisitor for Collect {
        fn series(
            &mut self,
            id: SeriesId,
            table: TableId,
            tags: &[(&str, &str)],
        ) -> Result<(), String> {
            let tags = tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            self.series.push((id, table, tags));
            Ok(())
        }
        fn row(
            &mut self,
            series: SeriesId,
            time: Timestamp,
            fields: Vec<(FieldId, Value)>,
        ) -> Result<(), String> {
            self.rows.push((series, time, fields));
            Ok(())
        }
    }

    /// Room made before the shard's lock is taken is enough for number fields: encoding
    /// does not grow the buffer.
    #[test]
    fn room_for_number_rows_is_enough() {
        let fields = [
            (3, Value::Float(0.5)),
            (4, Value::Integer(i64::MIN)),
            (5, Value::Unsigned(u64::MAX)),
            (6, Value::Boolean(true)),
        ];
        let mut encoder = BatchEncoder::with_room_for(100, 400);
        let room = encoder.rows.capacity();
        for i in 0..100u64 {
            encoder.row(SeriesId::MAX - i as SeriesId, i64::MIN + i as i64, &fields);
        }
        assert_eq!(encoder.rows.capacity(), room);
        assert!(
            encoder.rows.len() > room / 2,
            "{} of {room}",
            encoder.rows.len()
        );
    }

    #[test]
    fn batch_round_trips_and_every_truncation_is_an_error() {
        let mut encoder = BatchEncoder::default();
        encoder.new_series(3, 1, [("host", "a b"), ("dc", "é")].into_iter());
        let fields = vec![
            (0, Value::Float(-0.0)),
            (1, Value::Integer(i64::MIN)),
            (2, Value::Unsigned(u64::MAX)),
            (3, Value::Boolean(true)),
            (4, Value::String("x\ny".into())),
        ];
        encoder.row(3, -5, &fields);
        encoder.row(0, i64::MAX, &[]);
        assert_eq!(encoder.rows(), 2);
        let payload = encoder.finish();

        let mut seen = Collect::default();
        decode_batch(&payload, &mut seen).unwrap();
        assert_eq!(
            seen.series,
            vec![(
                3,
                1,
                vec![("host".into(), "a b".into()), ("dc".into(), "é".into())]
            )]
        );
        assert_eq!(seen.rows.len(), 2);
        assert_eq!(seen.rows[0].0, 3);
        assert_eq!(seen.rows[0].1, -5);
        assert_eq!(seen.rows[0].2.len(), 5);
        assert!(
            matches!(seen.rows[0].2[0].1, Value::Float(v) if v.to_bits() == (-0.0f64).to_bits())
        );
        assert_eq!(seen.rows[0].2[1..], fields[1..]);
        assert_eq!(seen.rows[1], (0, i64::MAX, vec![]));

        for len in 0..payload.len() {
            assert!(
                decode_batch(&payload[..len], &mut Collect::default()).is_err(),
                "prefix {len}"
            );
        }
        let mut longer = payload.clone();
        longer.push(0);
        assert!(decode_batch(&longer, &mut Collect::default()).is_err());
    }
}
