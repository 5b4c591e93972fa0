//! The operands of expressions: literals, placeholders, variable references, `*`,
//! `/re/`, `DISTINCT x`, negative literals, and the start of a call or `( … )` (whose
//! insides the driver in `expr` parses).

use super::Parser;
use super::expr::Operand;
use crate::ast::{Expr, VarType};
use crate::error::ParseError;
use crate::lexer::Tok;

/// `value` negated, when it fits in an `i64` (`-9223372036854775808` does).
fn negate(value: u64) -> Option<i64> {
    0i64.checked_sub_unsigned(value)
}

impl Parser<'_> {
    /// Consumes a `-`, returning its offset.
    pub(super) fn minus(&mut self) -> Result<Option<usize>, ParseError> {
        let start = self.peek_at(&Tok::Minus)?;
        if start.is_some() {
            self.next()?;
        }
        Ok(start)
    }

    /// After a unary `-`: the negated number or duration literal that follows, consumed.
    pub(super) fn negative_literal(&mut self) -> Result<Option<Expr>, ParseError> {
        let t = self.peek_ref()?;
        let start = t.start;
        let lit = match t.tok {
            Tok::Integer(n) => negate(n).map(Expr::Integer),
            Tok::Float(f) => Some(Expr::Float(-f)),
            Tok::Duration(d) => Some(Expr::Duration(-d)),
            _ => return Ok(None),
        };
        let Some(lit) = lit else {
            return Err(self.error_at(start, "integer out of range"));
        };
        self.next()?;
        Ok(Some(lit))
    }

    /// Consumes the start of a primary: a whole leaf, or what opens a nested one.
    pub(super) fn operand(&mut self) -> Result<Operand, ParseError> {
        if let Some(re) = self.take_regex()? {
            return Ok(Operand::Leaf(Expr::Regex(re)));
        }
        let t = self.next()?;
        let expr = match t.tok {
            Tok::Ident(mut name) | Tok::QuotedIdent(mut name) => {
                if self.peek_ref()?.tok == Tok::LParen {
                    name.make_ascii_lowercase();
                    if !name.is_ascii() {
                        name = name.to_lowercase();
                    }
                    return Ok(Operand::Call(name, t.start));
                }
                self.var_ref(name)?
            }
            Tok::Keyword("TRUE") => Expr::Boolean(true),
            Tok::Keyword("FALSE") => Expr::Boolean(false),
            Tok::Keyword("DISTINCT") => return self.distinct(t.start),
            Tok::Str(s) => Expr::String(s),
            Tok::Integer(n) => match i64::try_from(n) {
                Ok(v) => Expr::Integer(v),
                Err(_) => return Err(self.error_at(t.start, "integer out of range")),
            },
            Tok::Float(f) => Expr::Float(f),
            Tok::Duration(d) => Expr::Duration(d),
            Tok::Param(ref name) => self.param(name, &t)?,
            Tok::Star => Expr::Wildcard(self.wildcard_cast()?),
            Tok::LParen => return Ok(Operand::Paren(t.start)),
            _ => return Err(self.found(&t, "identifier, string, number, bool")),
        };
        Ok(Operand::Leaf(expr))
    }

    /// The operand of `=~` / `!~`.
    pub(super) fn regex_operand(&mut self) -> Result<Expr, ParseError> {
        if let Some(re) = self.take_regex()? {
            return Ok(Expr::Regex(re));
        }
        let t = self.peek()?;
        if let Tok::Param(name) = &t.tok
            && let Expr::String(re) = self.param(name, &t)?
        {
            self.next()?;
            return Ok(Expr::Regex(re));
        }
        Err(self.found(&t, "regex"))
    }

    /// `DISTINCT x` or `DISTINCT(x)`, both `Call { name: "distinct", args: [x] }` as in
    /// InfluxDB (`SELECT DISTINCT host …`, `count(DISTINCT host)`).
    fn distinct(&mut self, start: usize) -> Result<Operand, ParseError> {
        if self.peek_ref()?.tok == Tok::LParen {
            return Ok(Operand::Call("distinct".to_string(), start));
        }
        let arg = self.next()?;
        match arg.tok {
            Tok::Ident(name) | Tok::QuotedIdent(name) => {
                let var = self.var_ref(name)?;
                Ok(Operand::Leaf(Expr::Call {
                    name: "distinct".to_string(),
                    args: vec![var],
                }))
            }
            _ => Err(self.found(&arg, "identifier")),
        }
    }

    /// The rest of a variable reference whose first segment `first` is consumed:
    /// `.segment`s (kept joined with `.`, as InfluxDB does) and an optional `::type`.
    fn var_ref(&mut self, first: String) -> Result<Expr, ParseError> {
        let mut name = first;
        while self.eat(&Tok::Dot)? {
            name.push('.');
            name.push_str(&self.ident()?);
        }
        let cast = if self.eat(&Tok::DoubleColon)? {
            Some(self.var_type()?)
        } else {
            None
        };
        Ok(Expr::VarRef { name, cast })
    }

    /// The type after `::`.
    fn var_type(&mut self) -> Result<VarType, ParseError> {
        let t = self.next()?;
        let word = match &t.tok {
            Tok::Ident(s) => s.to_ascii_lowercase(),
            Tok::Keyword(k) => k.to_ascii_lowercase(),
            _ => String::new(),
        };
        Ok(match word.as_str() {
            "field" => VarType::Field,
            "tag" => VarType::Tag,
            "float" => VarType::Float,
            "integer" => VarType::Integer,
            "unsigned" => VarType::Unsigned,
            "string" => VarType::String,
            "boolean" => VarType::Boolean,
            _ => {
                return Err(self.found(&t, "float, integer, unsigned, string, boolean, field, tag"));
            }
        })
    }

    /// The optional `::field` / `::tag` after `*`.
    fn wildcard_cast(&mut self) -> Result<Option<VarType>, ParseError> {
        if !self.eat(&Tok::DoubleColon)? {
            return Ok(None);
        }
        let t = self.next()?;
        if t.is_kw("FIELD") {
            Ok(Some(VarType::Field))
        } else if t.is_kw("TAG") {
            Ok(Some(VarType::Tag))
        } else {
            Err(self.found(&t, "field, tag"))
        }
    }
}
