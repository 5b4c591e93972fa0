//! The InfluxQL syntax tree: what [`crate::parse_query`] returns.
//!
//! Names are kept as written (case included); keywords and function names are not
//! case-sensitive, so function names are stored lowercased. Durations and times are
//! nanoseconds. A statement's shape follows InfluxDB 1.8's grammar
//! (<https://docs.influxdata.com/influxdb/v1.8/query_language/spec/>).

/// One or more statements separated by `;`.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The statements, in order.
    pub statements: Vec<Statement>,
}

/// One InfluxQL statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `SELECT …`.
    Select(Box<SelectStatement>),
    /// `SHOW DATABASES`.
    ShowDatabases,
    /// `SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT = m | =~ /re/] [WHERE …] [LIMIT n] [OFFSET n]`.
    ShowMeasurements(ShowMeasurements),
    /// `SHOW TAG KEYS [ON db] [FROM …] [WHERE …] [LIMIT n] [OFFSET n]`.
    ShowTagKeys(ShowFrom),
    /// `SHOW TAG VALUES [ON db] [FROM …] WITH KEY … [WHERE …] [LIMIT n] [OFFSET n]`.
    ShowTagValues(ShowTagValues),
    /// `SHOW FIELD KEYS [ON db] [FROM …] [LIMIT n] [OFFSET n]`.
    ShowFieldKeys(ShowFrom),
    /// `SHOW SERIES [ON db] [FROM …] [WHERE …] [LIMIT n] [OFFSET n]`.
    ShowSeries(ShowFrom),
    /// `SHOW RETENTION POLICIES [ON db]`.
    ShowRetentionPolicies {
        /// `ON db`.
        database: Option<String>,
    },
    /// `SHOW [MEASUREMENT|SERIES|TAG KEY|TAG VALUES|FIELD KEY] [EXACT] CARDINALITY …`.
    ShowCardinality(ShowCardinality),
    /// `SHOW DIAGNOSTICS`.
    ShowDiagnostics,
    /// `SHOW STATS [FOR 'module']`.
    ShowStats {
        /// `FOR 'module'`.
        module: Option<String>,
    },
    /// `SHOW USERS` (Strata has no users: always empty).
    ShowUsers,
    /// `CREATE DATABASE name [WITH [DURATION d] [REPLICATION n] [SHARD DURATION d] [NAME rp]]`.
    CreateDatabase {
        /// The database.
        name: String,
        /// The `WITH …` part, when given.
        policy: Option<RetentionPolicySpec>,
    },
    /// `DROP DATABASE name`.
    DropDatabase {
        /// The database.
        name: String,
    },
    /// `DROP MEASUREMENT name`.
    DropMeasurement {
        /// The measurement.
        name: String,
    },
    /// `DROP SERIES [FROM …] [WHERE …]`.
    DropSeries(DeleteSpec),
    /// `DELETE [FROM …] [WHERE …]`.
    Delete(DeleteSpec),
    /// `CREATE RETENTION POLICY name ON db DURATION d REPLICATION n [SHARD DURATION d] [DEFAULT]`.
    CreateRetentionPolicy {
        /// The policy.
        name: String,
        /// The database.
        database: String,
        /// Its settings; `duration` and `replication` are always present here.
        spec: RetentionPolicySpec,
    },
    /// `ALTER RETENTION POLICY name ON db [DURATION d] [REPLICATION n] [SHARD DURATION d] [DEFAULT]`.
    AlterRetentionPolicy {
        /// The policy.
        name: String,
        /// The database.
        database: String,
        /// The settings given.
        spec: RetentionPolicySpec,
    },
    /// `DROP RETENTION POLICY name ON db`.
    DropRetentionPolicy {
        /// The policy.
        name: String,
        /// The database.
        database: String,
    },
}

/// Settings of a retention policy, each when given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RetentionPolicySpec {
    /// `NAME rp` (only in `CREATE DATABASE … WITH`).
    pub name: Option<String>,
    /// `DURATION d` in nanoseconds; `Some(0)` is `INF` (keep forever).
    pub duration_ns: Option<i64>,
    /// `REPLICATION n`.
    pub replication: Option<u64>,
    /// `SHARD DURATION d` in nanoseconds.
    pub shard_duration_ns: Option<i64>,
    /// `DEFAULT`.
    pub default: bool,
}

/// `SHOW MEASUREMENTS …`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShowMeasurements {
    /// `ON db`.
    pub database: Option<String>,
    /// `WITH MEASUREMENT = name` or `=~ /re/`.
    pub with: Option<MeasurementName>,
    /// `WHERE …` (on tags).
    pub condition: Option<Expr>,
    /// `LIMIT n`.
    pub limit: Option<u64>,
    /// `OFFSET n`.
    pub offset: Option<u64>,
}

/// The common tail of `SHOW TAG KEYS`, `SHOW FIELD KEYS` and `SHOW SERIES`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShowFrom {
    /// `ON db`.
    pub database: Option<String>,
    /// `FROM …`; empty for every measurement.
    pub sources: Vec<MeasurementRef>,
    /// `WHERE …`.
    pub condition: Option<Expr>,
    /// `LIMIT n`.
    pub limit: Option<u64>,
    /// `OFFSET n`.
    pub offset: Option<u64>,
}

/// `SHOW TAG VALUES …`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShowTagValues {
    /// `ON db`, `FROM …`, `WHERE …`, `LIMIT`, `OFFSET`.
    pub from: ShowFrom,
    /// `WITH KEY …`.
    pub key: TagKeyFilter,
}

/// Which tag keys `SHOW TAG VALUES` (or its cardinality) reports.
#[derive(Debug, Clone, PartialEq)]
pub enum TagKeyFilter {
    /// `WITH KEY = k`.
    Eq(String),
    /// `WITH KEY != k`.
    NotEq(String),
    /// `WITH KEY IN (k1, k2)`.
    In(Vec<String>),
    /// `WITH KEY =~ /re/`.
    Regex(String),
    /// `WITH KEY !~ /re/`.
    NotRegex(String),
}

/// What a `SHOW … CARDINALITY` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardinalityKind {
    /// `SHOW MEASUREMENT CARDINALITY`.
    Measurement,
    /// `SHOW SERIES CARDINALITY`.
    Series,
    /// `SHOW TAG KEY CARDINALITY`.
    TagKey,
    /// `SHOW TAG VALUES CARDINALITY WITH KEY …`.
    TagValues,
    /// `SHOW FIELD KEY CARDINALITY`.
    FieldKey,
}

/// `SHOW … [EXACT] CARDINALITY [ON db] [FROM …] [WITH KEY …] [WHERE …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShowCardinality {
    /// What is counted.
    pub kind: CardinalityKind,
    /// `EXACT` (Strata's counts are always exact).
    pub exact: bool,
    /// `ON db`, `FROM …`, `WHERE …`, `LIMIT`, `OFFSET`.
    pub from: ShowFrom,
    /// `WITH KEY …` (tag values only).
    pub key: Option<TagKeyFilter>,
}

/// `DELETE` / `DROP SERIES`: which measurements and which rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeleteSpec {
    /// `FROM …`; empty for every measurement.
    pub sources: Vec<MeasurementRef>,
    /// `WHERE …`.
    pub condition: Option<Expr>,
}

/// `SELECT …`.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectStatement {
    /// The projections, in order.
    pub fields: Vec<Field>,
    /// `FROM …`.
    pub sources: Vec<Source>,
    /// `WHERE …`.
    pub condition: Option<Expr>,
    /// `GROUP BY …`.
    pub dimensions: Vec<Dimension>,
    /// `fill(…)`; [`Fill::Null`] when not given.
    pub fill: Fill,
    /// `ORDER BY time DESC` (`ORDER BY time [ASC]` is the default, `false`).
    pub order_desc: bool,
    /// `LIMIT n`: points per series.
    pub limit: Option<u64>,
    /// `OFFSET n`: points per series.
    pub offset: Option<u64>,
    /// `SLIMIT n`: series.
    pub slimit: Option<u64>,
    /// `SOFFSET n`: series.
    pub soffset: Option<u64>,
    /// `tz('Area/City')`.
    pub timezone: Option<String>,
}

/// One projection: an expression and its `AS` alias.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The expression.
    pub expr: Expr,
    /// `AS alias`.
    pub alias: Option<String>,
}

/// A `FROM` item.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A measurement, possibly qualified, or a regex of measurements.
    Measurement(MeasurementRef),
    /// `(SELECT …)`.
    Subquery(Box<SelectStatement>),
}

/// `[db.[rp].]name` or `[db.[rp].]/re/`.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasurementRef {
    /// The database, when qualified.
    pub database: Option<String>,
    /// The retention policy, when qualified (`db..m` leaves it out).
    pub retention_policy: Option<String>,
    /// The measurement.
    pub name: MeasurementName,
}

/// A measurement's name, or a regex naming several.
#[derive(Debug, Clone, PartialEq)]
pub enum MeasurementName {
    /// A plain (or quoted) name.
    Name(String),
    /// `/re/`, as written between the slashes (`\/` unescaped to `/`).
    Regex(String),
}

/// A `GROUP BY` item.
#[derive(Debug, Clone, PartialEq)]
pub enum Dimension {
    /// `time(interval[, offset])`, nanoseconds; the offset may be negative.
    Time {
        /// The bucket width; always positive (the parser rejects `time(0s)`).
        interval_ns: i64,
        /// The shift of bucket boundaries from the epoch.
        offset_ns: i64,
    },
    /// A tag key.
    Tag(String),
    /// `/re/`: every tag key matching.
    Regex(String),
    /// `*`: every tag key.
    Wildcard,
}

/// `fill(…)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Fill {
    /// `fill(null)`, the default: empty buckets are null.
    #[default]
    Null,
    /// `fill(none)`: empty buckets are left out.
    None,
    /// `fill(previous)`.
    Previous,
    /// `fill(linear)`.
    Linear,
    /// `fill(<integer>)`.
    Integer(i64),
    /// `fill(<float>)`.
    Float(f64),
}

/// A `::type` cast on a variable reference or wildcard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarType {
    /// `::field`.
    Field,
    /// `::tag`.
    Tag,
    /// `::float`.
    Float,
    /// `::integer`.
    Integer,
    /// `::unsigned`.
    Unsigned,
    /// `::string`.
    String,
    /// `::boolean`.
    Boolean,
}

/// An expression.
///
/// Unary minus has no node of its own: before a number or duration literal it makes a
/// negative literal (`-1` is `Integer(-1)`, `-5m` is `Duration(-300_000_000_000)`), and
/// before anything else `-x` is `Binary { op: Mul, lhs: Integer(-1), rhs: x }`, as in
/// InfluxDB. A `$name` placeholder is replaced by its bound value's literal. The parser
/// refuses trees deeper than 1000 levels, so recursive walks need only a small stack.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A field, tag or `time`, with an optional `::type`.
    VarRef {
        /// The name as written (unquoted).
        name: String,
        /// `::type`.
        cast: Option<VarType>,
    },
    /// `*` or `*::field` / `*::tag`.
    Wildcard(Option<VarType>),
    /// A function call; the name is lowercased.
    Call {
        /// The function's name.
        name: String,
        /// Its arguments.
        args: Vec<Expr>,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left side.
        lhs: Box<Expr>,
        /// Right side.
        rhs: Box<Expr>,
    },
    /// `( expr )`.
    Paren(Box<Expr>),
    /// An integer literal (a leading `-` included).
    Integer(i64),
    /// A float literal.
    Float(f64),
    /// A single-quoted string (escapes resolved).
    String(String),
    /// `true` / `false`.
    Boolean(bool),
    /// A duration literal (`10s`, `1h30m`, `1700000000000ms`), nanoseconds.
    Duration(i64),
    /// A regex literal `/…/` (`\/` unescaped to `/`).
    Regex(String),
}

/// A binary operator, by InfluxQL's precedence (lowest first): `OR`; `AND`;
/// `=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`, `=~`, `!~`; `+`, `-`, `|`, `^`; `*`, `/`, `%`, `&`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Mod,
    /// `&`.
    BitAnd,
    /// `|`.
    BitOr,
    /// `^`.
    BitXor,
    /// `=`.
    Eq,
    /// `!=` or `<>`.
    NotEq,
    /// `<`.
    Lt,
    /// `<=`.
    LtEq,
    /// `>`.
    Gt,
    /// `>=`.
    GtEq,
    /// `=~`.
    RegexMatch,
    /// `!~`.
    RegexNotMatch,
    /// `AND`.
    And,
    /// `OR`.
    Or,
}

/// A value bound to a `$name` placeholder (the HTTP API's `params`).
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// An integer.
    Integer(i64),
    /// A float.
    Float(f64),
    /// A string: in a comparison it is a string literal (or an RFC 3339 time).
    String(String),
    /// A boolean.
    Boolean(bool),
}
