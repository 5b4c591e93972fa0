//! taosBenchmark's queries after insert on `meters` (seed 002): `count(*)`, then `count`,
//! `avg`, `sum`, `max`, `min`, `first` and `last` of each column over the whole table, and
//! `select *` of every row (its rows are counted as they arrive: rows/s streamed).
//!
//! `first(x)` / `last(x)` are Strata's aggregates: the value at the earliest / latest time.

use super::{Query, QueryType};

/// An aggregate of the TDengine set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// `count(column)`: non-null values.
    Count,
    /// `avg(column)`.
    Avg,
    /// `sum(column)`.
    Sum,
    /// `max(column)`.
    Max,
    /// `min(column)`.
    Min,
    /// `first(column)`: the value with the earliest time.
    First,
    /// `last(column)`: the value with the latest time.
    Last,
}

/// Every aggregate, in taosBenchmark's order.
pub const AGGREGATES: [Aggregate; 7] = [
    Aggregate::Count,
    Aggregate::Avg,
    Aggregate::Sum,
    Aggregate::Max,
    Aggregate::Min,
    Aggregate::First,
    Aggregate::Last,
];

impl Aggregate {
    /// The SQL function name (also the type name's prefix).
    pub fn name(&self) -> &'static str {
        match self {
            Aggregate::Count => "count",
            Aggregate::Avg => "avg",
            Aggregate::Sum => "sum",
            Aggregate::Max => "max",
            Aggregate::Min => "min",
            Aggregate::First => "first",
            Aggregate::Last => "last",
        }
    }
}

/// A `meters` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// `current` (float).
    Current,
    /// `voltage` (integer).
    Voltage,
    /// `phase` (float).
    Phase,
}

/// Every field, in the table's order.
pub const COLUMNS: [Column; 3] = [Column::Current, Column::Voltage, Column::Phase];

impl Column {
    /// The column name.
    pub fn name(&self) -> &'static str {
        match self {
            Column::Current => "current",
            Column::Voltage => "voltage",
            Column::Phase => "phase",
        }
    }
}

/// `count`, then every aggregate of every column, then `select-all`.
pub fn all_types() -> Vec<QueryType> {
    let mut types = vec![QueryType::MetersCount];
    for column in COLUMNS {
        for aggregate in AGGREGATES {
            types.push(QueryType::MetersAggregate { aggregate, column });
        }
    }
    types.push(QueryType::MetersSelectAll);
    types
}

/// Parses `count`, `select-all` or `<aggregate>-<column>` (e.g. `avg-current`).
pub fn parse(name: &str) -> Option<QueryType> {
    match name {
        "count" => return Some(QueryType::MetersCount),
        "select-all" => return Some(QueryType::MetersSelectAll),
        _ => {}
    }
    let (aggregate, column) = name.split_once('-')?;
    Some(QueryType::MetersAggregate {
        aggregate: *AGGREGATES.iter().find(|a| a.name() == aggregate)?,
        column: *COLUMNS.iter().find(|c| c.name() == column)?,
    })
}

/// The statement of a meters type (the same every time: these queries read everything).
pub fn query(query_type: QueryType) -> Result<Query, String> {
    let sql = match query_type {
        QueryType::MetersCount => "SELECT count(*) FROM meters".to_string(),
        QueryType::MetersAggregate { aggregate, column } => {
            format!("SELECT {}({}) FROM meters", aggregate.name(), column.name())
        }
        QueryType::MetersSelectAll => "SELECT * FROM meters".to_string(),
        other => return Err(format!("query type {} reads cpu, not meters", other.name())),
    };
    Ok(Query {
        sql,
        start_ns: None,
        end_ns: None,
        hosts: Vec::new(),
        clamped: false,
        streamed: query_type.streamed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let types = all_types();
        assert_eq!(types.len(), 23);
        for t in types {
            assert_eq!(parse(&t.name()), Some(t), "{}", t.name());
        }
        assert_eq!(parse("median-current"), None);
        assert_eq!(parse("avg-ts"), None);
    }
}
