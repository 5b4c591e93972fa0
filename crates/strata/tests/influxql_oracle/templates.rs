//! Statement templates: each returns the statement and whether it is made to fail. Every
//! template is in [`TEMPLATES`], named by its category. Plain SELECTs and aggregates are
//! here; functions, subqueries and several measurements in [`super::functions`]; SHOW
//! statements, errors and the rest in [`super::show`].

use super::data::{Field, Kind, Measurement, SPAN_S};
use super::functions::{
    arithmetic, math, multi_from, subquery, subquery_interval, transform_aggregate, transform_raw,
};
use super::show::{
    error_function, error_semantic, error_syntax, multi_statement, qualified, show_field_keys,
    show_measurements, show_misc, show_series, show_tag_keys, show_tag_values,
};
use super::statements::{Gen, INTERVALS};

/// A template: the statement text, and true when it is made to fail.
pub type Template = fn(&mut Gen) -> (String, bool);

/// Every template with its category, used in turn.
pub static TEMPLATES: &[(&str, Template)] = &[
    ("raw", raw),
    ("raw_tags", raw_tags),
    ("raw_star", raw_star),
    ("raw_cast", raw_cast),
    ("raw_regex", raw_regex),
    ("where_tags", where_tags),
    ("where_fields", where_fields),
    ("aggregate", aggregate),
    ("aggregate_multi", aggregate_multi),
    ("aggregate_time", aggregate_time),
    ("selector", selector),
    ("top_bottom", top_bottom),
    ("distinct", distinct),
    ("aggregate_star", aggregate_star),
    ("transform_raw", transform_raw),
    ("transform_aggregate", transform_aggregate),
    ("math", math),
    ("arithmetic", arithmetic),
    ("group_tags", group_tags),
    ("order_limit", order_limit),
    ("multi_from", multi_from),
    ("subquery", subquery),
    ("qualified", qualified),
    ("multi_statement", multi_statement),
    ("show_measurements", show_measurements),
    ("show_tag_keys", show_tag_keys),
    ("show_tag_values", show_tag_values),
    ("show_field_keys", show_field_keys),
    ("show_series", show_series),
    ("show_misc", show_misc),
    ("error_function", error_function),
    ("error_syntax", error_syntax),
    ("error_semantic", error_semantic),
];

/// Templates drawn after the rotation of [`TEMPLATES`], each from a generator of its own
/// and as many times as given: adding one leaves every other statement as it was.
pub static SEPARATE: &[(&str, Template, usize)] = &[
    ("first_buckets", first_buckets, 40),
    ("subquery_interval", subquery_interval, 40),
];

/// A statement made to succeed.
pub fn ok(text: String) -> (String, bool) {
    (text, false)
}

/// The names of `fields`, comma-separated.
pub fn names(g: &mut Gen, fields: &[&Field]) -> String {
    let names: Vec<String> = fields.iter().map(|f| g.field_name(f)).collect();
    names.join(", ")
}

/// An aggregate call of `f` valid for its type (no top/bottom/distinct/sample).
pub fn aggregate_call(g: &mut Gen, f: &Field) -> String {
    let name = g.field_name(f);
    if !f.kind.numeric() {
        let func = g.pick(&["count", "mode", "first", "last"]);
        return format!("{func}({name})");
    }
    match g.int(0, 14) {
        0 => format!("percentile({name}, {})", g.pick(&[5, 50, 90, 99, 100])),
        1 => format!("integral({name}{})", g.pick(&["", ", 1m", ", 1s"])),
        _ => {
            let funcs = [
                "count", "mean", "median", "mode", "spread", "stddev", "sum", "first", "last",
                "max", "min",
            ];
            format!("{}({name})", g.pick(&funcs))
        }
    }
}

/// ` GROUP BY <tags>` with probability `p`.
pub fn maybe_group_tags(g: &mut Gen, m: &Measurement, p: f64) -> String {
    g.maybe(p, |g| format!(" GROUP BY {}", g.group_tags(m)))
}

/// `SELECT <select> FROM m WHERE <bounded time> GROUP BY time(i)[, tags] [fill]
/// [ORDER BY time DESC] [LIMIT]`; `numeric` allows the numeric fills.
pub fn time_grouped(g: &mut Gen, m: &Measurement, select: &str, numeric: bool) -> String {
    let time = g.time_range();
    let tags = g.maybe(0.3, |g| g.tag_cond(m));
    let filter = g.where_clause(&[time, tags]);
    let mut group = g.group_time();
    group.push_str(&g.maybe(0.4, |g| format!(", {}", g.group_tags(m))));
    let fill = g.fill(numeric);
    let order = g.maybe(0.2, |_| " ORDER BY time DESC".to_owned());
    let limit = g.limit();
    format!(
        "SELECT {select} FROM {}{filter} GROUP BY {group}{fill}{order}{limit}",
        m.name
    )
}

fn raw(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let fields = g.fields(m, 3);
    let fields = names(g, &fields);
    let time = g.maybe(0.7, Gen::time_lower_or_range);
    let tags = g.maybe(0.4, |g| g.tag_cond(m));
    let filter = g.where_clause(&[time, tags]);
    let order = g.maybe(0.25, |_| " ORDER BY time DESC".to_owned());
    let limit = g.limit();
    ok(format!(
        "SELECT {fields} FROM {}{filter}{order}{limit}",
        m.name
    ))
}

fn raw_tags(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let fields = g.fields(m, 2);
    let fields = names(g, &fields);
    let key = g.pick(m.tag_keys);
    let tag = match g.chance(0.5) {
        true => format!("\"{key}\"::tag"),
        false => g.ident(key),
    };
    let other = g.pick(m.tag_keys);
    let time = g.time_range();
    let limit = g.limit();
    ok(match g.int(0, 2) {
        0 => format!("SELECT {tag}, {fields} FROM {} WHERE {time}{limit}", m.name),
        1 => format!(
            "SELECT {fields}, {tag}, {other} FROM {} WHERE {time}{limit}",
            m.name
        ),
        _ => format!("SELECT {fields}, {tag} FROM {} WHERE {time}{limit}", m.name),
    })
}

fn raw_star(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let f = g.field_name(f);
    let what = match g.int(0, 3) {
        0 | 1 => "*".to_owned(),
        2 => "*::field".to_owned(),
        _ => format!("*::tag, {f}"),
    };
    let time = g.time_range();
    let tags = g.maybe(0.3, |g| g.tag_cond(m));
    let filter = g.where_clause(&[time, tags]);
    let limit = g.limit();
    ok(format!("SELECT {what} FROM {}{filter}{limit}", m.name))
}

fn raw_cast(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let fields = g.fields(m, 3);
    let mut parts = Vec::new();
    for f in fields {
        let cast = match (f.kind, g.int(0, 3)) {
            (_, 0 | 1) => f.kind.cast(),
            (Kind::Integer, _) => "float",
            (Kind::Float, 2) => "integer",
            (_, _) => g.pick(&["string", "boolean", "integer", "field"]),
        };
        parts.push(format!("{}::{cast}", g.field_name(f)));
    }
    let key = g.pick(m.tag_keys);
    parts.push(g.maybe(0.3, |_| format!("{key}::tag")));
    parts.retain(|p| !p.is_empty());
    let time = g.time_range();
    let limit = g.limit();
    ok(format!(
        "SELECT {} FROM {} WHERE {time}{limit}",
        parts.join(", "),
        m.name
    ))
}

fn raw_regex(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let other = g.one(m.fields);
    let re = match g.int(0, 3) {
        0 => format!("^{}$", f.name),
        1 => f.name[..2].to_owned(),
        2 => format!("^({}|{})$", f.name, other.name),
        _ => "e".to_owned(),
    };
    let time = g.time_range();
    let limit = g.limit();
    ok(format!("SELECT /{re}/ FROM {} WHERE {time}{limit}", m.name))
}

fn where_tags(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let fields = g.fields(m, 2);
    let fields = names(g, &fields);
    let time = g.maybe(0.6, Gen::time_range);
    let tags = g.tag_cond(m);
    let filter = g.where_clause(&[tags, time]);
    let limit = g.limit();
    ok(format!("SELECT {fields} FROM {}{filter}{limit}", m.name))
}

fn where_fields(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let fields = g.fields(m, 3);
    let fields = names(g, &fields);
    let mut cond = g.field_cond(m);
    if g.chance(0.3) {
        cond = format!("({cond} OR {})", g.tag_atom(m));
    }
    let time = g.maybe(0.5, Gen::time_range);
    let filter = g.where_clause(&[cond, time]);
    let limit = g.limit();
    ok(format!("SELECT {fields} FROM {}{filter}{limit}", m.name))
}

fn aggregate(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let call = aggregate_call(g, f);
    let time = g.maybe(0.6, Gen::time_lower_or_range);
    let tags = g.maybe(0.3, |g| g.tag_cond(m));
    let filter = g.where_clause(&[time, tags]);
    let group = maybe_group_tags(g, m, 0.4);
    ok(format!("SELECT {call} FROM {}{filter}{group}", m.name))
}

fn aggregate_multi(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let n = g.int(2, 4);
    let calls: Vec<String> = (0..n)
        .map(|_| {
            let f = g.one(m.fields);
            aggregate_call(g, f)
        })
        .collect();
    let time = g.time_lower_or_range();
    let filter = g.where_clause(&[time]);
    let group = maybe_group_tags(g, m, 0.3);
    ok(format!(
        "SELECT {} FROM {}{filter}{group}",
        calls.join(", "),
        m.name
    ))
}

fn aggregate_time(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let call = aggregate_call(g, f);
    let numeric = f.kind.numeric() || call.starts_with("count");
    ok(time_grouped(g, m, &call, numeric))
}

/// ` GROUP BY <tags>`, ` GROUP BY time(i)` or nothing.
fn tags_or_time(g: &mut Gen, m: &Measurement) -> String {
    match g.int(0, 2) {
        0 => String::new(),
        1 => format!(" GROUP BY {}", g.group_tags(m)),
        _ => format!(" GROUP BY {}", g.group_time()),
    }
}

fn selector(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let name = g.field_name(f);
    let call = match g.int(0, 4) {
        4 => format!("percentile({name}, {})", g.int(1, 100)),
        i => format!("{}({name})", ["first", "last", "max", "min"][i as usize]),
    };
    // The other fields and tags of the selected point.
    let extra = match g.int(0, 5) {
        0 => String::new(),
        1 => format!(", {}", g.pick(m.tag_keys)),
        2 => format!(", {}", g.one(m.fields).name),
        3 => format!(", {}, {}", g.pick(m.tag_keys), g.one(m.fields).name),
        4 => ", *".to_owned(),
        _ => format!(", {} AS other", g.one(m.fields).name),
    };
    let select = format!("{call}{extra}");
    if !extra.is_empty() && g.chance(0.3) {
        return ok(time_grouped(g, m, &select, false));
    }
    let time = g.time_range();
    let group = tags_or_time(g, m);
    ok(format!(
        "SELECT {select} FROM {} WHERE {time}{group}",
        m.name
    ))
}

fn top_bottom(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let func = g.pick(&["top", "bottom"]);
    let n = g.int(1, 5);
    let key = g.pick(m.tag_keys);
    let other = g.one(m.fields).name;
    let call = match g.int(0, 5) {
        0 => format!("{func}({}, {n})", f.name),
        1 => format!("{func}({}, {key}, {n})", f.name),
        2 => format!("{func}({}, {n}), {key}", f.name),
        3 => format!("{func}({}, {}, {n})", f.name, m.tag_keys.join(", ")),
        4 => format!("{func}({}, {n}), {other}, {key}", f.name),
        _ => format!("{func}({}, {key}, {n}) AS best, {other}", f.name),
    };
    let time = g.time_range();
    let group = match g.int(0, 3) {
        0 => String::new(),
        1 => format!(" GROUP BY {}", g.group_tags(m)),
        2 => format!(" GROUP BY {}", g.group_time()),
        _ => format!(" GROUP BY {}, {}", g.group_time(), g.group_tags(m)),
    };
    let order = g.maybe(0.2, |_| " ORDER BY time DESC".to_owned());
    ok(format!(
        "SELECT {call} FROM {} WHERE {time}{group}{order}",
        m.name
    ))
}

fn distinct(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let name = g.field_name(f);
    let call = match g.int(0, 4) {
        0 | 1 => format!("distinct({name})"),
        2 => format!("distinct({name}) AS d"),
        3 => format!("count(distinct({name}))"),
        _ => format!("count(distinct({name})), count({name})"),
    };
    if g.chance(0.3) {
        return ok(time_grouped(g, m, &call, false));
    }
    let time = g.time_lower_or_range();
    let group = maybe_group_tags(g, m, 0.3);
    let order = g.maybe(0.2, |_| " ORDER BY time DESC".to_owned());
    ok(format!(
        "SELECT {call} FROM {} WHERE {time}{group}{order}",
        m.name
    ))
}

fn aggregate_star(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let func = g.pick(&[
        "count", "first", "last", "mean", "max", "min", "sum", "mode",
    ]);
    let arg = match g.int(0, 2) {
        0 | 1 => "*".to_owned(),
        _ => format!("/{}/", &g.one(m.fields).name[..2]),
    };
    let select = format!("{func}({arg})");
    if g.chance(0.4) {
        return ok(time_grouped(g, m, &select, false));
    }
    let time = g.time_lower_or_range();
    let group = maybe_group_tags(g, m, 0.4);
    ok(format!(
        "SELECT {select} FROM {} WHERE {time}{group}",
        m.name
    ))
}

fn group_tags(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let select = if g.chance(0.5) {
        let fields = g.fields(m, 2);
        names(g, &fields)
    } else {
        let f = g.one(m.fields);
        aggregate_call(g, f)
    };
    let time = g.time_range();
    let group = g.group_tags(m);
    let limit = g.limit();
    let slimit = match g.int(0, 3) {
        0 => format!(" SLIMIT {}", g.int(1, 3)),
        1 => format!(" SLIMIT {} SOFFSET {}", g.int(1, 3), g.int(1, 3)),
        _ => String::new(),
    };
    ok(format!(
        "SELECT {select} FROM {} WHERE {time} GROUP BY {group}{limit}{slimit}",
        m.name
    ))
}

/// `GROUP BY time(…) … LIMIT n` with no lower time bound (TSBS's groupby-orderby-limit):
/// the first n buckets from the first point on, in every fill, over one series or several.
/// The aggregates are those SQL answers, the fills null and none, the buckets without an
/// offset: with no lower bound, influxd 1.6 answers the other shapes with buckets at the
/// minimum time, 1677-09-21 (docs/influxql.md, "influxd 1.6 quirks"); the select tests
/// check them against the same statement given its first bucket as lower bound.
fn first_buckets(g: &mut Gen) -> (String, bool) {
    let m = g.measurement();
    let f = g.one(m.fields);
    let name = g.field_name(f);
    let numeric = f.kind.numeric();
    let func = if numeric {
        g.pick(&[
            "count", "mean", "sum", "min", "max", "first", "last", "spread",
        ])
    } else {
        g.pick(&["count", "first", "last"])
    };
    let call = format!("{func}({name})");
    let end = g.maybe(0.7, |g| {
        let end = g.instant(5, SPAN_S / 60 + 5);
        let end = g.time_literal(end);
        format!("time < {end}")
    });
    let tags = g.maybe(0.3, |g| g.tag_cond(m));
    let filter = g.where_clause(&[end, tags]);
    let mut group = format!("time({})", g.pick(INTERVALS));
    group.push_str(&g.maybe(0.25, |g| format!(", {}", g.group_tags(m))));
    let fill = g.pick(&["", " fill(null)", " fill(none)"]);
    let n = g.int(1, 12);
    let offset = g.maybe(0.3, |g| format!(" OFFSET {}", g.int(1, 5)));
    ok(format!(
        "SELECT {call} FROM {}{filter} GROUP BY {group}{fill} LIMIT {n}{offset}",
        m.name
    ))
}

fn order_limit(g: &mut Gen) -> (String, bool) {
    let (m, f) = g.numeric();
    let (n, offset) = (g.int(1, 10), g.int(0, 5));
    let tail = format!(" ORDER BY time DESC LIMIT {n} OFFSET {offset}");
    let time = g.time_range();
    if g.chance(0.5) {
        let call = aggregate_call(g, f);
        let group = g.group_time();
        let fill = g.fill(true);
        let from = m.name;
        return ok(format!(
            "SELECT {call} FROM {from} WHERE {time} GROUP BY {group}{fill}{tail}"
        ));
    }
    let group = maybe_group_tags(g, m, 0.4);
    ok(format!(
        "SELECT {} FROM {} WHERE {time}{group}{tail}",
        f.name, m.name
    ))
}
