//! IoTDB-benchmark's operations ([`Operation`]) and the weighted mix each client draws its
//! next operation from ([`Mix`]: the default 1:9 read:write, and `--mix` parsing).

use std::collections::BTreeSet;

use crate::rng::Rng;

/// IoTDB-benchmark's operations, in its `OPERATION_PROPORTION` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// A batch of rows of one device.
    Ingestion,
    /// The sensors of some devices at one time.
    PrecisePoint,
    /// The rows of a time window.
    TimeRange,
    /// The rows of a time window with a sensor above a value.
    ValueRange,
    /// `count` per device over a time window.
    AggRange,
    /// `count` per device of the rows with a sensor above a value (all time).
    AggValue,
    /// `count` per device over a window, of the rows above a value.
    AggRangeValue,
    /// `count` per device and time bucket over a window, oldest bucket first.
    GroupBy,
    /// The latest row of each device.
    LatestPoint,
    /// TIME_RANGE, newest row first.
    RangeQueryDesc,
    /// VALUE_RANGE, newest row first.
    ValueRangeQueryDesc,
    /// GROUP_BY, newest bucket first.
    GroupByDesc,
}

impl Operation {
    /// Every operation, in IoTDB-benchmark's order.
    pub const ALL: [Operation; 12] = [
        Operation::Ingestion,
        Operation::PrecisePoint,
        Operation::TimeRange,
        Operation::ValueRange,
        Operation::AggRange,
        Operation::AggValue,
        Operation::AggRangeValue,
        Operation::GroupBy,
        Operation::LatestPoint,
        Operation::RangeQueryDesc,
        Operation::ValueRangeQueryDesc,
        Operation::GroupByDesc,
    ];

    /// IoTDB-benchmark's name (`PRECISE_POINT`).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Ingestion => "INGESTION",
            Operation::PrecisePoint => "PRECISE_POINT",
            Operation::TimeRange => "TIME_RANGE",
            Operation::ValueRange => "VALUE_RANGE",
            Operation::AggRange => "AGG_RANGE",
            Operation::AggValue => "AGG_VALUE",
            Operation::AggRangeValue => "AGG_RANGE_VALUE",
            Operation::GroupBy => "GROUP_BY",
            Operation::LatestPoint => "LATEST_POINT",
            Operation::RangeQueryDesc => "RANGE_QUERY_DESC",
            Operation::ValueRangeQueryDesc => "VALUE_RANGE_QUERY_DESC",
            Operation::GroupByDesc => "GROUP_BY_DESC",
        }
    }

    /// The operation named `name` (either case).
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL
            .into_iter()
            .find(|op| op.name().eq_ignore_ascii_case(name))
    }

    /// Everything but INGESTION.
    pub fn is_read(self) -> bool {
        self != Operation::Ingestion
    }

    /// Position in [`Operation::ALL`] (tallies are kept in that order).
    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// Integer weights of the operations; each turn draws one with probability weight / sum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    weights: [u64; 12],
}

/// Largest weight accepted (keeps the sum far from overflow).
const WEIGHT_MAX: u64 = 1_000_000;

impl Default for Mix {
    /// Seed 004's read:write of 1:9: INGESTION 99 parts, each of the 11 reads 1 part, so
    /// reads are 11 of 110 operations and every read shape is exercised equally.
    fn default() -> Self {
        let mut weights = [1; 12];
        weights[Operation::Ingestion.index()] = 99;
        Mix { weights }
    }
}

impl Mix {
    /// Parses `ingestion=9,precise_point=1,…`: operation names (either case) with
    /// non-negative integer weights; operations left out weigh 0.
    pub fn parse(text: &str) -> Result<Mix, String> {
        let names = || {
            Operation::ALL
                .iter()
                .map(|op| op.name().to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut weights = [0u64; 12];
        let mut seen = BTreeSet::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, weight) = item.split_once('=').ok_or_else(|| {
                format!("--mix: `{item}` is not name=weight (e.g. ingestion=9,time_range=1)")
            })?;
            let op = Operation::from_name(name.trim()).ok_or_else(|| {
                format!(
                    "--mix: unknown operation `{}`; the operations are {}",
                    name.trim(),
                    names()
                )
            })?;
            let weight: u64 = weight.trim().parse().map_err(|_| {
                format!(
                    "--mix: the weight of {} must be a whole number, not `{}`",
                    op.name().to_ascii_lowercase(),
                    weight.trim()
                )
            })?;
            if weight > WEIGHT_MAX {
                return Err(format!(
                    "--mix: the weight of {} is over {WEIGHT_MAX}",
                    op.name().to_ascii_lowercase()
                ));
            }
            if !seen.insert(op) {
                return Err(format!(
                    "--mix: {} is given twice",
                    op.name().to_ascii_lowercase()
                ));
            }
            weights[op.index()] = weight;
        }
        if weights.iter().all(|w| *w == 0) {
            return Err("--mix: no operation has a weight above 0".into());
        }
        Ok(Mix { weights })
    }

    /// The weight of `op`.
    pub fn weight(&self, op: Operation) -> u64 {
        self.weights[op.index()]
    }

    /// Whether any read may be drawn.
    pub fn has_reads(&self) -> bool {
        Operation::ALL
            .iter()
            .any(|op| op.is_read() && self.weight(*op) > 0)
    }

    /// The operations that may be drawn, in IoTDB-benchmark's order.
    pub fn operations(&self) -> Vec<Operation> {
        Operation::ALL
            .into_iter()
            .filter(|op| self.weight(*op) > 0)
            .collect()
    }

    /// `ingestion=99,precise_point=1,…` (operations of weight 0 left out).
    pub fn describe(&self) -> String {
        self.operations()
            .iter()
            .map(|op| format!("{}={}", op.name().to_ascii_lowercase(), self.weight(*op)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Draws the next operation.
    pub fn draw(&self, rng: &mut Rng) -> Operation {
        let total: u64 = self.weights.iter().sum();
        let mut pick = rng.below(total.max(1));
        for op in Operation::ALL {
            let weight = self.weight(op);
            if pick < weight {
                return op;
            }
            pick -= weight;
        }
        Operation::Ingestion
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_mix_is_one_read_in_ten() {
        let mix = Mix::default();
        assert_eq!(mix.weight(Operation::Ingestion), 99);
        assert!(Operation::ALL[1..].iter().all(|op| mix.weight(*op) == 1));
        assert_eq!(mix.operations().len(), 12);
        let mut rng = Rng::new(1);
        let draws = 110_000;
        let mut counts = [0u64; 12];
        for _ in 0..draws {
            counts[mix.draw(&mut rng).index()] += 1;
        }
        let reads: u64 = counts[1..].iter().sum();
        let share = reads as f64 / draws as f64;
        assert!((share - 0.1).abs() < 0.005, "read share {share}");
        assert!(
            counts[1..].iter().all(|c| (800..1200).contains(c)),
            "{counts:?}"
        );
        assert!(mix.describe().starts_with("ingestion=99,precise_point=1,"));
    }

    #[test]
    fn mixes_parse_by_name_and_bad_ones_are_explained() {
        let mix = Mix::parse("INGESTION=9, latest_point=1").unwrap();
        assert_eq!(mix.describe(), "ingestion=9,latest_point=1");
        assert!(mix.has_reads());
        let mut rng = Rng::new(3);
        for _ in 0..1000 {
            let op = mix.draw(&mut rng);
            assert!(matches!(op, Operation::Ingestion | Operation::LatestPoint));
        }
        assert!(!Mix::parse("ingestion=1").unwrap().has_reads());
        let err = |text: &str| Mix::parse(text).unwrap_err();
        assert!(err("ingest=1").contains("unknown operation `ingest`"));
        assert!(err("ingest=1").contains("group_by_desc"));
        assert!(err("ingestion").contains("not name=weight"));
        assert!(err("ingestion=x").contains("whole number"));
        assert!(err("ingestion=-1").contains("whole number"));
        assert!(err("ingestion=1,INGESTION=2").contains("twice"));
        assert!(err("ingestion=0").contains("no operation"));
        assert!(err("").contains("no operation"));
        assert!(err("ingestion=2000000").contains("over"));
    }
}
