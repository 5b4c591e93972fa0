//! `SELECT` and its clauses, in InfluxDB's fixed order:
//! `SELECT fields FROM sources [WHERE] [GROUP BY] [fill()] [ORDER BY time]
//! [LIMIT] [OFFSET] [SLIMIT] [SOFFSET] [tz()]`. Measurement references (also used by
//! `SHOW`, `DROP SERIES` and `DELETE`) live here too.

use super::Parser;
use crate::ast::{
    Dimension, Field, Fill, MeasurementName, MeasurementRef, SelectStatement, Source,
};
use crate::error::ParseError;
use crate::lexer::Tok;

impl Parser<'_> {
    /// `SELECT …`, from its `SELECT` keyword.
    ///
    /// Subqueries recurse through here and [`Parser::sources`], so both keep their
    /// frames small: the clauses are parsed in functions that return before recursing.
    pub(super) fn select(&mut self) -> Result<SelectStatement, ParseError> {
        let fields = self.select_fields()?;
        let sources = self.sources()?;
        self.select_clauses(fields, sources)
    }

    /// `SELECT fields FROM`.
    fn select_fields(&mut self) -> Result<Vec<Field>, ParseError> {
        self.expect_kw("SELECT")?;
        let fields = self.fields()?;
        let t = self.peek()?;
        if t.is_kw("INTO") {
            return Err(self.error_at(t.start, "SELECT INTO is not supported"));
        }
        self.expect_kw("FROM")?;
        Ok(fields)
    }

    /// Everything after the sources.
    fn select_clauses(
        &mut self,
        fields: Vec<Field>,
        sources: Vec<Source>,
    ) -> Result<SelectStatement, ParseError> {
        let condition = self.where_clause()?;
        let dimensions = if self.eat_kw("GROUP")? {
            self.expect_kw("BY")?;
            self.dimensions()?
        } else {
            Vec::new()
        };
        let fill = self.fill()?;
        let order_desc = self.order_by()?;
        Ok(SelectStatement {
            fields,
            sources,
            condition,
            dimensions,
            fill,
            order_desc,
            limit: self.limit("LIMIT")?,
            offset: self.limit("OFFSET")?,
            slimit: self.limit("SLIMIT")?,
            soffset: self.limit("SOFFSET")?,
            timezone: self.timezone()?,
        })
    }

    /// `expr [AS alias] (, expr [AS alias])*`.
    fn fields(&mut self) -> Result<Vec<Field>, ParseError> {
        let mut fields = Vec::new();
        loop {
            let expr = self.expr()?;
            let alias = if self.eat_kw("AS")? {
                Some(self.ident()?)
            } else {
                None
            };
            fields.push(Field { expr, alias });
            if !self.eat(&Tok::Comma)? {
                return Ok(fields);
            }
        }
    }

    /// `source (, source)*`, each a measurement reference or `(SELECT …)`.
    fn sources(&mut self) -> Result<Vec<Source>, ParseError> {
        let mut sources = vec![self.source()?];
        while self.eat(&Tok::Comma)? {
            sources.push(self.source()?);
        }
        Ok(sources)
    }

    /// A measurement reference or `(SELECT …)`.
    fn source(&mut self) -> Result<Source, ParseError> {
        match self.subquery_start()? {
            Some(start) => self.subquery(start),
            None => Ok(Source::Measurement(self.measurement_ref()?)),
        }
    }

    /// Consumes the `(` of a subquery, returning its offset.
    fn subquery_start(&mut self) -> Result<Option<usize>, ParseError> {
        let start = self.peek_at(&Tok::LParen)?;
        if start.is_some() {
            self.next()?;
        }
        Ok(start)
    }

    /// `SELECT … )`, the `(` at byte `start` consumed.
    fn subquery(&mut self, start: usize) -> Result<Source, ParseError> {
        self.enter_subquery(start)?;
        let sub = Box::new(self.select()?);
        self.expect(&Tok::RParen, ")")?;
        self.subqueries -= 1;
        Ok(Source::Subquery(sub))
    }

    /// `FROM ref (, ref)*` if present (no subqueries: for `SHOW`, `DELETE`, …).
    pub(super) fn measurement_sources(&mut self) -> Result<Vec<MeasurementRef>, ParseError> {
        let mut refs = Vec::new();
        if self.eat_kw("FROM")? {
            refs.push(self.measurement_ref()?);
            while self.eat(&Tok::Comma)? {
                refs.push(self.measurement_ref()?);
            }
        }
        Ok(refs)
    }

    /// `name`, `rp.name`, `db.rp.name`, `db..name`, where the last part may be `/re/`.
    pub(super) fn measurement_ref(&mut self) -> Result<MeasurementRef, ParseError> {
        // The parts before the name; `None` is the empty policy of `db..name`.
        let mut qualifiers: Vec<Option<String>> = Vec::new();
        let name = loop {
            let name = self.measurement_name()?;
            let MeasurementName::Name(part) = &name else {
                break name;
            };
            let Some(dot) = self.peek_at(&Tok::Dot)? else {
                break name;
            };
            if qualifiers.len() == 2 {
                return Err(self.error_at(dot, "too many segments in measurement name"));
            }
            self.next()?;
            qualifiers.push(Some(part.clone()));
            if qualifiers.len() == 1 && self.eat(&Tok::Dot)? {
                qualifiers.push(None);
            }
        };
        let (database, retention_policy) = match qualifiers.len() {
            0 => (None, None),
            1 => (None, qualifiers.pop().flatten()),
            _ => {
                let rp = qualifiers.pop().flatten();
                (qualifiers.pop().flatten(), rp)
            }
        };
        Ok(MeasurementRef {
            database,
            retention_policy,
            name,
        })
    }

    /// An identifier or a regex literal.
    pub(super) fn measurement_name(&mut self) -> Result<MeasurementName, ParseError> {
        if let Some(re) = self.take_regex()? {
            return Ok(MeasurementName::Regex(re));
        }
        let t = self.next()?;
        match t.tok {
            Tok::Ident(s) | Tok::QuotedIdent(s) => Ok(MeasurementName::Name(s)),
            _ => Err(self.found(&t, "identifier, regex")),
        }
    }

    /// `dimension (, dimension)*` after `GROUP BY`.
    fn dimensions(&mut self) -> Result<Vec<Dimension>, ParseError> {
        let mut dims = vec![self.dimension()?];
        while self.eat(&Tok::Comma)? {
            dims.push(self.dimension()?);
        }
        Ok(dims)
    }

    /// `time(interval[, offset])`, a tag key, `/re/` or `*`.
    fn dimension(&mut self) -> Result<Dimension, ParseError> {
        if let Some(re) = self.take_regex()? {
            return Ok(Dimension::Regex(re));
        }
        let t = self.next()?;
        match t.tok {
            Tok::Star => Ok(Dimension::Wildcard),
            Tok::Ident(ref name) if name.eq_ignore_ascii_case("time") => {
                if self.peek_ref()?.tok != Tok::LParen {
                    return Err(self.error_at(
                        t.start,
                        "time() is a function and expects at least one argument",
                    ));
                }
                self.time_dimension()
            }
            Tok::Ident(name) | Tok::QuotedIdent(name) => Ok(Dimension::Tag(name)),
            _ => Err(self.found(&t, "identifier, regex, *")),
        }
    }

    /// `(interval[, offset])` of `GROUP BY time`; the offset may be negative.
    fn time_dimension(&mut self) -> Result<Dimension, ParseError> {
        self.expect(&Tok::LParen, "(")?;
        let t = self.next()?;
        let interval_ns = match t.tok {
            Tok::Duration(d) if d > 0 => d,
            Tok::Duration(_) => {
                return Err(self.error_at(t.start, "time dimension must have a positive duration"));
            }
            _ => return Err(self.found(&t, "duration")),
        };
        let mut offset_ns = 0;
        if self.eat(&Tok::Comma)? {
            let negative = self.eat(&Tok::Minus)?;
            let t = self.next()?;
            offset_ns = match t.tok {
                Tok::Duration(d) if negative => -d,
                Tok::Duration(d) => d,
                _ => return Err(self.found(&t, "duration")),
            };
        }
        self.expect(&Tok::RParen, ")")?;
        Ok(Dimension::Time {
            interval_ns,
            offset_ns,
        })
    }

    /// `fill(null | none | previous | linear | number)` if present.
    fn fill(&mut self) -> Result<Fill, ParseError> {
        if !self.peek_ref()?.is_ident("fill") {
            return Ok(Fill::Null);
        }
        self.next()?;
        self.expect(&Tok::LParen, "(")?;
        let negative = self.eat(&Tok::Minus)?;
        let t = self.next()?;
        let fill = match &t.tok {
            Tok::Ident(s) if !negative => match s.to_ascii_lowercase().as_str() {
                "null" => Some(Fill::Null),
                "none" => Some(Fill::None),
                "previous" => Some(Fill::Previous),
                "linear" => Some(Fill::Linear),
                _ => None,
            },
            Tok::Integer(n) => {
                let value = if negative {
                    0i64.checked_sub_unsigned(*n)
                } else {
                    i64::try_from(*n).ok()
                };
                match value {
                    Some(v) => Some(Fill::Integer(v)),
                    None => return Err(self.error_at(t.start, "integer out of range")),
                }
            }
            Tok::Float(f) => Some(Fill::Float(if negative { -f } else { *f })),
            _ => None,
        };
        let Some(fill) = fill else {
            return Err(self.found(&t, "null, none, previous, linear, number"));
        };
        self.expect(&Tok::RParen, ")")?;
        Ok(fill)
    }

    /// `ORDER BY time [ASC | DESC]` if present; `true` for descending.
    fn order_by(&mut self) -> Result<bool, ParseError> {
        if !self.eat_kw("ORDER")? {
            return Ok(false);
        }
        self.expect_kw("BY")?;
        let t = self.next()?;
        let is_time =
            matches!(&t.tok, Tok::Ident(s) | Tok::QuotedIdent(s) if s.eq_ignore_ascii_case("time"));
        if !is_time {
            return Err(self.error_at(t.start, "only ORDER BY time supported at this time"));
        }
        let desc = if self.eat_kw("DESC")? {
            true
        } else {
            self.eat_kw("ASC")?;
            false
        };
        let t = self.peek()?;
        if t.tok == Tok::Comma {
            return Err(self.error_at(t.start, "only ORDER BY time supported at this time"));
        }
        Ok(desc)
    }

    /// `tz('Area/City')` if present.
    fn timezone(&mut self) -> Result<Option<String>, ParseError> {
        if !self.peek_ref()?.is_ident("tz") {
            return Ok(None);
        }
        self.next()?;
        self.expect(&Tok::LParen, "(")?;
        let t = self.next()?;
        let Tok::Str(zone) = t.tok else {
            return Err(self.found(&t, "string"));
        };
        self.expect(&Tok::RParen, ")")?;
        Ok(Some(zone))
    }
}
