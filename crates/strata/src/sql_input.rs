//! What `strata sql` reads: lines collected into statements (ended by `;` outside quotes
//! and comments) and backslash commands.

/// What one input does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this statement.
    Statement(String),
    /// Print the help.
    Help,
    /// Leave.
    Quit,
    /// A backslash command that does not exist.
    Unknown(String),
}

/// The action of a backslash command (`line` starts with `\`).
pub fn command(line: &str) -> Action {
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or_default();
    let arg = words.next();
    match (name, arg) {
        ("\\q", None) => Action::Quit,
        ("\\?" | "\\h", None) => Action::Help,
        ("\\d", None) => Action::Statement("SHOW TABLES".into()),
        ("\\d", Some(table)) => Action::Statement(format!("DESCRIBE {table}")),
        _ => Action::Unknown(line.trim().to_owned()),
    }
}

/// Collects lines into statements: a statement ends at a `;` outside quotes and comments.
#[derive(Debug, Default)]
pub struct StatementBuffer {
    text: String,
}

impl StatementBuffer {
    pub fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// Adds a line; returns the statements it completed (without their `;`).
    pub fn push_line(&mut self, line: &str) -> Vec<String> {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(line);
        let (statements, rest) = split_statements(&self.text);
        self.text = rest;
        statements
    }

    /// Whatever is left (a final statement without its `;`).
    pub fn take_rest(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.text);
        let rest = rest.trim();
        (!rest.is_empty()).then(|| rest.to_owned())
    }
}

/// Splits `text` at `;` outside `'…'`, `"…"`, `-- …` and `/* … */`: the complete statements
/// (trimmed, empty ones dropped) and the unfinished rest.
fn split_statements(text: &str) -> (Vec<String>, String) {
    #[derive(PartialEq)]
    enum State {
        Code,
        Single,
        Double,
        Line,
        Block,
    }
    let mut state = State::Code;
    let mut statements = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        match state {
            State::Code => match c {
                b'\'' => state = State::Single,
                b'"' => state = State::Double,
                b'-' if next == Some(b'-') => state = State::Line,
                b'/' if next == Some(b'*') => {
                    state = State::Block;
                    i += 1;
                }
                b';' => {
                    let statement = text[start..i].trim();
                    if !statement.is_empty() {
                        statements.push(statement.to_owned());
                    }
                    start = i + 1;
                }
                _ => {}
            },
            // A doubled quote inside a literal reads as leaving and re-entering it.
            State::Single if c == b'\'' => state = State::Code,
            State::Double if c == b'"' => state = State::Code,
            State::Line if c == b'\n' => state = State::Code,
            State::Block if c == b'*' && next == Some(b'/') => {
                state = State::Code;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    (statements, text[start..].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        let (statements, rest) =
            split_statements("SELECT 'a;b', \"c;d\" FROM t; -- x; y\nSELECT 2 /* ; */;\n SELECT 3");
        assert_eq!(
            statements,
            ["SELECT 'a;b', \"c;d\" FROM t", "-- x; y\nSELECT 2 /* ; */"]
        );
        assert_eq!(rest, "\n SELECT 3");
        let (none, rest) = split_statements("SELECT 'it''s;");
        assert!(none.is_empty());
        assert_eq!(rest, "SELECT 'it''s;");
    }

    #[test]
    fn buffer_completes_statements_across_lines() {
        let mut buffer = StatementBuffer::default();
        assert!(buffer.push_line("SELECT host").is_empty());
        assert!(!buffer.is_blank());
        assert_eq!(
            buffer.push_line("FROM cpu; SELECT"),
            ["SELECT host\nFROM cpu"]
        );
        assert_eq!(buffer.take_rest().as_deref(), Some("SELECT"));
        assert!(buffer.is_blank());
    }

    #[test]
    fn commands() {
        assert_eq!(command("\\q"), Action::Quit);
        assert_eq!(command("\\d"), Action::Statement("SHOW TABLES".into()));
        assert_eq!(
            command(" \\d cpu "),
            Action::Statement("DESCRIBE cpu".into())
        );
        assert_eq!(command("\\x"), Action::Unknown("\\x".into()));
    }
}
