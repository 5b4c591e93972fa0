//! The `SELECT` list: wildcards expanded against the measurement's schema, column names as
//! InfluxDB gives them, and each projection split into an optional transformation
//! (`derivative(…)`, …) over an expression of fields (raw query) or of aggregate calls.

use std::sync::Arc;

use strata_influxql::{Expr, VarType};
use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldType;

use super::regex::Regex;

/// Aggregates and selectors: they fold the points of a bucket into one value.
pub(super) const AGGREGATES: &[&str] = &[
    "count",
    "distinct",
    "integral",
    "mean",
    "median",
    "mode",
    "spread",
    "stddev",
    "sum",
    "first",
    "last",
    "max",
    "min",
    "percentile",
    "sample",
    "top",
    "bottom",
];

/// Transformations: they map a series of values (raw, or one per bucket) to another.
pub(super) const TRANSFORMS: &[&str] = &[
    "derivative",
    "non_negative_derivative",
    "difference",
    "non_negative_difference",
    "moving_average",
    "cumulative_sum",
    "elapsed",
];

/// The transformations that read the point (or bucket) before each one: all but
/// `cumulative_sum`.
pub(super) const READ_PREVIOUS: &[&str] = &[
    "derivative",
    "non_negative_derivative",
    "difference",
    "non_negative_difference",
    "moving_average",
    "elapsed",
];

/// Scalar math functions, applied to each value.
pub(super) const MATH: &[&str] = &[
    "abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "exp", "floor", "ln", "log", "log2",
    "log10", "pow", "round", "sin", "sqrt", "tan",
];

/// One output column after `time`.
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    /// Its column name (alias, or InfluxDB's derived name, made unique).
    pub name: String,
    /// `derivative(inner, args…)` and the like, applied over the series of `expr`.
    pub transform: Option<Transform>,
    /// The value per row: fields, tags and literals (raw), or aggregate calls (grouped).
    pub expr: Expr,
}

/// The analysed `SELECT` list.
#[derive(Debug)]
pub(crate) struct Projections {
    /// The columns after `time`.
    pub columns: Vec<Projection>,
    /// Whether any column aggregates.
    pub aggregate: bool,
    /// Whether an aggregate query also reads fields or tags outside any aggregate (a
    /// selector's point, `top`'s other columns).
    pub bare: bool,
    /// The answer's column names: `time` (or `SELECT time AS t`'s alias), then the
    /// columns'. One allocation shared by every series (`GROUP BY host` has one per host).
    pub names: Arc<[String]>,
}

/// Expands the select list against `schema`; `grouped_tags` are left out of `*`.
pub(super) fn analyse(
    fields: &[strata_influxql::Field],
    schema: &TableSchema,
    grouped_tags: &[String],
) -> Result<Projections, String> {
    let mut columns: Vec<Projection> = Vec::new();
    let mut time_name = "time".to_owned();
    for field in fields {
        check_functions(&field.expr)?;
        match &field.expr {
            Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => {
                if let Some(alias) = &field.alias {
                    time_name.clone_from(alias);
                }
            }
            Expr::Wildcard(cast) => {
                for name in wildcard_columns(schema, grouped_tags, *cast, None) {
                    columns.push(plain(&name));
                }
            }
            Expr::Regex(re) => {
                let re = Regex::new(re)?;
                for name in wildcard_columns(schema, grouped_tags, None, Some(&re)) {
                    columns.push(plain(&name));
                }
            }
            Expr::Call { name, args }
                if has_wildcard_arg(args) && matches!(name.as_str(), "top" | "bottom") =>
            {
                return Err(format!(
                    "expected first argument to be a field in {name}(), found *"
                ));
            }
            Expr::Call { name, args } if has_wildcard_arg(args) && name == "distinct" => {
                return Err("expected field argument in distinct()".into());
            }
            Expr::Call { name, args } if has_wildcard_arg(args) => {
                expand_call(name, args, schema, field.alias.as_deref(), &mut columns)?;
            }
            expr => {
                let (transform, inner) = split_transform(expr)?;
                let name = field.alias.clone().unwrap_or_else(|| column_name(expr));
                columns.push(Projection {
                    name,
                    transform,
                    expr: inner,
                });
                // `top(field, tag…, N)` shows the tags of its points after it.
                if let Expr::Call { name, args } = expr
                    && matches!(name.as_str(), "top" | "bottom")
                    && args.len() > 2
                {
                    for arg in &args[1..args.len() - 1] {
                        if let Expr::VarRef { name, .. } = arg {
                            columns.push(plain(name));
                        }
                    }
                }
            }
        }
    }
    if columns.is_empty() {
        return Err("statement must have at least one field in select clause".into());
    }
    let aggregate = columns.iter().any(|c| contains_aggregate(&c.expr));
    let bare = aggregate && columns.iter().any(|c| has_bare_var(&c.expr));
    if !aggregate
        && columns
            .iter()
            .all(|c| only_tags(&c.expr, schema) && c.transform.is_none())
    {
        return Err("statement must have at least one field in select clause".into());
    }
    dedupe_names(&mut columns);
    let names = std::iter::once(time_name)
        .chain(columns.iter().map(|c| c.name.clone()))
        .collect();
    let projections = Projections {
        columns,
        aggregate,
        bare,
        names,
    };
    if aggregate {
        super::selector::check(&projections, bare)?;
    }
    Ok(projections)
}

fn plain(name: &str) -> Projection {
    Projection {
        name: name.to_owned(),
        transform: None,
        expr: Expr::VarRef {
            name: name.to_owned(),
            cast: None,
        },
    }
}

/// The names `*` (or `/re/`) stands for: fields, and tags not grouped by, sorted by name.
fn wildcard_columns(
    schema: &TableSchema,
    grouped_tags: &[String],
    cast: Option<VarType>,
    re: Option<&Regex>,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if cast != Some(VarType::Tag) {
        names.extend(schema.fields.iter().map(|f| f.name.clone()));
    }
    if cast != Some(VarType::Field) {
        names.extend(
            schema
                .tags
                .iter()
                .filter(|t| !grouped_tags.contains(t))
                .cloned(),
        );
    }
    names.retain(|n| re.is_none_or(|re| re.is_match(n)));
    names.sort();
    names.dedup();
    names
}

fn has_wildcard_arg(args: &[Expr]) -> bool {
    matches!(args.first(), Some(Expr::Wildcard(_) | Expr::Regex(_)))
}

/// `count(*)`, `mean(/usage/)`: one column per matching field, named `count_<field>`;
/// functions of numbers only take numeric fields.
fn expand_call(
    function: &str,
    args: &[Expr],
    schema: &TableSchema,
    alias: Option<&str>,
    out: &mut Vec<Projection>,
) -> Result<(), String> {
    let re = match args.first() {
        Some(Expr::Regex(re)) => Some(Regex::new(re)?),
        _ => None,
    };
    let numeric_only = !matches!(
        function,
        "count" | "distinct" | "first" | "last" | "mode" | "sample"
    );
    let mut fields: Vec<_> = schema
        .fields
        .iter()
        .filter(|f| re.as_ref().is_none_or(|re| re.is_match(&f.name)))
        .filter(|f| {
            !numeric_only
                || matches!(
                    f.field_type,
                    FieldType::Float | FieldType::Integer | FieldType::Unsigned
                )
        })
        .collect();
    fields.sort_by(|a, b| a.name.cmp(&b.name));
    for field in fields {
        let mut call_args = args.to_vec();
        call_args[0] = Expr::VarRef {
            name: field.name.clone(),
            cast: None,
        };
        let expr = Expr::Call {
            name: function.to_owned(),
            args: call_args,
        };
        let (transform, inner) = split_transform(&expr)?;
        let prefix = alias.unwrap_or(function);
        out.push(Projection {
            name: format!("{prefix}_{}", field.name),
            transform,
            expr: inner,
        });
    }
    Ok(())
}

/// A transformation: its function and its arguments after the first.
pub(crate) type Transform = (String, Vec<Expr>);

/// `derivative(mean(x), 1s)` → (`derivative`, [`1s`]) over `mean(x)`.
fn split_transform(expr: &Expr) -> Result<(Option<Transform>, Expr), String> {
    match expr {
        Expr::Call { name, args } if TRANSFORMS.contains(&name.as_str()) => {
            let Some((inner, rest)) = args.split_first() else {
                return Err(format!(
                    "invalid number of arguments for {name}, expected at least 1, got 0"
                ));
            };
            if let Expr::Call {
                name: inner_name, ..
            } = inner
                && TRANSFORMS.contains(&inner_name.as_str())
            {
                return Err(format!("{name} cannot be applied to {inner_name}"));
            }
            Ok((Some((name.clone(), rest.to_vec())), inner.clone()))
        }
        other => Ok((None, other.clone())),
    }
}

/// InfluxDB's name for an unaliased column: a variable's name, a call's function name,
/// the names of a binary expression's sides joined by `_`.
pub(super) fn column_name(expr: &Expr) -> String {
    match expr {
        Expr::VarRef { name, .. } => name.clone(),
        Expr::Call { name, .. } => name.clone(),
        Expr::Paren(inner) => column_name(inner),
        Expr::Binary { lhs, rhs, .. } => {
            let (l, r) = (column_name(lhs), column_name(rhs));
            match (l.is_empty(), r.is_empty()) {
                (false, false) => format!("{l}_{r}"),
                (false, true) => l,
                _ => r,
            }
        }
        _ => String::new(),
    }
}

/// Second and later uses of a name get `_1`, `_2`, … as InfluxDB does.
fn dedupe_names(columns: &mut [Projection]) {
    let mut seen: Vec<String> = Vec::with_capacity(columns.len());
    // Per name, the last suffix given to it: every smaller one is taken already, so the
    // search for a free one starts after it (ten `max(…)` columns try ten names, not 55).
    let mut last_suffix: Vec<(String, usize)> = Vec::new();
    for column in columns.iter_mut() {
        if !seen.contains(&column.name) {
            seen.push(column.name.clone());
            continue;
        }
        let at = match last_suffix
            .iter()
            .position(|(base, _)| *base == column.name)
        {
            Some(at) => at,
            None => {
                last_suffix.push((column.name.clone(), 0));
                last_suffix.len() - 1
            }
        };
        let (base, n) = &mut last_suffix[at];
        let name = loop {
            *n += 1;
            let candidate = format!("{base}_{n}");
            if !seen.contains(&candidate) {
                break candidate;
            }
        };
        seen.push(name.clone());
        column.name = name;
    }
}

/// How many arguments a function takes (at least, at most).
fn arity(name: &str) -> (usize, usize) {
    match name {
        "percentile" | "sample" | "moving_average" | "atan2" | "log" | "pow" => (2, 2),
        "top" | "bottom" => (2, usize::MAX),
        "integral" | "derivative" | "non_negative_derivative" | "elapsed" => (1, 2),
        _ => (1, 1),
    }
}

/// Every function called is one InfluxQL has, with as many arguments as it takes.
fn check_functions(expr: &Expr) -> Result<(), String> {
    match expr {
        Expr::Call { name, args } => {
            let known = [AGGREGATES, TRANSFORMS, MATH]
                .iter()
                .any(|list| list.contains(&name.as_str()));
            if !known {
                return Err(format!("undefined function {name}()"));
            }
            let (min, max) = arity(name);
            let got = args.len();
            if got < min || got > max {
                return Err(if min == max {
                    format!("invalid number of arguments for {name}, expected {min}, got {got}")
                } else if max == usize::MAX {
                    format!(
                        "invalid number of arguments for {name}, expected at least {min}, got {got}"
                    )
                } else {
                    format!(
                        "invalid number of arguments for {name}, expected at least {min} but no more than {max}, got {got}"
                    )
                });
            }
            args.iter().try_for_each(check_functions)
        }
        Expr::Binary { lhs, rhs, .. } => {
            check_functions(lhs)?;
            check_functions(rhs)
        }
        Expr::Paren(inner) => check_functions(inner),
        _ => Ok(()),
    }
}

/// Whether `expr` calls an aggregate or selector.
pub(super) fn contains_aggregate(expr: &Expr) -> bool {
    calls_any(expr, AGGREGATES)
}

/// Whether `expr` calls one of the functions `names`, at any depth.
pub(super) fn calls_any(expr: &Expr, names: &[&str]) -> bool {
    match expr {
        Expr::Call { name, args } => {
            names.contains(&name.as_str()) || args.iter().any(|a| calls_any(a, names))
        }
        Expr::Binary { lhs, rhs, .. } => calls_any(lhs, names) || calls_any(rhs, names),
        Expr::Paren(inner) => calls_any(inner, names),
        _ => false,
    }
}

/// Whether `expr` reads a variable outside any aggregate call.
fn has_bare_var(expr: &Expr) -> bool {
    match expr {
        Expr::VarRef { .. } | Expr::Wildcard(_) | Expr::Regex(_) => true,
        Expr::Call { name, args } => {
            !AGGREGATES.contains(&name.as_str()) && args.iter().any(has_bare_var)
        }
        Expr::Binary { lhs, rhs, .. } => has_bare_var(lhs) || has_bare_var(rhs),
        Expr::Paren(inner) => has_bare_var(inner),
        _ => false,
    }
}

/// Whether `expr` reads only tags (and literals).
fn only_tags(expr: &Expr, schema: &TableSchema) -> bool {
    match expr {
        Expr::VarRef { name, cast } => {
            *cast == Some(VarType::Tag)
                || schema.tags.iter().any(|t| t == name) && schema.field(name).is_none()
        }
        Expr::Binary { lhs, rhs, .. } => only_tags(lhs, schema) && only_tags(rhs, schema),
        Expr::Paren(inner) => only_tags(inner, schema),
        Expr::Call { args, .. } => args.iter().all(|a| only_tags(a, schema)),
        _ => true,
    }
}

/// Calls `f` with the name of every variable `expr` reads, in order, repeats included.
pub(super) fn for_each_var(expr: &Expr, f: &mut dyn FnMut(&str)) {
    for_each_var_ref(expr, &mut |name, _| f(name));
}

/// Each variable `expr` reads, with its `::type` cast, in order.
pub(super) fn for_each_var_ref(expr: &Expr, f: &mut dyn FnMut(&str, Option<VarType>)) {
    match expr {
        Expr::VarRef { name, cast } => f(name, *cast),
        Expr::Call { args, .. } => args.iter().for_each(|a| for_each_var_ref(a, f)),
        Expr::Binary { lhs, rhs, .. } => {
            for_each_var_ref(lhs, f);
            for_each_var_ref(rhs, f);
        }
        Expr::Paren(inner) => for_each_var_ref(inner, f),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(names: &[&str]) -> Vec<Projection> {
        names.iter().map(|n| plain(n)).collect()
    }

    #[test]
    fn repeated_names_get_the_first_free_suffix() {
        let cases: [(&[&str], &[&str]); 4] = [
            (&["max"; 4], &["max", "max_1", "max_2", "max_3"]),
            // A name written like a suffixed one takes its own suffix, and the next
            // repeat of the base skips the taken one.
            (
                &["max", "max", "max_1", "max"],
                &["max", "max_1", "max_1_1", "max_2"],
            ),
            (
                &["max_2", "max", "max", "max", "mean", "max"],
                &["max_2", "max", "max_1", "max_3", "mean", "max_4"],
            ),
            (&["a", "b", "a", "b"], &["a", "b", "a_1", "b_1"]),
        ];
        for (given, expected) in cases {
            let mut columns = named(given);
            dedupe_names(&mut columns);
            let got: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(got, expected, "{given:?}");
        }
    }
}
