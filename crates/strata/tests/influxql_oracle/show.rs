//! Templates for SHOW statements, statements made to fail, qualified measurement names and
//! several statements in one request.

use super::data::measurement;
use super::statements::Gen;
use super::templates::{aggregate_call, names, ok};

pub fn qualified(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let fields = g.fields(m, 2);
    let fields = names(g, &fields);
    let from = match g.int(0, 3) {
        0 => format!("diff.autogen.{}", m.name),
        1 => format!("\"diff\".\"autogen\".\"{}\"", m.name),
        2 => format!("diff..{}", m.name),
        _ => format!("autogen.{}", m.name),
    };
    let time = g.time_range();
    ok(format!(
        "SELECT {fields} FROM {from} WHERE {time} LIMIT {}",
        g.int(1, 5)
    ))
}

pub fn multi_statement(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let call = aggregate_call(g, f);
    let time = g.time_lower_or_range();
    let first = format!("SELECT {call} FROM {} WHERE {time}", m.name);
    let (second, _) = match g.chance(0.5) {
        true => show_tag_keys(g),
        false => show_series(g),
    };
    ok(format!("{first}; {second}"))
}

pub fn show_measurements(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    ok(match g.int(0, 4) {
        0 => "SHOW MEASUREMENTS".to_owned(),
        1 => format!("SHOW MEASUREMENTS WITH MEASUREMENT =~ /{}/", &m.name[1..3]),
        2 => format!("SHOW MEASUREMENTS WITH MEASUREMENT = {}", m.name),
        3 => format!("SHOW MEASUREMENTS WHERE {}", g.tag_atom(m)),
        _ => format!(
            "SHOW MEASUREMENTS LIMIT {} OFFSET {}",
            g.int(1, 3),
            g.int(0, 2)
        ),
    })
}

pub fn show_tag_keys(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    ok(match g.int(0, 3) {
        0 => "SHOW TAG KEYS".to_owned(),
        1 => format!("SHOW TAG KEYS FROM {}", m.name),
        2 => format!("SHOW TAG KEYS FROM /{}/", &m.name[..1]),
        _ => format!("SHOW TAG KEYS FROM {} WHERE {}", m.name, g.tag_atom(m)),
    })
}

pub fn show_tag_values(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let (a, b) = (g.pick(m.tag_keys), g.pick(m.tag_keys));
    let from = g.maybe(0.6, |_| format!(" FROM {}", m.name));
    let with = match g.int(0, 3) {
        0 | 1 => format!("WITH KEY = {a}"),
        2 => format!("WITH KEY IN (\"{a}\", \"{b}\")"),
        _ => format!("WITH KEY =~ /{}/", &a[..1]),
    };
    let filter = g.maybe(0.4, |g| format!(" WHERE {}", g.tag_cond(m)));
    ok(format!("SHOW TAG VALUES{from} {with}{filter}"))
}

pub fn show_field_keys(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    ok(match g.int(0, 2) {
        0 => "SHOW FIELD KEYS".to_owned(),
        1 => format!("SHOW FIELD KEYS FROM {}", m.name),
        _ => format!("SHOW FIELD KEYS FROM /{}/", &m.name[1..2]),
    })
}

pub fn show_series(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    ok(match g.int(0, 3) {
        0 => "SHOW SERIES".to_owned(),
        1 => format!("SHOW SERIES FROM {}", m.name),
        2 => format!("SHOW SERIES FROM {} WHERE {}", m.name, g.tag_cond(m)),
        _ => format!("SHOW SERIES WHERE {} LIMIT {}", g.tag_atom(m), g.int(1, 4)),
    })
}

pub fn show_misc(g: &mut Gen) -> (String, bool) {
    ok(match g.int(0, 3) {
        0 => "SHOW DATABASES".to_owned(),
        1 => "SHOW RETENTION POLICIES ON diff".to_owned(),
        2 => "SHOW RETENTION POLICIES".to_owned(),
        _ => format!("SHOW TAG KEYS ON diff FROM {}", measurement("cpu").name),
    })
}

pub fn error_function(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let call = match g.int(0, 5) {
        0 => format!("nope({})", f.name),
        1 => format!("meen({})", f.name),
        2 => format!("top({})", f.name),
        3 => format!("percentile({})", f.name),
        4 => format!("moving_average({})", f.name),
        _ => "mean()".to_owned(),
    };
    (format!("SELECT {call} FROM {}", m.name), true)
}

pub fn error_syntax(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let (m, f) = (m.name, f.name);
    let text = match g.int(0, 6) {
        0 => format!("SELEC {f} FROM {m}"),
        1 => format!("SELECT {f} FROM"),
        2 => format!("SELECT {f} FROM {m} WHERE"),
        3 => format!("SELECT mean({f} FROM {m}"),
        4 => format!("SELECT {f} FROM {m} GROUP BY time("),
        5 => format!("SELECT {f} FROM {m} LIMIT -1"),
        _ => format!("SHOW TAG VALUES FROM {m}"),
    };
    (text, true)
}

pub fn error_semantic(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let other = g.one(m.fields).name;
    let (m, f) = (m.name, f.name);
    let text = match g.int(0, 4) {
        0 => format!("SELECT mean({f}), {other} FROM {m}"),
        1 => format!("SELECT {f} FROM {m} GROUP BY time(1m)"),
        2 => format!("SELECT distinct({f}), mean({f}) FROM {m}"),
        3 => format!("SELECT top({f}, 2), mean({f}) FROM {m}"),
        _ => format!("SELECT derivative(mean({f})) FROM {m}"),
    };
    (text, true)
}
