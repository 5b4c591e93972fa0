//! Fuzz the line protocol parser: arbitrary bytes must never panic, line numbers
//! must only increase, the reusable-buffer API must agree with the iterator, and
//! every accepted line must survive a write/parse round trip.
//!
//! Run: `cargo +nightly fuzz run parse_lines fuzz/corpus/parse_lines fuzz/seeds/parse_lines -- -max_total_time=60`
//! (from the repo root; each seed is an options byte, then lines of the golden data and edge cases).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_lineproto::writer::write_line;
use strata_lineproto::{FieldValue, Line, ParseOptions, Precision, parse_lines};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options so precisions and small limits get fuzzed too.
    let (options, input) = match data.split_first() {
        Some((&selector, rest)) => (options_from(selector), rest),
        None => (ParseOptions::default(), data),
    };

    let all: Vec<_> = parse_lines(input, &options).collect();
    let mut last = 0;
    for result in &all {
        let number = match result {
            Ok(line) => {
                assert!(!line.fields.is_empty());
                line.line_number
            }
            Err(e) => {
                assert!(e.column >= 1);
                e.line
            }
        };
        assert!(number > last, "line numbers must increase: {number} after {last}");
        last = number;
    }

    let mut lines = parse_lines(input, &options);
    let mut reused = Line::default();
    let mut again = Vec::new();
    while let Some(r) = lines.next_into(&mut reused) {
        again.push(r.map(|()| reused.clone()));
    }
    assert_eq!(again, all);

    for line in all.iter().flatten() {
        let tags: Vec<(&str, &str)> = line.tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
        let fields: Vec<(&str, FieldValue<'_>)> =
            line.fields.iter().map(|(k, v)| (k.as_ref(), v.clone())).collect();
        let mut out = Vec::new();
        write_line(&mut out, &line.measurement, &tags, &fields, line.timestamp_ns)
            .expect("every parsed line can be written back");
        // The limits the line was accepted under (a line of 300 tags passes unlimited
        // options but not the default 256), in nanoseconds, and no length limit: escaping
        // can make the written line longer than the one parsed.
        let reparse = ParseOptions {
            precision: Precision::Nanoseconds,
            max_line_bytes: usize::MAX,
            ..options
        };
        let reparsed: Vec<_> = parse_lines(&out, &reparse).collect();
        assert_eq!(reparsed.len(), 1);
        let Ok(back) = &reparsed[0] else {
            panic!("rewritten line does not parse: {:?}", reparsed[0]);
        };
        assert_eq!(back.measurement, line.measurement);
        assert_eq!(back.tags, line.tags);
        assert_eq!(back.fields, line.fields);
        assert_eq!(back.timestamp_ns, line.timestamp_ns);
    }
});

fn options_from(selector: u8) -> ParseOptions {
    let precision = match selector & 3 {
        0 => Precision::Nanoseconds,
        1 => Precision::Microseconds,
        2 => Precision::Milliseconds,
        _ => Precision::Seconds,
    };
    let small = selector & 4 != 0;
    ParseOptions {
        precision,
        max_line_bytes: if small { 64 } else { usize::MAX },
        max_fields_per_line: if small { 3 } else { usize::MAX },
        max_tags_per_line: if small { 2 } else { usize::MAX },
    }
}
