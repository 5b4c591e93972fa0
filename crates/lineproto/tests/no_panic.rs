//! Property: no input makes the parser panic, line numbers only increase, and every
//! line it accepts survives a write/parse round trip unchanged.

use proptest::prelude::*;
use strata_lineproto::writer::write_line;
use strata_lineproto::{FieldValue, Line, ParseOptions, Precision, parse_lines};

/// Parses everything and checks the invariants that hold for any input.
fn check(input: &[u8], options: &ParseOptions) -> Result<(), TestCaseError> {
    let max_line = input.iter().filter(|&&b| b == b'\n').count() + 1;
    let mut last = 0;
    for result in parse_lines(input, options) {
        let number = match &result {
            Ok(line) => line.line_number,
            Err(e) => {
                prop_assert!(e.column >= 1 && e.column <= input.len() + 1, "{e}");
                e.line
            }
        };
        prop_assert!(
            number > last && number <= max_line,
            "line {number} after {last}"
        );
        last = number;
        if let Ok(line) = result {
            prop_assert!(!line.fields.is_empty());
            let rewritten = rewrite(&line);
            let again: Vec<_> = parse_lines(&rewritten, &ParseOptions::default()).collect();
            // The series key is checked against the writer in `roundtrip.rs`; here it
            // is whatever the rewritten line holds.
            let key = again
                .first()
                .and_then(|r| r.as_ref().ok())
                .map_or(&b""[..], |l| l.series_key);
            let want = Line {
                line_number: 1,
                series_key: key,
                ..line.clone()
            };
            prop_assert_eq!(again, vec![Ok(want)]);
        }
    }
    Ok(())
}

fn rewrite(line: &Line<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let tags: Vec<(&str, &str)> = line
        .tags
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    let fields: Vec<(&str, FieldValue<'_>)> = line
        .fields
        .iter()
        .map(|(k, v)| (k.as_ref(), v.clone()))
        .collect();
    write_line(
        &mut out,
        &line.measurement,
        &tags,
        &fields,
        line.timestamp_ns,
    )
    .expect("a parsed line is representable");
    out
}

const SEEDS: &[&[u8]] = &[
    b"cpu,hostname=host_0,region=eu-central-1 usage_user=58i,usage_system=2.5,ok=t,s=\"a \\\"b\\\"\" 1451606400000000000\n",
    b"m\\,x\\ y,t\\=k=v\\ w f\\,k=1u,g=-1e3,h=FALSE -5\r\n# comment\n\n",
    b"weather,location=us-midwest temperature=82 1465839830100400200\n",
];

/// The mutation test only means something if its starting points are valid.
#[test]
fn seeds_parse_without_errors() {
    let counts: Vec<(usize, usize)> = SEEDS
        .iter()
        .map(|seed| {
            let all: Vec<_> = parse_lines(seed, &ParseOptions::default()).collect();
            (all.len(), all.iter().filter(|r| r.is_ok()).count())
        })
        .collect();
    assert_eq!(counts, vec![(1, 1), (1, 1), (1, 1)]);
}

/// Bytes that change the meaning of a line when inserted.
const SPECIAL: &[u8] = b",= \\\"#\n\r\tiu.-+e0123456789tfTF\x80\xff";

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, u8),
    Delete(usize),
    Replace(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    let byte = prop_oneof![prop::sample::select(SPECIAL.to_vec()), any::<u8>()];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Replace(i, b)),
    ]
}

fn options() -> impl Strategy<Value = ParseOptions> {
    (
        prop::sample::select(vec![
            Precision::Nanoseconds,
            Precision::Microseconds,
            Precision::Milliseconds,
            Precision::Seconds,
        ]),
        prop_oneof![Just(usize::MAX), 0usize..200],
        0usize..6,
        0usize..6,
    )
        .prop_map(
            |(precision, max_line_bytes, max_fields_per_line, max_tags_per_line)| ParseOptions {
                precision,
                max_line_bytes,
                max_fields_per_line,
                max_tags_per_line,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..512), options in options()) {
        check(&input, &options)?;
        check(&input, &ParseOptions::default())?;
    }

    #[test]
    fn mutated_valid_lines_never_panic(seed in prop::sample::select(SEEDS.to_vec()), edits in prop::collection::vec(edit(), 1..8)) {
        let mut input = seed.to_vec();
        for e in edits {
            match e {
                Edit::Insert(i, b) => { let i = i % (input.len() + 1); input.insert(i, b) }
                Edit::Delete(i) if !input.is_empty() => { let i = i % input.len(); input.remove(i); }
                Edit::Replace(i, b) if !input.is_empty() => { let i = i % input.len(); input[i] = b }
                _ => {}
            }
        }
        check(&input, &ParseOptions::default())?;
    }
}
