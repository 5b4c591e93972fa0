//! Templates with functions: transformations over raw fields and over aggregates, math,
//! arithmetic with aliases; and several measurements in FROM, and subqueries.

use super::data::{Field, MEASUREMENTS, Values};
use super::statements::Gen;
use super::templates::{maybe_group_tags, ok, time_grouped};

fn transform_call(g: &mut Gen, arg: &str) -> String {
    match g.int(0, 9) {
        0 => format!("derivative({arg})"),
        1 => format!("derivative({arg}, {})", g.pick(&["1m", "1s", "10s"])),
        2 => format!("non_negative_derivative({arg})"),
        3 => format!("non_negative_derivative({arg}, 1m)"),
        4 => format!("difference({arg})"),
        5 => format!("non_negative_difference({arg})"),
        6 => format!("moving_average({arg}, {})", g.int(2, 5)),
        7 => format!("cumulative_sum({arg})"),
        8 => format!("elapsed({arg})"),
        _ => format!("elapsed({arg}, {})", g.pick(&["1s", "1ms", "1m"])),
    }
}

pub fn transform_raw(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let call = transform_call(g, f.name);
    let time = g.time_range();
    let tags = g.maybe(0.5, |g| g.tag_atom(m));
    let filter = g.where_clause(&[time, tags]);
    let group = maybe_group_tags(g, m, 0.5);
    let limit = g.limit();
    ok(format!(
        "SELECT {call} FROM {}{filter}{group}{limit}",
        m.name
    ))
}

pub fn transform_aggregate(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let func = g.pick(&["mean", "max", "min", "sum", "count", "last"]);
    let call = transform_call(g, &format!("{func}({})", f.name));
    ok(time_grouped(g, m, &call, true))
}

/// A math function call on `arg` (numeric field `f` or an aggregate of it) that stays
/// finite on its values: influxd writes NaN as null but fails on infinities.
fn math_call(g: &mut Gen, arg: &str, f: &Field) -> String {
    let (lo, hi) = match f.values {
        Values::Walk(lo, hi) => (lo, hi),
        _ => (0.0, 1e12),
    };
    let small = hi <= 100.0;
    match g.int(0, 13) {
        0 => format!("abs({arg})"),
        1 => format!("round({arg})"),
        2 => format!("ceil({arg})"),
        3 => format!("floor({arg})"),
        4 => format!("sin({arg})"),
        5 => format!("cos({arg})"),
        6 => format!("atan({arg})"),
        7 => format!("sqrt(abs({arg}))"),
        8 => format!("ln(abs({arg}) + 1)"),
        9 => format!("log(abs({arg}) + 1, {})", g.pick(&[2, 10, 3])),
        10 => format!("{}(abs({arg}) + 1)", g.pick(&["log2", "log10"])),
        11 => format!("pow({arg}, {})", g.pick(&[2, 3])),
        12 if small => format!("exp({arg} / 10)"),
        13 if lo >= 0.0 && small => format!("{}({arg} / {hi})", g.pick(&["asin", "acos"])),
        _ => format!("atan2({arg}, 7)"),
    }
}

pub fn math(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    if g.chance(0.3) {
        let inner = format!("{}({})", g.pick(&["mean", "max", "sum", "last"]), f.name);
        let call = math_call(g, &inner, f);
        // Not fill(-1): influxd fills the aggregate inside the math (ln(abs(-1) - 1)).
        return ok(time_grouped(g, m, &call, false));
    }
    let n = g.int(1, 3);
    let calls: Vec<String> = (0..n).map(|_| math_call(g, f.name, f)).collect();
    let alias = g.maybe(0.3, |_| " AS result".to_owned());
    let time = g.time_range();
    let limit = g.limit();
    let select = calls.join(", ");
    ok(format!(
        "SELECT {select}{alias} FROM {} WHERE {time}{limit}",
        m.name
    ))
}

pub fn arithmetic(g: &mut Gen) -> (String, bool) {
    let m = g.one(MEASUREMENTS);
    let numeric = m.numeric_fields();
    let (a, b) = (g.pick(&numeric).name, g.pick(&numeric).name);
    if g.chance(0.35) {
        let expr = match g.int(0, 3) {
            0 => format!("mean({a}) * 100 AS pct"),
            1 => format!("max({a}) - min({a}) AS range"),
            2 => format!("sum({a}) / count({a}) AS avg, mean({a})"),
            _ => format!("(last({a}) + first({b})) / 2 AS mid"),
        };
        return ok(time_grouped(g, m, &expr, true));
    }
    let expr = match g.int(0, 6) {
        0 => format!("{a} + {b} AS total"),
        1 => format!("{a} * 2, {b} / 4 AS quarter"),
        2 => format!("({a} - {b}) / 3 AS d"),
        3 => format!("{a} % 7 AS rest, -{b} AS neg"),
        4 => format!("{a} / {b} AS ratio, {a}"),
        5 => format!("{a} * 1.5 + 2 - {b}"),
        _ => format!("{a} - 10, {a} / 0 AS zero"),
    };
    let time = g.time_range();
    let tags = g.maybe(0.3, |g| g.tag_atom(m));
    let filter = g.where_clause(&[time, tags]);
    let limit = g.limit();
    ok(format!("SELECT {expr} FROM {}{filter}{limit}", m.name))
}

pub fn multi_from(g: &mut Gen) -> (String, bool) {
    let (a, b) = (g.measurement(), g.measurement());
    let time = g.time_range();
    let limit = g.limit();
    let f = g.pick(a.numeric_fields().as_slice()).name;
    let (a, b) = (a.name, b.name);
    ok(match g.int(0, 3) {
        0 => format!("SELECT * FROM {a}, {b} WHERE {time} LIMIT {}", g.int(1, 5)),
        1 => format!("SELECT count({f}) FROM /^({a}|{b})$/ WHERE {time}"),
        2 => format!("SELECT {f}, host FROM /./ WHERE {time}{limit}"),
        _ => {
            let group = g.group_time();
            format!("SELECT max({f}), mean({f}) FROM {a}, {b} WHERE {time} GROUP BY {group}")
        }
    })
}

pub fn subquery(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let key = g.pick(m.tag_keys);
    let (inner_time, outer_time) = (g.time_range(), g.time_range());
    let interval = g.pick(&["5m", "10m", "15m"]);
    let outer = g.pick(&["max", "min", "mean", "sum", "count"]);
    let field = f;
    let (f, m) = (f.name, m.name);
    ok(match g.int(0, 3) {
        0 => format!(
            "SELECT {outer}(m) FROM (SELECT mean({f}) AS m FROM {m} WHERE {inner_time} \
             GROUP BY time({interval}), {key}) WHERE {outer_time}"
        ),
        1 => format!(
            "SELECT {outer}(m) FROM (SELECT max({f}) AS m FROM {m} WHERE {inner_time} \
             GROUP BY {key}) GROUP BY {key}"
        ),
        2 => {
            let cond = g.field_atom_of(field);
            format!(
                "SELECT * FROM (SELECT {f}, {key} FROM {m} WHERE {inner_time}) \
                 WHERE {cond} LIMIT 10"
            )
        }
        _ => format!(
            "SELECT {outer}(d) FROM (SELECT difference({f}) AS d FROM {m} WHERE {inner_time} \
             GROUP BY *) WHERE {outer_time} GROUP BY time({interval})"
        ),
    })
}

/// An inner statement without `GROUP BY time()` under an outer one with it: influxd 1.x
/// gives the inner the outer's interval (aggregates fold per outer bucket, derivative's
/// unit, transformations read one interval before the inner's lower bound).
pub fn subquery_interval(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let key = g.pick(m.tag_keys);
    let (inner_time, outer_time) = (g.time_range(), g.time_range());
    let group = g.group_time();
    let outer = g.pick(&["max", "min", "sum", "count"]);
    let (f, m) = (f.name, m.name);
    ok(match g.int(0, 2) {
        0 => {
            let transform = g.pick(&[
                "difference",
                "non_negative_difference",
                "derivative",
                "non_negative_derivative",
                "elapsed",
                "cumulative_sum",
                "moving_average",
            ]);
            let arg = if transform == "moving_average" {
                ", 2"
            } else {
                ""
            };
            format!(
                "SELECT {outer}(d) FROM (SELECT {transform}({f}{arg}) AS d FROM {m} WHERE \
                 {inner_time} GROUP BY *) WHERE {outer_time} GROUP BY {group}"
            )
        }
        1 => {
            let inner = g.pick(&["mean", "max", "min", "sum", "count"]);
            format!(
                "SELECT {outer}(a) FROM (SELECT {inner}({f}) AS a FROM {m} WHERE \
                 {inner_time} GROUP BY {key}) WHERE {outer_time} GROUP BY {group}, {key}"
            )
        }
        _ => format!(
            "SELECT {outer}(d) FROM (SELECT difference(mean({f})) AS d FROM {m} WHERE \
             {inner_time}) WHERE {outer_time} GROUP BY {group}"
        ),
    })
}
