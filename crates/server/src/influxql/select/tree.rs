//! SQL statements built as sqlparser's tree rather than as text, for
//! [`strata_query::QueryEngine::query_stream`]: a small aggregate spent about a third of its
//! work writing SQL text and parsing it back. Each builder gives the tree that parsing the
//! statement's text gives (the tests parse the printed tree and compare), so the engine
//! answers a tree exactly as it answers the text: the direct path and pre-aggregates where
//! they apply, DataFusion otherwise.

use std::fmt;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, DataType, DateTimeField, Distinct, Expr, Function, FunctionArg,
    FunctionArgExpr, FunctionArgumentList, FunctionArguments, GroupByExpr, Ident, Interval,
    LimitClause, ObjectName, OrderBy, OrderByExpr, OrderByKind, OrderByOptions, Query, Select,
    SelectFlavor, SelectItem, SetExpr, TableFactor, TableWithJoins, TimezoneInfo, TypedString,
    UnaryOperator, Value, WildcardAdditionalOptions,
};

/// `name` as a quoted identifier (`"name"`): its case kept, as InfluxQL's names are.
pub(crate) fn ident(name: &str) -> Ident {
    Ident::with_quote('"', name)
}

/// The column `name`.
pub(crate) fn column(name: &str) -> Expr {
    Expr::Identifier(ident(name))
}

/// `'text'`.
pub(crate) fn string(text: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(text.to_owned()).with_empty_span())
}

/// `nanos` as the timestamp string the direct path reads (`'2016-01-01T00:00:00.000000000Z'`).
pub(crate) fn time(nanos: i64) -> Expr {
    Expr::Value(Value::SingleQuotedString(rfc3339(nanos)).with_empty_span())
}

fn rfc3339(nanos: i64) -> String {
    let mut out = Vec::with_capacity(32);
    crate::sql_cells::write_rfc3339(nanos, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// `"time" >= start`: the first instant a range includes.
pub(crate) fn time_from(start: i64) -> Expr {
    binary(column("time"), BinaryOperator::GtEq, time(start))
}

/// `"time" < end`: the first instant after a range.
pub(crate) fn time_before(end: i64) -> Expr {
    binary(column("time"), BinaryOperator::Lt, time(end))
}

/// A number written as `text` (digits, a fraction, an exponent); a leading `-` becomes a
/// negation of the rest, as SQL parses it.
pub(crate) fn number(text: &str) -> Expr {
    match text.strip_prefix('-') {
        Some(rest) => Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: Box::new(number(rest)),
        },
        None => Expr::Value(Value::Number(text.to_owned(), false).with_empty_span()),
    }
}

/// `TRUE` or `FALSE`.
pub(crate) fn boolean(value: bool) -> Expr {
    Expr::Value(Value::Boolean(value).with_empty_span())
}

/// `NULL`.
pub(crate) fn null() -> Expr {
    Expr::Value(Value::Null.with_empty_span())
}

/// `lhs op rhs`.
pub(crate) fn binary(lhs: Expr, op: BinaryOperator, rhs: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(lhs),
        op,
        right: Box::new(rhs),
    }
}

/// `(expr)`.
pub(crate) fn nested(expr: Expr) -> Expr {
    Expr::Nested(Box::new(expr))
}

/// `t1 op t2 op t3 …`, grouped from the left as SQL parses it; `None` without terms.
pub(crate) fn chain(terms: impl IntoIterator<Item = Expr>, op: BinaryOperator) -> Option<Expr> {
    terms
        .into_iter()
        .reduce(|lhs, rhs| binary(lhs, op.clone(), rhs))
}

/// `name(args…)`.
pub(crate) fn call(name: &str, args: Vec<Expr>) -> Expr {
    function(
        name,
        args.into_iter()
            .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
            .collect(),
    )
}

/// `count(*)`.
pub(crate) fn count_star() -> Expr {
    function(
        "count",
        vec![FunctionArg::Unnamed(FunctionArgExpr::Wildcard)],
    )
}

fn function(name: &str, args: Vec<FunctionArg>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// `date_bin(INTERVAL '<width> nanoseconds', "time"[, TIMESTAMP '<offset>'])`: the time
/// bucket of each point, aligned to the epoch plus `offset`.
pub(crate) fn date_bin(width: i64, offset: i64) -> Expr {
    let interval = Expr::Interval(Interval {
        value: Box::new(string(&format!("{width} nanoseconds"))),
        leading_field: None::<DateTimeField>,
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    });
    let mut args = vec![interval, column("time")];
    if offset != 0 {
        args.push(Expr::TypedString(TypedString {
            data_type: DataType::Timestamp(None, TimezoneInfo::None),
            value: Value::SingleQuotedString(rfc3339(offset)).with_empty_span(),
            uses_odbc_syntax: false,
        }));
    }
    call("date_bin", args)
}

/// `*`.
pub(crate) fn wildcard() -> SelectItem {
    SelectItem::Wildcard(WildcardAdditionalOptions::default())
}

/// `expr AS "alias"`.
pub(crate) fn aliased(expr: Expr, alias: &str) -> SelectItem {
    SelectItem::ExprWithAlias {
        expr,
        alias: ident(alias),
    }
}

/// A `WHERE` clause, or none: printed as ` WHERE …` (or nothing) where a statement is still
/// written as text.
/// Boxed: held across awaits, it would grow the futures of every step of a query.
#[derive(Debug, Clone, Default)]
pub(crate) struct Where(Option<Box<Expr>>);

impl Where {
    /// `WHERE condition`, or no clause.
    pub(crate) fn new(condition: Option<Expr>) -> Where {
        Where(condition.map(Box::new))
    }

    /// This clause and also `more`.
    pub(crate) fn and(&self, more: Expr) -> Where {
        Where::new(Some(match &self.0 {
            Some(expr) => binary(expr.as_ref().clone(), BinaryOperator::And, more),
            None => more,
        }))
    }
}

impl fmt::Display for Where {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(expr) => write!(f, " WHERE {expr}"),
            None => Ok(()),
        }
    }
}

/// One `SELECT … FROM table [WHERE …] [GROUP BY …] [ORDER BY …] [LIMIT n]`.
#[derive(Debug, Default)]
pub(crate) struct SelectTree {
    /// `DISTINCT ON (…)` when not empty.
    pub distinct_on: Vec<Expr>,
    pub projection: Vec<SelectItem>,
    pub table: String,
    pub filter: Where,
    pub group_by: Vec<Expr>,
    /// Each key, and whether it is descending.
    pub order_by: Vec<(Expr, bool)>,
    pub limit: Option<u64>,
}

impl SelectTree {
    /// The statement's tree (boxed: it is large, and the futures that hold it are moved).
    pub(crate) fn query(self) -> Box<Query> {
        let select = Select {
            select_token: AttachedToken::empty(),
            optimizer_hints: Vec::new(),
            distinct: (!self.distinct_on.is_empty()).then_some(Distinct::On(self.distinct_on)),
            select_modifiers: None,
            top: None,
            top_before_distinct: false,
            projection: self.projection,
            exclude: None,
            into: None,
            from: vec![TableWithJoins {
                relation: TableFactor::Table {
                    name: ObjectName::from(vec![ident(&self.table)]),
                    alias: None,
                    args: None,
                    with_hints: Vec::new(),
                    version: None,
                    with_ordinality: false,
                    partitions: Vec::new(),
                    json_path: None,
                    sample: None,
                    index_hints: Vec::new(),
                },
                joins: Vec::new(),
            }],
            lateral_views: Vec::new(),
            prewhere: None,
            selection: self.filter.0.map(|e| *e),
            connect_by: Vec::new(),
            group_by: GroupByExpr::Expressions(self.group_by, Vec::new()),
            cluster_by: Vec::new(),
            distribute_by: Vec::new(),
            sort_by: Vec::new(),
            having: None,
            named_window: Vec::new(),
            qualify: None,
            window_before_qualify: false,
            value_table_mode: None,
            flavor: SelectFlavor::Standard,
        };
        let order_by = (!self.order_by.is_empty()).then(|| OrderBy {
            kind: OrderByKind::Expressions(
                self.order_by
                    .into_iter()
                    .map(|(expr, desc)| OrderByExpr {
                        expr,
                        options: OrderByOptions {
                            asc: desc.then_some(false),
                            nulls_first: None,
                        },
                        with_fill: None,
                    })
                    .collect(),
            ),
            interpolate: None,
        });
        Box::new(Query {
            with: None,
            body: Box::new(SetExpr::Select(Box::new(select))),
            order_by,
            limit_clause: self.limit.map(|n| LimitClause::LimitOffset {
                limit: Some(number(&n.to_string())),
                offset: None,
                limit_by: Vec::new(),
            }),
            fetch: None,
            locks: Vec::new(),
            for_clause: None,
            settings: None,
            format_clause: None,
            pipe_operators: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::ast::Statement;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    /// Printing `query` and parsing the text back gives `query` again: the engine answers
    /// the tree as it answers the text.
    fn assert_parses_back(query: Box<Query>) {
        let text = query.to_string();
        let parsed =
            Parser::parse_sql(&GenericDialect {}, &text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed, vec![Statement::Query(query)], "{text}");
    }

    fn time_range(start: i64, end: i64) -> Where {
        Where::default().and(time_from(start)).and(time_before(end))
    }

    #[test]
    fn aggregates_by_tag_and_bucket_parse_back() {
        let host = nested(binary(
            column("host"),
            BinaryOperator::Eq,
            string("it's \"a\""),
        ));
        assert_parses_back(
            SelectTree {
                projection: vec![
                    SelectItem::UnnamedExpr(column("host")),
                    aliased(date_bin(60_000_000_000, 0), "__bucket"),
                    aliased(call("max", vec![column("usage user")]), "__a0_0"),
                    aliased(count_star(), "__rows"),
                ],
                table: "cpu \"x\"".into(),
                filter: time_range(1_451_606_400_000_000_000, 1_451_610_000_123_456_789).and(host),
                group_by: vec![column("host"), column("__bucket")],
                order_by: vec![(column("__bucket"), false)],
                limit: Some(5),
                ..SelectTree::default()
            }
            .query(),
        );
        // A bucket with an offset, before the epoch.
        assert_parses_back(
            SelectTree {
                projection: vec![aliased(date_bin(3_600_000_000_000, -90_000_000_000), "b")],
                table: "m".into(),
                group_by: vec![column("b")],
                ..SelectTree::default()
            }
            .query(),
        );
    }

    #[test]
    fn latest_rows_parse_back() {
        let tags = vec![column("host"), column("region")];
        assert_parses_back(
            SelectTree {
                distinct_on: tags.clone(),
                projection: vec![wildcard()],
                table: "cpu".into(),
                order_by: vec![
                    (tags[0].clone(), false),
                    (tags[1].clone(), false),
                    (column("time"), true),
                ],
                ..SelectTree::default()
            }
            .query(),
        );
        assert_parses_back(
            SelectTree {
                projection: vec![wildcard()],
                table: "cpu".into(),
                filter: time_range(-5, 7),
                order_by: vec![(column("time"), true)],
                limit: Some(1),
                ..SelectTree::default()
            }
            .query(),
        );
    }

    #[test]
    fn conditions_parse_back() {
        let or = |terms: Vec<Expr>| nested(chain(terms, BinaryOperator::Or).unwrap());
        let conditions = [
            or(vec![
                Expr::InList {
                    expr: Box::new(column("host")),
                    list: vec![string("a"), string("b")],
                    negated: false,
                },
                Expr::IsNull(Box::new(column("host"))),
            ]),
            nested(Expr::IsNotNull(Box::new(column("dc")))),
            or(vec![
                Expr::IsNull(Box::new(column("dc"))),
                binary(column("dc"), BinaryOperator::NotEq, string("")),
            ]),
            nested(binary(
                column("f"),
                BinaryOperator::PGRegexMatch,
                string("^a.*"),
            )),
            nested(binary(
                column("f"),
                BinaryOperator::PGRegexNotMatch,
                string("b"),
            )),
            nested(
                chain(
                    [column("a"), number("-3"), number("2.5e-7"), null()],
                    BinaryOperator::Plus,
                )
                .unwrap(),
            ),
            nested(binary(
                nested(binary(
                    column("x"),
                    BinaryOperator::Multiply,
                    number("-9223372036854775808"),
                )),
                BinaryOperator::GtEq,
                number("-0.5"),
            )),
            boolean(false),
        ];
        let filter = conditions
            .into_iter()
            .fold(time_range(0, 1), |w, c| w.and(c));
        assert_parses_back(
            SelectTree {
                projection: vec![SelectItem::UnnamedExpr(column("time"))],
                table: "m".into(),
                filter,
                ..SelectTree::default()
            }
            .query(),
        );
    }

    #[test]
    fn an_empty_where_prints_nothing() {
        assert_eq!(Where::default().to_string(), "");
        assert_eq!(
            Where::default().and(boolean(true)).to_string(),
            " WHERE true"
        );
    }
}
