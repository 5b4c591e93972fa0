//! A cursor over a statement's tokens (sqlparser's tokenizer, so quoting, comments and
//! positions follow the SQL that DataFusion parses) for the statements Strata parses
//! itself: `SHOW …`, `DESCRIBE`, `CREATE TABLE`, `DROP TABLE`, `DELETE`, ….
//!
//! Identifiers follow DataFusion's rule: unquoted ones are lower-cased, `"quoted"` ones
//! kept as written. Keywords match case-insensitively and only unquoted.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::catalog::{CATALOG_NAME, schema_database};
use crate::error::{Position, QueryError};

/// A table named in a statement, resolved to its database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRef {
    /// The database: the statement's, or the one the name gives.
    pub database: String,
    /// The table name, normalised.
    pub table: String,
    /// Where the name starts.
    pub position: Position,
}

/// The statement's tokens without whitespace and comments, and a read position.
pub(crate) struct Cursor {
    tokens: Vec<TokenWithSpan>,
    next: usize,
    /// Just past the statement's last character, for errors at the end.
    end: Position,
}

/// A `Position` from a sqlparser location.
pub(crate) fn position(location: Location) -> Position {
    Position {
        line: location.line,
        column: location.column,
    }
}

/// A syntax error at `at`.
pub(crate) fn syntax(message: impl Into<String>, at: Position) -> QueryError {
    QueryError::Syntax {
        message: message.into(),
        position: Some(at),
    }
}

/// A planning error (valid syntax, wrong names or types) at `at`.
pub(crate) fn plan(message: impl Into<String>, at: Position) -> QueryError {
    QueryError::Plan {
        message: message.into(),
        position: Some(at),
    }
}

impl Cursor {
    /// The tokens of `statement`; `None` if it does not tokenize (DataFusion then reports
    /// the error as it does for any statement).
    pub fn new(statement: &str) -> Option<Self> {
        let tokens = Tokenizer::new(&GenericDialect {}, statement)
            .tokenize_with_location()
            .ok()?;
        let tokens = tokens
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
            .collect();
        // As `QueryError::at_end_if_unplaced` places DataFusion's end-of-input errors.
        let line = statement.lines().count().max(1) as u64;
        let last = statement.lines().last().unwrap_or("");
        let end = Position {
            line,
            column: last.chars().count() as u64 + 1,
        };
        Some(Self {
            tokens,
            next: 0,
            end,
        })
    }

    /// The next token, not consumed.
    pub fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|t| &t.token)
    }

    /// The token after the next one, not consumed.
    pub fn peek_second(&self) -> Option<&Token> {
        self.tokens.get(self.next + 1).map(|t| &t.token)
    }

    /// Where the next token starts (just past the end when there is none).
    pub fn here(&self) -> Position {
        self.tokens
            .get(self.next)
            .map(|t| position(t.span.start))
            .unwrap_or(self.end)
    }

    /// The next token as written, for messages ("end of statement" at the end).
    fn found(&self) -> String {
        match self.peek() {
            Some(token) => format!("\"{token}\""),
            None => "end of statement".to_string(),
        }
    }

    /// A syntax error at the next token: "expected X, found Y".
    pub fn expected(&self, what: &str) -> QueryError {
        syntax(
            format!("expected {what}, found {}", self.found()),
            self.here(),
        )
    }

    /// Whether the next token is the unquoted keyword `word` (any case).
    pub fn at_keyword(&self, word: &str) -> bool {
        is_keyword(self.peek(), word)
    }

    /// Consumes the keyword `word` if it is next.
    pub fn eat_keyword(&mut self, word: &str) -> bool {
        let found = self.at_keyword(word);
        if found {
            self.next += 1;
        }
        found
    }

    /// Consumes the keyword `word`, or fails with "expected `word`".
    pub fn expect_keyword(&mut self, word: &str) -> Result<(), QueryError> {
        if self.eat_keyword(word) {
            Ok(())
        } else {
            Err(self.expected(word))
        }
    }

    /// `IF NOT EXISTS`, consumed if next; whether it was.
    pub fn eat_if_not_exists(&mut self) -> Result<bool, QueryError> {
        if !self.eat_keyword("IF") {
            return Ok(false);
        }
        self.expect_keyword("NOT")?;
        self.expect_keyword("EXISTS")?;
        Ok(true)
    }

    /// `IF EXISTS`, consumed if next; whether it was.
    pub fn eat_if_exists(&mut self) -> Result<bool, QueryError> {
        if !self.eat_keyword("IF") {
            return Ok(false);
        }
        self.expect_keyword("EXISTS")?;
        Ok(true)
    }

    /// Consumes `token` if it is next.
    pub fn eat(&mut self, token: &Token) -> bool {
        let found = self.peek() == Some(token);
        if found {
            self.next += 1;
        }
        found
    }

    /// Consumes `token`, or fails with "expected `what`".
    pub fn expect(&mut self, token: &Token, what: &str) -> Result<(), QueryError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Where the cursor is, for [`Cursor::rewind`] (to look ahead and come back).
    pub fn mark(&self) -> usize {
        self.next
    }

    /// Goes back to a place [`Cursor::mark`] gave.
    pub fn rewind(&mut self, mark: usize) {
        self.next = mark.min(self.tokens.len());
    }

    /// If the next token is `(`, skips to just past its matching `)` (or to the end if it
    /// has none) and returns true.
    pub fn skip_parenthesized(&mut self) -> bool {
        if self.peek() != Some(&Token::LParen) {
            return false;
        }
        let mut depth = 0usize;
        // Each step consumes a token, so this ends within the statement's tokens.
        while let Some(token) = self.peek() {
            match token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            self.next += 1;
            if depth == 0 {
                break;
            }
        }
        true
    }

    /// Skips the next token.
    pub fn advance(&mut self) {
        self.next = (self.next + 1).min(self.tokens.len());
    }

    /// A `'single-quoted'` string, consumed, if one is next.
    pub fn eat_string(&mut self) -> Option<String> {
        match self.peek() {
            Some(Token::SingleQuotedString(s)) => {
                let s = s.clone();
                self.next += 1;
                Some(s)
            }
            _ => None,
        }
    }

    /// An identifier, normalised (unquoted: lower-cased), and where it starts.
    pub fn identifier(&mut self, what: &str) -> Result<(String, Position), QueryError> {
        let at = self.here();
        match self.peek() {
            Some(Token::Word(word)) => {
                let name = match word.quote_style {
                    Some(_) => word.value.clone(),
                    None => word.value.to_ascii_lowercase(),
                };
                self.next += 1;
                Ok((name, at))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// A table name: `table`, `database.table` or `strata.database.table`.
    pub fn table_name(&mut self, database: &str) -> Result<TableRef, QueryError> {
        let position = self.here();
        let mut parts = vec![self.identifier("a table name")?.0];
        while self.eat(&Token::Period) {
            parts.push(self.identifier("a name after \".\"")?.0);
        }
        table_ref(&parts, database, position)
    }

    /// The end of the statement: an optional `;`, then nothing.
    pub fn expect_end(&mut self) -> Result<(), QueryError> {
        self.eat(&Token::SemiColon);
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.expected("end of statement")),
        }
    }
}

/// Whether `token` is the unquoted keyword `word` (any case).
pub(crate) fn is_keyword(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// The table named by `parts` (`table`, `database.table` or `strata.database.table`, each
/// normalised), unqualified names in `database`; `public.table` is in `database` (see
/// `catalog::database_of`).
pub(crate) fn table_ref(
    parts: &[String],
    database: &str,
    position: Position,
) -> Result<TableRef, QueryError> {
    let (database, table) = match parts {
        [table] => (database.to_string(), table.clone()),
        [schema, table] => (schema_database(schema), table.clone()),
        [catalog, schema, table] if catalog == CATALOG_NAME => {
            (schema_database(schema), table.clone())
        }
        [catalog, _, _] => {
            return Err(plan(
                format!("unknown catalog \"{catalog}\": tables are in \"{CATALOG_NAME}\""),
                position,
            ));
        }
        _ => {
            return Err(syntax(
                "a table name has at most three parts: catalog.database.table",
                position,
            ));
        }
    };
    Ok(TableRef {
        database,
        table,
        position,
    })
}
