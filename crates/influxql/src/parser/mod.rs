//! Tokens → [`Query`]: a recursive-descent parser over a pulled token stream.
//!
//! Split by statement family: `expr` (expressions: an iterative operator-precedence
//! parser) and `operand` (their leaves), `select` (`SELECT` and its clauses), `show`
//! (`SHOW …`), `ddl` (`CREATE`/`DROP`/`ALTER`/`DELETE`). This file holds the token
//! cursor and the helpers they share.
//!
//! No input can overflow the stack: expressions are parsed without recursion, with at
//! most [`MAX_NESTING`] parentheses, calls and unary minuses open; subqueries recurse,
//! at most [`MAX_SUBQUERIES`] deep; and [`MAX_EXPR_DEPTH`] caps the depth of an
//! expression tree, which long operator chains (`a OR b OR c …`) grow too, so that code
//! walking the tree recursively (its `Drop` included) needs only a small stack as well.

mod ddl;
mod expr;
mod operand;
mod select;
mod show;

use std::collections::HashMap;

use crate::ast::{Expr, Param, Query, Statement};
use crate::error::ParseError;
use crate::lexer::{self, Tok, Token};

pub use crate::lexer::parse_duration;

/// Most parentheses, calls and unary minuses open at once in an expression.
const MAX_NESTING: usize = 500;

/// Most subqueries open at once. Lower than [`MAX_NESTING`] because each level is
/// native recursion (`SELECT` → `FROM` → `SELECT`), several kilobytes of stack in a
/// debug build.
const MAX_SUBQUERIES: usize = 100;

/// Deepest expression tree accepted (every node counts one level).
const MAX_EXPR_DEPTH: usize = 1000;

/// Parses one or more `;`-separated InfluxQL statements, replacing `$name` placeholders
/// with the literals bound in `params`.
///
/// Empty statements (`;;`, a trailing `;`) are skipped; a query with no statement at all
/// is an error ("empty query"), as is an unbound placeholder ("missing parameter: name").
pub fn parse_query(text: &str, params: &HashMap<String, Param>) -> Result<Query, ParseError> {
    let mut p = Parser::new(text, params);
    let mut statements = Vec::new();
    loop {
        while p.eat(&Tok::Semicolon)? {}
        if p.peek_ref()?.tok == Tok::Eof {
            break;
        }
        statements.push(p.statement()?);
        let t = p.peek()?;
        if !matches!(t.tok, Tok::Semicolon | Tok::Eof) {
            return Err(p.found(&t, ";"));
        }
    }
    if statements.is_empty() {
        return Err(ParseError::at(text, 0, "empty query"));
    }
    Ok(Query { statements })
}

/// The cursor over the token stream and the state the grammar rules share.
struct Parser<'a> {
    /// The whole query text.
    text: &'a str,
    /// Byte offset just past the last consumed token.
    pos: usize,
    /// The next token, once peeked.
    peeked: Option<Token>,
    /// Values for `$name` placeholders.
    params: &'a HashMap<String, Param>,
    /// Parentheses, calls and unary minuses currently open.
    nesting: usize,
    /// Subqueries currently open.
    subqueries: usize,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`.
    fn new(text: &'a str, params: &'a HashMap<String, Param>) -> Self {
        Self {
            text,
            pos: 0,
            peeked: None,
            params,
            nesting: 0,
            subqueries: 0,
        }
    }

    /// The next token, without consuming it.
    fn peek(&mut self) -> Result<Token, ParseError> {
        self.peek_ref().cloned()
    }

    /// [`Self::peek`] without the copy (a name's or a string's text): for a look at the
    /// next token, as most of a statement's tokens get before they are consumed.
    fn peek_ref(&mut self) -> Result<&Token, ParseError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => lexer::next_token(self.text, self.pos)?,
        };
        Ok(self.peeked.insert(t))
    }

    /// Consumes and returns the next token.
    fn next(&mut self) -> Result<Token, ParseError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => lexer::next_token(self.text, self.pos)?,
        };
        self.pos = t.end;
        Ok(t)
    }

    /// Where the next token starts, if it is `tok` (compared exactly; for punctuation);
    /// nothing is consumed.
    fn peek_at(&mut self, tok: &Tok) -> Result<Option<usize>, ParseError> {
        let t = self.peek_ref()?;
        Ok((t.tok == *tok).then_some(t.start))
    }

    /// Consumes the next token if it is `tok` (compared exactly; for punctuation).
    fn eat(&mut self, tok: &Tok) -> Result<bool, ParseError> {
        if self.peek_ref()?.tok == *tok {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes the next token if it is `tok`, else fails with `found X, expected {what}`.
    fn expect(&mut self, tok: &Tok, what: &str) -> Result<Token, ParseError> {
        let t = self.next()?;
        if t.tok == *tok {
            Ok(t)
        } else {
            Err(self.found(&t, what))
        }
    }

    /// Consumes the next token if it is the keyword `kw`.
    fn eat_kw(&mut self, kw: &str) -> Result<bool, ParseError> {
        if self.peek_ref()?.is_kw(kw) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes the keyword `kw`, else fails with `found X, expected {kw}`.
    fn expect_kw(&mut self, kw: &str) -> Result<Token, ParseError> {
        let t = self.next()?;
        if t.is_kw(kw) {
            Ok(t)
        } else {
            Err(self.found(&t, kw))
        }
    }

    /// `found X, expected {expected}` at `t`, X as written.
    fn found(&self, t: &Token, expected: &str) -> ParseError {
        let message = format!("found {}, expected {expected}", t.written(self.text));
        ParseError::at(self.text, t.start, message)
    }

    /// An error with a free-form message at byte `offset`.
    fn error_at(&self, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError::at(self.text, offset, message)
    }

    /// An identifier, quoted or not (a quoted one may spell a keyword).
    fn ident(&mut self) -> Result<String, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Ident(s) | Tok::QuotedIdent(s) => Ok(s),
            _ => Err(self.found(&t, "identifier")),
        }
    }

    /// `ident (, ident)*`.
    fn ident_list(&mut self) -> Result<Vec<String>, ParseError> {
        let mut names = vec![self.ident()?];
        while self.eat(&Tok::Comma)? {
            names.push(self.ident()?);
        }
        Ok(names)
    }

    /// If the next token is `/`, re-scans it as a regex literal and consumes it.
    fn take_regex(&mut self) -> Result<Option<String>, ParseError> {
        let Some(start) = self.peek_at(&Tok::Slash)? else {
            return Ok(None);
        };
        self.peeked = None;
        let re = lexer::scan_regex(self.text, start)?;
        self.pos = re.end;
        match re.tok {
            Tok::Regex(s) => Ok(Some(s)),
            _ => Err(self.found(&re, "regex")),
        }
    }

    /// A regex literal, required (after `=~`, `!~`).
    fn regex(&mut self) -> Result<String, ParseError> {
        match self.take_regex()? {
            Some(re) => Ok(re),
            None => {
                let t = self.peek()?;
                Err(self.found(&t, "regex"))
            }
        }
    }

    /// The value bound to placeholder `$name` (token `t`), as a literal.
    fn param(&self, name: &str, t: &Token) -> Result<Expr, ParseError> {
        match self.params.get(name) {
            Some(Param::Integer(n)) => Ok(Expr::Integer(*n)),
            Some(Param::Float(f)) => Ok(Expr::Float(*f)),
            Some(Param::String(s)) => Ok(Expr::String(s.clone())),
            Some(Param::Boolean(b)) => Ok(Expr::Boolean(*b)),
            None => Err(self.error_at(t.start, format!("missing parameter: {name}"))),
        }
    }

    /// A non-negative integer (`LIMIT n`, …): a literal or an integer placeholder.
    fn uint(&mut self) -> Result<u64, ParseError> {
        let t = self.next()?;
        match &t.tok {
            Tok::Integer(n) => Ok(*n),
            Tok::Param(name) => match self.param(name, &t)? {
                Expr::Integer(n) if n >= 0 => Ok(n.unsigned_abs()),
                _ => Err(self.found(&t, "non-negative integer")),
            },
            _ => Err(self.found(&t, "integer")),
        }
    }

    /// `LIMIT n` if present.
    fn limit(&mut self, kw: &str) -> Result<Option<u64>, ParseError> {
        if self.eat_kw(kw)? {
            return Ok(Some(self.uint()?));
        }
        Ok(None)
    }

    /// `WHERE expr` if present.
    fn where_clause(&mut self) -> Result<Option<Expr>, ParseError> {
        if self.eat_kw("WHERE")? {
            return Ok(Some(self.expr()?));
        }
        Ok(None)
    }

    /// Enters one level of nesting that starts at byte `offset`.
    fn enter(&mut self, offset: usize) -> Result<(), ParseError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(self.error_at(
                offset,
                format!("too deeply nested: more than {MAX_NESTING} levels"),
            ));
        }
        Ok(())
    }

    /// Enters a subquery whose `(` is at byte `offset`.
    fn enter_subquery(&mut self, offset: usize) -> Result<(), ParseError> {
        self.subqueries += 1;
        if self.subqueries > MAX_SUBQUERIES {
            return Err(self.error_at(
                offset,
                format!("too deeply nested: more than {MAX_SUBQUERIES} levels of subqueries"),
            ));
        }
        Ok(())
    }

    /// Leaves a level entered with [`Parser::enter`].
    fn leave(&mut self) {
        self.nesting = self.nesting.saturating_sub(1);
    }

    /// One statement, dispatched on its first keyword.
    fn statement(&mut self) -> Result<Statement, ParseError> {
        let t = self.peek()?;
        match &t.tok {
            Tok::Keyword("SELECT") => Ok(Statement::Select(Box::new(self.select()?))),
            Tok::Keyword("SHOW") => self.show(),
            Tok::Keyword("CREATE") => self.create(),
            Tok::Keyword("DROP") => self.drop_statement(),
            Tok::Keyword("ALTER") => self.alter(),
            Tok::Keyword("DELETE") => self.delete(),
            Tok::Keyword(kw @ ("EXPLAIN" | "GRANT" | "REVOKE")) => {
                Err(self.error_at(t.start, format!("{kw} is not supported")))
            }
            Tok::Keyword("KILL") => Err(self.error_at(t.start, "KILL QUERY is not supported")),
            Tok::Keyword("SET") => Err(self.error_at(t.start, "SET PASSWORD is not supported")),
            _ => Err(self.found(&t, "SELECT, DELETE, SHOW, CREATE, DROP, ALTER")),
        }
    }
}
