//! `SHOW …` statements.

use super::Parser;
use crate::ast::{
    CardinalityKind, MeasurementName, ShowCardinality, ShowFrom, ShowMeasurements, ShowTagValues,
    Statement, TagKeyFilter,
};
use crate::error::ParseError;
use crate::lexer::Tok;

impl Parser<'_> {
    /// `SHOW …`, from its `SHOW` keyword.
    pub(super) fn show(&mut self) -> Result<Statement, ParseError> {
        let show = self.expect_kw("SHOW")?;
        let t = self.next()?;
        let Tok::Keyword(kw) = t.tok else {
            return Err(self.found(&t, EXPECTED_AFTER_SHOW));
        };
        match kw {
            "DATABASES" => Ok(Statement::ShowDatabases),
            "DIAGNOSTICS" => Ok(Statement::ShowDiagnostics),
            "USERS" => Ok(Statement::ShowUsers),
            "STATS" => self.show_stats(),
            "RETENTION" => {
                self.expect_kw("POLICIES")?;
                let database = self.on_database()?;
                Ok(Statement::ShowRetentionPolicies { database })
            }
            "MEASUREMENTS" => self.show_measurements(),
            "MEASUREMENT" => self.cardinality(CardinalityKind::Measurement),
            "SERIES" => {
                if self.at_cardinality()? {
                    return self.cardinality(CardinalityKind::Series);
                }
                Ok(Statement::ShowSeries(self.show_from(true)?))
            }
            "TAG" => self.show_tag(),
            "FIELD" => {
                let t = self.next()?;
                if t.is_kw("KEYS") {
                    // InfluxDB's SHOW FIELD KEYS takes no WHERE.
                    Ok(Statement::ShowFieldKeys(self.show_from(false)?))
                } else if t.is_kw("KEY") {
                    self.cardinality(CardinalityKind::FieldKey)
                } else {
                    Err(self.found(&t, "KEY, KEYS"))
                }
            }
            "QUERIES" => Err(self.error_at(show.start, "SHOW QUERIES is not supported")),
            "GRANTS" => Err(self.error_at(show.start, "SHOW GRANTS is not supported")),
            "SHARDS" => Err(self.error_at(show.start, "SHOW SHARDS is not supported")),
            "SHARD" => Err(self.error_at(show.start, "SHOW SHARD GROUPS is not supported")),
            "SUBSCRIPTIONS" => {
                Err(self.error_at(show.start, "SHOW SUBSCRIPTIONS is not supported"))
            }
            "CONTINUOUS" => {
                Err(self.error_at(show.start, "SHOW CONTINUOUS QUERIES is not supported"))
            }
            _ => Err(self.found(&t, EXPECTED_AFTER_SHOW)),
        }
    }

    /// `SHOW STATS [FOR 'module']`, after `STATS`.
    fn show_stats(&mut self) -> Result<Statement, ParseError> {
        if !self.eat_kw("FOR")? {
            return Ok(Statement::ShowStats { module: None });
        }
        let t = self.next()?;
        match t.tok {
            Tok::Str(module) => Ok(Statement::ShowStats {
                module: Some(module),
            }),
            _ => Err(self.found(&t, "string")),
        }
    }

    /// `SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT (= name | =~ /re/)] [WHERE] [LIMIT]
    /// [OFFSET]`, after `MEASUREMENTS`.
    fn show_measurements(&mut self) -> Result<Statement, ParseError> {
        let database = self.on_database()?;
        let with = if self.eat_kw("WITH")? {
            self.expect_kw("MEASUREMENT")?;
            let op = self.next()?;
            match op.tok {
                Tok::Eq => Some(MeasurementName::Name(self.ident()?)),
                Tok::EqRegex => Some(MeasurementName::Regex(self.regex()?)),
                _ => return Err(self.found(&op, "=, =~")),
            }
        } else {
            None
        };
        Ok(Statement::ShowMeasurements(ShowMeasurements {
            database,
            with,
            condition: self.where_clause()?,
            limit: self.limit("LIMIT")?,
            offset: self.limit("OFFSET")?,
        }))
    }

    /// `SHOW TAG KEYS …`, `SHOW TAG VALUES …`, `SHOW TAG KEY … CARDINALITY`,
    /// `SHOW TAG VALUES … CARDINALITY`, after `TAG`.
    fn show_tag(&mut self) -> Result<Statement, ParseError> {
        let t = self.next()?;
        if t.is_kw("KEYS") {
            Ok(Statement::ShowTagKeys(self.show_from(true)?))
        } else if t.is_kw("KEY") {
            self.cardinality(CardinalityKind::TagKey)
        } else if t.is_kw("VALUES") {
            if self.at_cardinality()? {
                return self.cardinality(CardinalityKind::TagValues);
            }
            let database = self.on_database()?;
            let sources = self.measurement_sources()?;
            let key = self.with_key()?;
            let from = ShowFrom {
                database,
                sources,
                condition: self.where_clause()?,
                limit: self.limit("LIMIT")?,
                offset: self.limit("OFFSET")?,
            };
            Ok(Statement::ShowTagValues(ShowTagValues { from, key }))
        } else {
            Err(self.found(&t, "KEY, KEYS, VALUES"))
        }
    }

    /// Whether `[EXACT] CARDINALITY` follows (nothing consumed).
    fn at_cardinality(&mut self) -> Result<bool, ParseError> {
        let t = self.peek()?;
        Ok(t.is_kw("EXACT") || t.is_kw("CARDINALITY"))
    }

    /// `[EXACT] CARDINALITY [ON db] [FROM …] [WITH KEY …] [WHERE …] [LIMIT] [OFFSET]`;
    /// `WITH KEY` is required for tag values and not taken otherwise.
    fn cardinality(&mut self, kind: CardinalityKind) -> Result<Statement, ParseError> {
        let exact = self.eat_kw("EXACT")?;
        self.expect_kw("CARDINALITY")?;
        let database = self.on_database()?;
        let sources = self.measurement_sources()?;
        let key = if kind == CardinalityKind::TagValues {
            Some(self.with_key()?)
        } else {
            None
        };
        let from = ShowFrom {
            database,
            sources,
            condition: self.where_clause()?,
            limit: self.limit("LIMIT")?,
            offset: self.limit("OFFSET")?,
        };
        Ok(Statement::ShowCardinality(ShowCardinality {
            kind,
            exact,
            from,
            key,
        }))
    }

    /// `[ON db] [FROM …] [WHERE …] [LIMIT n] [OFFSET n]`, `WHERE` only if `with_where`.
    fn show_from(&mut self, with_where: bool) -> Result<ShowFrom, ParseError> {
        let database = self.on_database()?;
        let sources = self.measurement_sources()?;
        let condition = if with_where {
            self.where_clause()?
        } else {
            None
        };
        Ok(ShowFrom {
            database,
            sources,
            condition,
            limit: self.limit("LIMIT")?,
            offset: self.limit("OFFSET")?,
        })
    }

    /// `ON db` if present.
    pub(super) fn on_database(&mut self) -> Result<Option<String>, ParseError> {
        if self.eat_kw("ON")? {
            return Ok(Some(self.ident()?));
        }
        Ok(None)
    }

    /// `WITH KEY (= k | != k | =~ /re/ | !~ /re/ | IN (k1, k2))`, required.
    fn with_key(&mut self) -> Result<TagKeyFilter, ParseError> {
        self.expect_kw("WITH")?;
        self.expect_kw("KEY")?;
        let op = self.next()?;
        match op.tok {
            Tok::Eq => Ok(TagKeyFilter::Eq(self.ident()?)),
            Tok::NotEq => Ok(TagKeyFilter::NotEq(self.ident()?)),
            Tok::EqRegex => Ok(TagKeyFilter::Regex(self.regex()?)),
            Tok::NotEqRegex => Ok(TagKeyFilter::NotRegex(self.regex()?)),
            Tok::Keyword("IN") => {
                self.expect(&Tok::LParen, "(")?;
                let keys = self.ident_list()?;
                self.expect(&Tok::RParen, ")")?;
                Ok(TagKeyFilter::In(keys))
            }
            _ => Err(self.found(&op, "=, !=, =~, !~, IN")),
        }
    }
}

/// What may follow `SHOW`, for `found X, expected …`.
const EXPECTED_AFTER_SHOW: &str = "DATABASES, DIAGNOSTICS, FIELD, MEASUREMENT, MEASUREMENTS, \
     RETENTION, SERIES, STATS, TAG, USERS";
