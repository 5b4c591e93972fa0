//! Columnar rows of one series: the form in which data moves between the memtable, parts,
//! merges and scans.

use crate::model::{FieldId, FieldType, Timestamp, Value};

/// Values of one field for the rows where it is present.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Floats.
    Float(Vec<f64>),
    /// Signed integers.
    Integer(Vec<i64>),
    /// Unsigned integers.
    Unsigned(Vec<u64>),
    /// Booleans.
    Boolean(Vec<bool>),
    /// Strings.
    String(Vec<String>),
}

impl Values {
    /// An empty vector of values of type `field_type`.
    pub fn new(field_type: FieldType) -> Self {
        match field_type {
            FieldType::Float => Self::Float(Vec::new()),
            FieldType::Integer => Self::Integer(Vec::new()),
            FieldType::Unsigned => Self::Unsigned(Vec::new()),
            FieldType::Boolean => Self::Boolean(Vec::new()),
            FieldType::String => Self::String(Vec::new()),
        }
    }

    /// An empty vector of values of type `field_type` with room for `capacity`.
    pub fn with_capacity(field_type: FieldType, capacity: usize) -> Self {
        match field_type {
            FieldType::Float => Self::Float(Vec::with_capacity(capacity)),
            FieldType::Integer => Self::Integer(Vec::with_capacity(capacity)),
            FieldType::Unsigned => Self::Unsigned(Vec::with_capacity(capacity)),
            FieldType::Boolean => Self::Boolean(Vec::with_capacity(capacity)),
            FieldType::String => Self::String(Vec::with_capacity(capacity)),
        }
    }

    /// The type of the values.
    pub fn field_type(&self) -> FieldType {
        match self {
            Self::Float(_) => FieldType::Float,
            Self::Integer(_) => FieldType::Integer,
            Self::Unsigned(_) => FieldType::Unsigned,
            Self::Boolean(_) => FieldType::Boolean,
            Self::String(_) => FieldType::String,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Self::Float(v) => v.len(),
            Self::Integer(v) => v.len(),
            Self::Unsigned(v) => v.len(),
            Self::Boolean(v) => v.len(),
            Self::String(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `index`, owned.
    pub fn get(&self, index: usize) -> Value {
        match self {
            Self::Float(v) => Value::Float(v[index]),
            Self::Integer(v) => Value::Integer(v[index]),
            Self::Unsigned(v) => Value::Unsigned(v[index]),
            Self::Boolean(v) => Value::Boolean(v[index]),
            Self::String(v) => Value::String(v[index].clone()),
        }
    }

    /// Appends `value`; `false` (and nothing appended) when its type differs.
    pub fn push(&mut self, value: Value) -> bool {
        match (self, value) {
            (Self::Float(v), Value::Float(x)) => v.push(x),
            (Self::Integer(v), Value::Integer(x)) => v.push(x),
            (Self::Unsigned(v), Value::Unsigned(x)) => v.push(x),
            (Self::Boolean(v), Value::Boolean(x)) => v.push(x),
            (Self::String(v), Value::String(x)) => v.push(x),
            _ => return false,
        }
        true
    }

    /// Appends the value at `index` of `other` (same type).
    pub fn push_from(&mut self, other: &Values, index: usize) {
        match (self, other) {
            (Self::Float(v), Self::Float(o)) => v.push(o[index]),
            (Self::Integer(v), Self::Integer(o)) => v.push(o[index]),
            (Self::Unsigned(v), Self::Unsigned(o)) => v.push(o[index]),
            (Self::Boolean(v), Self::Boolean(o)) => v.push(o[index]),
            (Self::String(v), Self::String(o)) => v.push(o[index].clone()),
            (this, other) => panic!(
                "push_from between {} and {} columns: the caller must match types",
                this.field_type(),
                other.field_type()
            ),
        }
    }

    /// Appends values `from..to` of `other` (same type).
    pub fn extend_from_range(&mut self, other: &Values, from: usize, to: usize) {
        match (self, other) {
            (Self::Float(v), Self::Float(o)) => v.extend_from_slice(&o[from..to]),
            (Self::Integer(v), Self::Integer(o)) => v.extend_from_slice(&o[from..to]),
            (Self::Unsigned(v), Self::Unsigned(o)) => v.extend_from_slice(&o[from..to]),
            (Self::Boolean(v), Self::Boolean(o)) => v.extend_from_slice(&o[from..to]),
            (Self::String(v), Self::String(o)) => v.extend_from_slice(&o[from..to]),
            (this, other) => panic!(
                "extend_from_range between {} and {} columns: the caller must match types",
                this.field_type(),
                other.field_type()
            ),
        }
    }

    /// Heap bytes held, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Float(v) => v.capacity() * 8,
            Self::Integer(v) => v.capacity() * 8,
            Self::Unsigned(v) => v.capacity() * 8,
            Self::Boolean(v) => v.capacity(),
            Self::String(v) => {
                v.capacity() * size_of::<String>() + v.iter().map(String::capacity).sum::<usize>()
            }
        }
    }
}

/// One field of a series over a run of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Which field.
    pub field: FieldId,
    /// Values of the rows where the field is present, in row order.
    pub values: Values,
    /// Presence per row (`len` = rows); `None` when the field is present in every row.
    pub present: Option<Vec<bool>>,
}

impl Column {
    /// Whether row `row` has a value.
    pub fn is_present(&self, row: usize) -> bool {
        self.present.as_ref().is_none_or(|p| p[row])
    }

    /// Value index of each row (`None` where absent), for row-wise walks.
    pub fn value_indexes(&self, rows: usize) -> Vec<Option<usize>> {
        let mut next = 0;
        (0..rows)
            .map(|row| {
                self.is_present(row).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect()
    }
}

/// Rows of one series sorted by time, each time at most once, in columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeriesData {
    /// Row timestamps, strictly increasing.
    pub times: Vec<Timestamp>,
    /// Field columns sorted by field id; a column exists only if some row has the field.
    pub columns: Vec<Column>,
}

impl SeriesData {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.times.len()
    }

    /// The column of `field`, if any row has it.
    pub fn column(&self, field: FieldId) -> Option<&Column> {
        self.columns
            .binary_search_by_key(&field, |c| c.field)
            .ok()
            .map(|i| &self.columns[i])
    }

    /// Checks the invariants; used around disk writes and reads (validate right before
    /// writing, right after reading).
    pub fn check(&self) -> Result<(), String> {
        // Folded without an early exit, so that it vectorizes: every read checks every
        // chunk it decodes.
        if self
            .times
            .windows(2)
            .fold(false, |bad, w| bad | (w[0] >= w[1]))
        {
            return Err("timestamps are not strictly increasing".into());
        }
        if self.columns.windows(2).any(|w| w[0].field >= w[1].field) {
            return Err("columns are not sorted by field id".into());
        }
        for column in &self.columns {
            let present = match &column.present {
                None => self.rows(),
                Some(p) if p.len() == self.rows() => p.iter().map(|x| usize::from(*x)).sum(),
                Some(p) => {
                    return Err(format!(
                        "field {}: presence has {} rows, series has {}",
                        column.field,
                        p.len(),
                        self.rows()
                    ));
                }
            };
            if present != column.values.len() {
                return Err(format!(
                    "field {}: {} rows present but {} values",
                    column.field,
                    present,
                    column.values.len()
                ));
            }
        }
        Ok(())
    }

    /// Merges `runs` of the same series (each sorted, times unique) into one; where several
    /// runs hold the same time, fields of later runs overwrite earlier ones field by field
    /// (last write wins, a field absent in the later row keeps the earlier value).
    pub fn merge(runs: &[&SeriesData]) -> SeriesData {
        if let Some(joined) = Self::concat_disjoint(runs) {
            return joined;
        }
        let mut times: Vec<Timestamp> = runs.iter().flat_map(|r| r.times.iter().copied()).collect();
        times.sort_unstable();
        times.dedup();
        let mut field_types: Vec<(FieldId, FieldType)> = runs
            .iter()
            .flat_map(|r| r.columns.iter().map(|c| (c.field, c.values.field_type())))
            .collect();
        field_types.sort_unstable();
        field_types.dedup_by_key(|(field, _)| *field);

        // For each output row and field: which run and value index supplies it.
        let mut columns = Vec::with_capacity(field_types.len());
        let row_of: Vec<Vec<usize>> = runs
            .iter()
            .map(|r| {
                r.times
                    .iter()
                    .map(|t| times.binary_search(t).unwrap_or_else(|i| i))
                    .collect()
            })
            .collect();
        for (field, field_type) in field_types {
            let mut source: Vec<Option<(usize, usize)>> = vec![None; times.len()];
            for (run_index, run) in runs.iter().enumerate() {
                let Some(column) = run.column(field) else {
                    continue;
                };
                if column.values.field_type() != field_type {
                    continue; // a conflicting type never reaches storage; skip defensively
                }
                for (row, value_index) in column.value_indexes(run.rows()).into_iter().enumerate() {
                    if let Some(value_index) = value_index {
                        source[row_of[run_index][row]] = Some((run_index, value_index));
                    }
                }
            }
            let mut values = Values::new(field_type);
            for (run_index, value_index) in source.iter().flatten() {
                if let Some(column) = runs[*run_index].column(field) {
                    values.push_from(&column.values, *value_index);
                }
            }
            let all_present = source.iter().all(Option::is_some);
            let present = (!all_present).then(|| source.iter().map(Option::is_some).collect());
            columns.push(Column {
                field,
                values,
                present,
            });
        }
        SeriesData { times, columns }
    }

    /// `runs` joined end to end when each starts after the previous one ends (the common
    /// case of chunks read in time order): no row can overwrite another, so the merge is a
    /// concatenation. `None` when runs overlap or are out of order.
    fn concat_disjoint(runs: &[&SeriesData]) -> Option<SeriesData> {
        let runs: Vec<&SeriesData> = runs.iter().copied().filter(|r| r.rows() > 0).collect();
        let ordered = runs
            .windows(2)
            .all(|w| w[0].times.last() < w[1].times.first());
        if !ordered {
            return None;
        }
        let rows: usize = runs.iter().map(|r| r.rows()).sum();
        let mut times = Vec::with_capacity(rows);
        for run in &runs {
            times.extend_from_slice(&run.times);
        }
        let mut fields: Vec<(FieldId, FieldType)> = runs
            .iter()
            .flat_map(|r| r.columns.iter().map(|c| (c.field, c.values.field_type())))
            .collect();
        fields.sort_unstable();
        fields.dedup();
        if fields.windows(2).any(|w| w[0].0 == w[1].0) {
            return None; // one field in two types: leave it to the general merge
        }
        let mut columns = Vec::with_capacity(fields.len());
        for (field, field_type) in fields {
            let mut values = Values::new(field_type);
            let mut present: Vec<bool> = Vec::new();
            let mut all_present = true;
            for run in &runs {
                match run.column(field) {
                    Some(column) => {
                        values.extend_from_range(&column.values, 0, column.values.len());
                        match &column.present {
                            Some(p) => {
                                all_present = false;
                                present.extend_from_slice(p);
                            }
                            None => present.resize(present.len() + run.rows(), true),
                        }
                    }
                    None => {
                        all_present = false;
                        present.resize(present.len() + run.rows(), false);
                    }
                }
            }
            // `present` is `None` exactly when every row has the field.
            let all_present = all_present || present.iter().all(|p| *p);
            columns.push(Column {
                field,
                values,
                present: (!all_present).then_some(present),
            });
        }
        Some(SeriesData { times, columns })
    }

    /// Keeps only the columns of `fields` (all when `None`).
    pub fn project(mut self, fields: Option<&[FieldId]>) -> SeriesData {
        if let Some(fields) = fields {
            self.columns.retain(|c| fields.contains(&c.field));
        }
        self
    }

    /// The rows with `start <= time < end` (none when `end <= start`).
    pub fn slice_time(&self, start: Timestamp, end: Timestamp) -> SeriesData {
        let from = self.times.partition_point(|t| *t < start);
        // An inverted range (`end < start`) would put `to` before `from`: empty instead.
        let to = self.times.partition_point(|t| *t < end).max(from);
        self.slice_rows(from, to)
    }

    /// Rows `from..to`.
    pub fn slice_rows(&self, from: usize, to: usize) -> SeriesData {
        let columns = self
            .columns
            .iter()
            .filter_map(|column| {
                // Values are stored for present rows only, in row order: rows from..to are
                // one contiguous range of values.
                let (first, last) = match &column.present {
                    None => (from, to),
                    Some(present) => {
                        let before = present[..from].iter().filter(|p| **p).count();
                        let within = present[from..to].iter().filter(|p| **p).count();
                        (before, before + within)
                    }
                };
                let mut values = Values::new(column.values.field_type());
                values.extend_from_range(&column.values, first, last);
                if values.is_empty() {
                    return None;
                }
                let present = column.present.as_ref().map(|p| p[from..to].to_vec());
                let present = present.filter(|p| p.iter().any(|x| !*x));
                Some(Column {
                    field: column.field,
                    values,
                    present,
                })
            })
            .collect();
        SeriesData {
            times: self.times[from..to].to_vec(),
            columns,
        }
    }
}
