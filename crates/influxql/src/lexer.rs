//! Text → tokens, one at a time, with their byte offsets.
//!
//! The lexer is pulled by the parser rather than run ahead of it because `/` is
//! ambiguous in InfluxQL: it starts a regex where an operand or a measurement is
//! expected and is division elsewhere. The lexer always returns [`Tok::Slash`]; the
//! parser, which knows the context, calls [`scan_regex`] from the same offset instead.

use crate::error::ParseError;

/// InfluxQL's reserved words (InfluxDB 1.8). An unquoted identifier spelled like one of
/// these, in any case, is that keyword and cannot be used as a name unless quoted.
const KEYWORDS: &[&str] = &[
    "ALL",
    "ALTER",
    "ANALYZE",
    "AND",
    "ANY",
    "AS",
    "ASC",
    "BEGIN",
    "BY",
    "CARDINALITY",
    "CONTINUOUS",
    "CREATE",
    "DATABASE",
    "DATABASES",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DESTINATIONS",
    "DIAGNOSTICS",
    "DISTINCT",
    "DROP",
    "DURATION",
    "END",
    "EVERY",
    "EXACT",
    "EXPLAIN",
    "FALSE",
    "FIELD",
    "FOR",
    "FROM",
    "GRANT",
    "GRANTS",
    "GROUP",
    "GROUPS",
    "IN",
    "INF",
    "INSERT",
    "INTO",
    "KEY",
    "KEYS",
    "KILL",
    "LIMIT",
    "MEASUREMENT",
    "MEASUREMENTS",
    "NAME",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "PASSWORD",
    "POLICIES",
    "POLICY",
    "PRIVILEGES",
    "QUERIES",
    "QUERY",
    "READ",
    "REPLICATION",
    "RESAMPLE",
    "RETENTION",
    "REVOKE",
    "SELECT",
    "SERIES",
    "SET",
    "SHARD",
    "SHARDS",
    "SHOW",
    "SLIMIT",
    "SOFFSET",
    "STATS",
    "SUBSCRIPTION",
    "SUBSCRIPTIONS",
    "TAG",
    "TO",
    "TRUE",
    "USER",
    "USERS",
    "VALUES",
    "WHERE",
    "WITH",
    "WRITE",
];

/// Whether `word` is one of InfluxQL's reserved words (any case), which a name spelled like
/// it must be quoted to be (as InfluxDB prints statements).
pub fn is_keyword(word: &str) -> bool {
    keyword(word).is_some()
}

/// The longest entry of [`KEYWORDS`]; each fits in a [`pack`]ed key.
const LONGEST_KEYWORD: usize = 13;

/// `word` (at most 16 bytes) as a number that orders as the bytes do: big-endian, padded
/// with zero bytes, which no keyword holds.
const fn pack(word: &[u8]) -> u128 {
    if word.is_empty() {
        return 0;
    }
    let mut key = 0u128;
    let mut i = 0;
    while i < word.len() {
        key = (key << 8) | word[i].to_ascii_uppercase() as u128;
        i += 1;
    }
    key << (8 * (16 - word.len()))
}

/// [`KEYWORDS`] [`pack`]ed, in the same (sorted) order.
const KEYWORD_KEYS: [u128; KEYWORDS.len()] = {
    let mut keys = [0u128; KEYWORDS.len()];
    let mut i = 0;
    while i < KEYWORDS.len() {
        keys[i] = pack(KEYWORDS[i].as_bytes());
        i += 1;
    }
    keys
};

/// The entry of [`KEYWORDS`] that `word` spells in any case: a binary search over
/// packed keys, since every unquoted name of a statement is looked up.
fn keyword(word: &str) -> Option<&'static str> {
    if word.len() > LONGEST_KEYWORD {
        return None;
    }
    KEYWORD_KEYS
        .binary_search(&pack(word.as_bytes()))
        .ok()
        .map(|i| KEYWORDS[i])
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// The end of the text.
    Eof,
    /// An unquoted identifier that is not a keyword.
    Ident(String),
    /// A double-quoted identifier, escapes resolved (never a keyword).
    QuotedIdent(String),
    /// A keyword, as its uppercase entry in [`KEYWORDS`].
    Keyword(&'static str),
    /// A single-quoted string, escapes resolved.
    Str(String),
    /// An unsigned integer; the sign is the parser's business (unary minus).
    Integer(u64),
    /// `int.int` or `.int`.
    Float(f64),
    /// An integer followed by units (`10s`, `1h30m`), nanoseconds.
    Duration(i64),
    /// `$name` or `$"name"`.
    Param(String),
    /// `/…/`, only produced by [`scan_regex`].
    Regex(String),
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `*`.
    Star,
    /// `/`: division, or the start of a regex (see the module doc).
    Slash,
    /// `%`.
    Percent,
    /// `&`.
    Amp,
    /// `|`.
    Pipe,
    /// `^`.
    Caret,
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
    EqRegex,
    /// `!~`.
    NotEqRegex,
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// `,`.
    Comma,
    /// `;`.
    Semicolon,
    /// `.`.
    Dot,
    /// `::`.
    DoubleColon,
    /// A character that starts no token; the parser reports it as unexpected.
    Illegal,
}

/// A token and the byte range of its text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    /// What it is.
    pub(crate) tok: Tok,
    /// Byte offset of its first character.
    pub(crate) start: usize,
    /// Byte offset just past it.
    pub(crate) end: usize,
}

impl Token {
    /// The token as written, for `found X` in errors.
    pub(crate) fn written<'t>(&self, text: &'t str) -> &'t str {
        if self.tok == Tok::Eof {
            return "EOF";
        }
        text.get(self.start..self.end).unwrap_or_default()
    }

    /// Whether this is the keyword `kw` (given in uppercase).
    pub(crate) fn is_kw(&self, kw: &str) -> bool {
        matches!(self.tok, Tok::Keyword(k) if k == kw)
    }

    /// Whether this is the unquoted identifier `name`, in any case (`fill`, `time`, `tz`
    /// are not keywords, so the grammar recognises them by name where they matter).
    pub(crate) fn is_ident(&self, name: &str) -> bool {
        matches!(&self.tok, Tok::Ident(s) if s.eq_ignore_ascii_case(name))
    }
}

/// The next token at or after byte `pos` of `text`, skipping whitespace and comments.
pub(crate) fn next_token(text: &str, pos: usize) -> Result<Token, ParseError> {
    let start = skip_blank(text, pos)?;
    let rest = text.get(start..).unwrap_or_default();
    let mut chars = rest.chars();
    let Some(c) = chars.next() else {
        return Ok(Token {
            tok: Tok::Eof,
            start: text.len(),
            end: text.len(),
        });
    };
    let next = chars.next();
    let simple = |tok: Tok, len: usize| {
        Ok(Token {
            tok,
            start,
            end: start + len,
        })
    };
    match c {
        'a'..='z' | 'A'..='Z' | '_' => {
            let end = start + ident_len(rest);
            let word = text.get(start..end).unwrap_or_default();
            let tok = match keyword(word) {
                Some(k) => Tok::Keyword(k),
                None => Tok::Ident(word.to_string()),
            };
            Ok(Token { tok, start, end })
        }
        '0'..='9' => scan_number(text, start),
        '.' if next.is_some_and(|n| n.is_ascii_digit()) => scan_number(text, start),
        '"' => {
            let (name, end) = scan_quoted(text, start, '"')?;
            Ok(Token {
                tok: Tok::QuotedIdent(name),
                start,
                end,
            })
        }
        '\'' => {
            let (s, end) = scan_quoted(text, start, '\'')?;
            Ok(Token {
                tok: Tok::Str(s),
                start,
                end,
            })
        }
        '$' => match next {
            Some('"') => {
                let (name, end) = scan_quoted(text, start + 1, '"')?;
                Ok(Token {
                    tok: Tok::Param(name),
                    start,
                    end,
                })
            }
            Some(n) if n.is_ascii_alphanumeric() || n == '_' => {
                let end = start + 1 + ident_len(rest.get(1..).unwrap_or_default());
                let name = text.get(start + 1..end).unwrap_or_default().to_string();
                Ok(Token {
                    tok: Tok::Param(name),
                    start,
                    end,
                })
            }
            _ => simple(Tok::Illegal, 1),
        },
        '+' => simple(Tok::Plus, 1),
        '-' => simple(Tok::Minus, 1),
        '*' => simple(Tok::Star, 1),
        '/' => simple(Tok::Slash, 1),
        '%' => simple(Tok::Percent, 1),
        '&' => simple(Tok::Amp, 1),
        '|' => simple(Tok::Pipe, 1),
        '^' => simple(Tok::Caret, 1),
        '(' => simple(Tok::LParen, 1),
        ')' => simple(Tok::RParen, 1),
        ',' => simple(Tok::Comma, 1),
        ';' => simple(Tok::Semicolon, 1),
        '.' => simple(Tok::Dot, 1),
        '=' if next == Some('~') => simple(Tok::EqRegex, 2),
        '=' => simple(Tok::Eq, 1),
        '!' if next == Some('=') => simple(Tok::NotEq, 2),
        '!' if next == Some('~') => simple(Tok::NotEqRegex, 2),
        '<' if next == Some('>') => simple(Tok::NotEq, 2),
        '<' if next == Some('=') => simple(Tok::LtEq, 2),
        '<' => simple(Tok::Lt, 1),
        '>' if next == Some('=') => simple(Tok::GtEq, 2),
        '>' => simple(Tok::Gt, 1),
        ':' if next == Some(':') => simple(Tok::DoubleColon, 2),
        _ => simple(Tok::Illegal, c.len_utf8()),
    }
}

/// Scans the regex literal whose opening `/` is at byte `start`. `\/` stands for `/`;
/// every other backslash sequence is kept as written, for the regex engine.
pub(crate) fn scan_regex(text: &str, start: usize) -> Result<Token, ParseError> {
    let unterminated = || ParseError::at(text, start, "unterminated regex");
    let mut out = String::new();
    let mut chars = text.get(start + 1..).unwrap_or_default().char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '/' => {
                return Ok(Token {
                    tok: Tok::Regex(out),
                    start,
                    end: start + 1 + i + 1,
                });
            }
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, e)) if e != '\n' => {
                    out.push('\\');
                    out.push(e);
                }
                _ => return Err(unterminated()),
            },
            // A regex cannot span lines: a missing closing `/` is reported where the
            // regex starts instead of swallowing the rest of the query.
            '\n' => return Err(unterminated()),
            c => out.push(c),
        }
    }
    Err(unterminated())
}

/// InfluxQL duration literal → nanoseconds: one or more `<digits><unit>` with units
/// `ns`, `u`/`µ` (microseconds), `ms`, `s`, `m`, `h`, `d`, `w`, e.g. `1h30m`; a leading
/// `-` negates. `None` when malformed or when the total does not fit in an `i64`.
pub fn parse_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if rest.is_empty() {
        return None;
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let value: i64 = rest.get(..digits)?.parse().ok()?;
        rest = rest.get(digits..)?;
        let (unit_ns, unit_len) = duration_unit(rest)?;
        total = total.checked_add(value.checked_mul(unit_ns)?)?;
        rest = rest.get(unit_len..)?;
    }
    if negative {
        total.checked_neg()
    } else {
        Some(total)
    }
}

/// The unit at the start of `rest`: (nanoseconds per unit, its length in bytes).
fn duration_unit(rest: &str) -> Option<(i64, usize)> {
    const UNITS: &[(&str, i64)] = &[
        // Two-letter units first, so `ms` is not read as minutes.
        ("ns", 1),
        ("ms", 1_000_000),
        ("u", 1_000),
        ("µ", 1_000), // U+00B5 MICRO SIGN, what InfluxDB documents
        ("μ", 1_000), // U+03BC GREEK SMALL LETTER MU, which looks the same
        ("s", 1_000_000_000),
        ("m", 60 * 1_000_000_000),
        ("h", 3_600 * 1_000_000_000),
        ("d", 86_400 * 1_000_000_000),
        ("w", 604_800 * 1_000_000_000),
    ];
    UNITS
        .iter()
        .find(|(unit, _)| rest.starts_with(unit))
        .map(|&(unit, ns)| (ns, unit.len()))
}

/// Byte offset of the first token character at or after `pos`: whitespace, `-- …`
/// line comments and `/* … */` block comments are skipped.
fn skip_blank(text: &str, mut pos: usize) -> Result<usize, ParseError> {
    loop {
        let rest = text.get(pos..).unwrap_or_default();
        if let Some(c) = rest.chars().next().filter(|c| c.is_whitespace()) {
            pos += c.len_utf8();
        } else if rest.starts_with("--") {
            pos += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            match rest.get(2..).and_then(|r| r.find("*/")) {
                Some(i) => pos += 2 + i + 2,
                None => return Err(ParseError::at(text, pos, "unterminated comment")),
            }
        } else {
            return Ok(pos);
        }
    }
}

/// Length of the run of identifier characters (`[A-Za-z0-9_]`) at the start of `s`.
fn ident_len(s: &str) -> usize {
    s.bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count()
}

/// Whether `c` may continue a duration literal's unit (`µ`/`μ` are not ASCII).
fn is_unit_char(c: char) -> bool {
    c.is_ascii_alphabetic() || c == 'µ' || c == 'μ'
}

/// An integer, float or duration starting at byte `start`.
fn scan_number(text: &str, start: usize) -> Result<Token, ParseError> {
    let rest = text.get(start..).unwrap_or_default();
    let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let after = rest.get(int_len..).unwrap_or_default();
    let frac_len = match after.strip_prefix('.') {
        Some(f) => f.bytes().take_while(u8::is_ascii_digit).count(),
        None => 0,
    };
    if frac_len > 0 {
        let end = start + int_len + 1 + frac_len;
        let lit = text.get(start..end).unwrap_or_default();
        let value: f64 = lit
            .parse()
            .map_err(|_| ParseError::at(text, start, "unable to parse number"))?;
        return Ok(Token {
            tok: Tok::Float(value),
            start,
            end,
        });
    }
    if after.chars().next().is_some_and(is_unit_char) {
        // A duration: the digits and everything letter- or digit-like after them
        // (`1h30m`), validated as a whole so `10x` is one bad token, not `10` and `x`.
        let len: usize = after
            .chars()
            .take_while(|&c| is_unit_char(c) || c.is_ascii_digit())
            .map(char::len_utf8)
            .sum();
        let end = start + int_len + len;
        let lit = text.get(start..end).unwrap_or_default();
        return match parse_duration(lit) {
            Some(ns) => Ok(Token {
                tok: Tok::Duration(ns),
                start,
                end,
            }),
            None => Err(ParseError::at(
                text,
                start,
                format!("invalid duration {lit}"),
            )),
        };
    }
    let end = start + int_len;
    let value: u64 = text
        .get(start..end)
        .unwrap_or_default()
        .parse()
        .map_err(|_| ParseError::at(text, start, "unable to parse integer"))?;
    Ok(Token {
        tok: Tok::Integer(value),
        start,
        end,
    })
}

/// A quoted string or identifier whose opening `quote` is at byte `start`; returns the
/// unescaped text and the offset past the closing quote. Escapes: `\\`, `\n`, `\'`, `\"`.
fn scan_quoted(text: &str, start: usize, quote: char) -> Result<(String, usize), ParseError> {
    let what = if quote == '"' {
        "unterminated quoted identifier"
    } else {
        "unterminated string"
    };
    let body = start + 1;
    let rest = text.get(body..).unwrap_or_default();
    // Most quoted text has no escape: one copy of it, not a character at a time.
    let special = |c: char| c == quote || c == '\\' || c == '\n';
    if let Some(i) = rest.find(special)
        && rest[i..].starts_with(quote)
    {
        return Ok((rest[..i].to_owned(), body + i + 1));
    }
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, body + i + 1)),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                Some((_, e)) if e != '\n' => {
                    return Err(ParseError::at(text, body + i, format!("bad escape \\{e}")));
                }
                _ => return Err(ParseError::at(text, start, what)),
            },
            // Like InfluxDB, a literal newline ends nothing and is not allowed: a
            // forgotten closing quote is reported at the opening one.
            '\n' => return Err(ParseError::at(text, start, what)),
            c => out.push(c),
        }
    }
    Err(ParseError::at(text, start, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_sorted_uppercase_and_found_in_any_case() {
        // `keyword` binary-searches the list and copies at most LONGEST_KEYWORD bytes.
        assert!(
            KEYWORDS.windows(2).all(|w| w[0] < w[1]),
            "KEYWORDS must stay sorted"
        );
        assert_eq!(
            KEYWORDS.iter().map(|k| k.len()).max(),
            Some(LONGEST_KEYWORD)
        );
        for k in KEYWORDS {
            assert_eq!(keyword(k), Some(*k));
            assert_eq!(keyword(&k.to_lowercase()), Some(*k));
        }
        assert_eq!(keyword("sElEcT"), Some("SELECT"));
        for word in [
            "usage_user",
            "time",
            "fill",
            "",
            "SUBSCRIPTIONSS",
            "A",
            "ZZZ",
        ] {
            assert_eq!(keyword(word), None, "{word}");
        }
    }
}
