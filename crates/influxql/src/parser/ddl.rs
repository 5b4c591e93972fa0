//! Statements that change what is stored: `CREATE`, `DROP`, `ALTER`, `DELETE`.

use super::Parser;
use crate::ast::{DeleteSpec, RetentionPolicySpec, Statement};
use crate::error::ParseError;
use crate::lexer::Tok;

/// The largest `REPLICATION` InfluxDB accepts (it is an `int32` there).
const MAX_REPLICATION: u64 = i32::MAX as u64;

impl Parser<'_> {
    /// `CREATE DATABASE …` or `CREATE RETENTION POLICY …`, from `CREATE`.
    pub(super) fn create(&mut self) -> Result<Statement, ParseError> {
        let create = self.expect_kw("CREATE")?;
        let t = self.next()?;
        if t.is_kw("DATABASE") {
            let name = self.ident()?;
            let policy = if self.eat_kw("WITH")? {
                Some(self.database_policy()?)
            } else {
                None
            };
            return Ok(Statement::CreateDatabase { name, policy });
        }
        if t.is_kw("RETENTION") {
            self.expect_kw("POLICY")?;
            let name = self.ident()?;
            self.expect_kw("ON")?;
            let database = self.ident()?;
            self.expect_kw("DURATION")?;
            let mut spec = RetentionPolicySpec {
                duration_ns: Some(self.duration_or_inf()?),
                ..RetentionPolicySpec::default()
            };
            self.expect_kw("REPLICATION")?;
            spec.replication = Some(self.replication()?);
            if self.eat_kw("SHARD")? {
                self.expect_kw("DURATION")?;
                spec.shard_duration_ns = Some(self.duration_or_inf()?);
            }
            spec.default = self.eat_kw("DEFAULT")?;
            return Ok(Statement::CreateRetentionPolicy {
                name,
                database,
                spec,
            });
        }
        match unsupported_object(&t.tok) {
            Some(what) => {
                Err(self.error_at(create.start, format!("CREATE {what} is not supported")))
            }
            None => Err(self.found(&t, "DATABASE, RETENTION")),
        }
    }

    /// The settings after `CREATE DATABASE name WITH`, in InfluxDB's order; at least one.
    fn database_policy(&mut self) -> Result<RetentionPolicySpec, ParseError> {
        let mut spec = RetentionPolicySpec::default();
        if self.eat_kw("DURATION")? {
            spec.duration_ns = Some(self.duration_or_inf()?);
        }
        if self.eat_kw("REPLICATION")? {
            spec.replication = Some(self.replication()?);
        }
        if self.eat_kw("SHARD")? {
            self.expect_kw("DURATION")?;
            spec.shard_duration_ns = Some(self.duration_or_inf()?);
        }
        if self.eat_kw("NAME")? {
            spec.name = Some(self.ident()?);
        }
        if spec == RetentionPolicySpec::default() {
            let t = self.peek()?;
            return Err(self.found(&t, "DURATION, REPLICATION, SHARD, NAME"));
        }
        Ok(spec)
    }

    /// `DROP DATABASE`, `DROP MEASUREMENT`, `DROP SERIES`, `DROP RETENTION POLICY`.
    pub(super) fn drop_statement(&mut self) -> Result<Statement, ParseError> {
        let drop = self.expect_kw("DROP")?;
        let t = self.next()?;
        match t.tok {
            Tok::Keyword("DATABASE") => Ok(Statement::DropDatabase {
                name: self.ident()?,
            }),
            Tok::Keyword("MEASUREMENT") => Ok(Statement::DropMeasurement {
                name: self.ident()?,
            }),
            Tok::Keyword("SERIES") => Ok(Statement::DropSeries(self.delete_spec()?)),
            Tok::Keyword("RETENTION") => {
                self.expect_kw("POLICY")?;
                let name = self.ident()?;
                self.expect_kw("ON")?;
                let database = self.ident()?;
                Ok(Statement::DropRetentionPolicy { name, database })
            }
            ref other => match unsupported_object(other) {
                Some(what) => {
                    Err(self.error_at(drop.start, format!("DROP {what} is not supported")))
                }
                None => Err(self.found(&t, "DATABASE, MEASUREMENT, RETENTION, SERIES")),
            },
        }
    }

    /// `ALTER RETENTION POLICY name ON db` and one or more settings, in any order.
    pub(super) fn alter(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw("ALTER")?;
        self.expect_kw("RETENTION")?;
        self.expect_kw("POLICY")?;
        let name = self.ident()?;
        self.expect_kw("ON")?;
        let database = self.ident()?;
        let mut spec = RetentionPolicySpec::default();
        let mut any = false;
        loop {
            if self.eat_kw("DURATION")? {
                spec.duration_ns = Some(self.duration_or_inf()?);
            } else if self.eat_kw("REPLICATION")? {
                spec.replication = Some(self.replication()?);
            } else if self.eat_kw("SHARD")? {
                self.expect_kw("DURATION")?;
                spec.shard_duration_ns = Some(self.duration_or_inf()?);
            } else if self.eat_kw("DEFAULT")? {
                spec.default = true;
            } else if any {
                break;
            } else {
                let t = self.peek()?;
                return Err(self.found(&t, "DURATION, REPLICATION, SHARD, DEFAULT"));
            }
            any = true;
        }
        Ok(Statement::AlterRetentionPolicy {
            name,
            database,
            spec,
        })
    }

    /// `DELETE [FROM …] [WHERE …]`, from `DELETE`.
    pub(super) fn delete(&mut self) -> Result<Statement, ParseError> {
        self.expect_kw("DELETE")?;
        Ok(Statement::Delete(self.delete_spec()?))
    }

    /// `[FROM …] [WHERE …]` with at least one of them, as InfluxDB requires (a bare
    /// `DELETE` or `DROP SERIES` is rejected rather than taken to mean everything). The
    /// measurements may not name a database or a retention policy: these statements apply
    /// to the request's database, across its policies (InfluxDB's rule and message).
    fn delete_spec(&mut self) -> Result<DeleteSpec, ParseError> {
        let mut sources = Vec::new();
        if self.eat_kw("FROM")? {
            loop {
                let start = self.peek()?.start;
                let source = self.measurement_ref()?;
                if source.retention_policy.is_some() {
                    return Err(self.error_at(start, "retention policy not supported"));
                }
                if source.database.is_some() {
                    return Err(self.error_at(start, "database not supported"));
                }
                sources.push(source);
                if !self.eat(&Tok::Comma)? {
                    break;
                }
            }
        }
        let condition = self.where_clause()?;
        if sources.is_empty() && condition.is_none() {
            let t = self.peek()?;
            return Err(self.found(&t, "FROM, WHERE"));
        }
        Ok(DeleteSpec { sources, condition })
    }

    /// A duration literal or `INF` (`0`: keep forever).
    fn duration_or_inf(&mut self) -> Result<i64, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Duration(d) => Ok(d),
            Tok::Keyword("INF") => Ok(0),
            _ => Err(self.found(&t, "duration")),
        }
    }

    /// The `n` of `REPLICATION n`: 1 to 2147483647.
    fn replication(&mut self) -> Result<u64, ParseError> {
        let t = self.peek()?;
        let n = self.uint()?;
        if !(1..=MAX_REPLICATION).contains(&n) {
            return Err(self.error_at(
                t.start,
                format!("invalid value {n}: must be 1 <= n <= {MAX_REPLICATION}"),
            ));
        }
        Ok(n)
    }
}

/// The name of an object InfluxDB can create or drop but Strata does not have.
fn unsupported_object(tok: &Tok) -> Option<&'static str> {
    match tok {
        Tok::Keyword("USER") => Some("USER"),
        Tok::Keyword("CONTINUOUS") => Some("CONTINUOUS QUERY"),
        Tok::Keyword("SUBSCRIPTION") => Some("SUBSCRIPTION"),
        Tok::Keyword("SHARD") => Some("SHARD"),
        _ => None,
    }
}
