//! InfluxQL as InfluxDB prints it (Go's `String()` of its syntax tree): for the warning it
//! gives when a statement that writes comes by `GET`, and for error messages that quote a
//! condition.

use strata_influxql::{
    BinaryOp, DeleteSpec, Expr, MeasurementName, MeasurementRef, VarType, is_keyword,
};

/// `DROP SERIES [FROM …] [WHERE …]` as InfluxDB prints it.
pub(crate) fn drop_series(spec: &DeleteSpec) -> String {
    format!("DROP SERIES{}", delete_spec(spec))
}

/// ` FROM a, /b/ WHERE …`: what follows `DELETE` or `DROP SERIES`.
fn delete_spec(spec: &DeleteSpec) -> String {
    let mut text = String::new();
    if !spec.sources.is_empty() {
        let sources: Vec<String> = spec.sources.iter().map(measurement).collect();
        text.push_str(" FROM ");
        text.push_str(&sources.join(", "));
    }
    if let Some(condition) = &spec.condition {
        text.push_str(" WHERE ");
        text.push_str(&expr(condition));
    }
    text
}

/// `db.rp.name`, `db..name`, `rp.name`, `/re/`.
fn measurement(m: &MeasurementRef) -> String {
    let mut text = String::new();
    if let Some(db) = &m.database {
        text.push_str(&quote_ident(db));
        text.push('.');
    }
    if let Some(rp) = &m.retention_policy {
        text.push_str(&quote_ident(rp));
    }
    if m.database.is_some() || m.retention_policy.is_some() {
        text.push('.');
    }
    match &m.name {
        MeasurementName::Name(name) => text.push_str(&quote_ident(name)),
        MeasurementName::Regex(re) => text.push_str(&regex(re)),
    }
    text
}

/// An expression as InfluxQL prints it: operators spaced, floats with three decimals,
/// durations in their largest whole unit, `-x` as `-1 * x` (as it is parsed).
pub(crate) fn expr(expr: &Expr) -> String {
    match expr {
        Expr::VarRef { name, cast } => match cast {
            Some(cast) => format!("{}::{}", quote_ident(name), cast_name(*cast)),
            None => quote_ident(name),
        },
        Expr::Wildcard(cast) => match cast {
            Some(cast) => format!("*::{}", cast_name(*cast)),
            None => "*".into(),
        },
        Expr::Call { name, args } => {
            let args: Vec<String> = args.iter().map(self::expr).collect();
            format!("{name}({})", args.join(", "))
        }
        Expr::Binary { op, lhs, rhs } => {
            format!("{} {} {}", self::expr(lhs), op_text(*op), self::expr(rhs))
        }
        Expr::Paren(inner) => format!("({})", self::expr(inner)),
        Expr::Integer(v) => v.to_string(),
        Expr::Float(v) => format!("{v:.3}"),
        Expr::String(s) => format!(
            "'{}'",
            s.replace('\\', "\\\\")
                .replace('\n', "\\n")
                .replace('\'', "\\'")
        ),
        Expr::Boolean(b) => b.to_string(),
        Expr::Duration(d) => influxql_duration(*d),
        Expr::Regex(re) => regex(re),
    }
}

fn regex(re: &str) -> String {
    format!("/{}/", re.replace('/', "\\/"))
}

fn cast_name(cast: VarType) -> &'static str {
    match cast {
        VarType::Field => "field",
        VarType::Tag => "tag",
        VarType::Float => "float",
        VarType::Integer => "integer",
        VarType::Unsigned => "unsigned",
        VarType::String => "string",
        VarType::Boolean => "boolean",
    }
}

pub(crate) fn op_text(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Mod => "%",
        BinaryOp::BitAnd => "&",
        BinaryOp::BitOr => "|",
        BinaryOp::BitXor => "^",
        BinaryOp::Eq => "=",
        BinaryOp::NotEq => "!=",
        BinaryOp::Lt => "<",
        BinaryOp::LtEq => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::GtEq => ">=",
        BinaryOp::RegexMatch => "=~",
        BinaryOp::RegexNotMatch => "!~",
        BinaryOp::And => "AND",
        BinaryOp::Or => "OR",
    }
}

/// An identifier as InfluxQL prints it: bare when it may be (letters, digits and `_`, not
/// starting with a digit, not a keyword), else double-quoted.
pub(crate) fn quote_ident(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !is_keyword(name);
    if bare {
        name.to_owned()
    } else {
        let escaped = name
            .replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('"', "\\\"");
        format!("\"{escaped}\"")
    }
}

/// A duration literal as InfluxQL prints it: in the largest unit that divides it (`1w`,
/// `90m`, `1500ms`, `1u`, `1ns`).
fn influxql_duration(nanos: i64) -> String {
    const UNITS: [(i64, &str); 7] = [
        (604_800_000_000_000, "w"),
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "u"),
    ];
    if nanos == 0 {
        return "0s".into();
    }
    UNITS
        .iter()
        .find(|(unit, _)| nanos % unit == 0)
        .map_or_else(
            || format!("{nanos}ns"),
            |(unit, name)| format!("{}{name}", nanos / unit),
        )
}

#[cfg(test)]
mod tests {
    use strata_influxql::Statement;

    use super::drop_series;

    fn printed(text: &str) -> String {
        let query = strata_influxql::parse_query(text, &Default::default()).unwrap();
        match query.statements.into_iter().next().unwrap() {
            Statement::DropSeries(spec) => drop_series(&spec),
            other => panic!("not DROP SERIES: {other:?}"),
        }
    }

    /// Each expected text is influxd 1.6.7's, from its warning for the same statement.
    #[test]
    fn drop_series_prints_as_influxdb_does() {
        for (input, expected) in [
            ("DROP SERIES FROM x", "DROP SERIES FROM x"),
            ("DROP SERIES WHERE k = 'z'", "DROP SERIES WHERE k = 'z'"),
            (
                r#"DROP SERIES FROM "my cpu", /a\/b/, "select", x WHERE (host = 'a\'b' OR x != 'y\n') AND n =~ /x\/y/ AND z = 1.5 AND w = 3 AND v = true AND "from" = 'x' AND h::tag = 'x'"#,
                r#"DROP SERIES FROM "my cpu", /a\/b/, "select", x WHERE (host = 'a\'b' OR x != 'y\n') AND n =~ /x\/y/ AND z = 1.500 AND w = 3 AND v = true AND "from" = 'x' AND h::tag = 'x'"#,
            ),
            (
                "DROP SERIES FROM x WHERE a = 10s OR b = -5m OR c = 90m OR d = 1500ms OR e = 7d",
                "DROP SERIES FROM x WHERE a = 10s OR b = -5m OR c = 90m OR d = 1500ms OR e = 1w",
            ),
            (
                "DROP SERIES FROM x WHERE f = -1.25 OR h = 0.0001 OR j = now() OR l = 1u OR m = 1ns OR n = 1h30m",
                "DROP SERIES FROM x WHERE f = -1.250 OR h = 0.000 OR j = now() OR l = 1u OR m = 1ns OR n = 90m",
            ),
            (
                "DROP SERIES FROM x WHERE k = -z",
                "DROP SERIES FROM x WHERE k = -1 * z",
            ),
            (
                r#"DROP SERIES FROM x WHERE "a b" = 'x' OR "Select" = 'x' OR "1a" = 'x' OR "a\"b" = 'x' OR "" = 'x'"#,
                r#"DROP SERIES FROM x WHERE "a b" = 'x' OR "Select" = 'x' OR "1a" = 'x' OR "a\"b" = 'x' OR "" = 'x'"#,
            ),
        ] {
            assert_eq!(printed(input), expected, "{input}");
        }
    }
}
