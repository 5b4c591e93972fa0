//! Comparing two `/query` answers: the HTTP status, then the parsed JSON member by member.
//! Strings, integers, booleans and nulls must be equal; numbers compare numerically (JSON
//! cannot tell influxd's float `12` from an integer `12`), floats to a relative 1e-9 (an
//! absolute 1e-12 near zero); error texts and warning messages only by their presence.

use serde_json::{Number, Value};

use super::Reply;
use super::statements::Statement;

/// Why `statement`'s answer from influxd shows a generator bug: a statement made to succeed
/// that influxd rejects, or one made to fail that it accepts. None when the answer is fine.
pub fn oracle_problem(statement: &Statement, oracle: &Reply) -> Option<String> {
    let Ok(json) = serde_json::from_slice::<Value>(&oracle.body) else {
        return Some(format!(
            "influxd answered {} with a non-JSON body",
            oracle.status
        ));
    };
    let failed = oracle.status != 200 || has_error(&json);
    match (statement.expect_error, failed) {
        (false, true) => Some("influxd rejects a statement made to succeed".to_owned()),
        (true, false) => Some("influxd accepts a statement made to fail".to_owned()),
        _ => None,
    }
}

/// True when the answer carries an error, for the request or for any statement.
pub fn has_error(json: &Value) -> bool {
    json.get("error").is_some()
        || json
            .get("results")
            .and_then(Value::as_array)
            .is_some_and(|results| results.iter().any(|r| r.get("error").is_some()))
}

/// The first difference between influxd's answer and the other's, as `path: what`; None
/// when they agree.
pub fn difference(statement: &Statement, oracle: &Reply, other: &Reply) -> Option<String> {
    if oracle.status != other.status {
        return Some(format!(
            "$: HTTP status {} (influxd) vs {}",
            oracle.status, other.status
        ));
    }
    let expected: Value = serde_json::from_slice(&oracle.body).ok()?;
    let Ok(actual) = serde_json::from_slice::<Value>(&other.body) else {
        return Some("$: the body is not JSON".to_owned());
    };
    if statement.expect_error {
        return match (has_error(&expected), has_error(&actual)) {
            (true, false) => Some("$: no error where influxd answers one".to_owned()),
            _ => None,
        };
    }
    diff(&expected, &actual, &mut "$".to_owned())
}

fn diff(expected: &Value, actual: &Value, path: &mut String) -> Option<String> {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys() {
                if !b.contains_key(key) {
                    return Some(format!("{path}.{key}: missing (influxd has it)"));
                }
            }
            for key in b.keys() {
                if !a.contains_key(key) {
                    return Some(format!("{path}.{key}: unexpected (influxd has none)"));
                }
            }
            for (key, value) in a {
                // Error texts and warnings: presence only.
                if key == "error" || key == "messages" {
                    continue;
                }
                let len = path.len();
                path.push('.');
                path.push_str(key);
                let found = diff(value, &b[key], path);
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = diff(x, y, path);
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            (a.len() != b.len())
                .then(|| format!("{path}: {} elements (influxd) vs {}", a.len(), b.len()))
        }
        (Value::Number(a), Value::Number(b)) => {
            (!numbers_equal(a, b)).then(|| format!("{path}: {a} (influxd) vs {b}"))
        }
        _ if expected == actual => None,
        _ => Some(format!(
            "{path}: {} (influxd) vs {}",
            brief(expected),
            brief(actual)
        )),
    }
}

/// Beyond 2^53 a number written without a fraction may be a float (Go writes
/// 1.1535975781598176e16 as `11535975781598176`), and two float libraries may differ in
/// its last bits (`pow`): such numbers compare as floats, to 4 units in the last place.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

fn numbers_equal(a: &Number, b: &Number) -> bool {
    let beyond_exact = |n: &Number| n.as_f64().is_some_and(|x| x.abs() > EXACT_INTEGERS);
    if beyond_exact(a)
        && beyond_exact(b)
        && let (Some(x), Some(y)) = (a.as_f64(), b.as_f64())
    {
        return (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs());
    }
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x == y;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => {
            let gap = (x - y).abs();
            x == y || gap <= 1e-12 || gap <= 1e-9 * x.abs().max(y.abs())
        }
        _ => false,
    }
}

/// A value in one short line.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    shorten(&text, 120)
}

/// `text` cut to about `limit` characters, saying how much was left out.
pub fn shorten(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let cut: String = text.chars().take(limit).collect();
    format!("{cut}… ({} bytes in all)", text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_numerically() {
        let n = |text: &str| serde_json::from_str::<Number>(text).unwrap();
        assert!(numbers_equal(&n("12"), &n("12.0")));
        assert!(numbers_equal(&n("0.1"), &n("0.10000000000000002")));
        assert!(!numbers_equal(&n("12"), &n("13")));
        assert!(!numbers_equal(&n("1.5"), &n("1.6")));
        assert!(numbers_equal(&n("0"), &n("1e-13")));
        // Integers are exact up to 2^53; beyond, floats written without a fraction may
        // differ in their last bits only.
        assert!(!numbers_equal(
            &n("9007199254740991"),
            &n("9007199254740990")
        ));
        assert!(numbers_equal(
            &n("11535975781598176"),
            &n("11535975781598178")
        ));
        assert!(!numbers_equal(
            &n("11535975781598176"),
            &n("11535975781598276")
        ));
    }

    /// A difference anywhere is found, not only in an object's first member. (A `?` once
    /// stopped at the first member that agreed, and the differential test passed whatever
    /// the values.)
    #[test]
    fn a_difference_in_any_member_is_found() {
        let statement = Statement {
            text: String::new(),
            category: "raw",
            epoch: None,
            expect_error: false,
        };
        let reply = |body: &str| Reply {
            status: 200,
            body: body.as_bytes().to_vec(),
        };
        let influxd =
            reply(r#"{"results":[{"statement_id":0,"series":[{"name":"m","values":[[1,2.5]]}]}]}"#);
        let same =
            reply(r#"{"results":[{"series":[{"values":[[1,2.5]],"name":"m"}],"statement_id":0}]}"#);
        assert_eq!(difference(&statement, &influxd, &same), None);
        let value =
            reply(r#"{"results":[{"statement_id":0,"series":[{"name":"m","values":[[1,3.5]]}]}]}"#);
        assert_eq!(
            difference(&statement, &influxd, &value).as_deref(),
            Some("$.results[0].series[0].values[0][1]: 2.5 (influxd) vs 3.5")
        );
        let name =
            reply(r#"{"results":[{"statement_id":0,"series":[{"name":"n","values":[[1,2.5]]}]}]}"#);
        assert!(difference(&statement, &influxd, &name).is_some());
        let id =
            reply(r#"{"results":[{"statement_id":1,"series":[{"name":"m","values":[[1,2.5]]}]}]}"#);
        assert!(difference(&statement, &influxd, &id).is_some());
    }
}
