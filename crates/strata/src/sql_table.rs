//! Rendering for `strata sql`: a JSON result of `/sql` as an aligned text table, and a
//! failure with the statement line and a caret under the position.

use std::fmt::Write as _;

use crate::sql_client::ServerFailure;

/// A result read from `/sql?format=json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    /// Column names and type names.
    pub columns: Vec<(String, String)>,
    /// Rows of cells as text (`NULL` for SQL NULL).
    pub rows: Vec<Vec<String>>,
}

impl ResultSet {
    /// Reads the JSON document; a failure reported inside it (after rows began) is
    /// returned as that failure.
    pub fn from_json(text: &[u8]) -> Result<Self, ServerFailure> {
        let invalid = |why: String| ServerFailure {
            status: 200,
            message: format!("the server's answer is not a result: {why}"),
            kind: None,
            position: None,
        };
        let value: serde_json::Value =
            serde_json::from_slice(text).map_err(|e| invalid(e.to_string()))?;
        if value.get("error").is_some() {
            return Err(crate::sql_client::failure_from_json(200, text));
        }
        let columns = value
            .get("columns")
            .and_then(|c| c.as_array())
            .ok_or_else(|| invalid("no columns".into()))?
            .iter()
            .map(|column| {
                let text = |key| {
                    column
                        .get(key)
                        .and_then(|v: &serde_json::Value| v.as_str())
                        .unwrap_or_default()
                        .to_owned()
                };
                (text("name"), text("type"))
            })
            .collect();
        let rows = value
            .get("rows")
            .and_then(|r| r.as_array())
            .ok_or_else(|| invalid("no rows".into()))?
            .iter()
            .map(|row| {
                row.as_array()
                    .map(|cells| cells.iter().map(cell_text).collect())
                    .unwrap_or_default()
            })
            .collect();
        Ok(Self { columns, rows })
    }

    /// The table: a header, a rule, one line per row; numbers right-aligned, the rest
    /// left-aligned, every cell on one line (line breaks and tabs shown as `\n`, `\t`).
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|(name, _)| width(name)).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(widths.len()) {
                widths[i] = widths[i].max(width(cell));
            }
        }
        let numeric: Vec<bool> = self
            .columns
            .iter()
            .map(|(_, kind)| matches!(kind.as_str(), "integer" | "unsigned" | "float" | "decimal"))
            .collect();
        let mut out = String::new();
        let header: Vec<String> = self
            .columns
            .iter()
            .zip(&widths)
            .map(|((name, _), w)| pad(name, *w, false))
            .collect();
        let _ = writeln!(out, " {}", header.join(" | ").trim_end());
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(w + 2)).collect();
        let _ = writeln!(out, "{}", rule.join("+"));
        for row in &self.rows {
            let cells: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let cell = row.get(i).map_or("", String::as_str);
                    pad(cell, *w, numeric[i])
                })
                .collect();
            let _ = writeln!(out, " {}", cells.join(" | ").trim_end());
        }
        out
    }
}

/// `(1 row)`, `(3 rows)`, with the time when given.
pub fn footer(rows: usize, millis: Option<f64>) -> String {
    let noun = if rows == 1 { "row" } else { "rows" };
    match millis {
        Some(ms) => format!("({rows} {noun}, {ms:.1} ms)"),
        None => format!("({rows} {noun})"),
    }
}

fn cell_text(value: &serde_json::Value) -> String {
    let text = match value {
        serde_json::Value::Null => "NULL".to_owned(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains(['\n', '\r', '\t']) {
        text.replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t")
    } else {
        text
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

fn pad(text: &str, width_to: usize, right: bool) -> String {
    let fill = " ".repeat(width_to.saturating_sub(width(text)));
    if right {
        format!("{fill}{text}")
    } else {
        format!("{text}{fill}")
    }
}

/// A failure for the terminal: `error [kind]: message`, then, when the position is known,
/// the statement's line and a caret under the column.
pub fn render_failure(failure: &ServerFailure, statement: &str) -> String {
    let mut out = match &failure.kind {
        Some(kind) => format!("error [{kind}]: {}", failure.message),
        None => format!("error: {}", failure.message),
    };
    if let Some((line, column)) = failure.position {
        let _ = write!(out, "\nat line {line}, column {column}:");
        if let Some(text) = statement.lines().nth((line as usize).saturating_sub(1)) {
            // Tabs become one space each so the caret's column matches the text's.
            let shown: String = text
                .chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .collect();
            let margin = format!("{line} | ");
            let _ = write!(
                out,
                "\n{margin}{shown}\n{}{}^",
                " ".repeat(margin.len()),
                " ".repeat((column as usize).saturating_sub(1))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_aligned() {
        let result = ResultSet::from_json(
            br#"{"columns":[{"name":"host","type":"string"},{"name":"usage","type":"float"}],
                "rows":[["a",12.5],["bbbbbb",null]],"row_count":2}"#,
        )
        .expect("result");
        assert_eq!(
            result.render(),
            " host   | usage\n--------+-------\n a      |  12.5\n bbbbbb |  NULL\n"
        );
        assert_eq!(footer(1, None), "(1 row)");
        assert_eq!(footer(2, Some(12.34)), "(2 rows, 12.3 ms)");
    }

    #[test]
    fn errors_inside_a_result_are_failures() {
        let failure = ResultSet::from_json(
            br#"{"columns":[],"rows":[],"row_count":0,"error":{"message":"late","kind":"timeout"}}"#,
        )
        .expect_err("failure");
        assert_eq!(failure.message, "late");
    }

    #[test]
    fn carets_point_at_the_column() {
        let failure = ServerFailure {
            status: 400,
            message: "bad".into(),
            kind: Some("syntax".into()),
            position: Some((2, 3)),
        };
        assert_eq!(
            render_failure(&failure, "SELECT 1\nFRM\tx"),
            "error [syntax]: bad\nat line 2, column 3:\n2 | FRM x\n      ^"
        );
    }
}
