//! Fuzz the InfluxQL parser: any text parses or fails with an error that points inside it
//! (line, column, offset on a character boundary); nothing panics or overflows the stack.
//!
//! Run: `cargo +nightly fuzz run influxql_parse fuzz/corpus/influxql_parse fuzz/seeds/influxql_parse -- -max_total_time=60`
//! (from the repo root; the seeds are the InfluxQL golden statements and TSBS queries).
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use strata_influxql::{Param, parse_query};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let params = HashMap::from([
        ("p".to_string(), Param::Integer(3)),
        ("s".to_string(), Param::String("x".into())),
    ]);
    match parse_query(text, &params) {
        Ok(query) => assert!(!query.statements.is_empty()),
        Err(e) => {
            assert!(e.offset <= text.len(), "{e:?}");
            assert!(text.is_char_boundary(e.offset), "{e:?}");
            assert_eq!(e.line, text[..e.offset].matches('\n').count() + 1);
            assert!(e.column >= 1 && e.column <= e.offset + 1, "{e:?}");
        }
    }
});
