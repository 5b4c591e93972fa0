//! SELECT statements: real TSBS and Grafana queries and every clause, compared as whole
//! syntax trees.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use strata_influxql::{
    BinaryOp::*, Dimension, Expr, Fill, MeasurementName, MeasurementRef, SelectStatement, Source,
    VarType,
};

/// `time >= 'a' and time < 'b'`, TSBS's time range.
fn time_range(from: &str, to: &str) -> (Expr, Expr) {
    (
        bin(GtEq, var("time"), string(from)),
        bin(Lt, var("time"), string(to)),
    )
}

#[test]
fn tsbs_cpu_max_all_with_or_of_hosts() {
    let q = "SELECT max(usage_user),max(usage_system) from cpu where (hostname = 'host_249' or \
             hostname = 'host_1') and time >= '2016-01-01T09:01:37Z' and time < \
             '2016-01-01T17:01:37Z' group by time(1h)";
    let hosts = paren(bin(
        Or,
        bin(Eq, var("hostname"), string("host_249")),
        bin(Eq, var("hostname"), string("host_1")),
    ));
    let (ge, lt) = time_range("2016-01-01T09:01:37Z", "2016-01-01T17:01:37Z");
    let mut want = base_select(
        vec![
            field(call("max", vec![var("usage_user")])),
            field(call("max", vec![var("usage_system")])),
        ],
        vec![from("cpu")],
    );
    want.condition = Some(bin(And, bin(And, hosts, ge), lt));
    want.dimensions = vec![Dimension::Time {
        interval_ns: 3600 * SEC,
        offset_ns: 0,
    }];
    assert_eq!(select(q), want);
}

#[test]
fn tsbs_high_cpu_all() {
    let q = "SELECT * from cpu where usage_user > 90.0 and time >= '2016-01-01T00:00:00Z' and \
             time < '2016-01-01T12:00:00Z'";
    let (ge, lt) = time_range("2016-01-01T00:00:00Z", "2016-01-01T12:00:00Z");
    let mut want = base_select(vec![field(Expr::Wildcard(None))], vec![from("cpu")]);
    want.condition = Some(bin(
        And,
        bin(And, bin(Gt, var("usage_user"), Expr::Float(90.0)), ge),
        lt,
    ));
    assert_eq!(select(q), want);
}

#[test]
fn tsbs_lastpoint() {
    let q = r#"SELECT * from cpu group by "hostname" order by time desc limit 1"#;
    let mut want = base_select(vec![field(Expr::Wildcard(None))], vec![from("cpu")]);
    want.dimensions = vec![Dimension::Tag("hostname".into())];
    want.order_desc = true;
    want.limit = Some(1);
    assert_eq!(select(q), want);
}

#[test]
fn tsbs_groupby_orderby_limit() {
    let q = "SELECT max(usage_user) from cpu where time < '2016-01-01T10:00:00Z' group by \
             time(1m) order by time desc limit 5";
    let mut want = base_select(
        vec![field(call("max", vec![var("usage_user")]))],
        vec![from("cpu")],
    );
    want.condition = Some(bin(Lt, var("time"), string("2016-01-01T10:00:00Z")));
    want.dimensions = vec![Dimension::Time {
        interval_ns: 60 * SEC,
        offset_ns: 0,
    }];
    want.order_desc = true;
    want.limit = Some(5);
    assert_eq!(select(q), want);
}

#[test]
fn tsbs_double_groupby_mean() {
    let q = "SELECT mean(usage_user) from cpu where time >= '2016-01-01T00:00:00Z' and time < \
             '2016-01-01T12:00:00Z' group by time(1h),hostname";
    let (ge, lt) = time_range("2016-01-01T00:00:00Z", "2016-01-01T12:00:00Z");
    let mut want = base_select(
        vec![field(call("mean", vec![var("usage_user")]))],
        vec![from("cpu")],
    );
    want.condition = Some(bin(And, ge, lt));
    want.dimensions = vec![
        Dimension::Time {
            interval_ns: 3600 * SEC,
            offset_ns: 0,
        },
        Dimension::Tag("hostname".into()),
    ];
    assert_eq!(select(q), want);
}

#[test]
fn grafana_time_series_query() {
    let q = r#"SELECT mean("f") FROM "m" WHERE ("host" =~ /^a$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(10s), "host" fill(null)"#;
    let mut want = base_select(vec![field(call("mean", vec![var("f")]))], vec![from("m")]);
    want.condition = Some(bin(
        And,
        bin(
            And,
            paren(bin(RegexMatch, var("host"), regex("^a$"))),
            bin(GtEq, var("time"), Expr::Duration(1_700_000_000_000_000_000)),
        ),
        bin(LtEq, var("time"), Expr::Duration(1_700_003_600_000_000_000)),
    ));
    want.dimensions = vec![
        Dimension::Time {
            interval_ns: 10 * SEC,
            offset_ns: 0,
        },
        Dimension::Tag("host".into()),
    ];
    want.fill = Fill::Null;
    assert_eq!(select(q), want);
}

#[test]
fn every_clause_in_order() {
    let q = "SELECT mean(v) AS m FROM cpu WHERE host = 'a' GROUP BY time(5m, -1m), * fill(previous) \
             ORDER BY time ASC LIMIT 10 OFFSET 2 SLIMIT 3 SOFFSET 4 tz('America/Chicago')";
    let want = SelectStatement {
        fields: vec![aliased(call("mean", vec![var("v")]), "m")],
        sources: vec![from("cpu")],
        condition: Some(bin(Eq, var("host"), string("a"))),
        dimensions: vec![
            Dimension::Time {
                interval_ns: 300 * SEC,
                offset_ns: -60 * SEC,
            },
            Dimension::Wildcard,
        ],
        fill: Fill::Previous,
        order_desc: false,
        limit: Some(10),
        offset: Some(2),
        slimit: Some(3),
        soffset: Some(4),
        timezone: Some("America/Chicago".into()),
    };
    assert_eq!(select(q), want);
}

#[test]
fn fill_options() {
    let cases = [
        ("null", Fill::Null),
        ("NONE", Fill::None),
        ("previous", Fill::Previous),
        ("linear", Fill::Linear),
        ("0", Fill::Integer(0)),
        ("-7", Fill::Integer(-7)),
        ("1.5", Fill::Float(1.5)),
        ("-0.25", Fill::Float(-0.25)),
    ];
    for (arg, fill) in cases {
        let q = format!("SELECT mean(v) FROM m GROUP BY time(1m) fill({arg})");
        assert_eq!(select(&q).fill, fill, "{q}");
    }
    // fill() without GROUP BY is accepted, as InfluxDB does.
    assert_eq!(select("SELECT v FROM m fill(none)").fill, Fill::None);
}

#[test]
fn group_by_dimensions() {
    let s = select(r#"SELECT v FROM m GROUP BY time(1h, 15m), host, "rack id", /^dc/, *"#);
    assert_eq!(
        s.dimensions,
        vec![
            Dimension::Time {
                interval_ns: 3600 * SEC,
                offset_ns: 900 * SEC,
            },
            Dimension::Tag("host".into()),
            Dimension::Tag("rack id".into()),
            Dimension::Regex("^dc".into()),
            Dimension::Wildcard,
        ]
    );
    let s = select("SELECT v FROM m GROUP BY TIME(1h30m)");
    assert_eq!(
        s.dimensions,
        vec![Dimension::Time {
            interval_ns: 5400 * SEC,
            offset_ns: 0,
        }]
    );
}

#[test]
fn order_by_time_forms() {
    assert!(!select("SELECT v FROM m ORDER BY time").order_desc);
    assert!(!select("SELECT v FROM m ORDER BY time asc").order_desc);
    assert!(select("SELECT v FROM m ORDER BY TIME DESC").order_desc);
    assert!(select(r#"SELECT v FROM m ORDER BY "time" DESC"#).order_desc);
}

#[test]
fn wildcards_and_casts_in_fields() {
    let s = select(
        "SELECT *, *::field, *::tag, usage::float, host::tag, n::integer, u::unsigned, s::string, b::boolean, f::field FROM m",
    );
    let fields: Vec<Expr> = s.fields.into_iter().map(|f| f.expr).collect();
    assert_eq!(
        fields,
        vec![
            Expr::Wildcard(None),
            Expr::Wildcard(Some(VarType::Field)),
            Expr::Wildcard(Some(VarType::Tag)),
            var_cast("usage", VarType::Float),
            var_cast("host", VarType::Tag),
            var_cast("n", VarType::Integer),
            var_cast("u", VarType::Unsigned),
            var_cast("s", VarType::String),
            var_cast("b", VarType::Boolean),
            var_cast("f", VarType::Field),
        ]
    );
}

#[test]
fn regex_fields_and_call_arguments() {
    let s = select(
        "SELECT /usage/, count(*), mean(/usage/), derivative(mean(x), 1s), \
         percentile(v, 95), top(v, host, 3), COUNT(DISTINCT host), DISTINCT region, now() FROM m",
    );
    let fields: Vec<Expr> = s.fields.into_iter().map(|f| f.expr).collect();
    assert_eq!(
        fields,
        vec![
            regex("usage"),
            call("count", vec![Expr::Wildcard(None)]),
            call("mean", vec![regex("usage")]),
            call(
                "derivative",
                vec![call("mean", vec![var("x")]), Expr::Duration(SEC)]
            ),
            call("percentile", vec![var("v"), Expr::Integer(95)]),
            call("top", vec![var("v"), var("host"), Expr::Integer(3)]),
            call("count", vec![call("distinct", vec![var("host")])]),
            call("distinct", vec![var("region")]),
            call("now", vec![]),
        ]
    );
}

#[test]
fn function_names_lowercased_var_refs_kept() {
    let s = select(r#"SELECT MEAN("Usage User"), Max(CPU) AS "Peak" FROM m"#);
    assert_eq!(
        s.fields,
        vec![
            field(call("mean", vec![var("Usage User")])),
            aliased(call("max", vec![var("CPU")]), "Peak"),
        ]
    );
}

#[test]
fn arithmetic_precedence_and_associativity() {
    let cond = select("SELECT v FROM m WHERE a + b * c - d / e % f = 1 OR x AND y")
        .condition
        .unwrap();
    let arith = bin(
        Sub,
        bin(Add, var("a"), bin(Mul, var("b"), var("c"))),
        bin(Mod, bin(Div, var("d"), var("e")), var("f")),
    );
    let want = bin(
        Or,
        bin(Eq, arith, Expr::Integer(1)),
        bin(And, var("x"), var("y")),
    );
    assert_eq!(cond, want);

    let cond = select("SELECT v FROM m WHERE a | b & c ^ d")
        .condition
        .unwrap();
    let want = bin(
        BitXor,
        bin(BitOr, var("a"), bin(BitAnd, var("b"), var("c"))),
        var("d"),
    );
    assert_eq!(cond, want);

    let cond = select("SELECT v FROM m WHERE a - b - c").condition.unwrap();
    assert_eq!(cond, bin(Sub, bin(Sub, var("a"), var("b")), var("c")));
}

#[test]
fn every_comparison_operator() {
    let ops = [
        ("=", Eq),
        ("!=", NotEq),
        ("<>", NotEq),
        ("<", Lt),
        ("<=", LtEq),
        (">", Gt),
        (">=", GtEq),
    ];
    for (text, op) in ops {
        let q = format!("SELECT v FROM m WHERE a {text} 1");
        assert_eq!(
            select(&q).condition,
            Some(bin(op, var("a"), Expr::Integer(1))),
            "{q}"
        );
    }
    let cond = select(r"SELECT v FROM m WHERE a =~ /x\/y/ AND b !~ /z/").condition;
    assert_eq!(
        cond,
        Some(bin(
            And,
            bin(RegexMatch, var("a"), regex("x/y")),
            bin(RegexNotMatch, var("b"), regex("z")),
        ))
    );
}

#[test]
fn unary_minus() {
    let s = select(
        "SELECT -1, -1.5, -5m, - 2, -a, -(b + 1), --comment\n3 FROM m WHERE time > now() - 1h",
    );
    let fields: Vec<Expr> = s.fields.into_iter().map(|f| f.expr).collect();
    assert_eq!(
        fields,
        vec![
            Expr::Integer(-1),
            Expr::Float(-1.5),
            Expr::Duration(-300 * SEC),
            Expr::Integer(-2),
            bin(Mul, Expr::Integer(-1), var("a")),
            bin(
                Mul,
                Expr::Integer(-1),
                paren(bin(Add, var("b"), Expr::Integer(1)))
            ),
            Expr::Integer(3),
        ]
    );
    assert_eq!(
        s.condition,
        Some(bin(
            Gt,
            var("time"),
            bin(Sub, call("now", vec![]), Expr::Duration(3600 * SEC))
        ))
    );
    let cond = select("SELECT v FROM m WHERE a > -9223372036854775808 AND b = 1-2").condition;
    assert_eq!(
        cond,
        Some(bin(
            And,
            bin(Gt, var("a"), Expr::Integer(i64::MIN)),
            bin(Eq, var("b"), bin(Sub, Expr::Integer(1), Expr::Integer(2))),
        ))
    );
}

#[test]
fn literals() {
    let cond = select("SELECT v FROM m WHERE a = true AND b = FALSE AND d = 0.5 AND e = .5")
        .condition
        .unwrap();
    let want = bin(
        And,
        bin(
            And,
            bin(
                And,
                bin(Eq, var("a"), Expr::Boolean(true)),
                bin(Eq, var("b"), Expr::Boolean(false)),
            ),
            bin(Eq, var("d"), Expr::Float(0.5)),
        ),
        bin(Eq, var("e"), Expr::Float(0.5)),
    );
    assert_eq!(cond, want);
}

#[test]
fn dotted_var_ref() {
    let cond = select(r#"SELECT v FROM m WHERE "m"."host" = 'a'"#).condition;
    assert_eq!(cond, Some(bin(Eq, var("m.host"), string("a"))));
}

#[test]
fn qualified_sources() {
    let s = select(
        r#"SELECT v FROM cpu, "my db"."autogen"."cpu load", db..mem, rp.disk, /^net/, db.rp./x\/y/, db../z/"#,
    );
    let mref = |db: Option<&str>, rp: Option<&str>, name: MeasurementName| {
        Source::Measurement(MeasurementRef {
            database: db.map(String::from),
            retention_policy: rp.map(String::from),
            name,
        })
    };
    let n = |s: &str| MeasurementName::Name(s.into());
    let r = |s: &str| MeasurementName::Regex(s.into());
    assert_eq!(
        s.sources,
        vec![
            mref(None, None, n("cpu")),
            mref(Some("my db"), Some("autogen"), n("cpu load")),
            mref(Some("db"), None, n("mem")),
            mref(None, Some("rp"), n("disk")),
            mref(None, None, r("^net")),
            mref(Some("db"), Some("rp"), r("x/y")),
            mref(Some("db"), None, r("z")),
        ]
    );
}

#[test]
fn subqueries() {
    let s = select(
        "SELECT max(m) FROM (SELECT mean(v) AS m FROM cpu GROUP BY time(1m), host), mem \
         WHERE time > 0",
    );
    let mut inner = base_select(
        vec![aliased(call("mean", vec![var("v")]), "m")],
        vec![from("cpu")],
    );
    inner.dimensions = vec![
        Dimension::Time {
            interval_ns: 60 * SEC,
            offset_ns: 0,
        },
        Dimension::Tag("host".into()),
    ];
    let mut want = base_select(
        vec![field(call("max", vec![var("m")]))],
        vec![Source::Subquery(Box::new(inner)), from("mem")],
    );
    want.condition = Some(bin(Gt, var("time"), Expr::Integer(0)));
    assert_eq!(s, want);

    // Nested twice.
    let s = select("SELECT a FROM (SELECT a FROM (SELECT a FROM x))");
    let innermost = base_select(vec![field(var("a"))], vec![from("x")]);
    let middle = base_select(
        vec![field(var("a"))],
        vec![Source::Subquery(Box::new(innermost))],
    );
    let want = base_select(
        vec![field(var("a"))],
        vec![Source::Subquery(Box::new(middle))],
    );
    assert_eq!(s, want);
}

#[test]
fn division_versus_regex() {
    // After an operand `/` divides; where an operand is expected it starts a regex.
    let s = select("SELECT a / 2 / b, /re/ FROM m WHERE x = /y/");
    assert_eq!(
        s.fields,
        vec![
            field(bin(Div, bin(Div, var("a"), Expr::Integer(2)), var("b"))),
            field(regex("re")),
        ]
    );
    assert_eq!(s.condition, Some(bin(Eq, var("x"), regex("y"))));
}

#[test]
fn keywords_case_insensitive() {
    let a = select("select v from m where a = 1 group by time(1m) order by time desc limit 1");
    let b = select("SeLeCt v FrOm m WhErE a = 1 GrOuP bY time(1m) OrDeR bY time DeSc LiMiT 1");
    assert_eq!(a, b);
}
