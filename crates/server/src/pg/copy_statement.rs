//! `COPY` statements as Postgres reads them: `COPY (query) TO STDOUT`, `COPY table
//! [(columns)] TO STDOUT` and `COPY table [(columns)] FROM STDIN`, with their format
//! options in the `WITH (…)` form or the old one (`CSV HEADER`). Writing is `copy_out`,
//! reading `copy_in`. Refused with `feature_not_supported`: a file or program on the
//! server, and the options Strata does not implement (`FORCE_NOT_NULL`, `FORCE_NULL`).

use datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use pgwire::error::PgWireError;

use super::errors::{NOT_SUPPORTED, SYNTAX_ERROR, error};

/// The copy format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Text,
    Csv,
    /// Postgres's binary copy format: a signature, then each row as its field count and
    /// each field's length and bytes in the type's binary form.
    Binary,
}

/// Which way a `COPY` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Direction {
    /// `COPY … TO STDOUT`: the `SELECT` that gives the rows.
    Out { query: String },
    /// `COPY table [(columns)] FROM STDIN`: the table, and its columns in the order the
    /// data gives them (empty: every column, in the table's order).
    In { table: String, columns: Vec<String> },
}

/// A `COPY` Strata runs: which way, and the format of its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Copy {
    pub direction: Direction,
    pub format: Format,
    pub header: bool,
    pub delimiter: u8,
    pub null: String,
    pub quote: u8,
    pub escape: u8,
    /// Columns whose non-NULL values are always quoted (CSV out); `None` when none are,
    /// `Some(empty)` for `*`.
    pub force_quote: Option<Vec<String>>,
}

/// The `COPY` that `sql` is, if it is one: `Ok` for a `COPY … TO STDOUT` or `COPY … FROM
/// STDIN` Strata can run, `Err` for one it cannot (a syntax error, a server file, an
/// unknown option).
pub(super) fn copy_statement(sql: &str) -> Option<Result<Copy, PgWireError>> {
    let text = sql.trim_start();
    let word_end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    if !text[..word_end].eq_ignore_ascii_case("COPY") {
        return None;
    }
    let statements = match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(statements) => statements,
        Err(e) => return Some(Err(error(SYNTAX_ERROR, e.to_string()))),
    };
    let [
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        },
    ] = statements.as_slice()
    else {
        return None;
    };
    Some(plan(source, *to, target, options, legacy_options))
}

fn plan(
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy_options: &[CopyLegacyOption],
) -> Result<Copy, PgWireError> {
    let direction = match (to, source, target) {
        (true, _, CopyTarget::Stdout) => Direction::Out {
            query: match source {
                CopySource::Query(query) => query.to_string(),
                CopySource::Table {
                    table_name,
                    columns,
                } => {
                    let columns = if columns.is_empty() {
                        "*".to_owned()
                    } else {
                        columns
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    format!("SELECT {columns} FROM {table_name}")
                }
            },
        },
        (
            false,
            CopySource::Table {
                table_name,
                columns,
            },
            CopyTarget::Stdin,
        ) => Direction::In {
            table: table_name.to_string(),
            columns: columns.iter().map(ToString::to_string).collect(),
        },
        (false, CopySource::Query(_), _) => {
            return Err(error(SYNTAX_ERROR, "COPY FROM takes a table, not a query"));
        }
        (true, ..) => {
            return Err(error(
                NOT_SUPPORTED,
                "COPY TO a file or program on the server is not supported: copy TO STDOUT (psql's \\copy writes the file on the client)",
            ));
        }
        (false, ..) => {
            return Err(error(
                NOT_SUPPORTED,
                "COPY FROM a file or program on the server is not supported: copy FROM STDIN (psql's \\copy reads the file on the client)",
            ));
        }
    };
    let is_in = matches!(direction, Direction::In { .. });
    let mut copy = Copy {
        direction,
        format: Format::Text,
        header: false,
        delimiter: b'\t',
        null: "\\N".to_owned(),
        quote: b'"',
        escape: b'"',
        force_quote: None,
    };
    let (mut delimiter, mut null, mut quote, mut escape) = (None, None, None, None);
    let unsupported = |what: &str| {
        Err(error(
            NOT_SUPPORTED,
            format!("COPY option {what} is not supported"),
        ))
    };
    for option in options {
        match option {
            CopyOption::Format(name) => match name.value.to_ascii_lowercase().as_str() {
                "text" => copy.format = Format::Text,
                "csv" => copy.format = Format::Csv,
                "binary" => copy.format = Format::Binary,
                other => {
                    return Err(error(
                        SYNTAX_ERROR,
                        format!("COPY format \"{other}\" not recognized"),
                    ));
                }
            },
            CopyOption::Delimiter(c) => delimiter = Some(*c),
            CopyOption::Null(text) => null = Some(text.clone()),
            CopyOption::Header(on) => copy.header = *on,
            CopyOption::Quote(c) => quote = Some(*c),
            CopyOption::Escape(c) => escape = Some(*c),
            CopyOption::ForceQuote(columns) => copy.force_quote = Some(names(columns)),
            CopyOption::Encoding(name) => {
                let name = name.to_ascii_uppercase().replace(['-', '_'], "");
                if name != "UTF8" {
                    return unsupported(&format!("ENCODING {name} (only UTF8)"));
                }
            }
            CopyOption::Freeze(_) | CopyOption::ForceNotNull(_) | CopyOption::ForceNull(_)
                if !is_in =>
            {
                return Err(error(
                    SYNTAX_ERROR,
                    format!("COPY {option} is available only in COPY FROM"),
                ));
            }
            CopyOption::Freeze(_) => {}
            CopyOption::ForceNotNull(_) | CopyOption::ForceNull(_) => {
                return unsupported(&option.to_string());
            }
        }
    }
    for option in legacy_options {
        match option {
            CopyLegacyOption::Binary => copy.format = Format::Binary,
            CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
            CopyLegacyOption::Null(text) => null = Some(text.clone()),
            CopyLegacyOption::Header => copy.header = true,
            CopyLegacyOption::Csv(csv) => {
                copy.format = Format::Csv;
                for option in csv {
                    match option {
                        CopyLegacyCsvOption::Header => copy.header = true,
                        CopyLegacyCsvOption::Quote(c) => quote = Some(*c),
                        CopyLegacyCsvOption::Escape(c) => escape = Some(*c),
                        CopyLegacyCsvOption::ForceQuote(columns) => {
                            copy.force_quote = Some(names(columns));
                        }
                        CopyLegacyCsvOption::ForceNotNull(_) => {
                            return unsupported("FORCE NOT NULL");
                        }
                    }
                }
            }
            other => return unsupported(&other.to_string()),
        }
    }
    if copy.format == Format::Binary {
        let text_only = [
            ("DELIMITER", delimiter.is_some()),
            ("NULL", null.is_some()),
            ("HEADER", copy.header),
            ("QUOTE", quote.is_some()),
            ("ESCAPE", escape.is_some()),
            ("FORCE_QUOTE", copy.force_quote.is_some()),
        ];
        if let Some((name, _)) = text_only.iter().find(|(_, given)| *given) {
            return Err(error(
                SYNTAX_ERROR,
                format!("cannot specify {name} in BINARY mode"),
            ));
        }
        return Ok(copy);
    }
    if copy.format == Format::Csv {
        copy.delimiter = b',';
        copy.null = String::new();
    }
    let single_byte = |c: char, what: &str| -> Result<u8, PgWireError> {
        u8::try_from(c).ok().filter(u8::is_ascii).ok_or_else(|| {
            error(
                SYNTAX_ERROR,
                format!("COPY {what} must be a single one-byte character"),
            )
        })
    };
    if let Some(c) = delimiter {
        copy.delimiter = single_byte(c, "delimiter")?;
    }
    if let Some(text) = null {
        copy.null = text;
    }
    if copy.format == Format::Text && (quote.is_some() || escape.is_some()) {
        return Err(error(
            SYNTAX_ERROR,
            "COPY QUOTE and ESCAPE are available only in CSV mode",
        ));
    }
    if copy.format == Format::Text && copy.force_quote.is_some() {
        return Err(error(
            SYNTAX_ERROR,
            "COPY FORCE_QUOTE is available only in CSV mode",
        ));
    }
    if is_in && copy.force_quote.is_some() {
        return Err(error(
            SYNTAX_ERROR,
            "COPY FORCE_QUOTE cannot be used with COPY FROM",
        ));
    }
    if let Some(c) = quote {
        copy.quote = single_byte(c, "quote")?;
        copy.escape = copy.quote;
    }
    if let Some(c) = escape {
        copy.escape = single_byte(c, "escape")?;
    }
    if matches!(copy.delimiter, b'\r' | b'\n' | b'\\') || copy.null.contains(['\r', '\n']) {
        return Err(error(
            SYNTAX_ERROR,
            "COPY delimiter and NULL cannot be a line break (nor the delimiter a backslash)",
        ));
    }
    if copy.format == Format::Csv
        && (copy.delimiter == copy.quote || copy.null.contains(copy.quote as char))
    {
        return Err(error(
            SYNTAX_ERROR,
            "CSV quote character must not appear in the DELIMITER or NULL specification",
        ));
    }
    Ok(copy)
}

/// Column names of `FORCE_QUOTE`; empty for `*`.
fn names(columns: &[datafusion::sql::sqlparser::ast::Ident]) -> Vec<String> {
    columns
        .iter()
        .map(|c| c.value.clone())
        .filter(|c| c != "*")
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::{Copy, Direction, Format, copy_statement};

    pub(in crate::pg) fn plan(sql: &str) -> Copy {
        copy_statement(sql).expect("a COPY").expect("supported")
    }

    fn refused(sql: &str) -> String {
        copy_statement(sql)
            .expect("a COPY")
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn copy_statements_are_read_as_postgres_reads_them() {
        let copy = plan("COPY (SELECT a, b FROM t WHERE a > 1) TO STDOUT");
        let out = |query: &str| Direction::Out {
            query: query.to_owned(),
        };
        assert_eq!(copy.direction, out("SELECT a, b FROM t WHERE a > 1"));
        assert_eq!(
            (copy.format, copy.delimiter, copy.null.as_str()),
            (Format::Text, b'\t', "\\N")
        );
        // psql's \copy ... CSV HEADER, in the old syntax.
        let copy = plan("copy  weather (city, temp) TO STDOUT CSV HEADER");
        assert_eq!(copy.direction, out("SELECT city, temp FROM weather"));
        assert_eq!(
            (copy.format, copy.header, copy.delimiter),
            (Format::Csv, true, b',')
        );
        let copy = plan(
            "COPY t TO STDOUT WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'NA', QUOTE '''', FORCE_QUOTE (a, b))",
        );
        assert_eq!(copy.direction, out("SELECT * FROM t"));
        assert_eq!(
            (copy.delimiter, copy.null.as_str(), copy.quote, copy.escape),
            (b';', "NA", b'\'', b'\'')
        );
        assert_eq!(copy.force_quote, Some(vec!["a".to_owned(), "b".to_owned()]));
        // asyncpg's copy_records_to_table, and the old syntax.
        for sql in [
            "COPY t (a, b) FROM STDIN (FORMAT binary)",
            "COPY t FROM STDIN BINARY",
            "COPY t TO STDOUT (FORMAT 'binary')",
        ] {
            assert_eq!(plan(sql).format, Format::Binary, "{sql}");
        }
        let copy_in =
            plan("COPY \"My T\" (b, a) FROM STDIN WITH (FORMAT csv, HEADER true, FREEZE)");
        assert_eq!(
            copy_in.direction,
            Direction::In {
                table: "\"My T\"".to_owned(),
                columns: vec!["b".to_owned(), "a".to_owned()],
            }
        );
        assert_eq!(
            (copy_in.format, copy_in.header, copy_in.null.as_str()),
            (Format::Csv, true, "")
        );
        assert!(copy_statement("SELECT 1").is_none());
        assert!(copy_statement("COPYRIGHT").is_none());
        for (sql, why) in [
            (
                "COPY t FROM '/etc/passwd'",
                "COPY FROM a file or program on the server",
            ),
            (
                "COPY (SELECT 1) FROM STDIN",
                "does not support query as a source",
            ),
            (
                "COPY t FROM STDIN (FORMAT csv, FORCE_QUOTE (a))",
                "cannot be used with COPY FROM",
            ),
            (
                "COPY t FROM STDIN (FORMAT csv, FORCE_NULL (a))",
                "not supported",
            ),
            ("COPY t TO '/tmp/x'", "file or program on the server"),
            (
                "COPY t TO STDOUT (FORMAT binary, HEADER)",
                "cannot specify HEADER in BINARY mode",
            ),
            (
                "COPY t FROM STDIN BINARY DELIMITER '|'",
                "cannot specify DELIMITER in BINARY mode",
            ),
            (
                "COPY t FROM STDIN (FORMAT binary, NULL 'x')",
                "cannot specify NULL in BINARY mode",
            ),
            ("COPY t TO STDOUT (FORMAT xml)", "not recognized"),
            ("COPY t TO STDOUT (QUOTE '\"')", "only in CSV mode"),
            (
                "COPY t TO STDOUT (FORMAT csv, DELIMITER '\"')",
                "must not appear",
            ),
            ("COPY t TO STDOUT (DELIMITER 'é')", "Expect a char"),
            ("COPY t TO STDOUT (FORCE_NULL (a))", "only in COPY FROM"),
            ("COPY t TO", "Expected"),
        ] {
            let message = refused(sql);
            assert!(message.contains(why), "{sql}: {message}");
        }
    }
}
