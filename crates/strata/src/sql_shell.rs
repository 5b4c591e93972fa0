//! `strata sql`: SQL against a running server over `/sql`.
//!
//! Three modes: a statement argument (run it, print, exit); stdin a terminal (an
//! interactive shell with line editing, history in `$HOME/.strata_history`, multi-line
//! statements ended by `;`, and backslash commands); stdin anything else (a script:
//! statements separated by `;`, run in order, stopping at the first failure).
//!
//! Output is an aligned table (from the server's JSON), or the server's own CSV or JSON
//! passed through as it streams in.

use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use crate::sql_client::{Client, Failure, ServerFailure};
use crate::sql_input::{Action, StatementBuffer, command};
use crate::sql_table::{ResultSet, footer, render_failure};

/// Flags of `strata sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// Server URL
    #[arg(long, env = "STRATA_URL", default_value = "http://127.0.0.1:8086")]
    url: String,
    /// Database that unqualified table names are in
    #[arg(long, env = "STRATA_DB", default_value = "strata")]
    db: String,
    /// Token, when the server requires one (--auth-token of strata serve)
    #[arg(long, env = "STRATA_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Output: an aligned table, or the server's CSV or JSON unchanged
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
    /// A statement to run (then exit). Without it: a shell when stdin is a terminal,
    /// else the statements read from stdin, separated by `;`
    statement: Option<String>,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// Aligned columns with a row count.
    Table,
    /// CSV with a header line.
    Csv,
    /// The server's JSON document.
    Json,
}

const HELP: &str = "\
Statements end with ';' and may span lines. Commands:
  \\d          list tables (SHOW TABLES)
  \\d NAME     describe a table (DESCRIBE NAME)
  \\?          this help
  \\q          quit (or Ctrl-D)
Ctrl-C clears the statement being typed.";

/// Runs `strata sql`; `Ok(false)` when a statement failed (exit status 1).
pub fn run(args: &SqlArgs) -> Result<bool, String> {
    let client = Client::new(&args.url, &args.db, args.token.clone())?;
    let session = Session {
        client,
        format: args.format,
        interactive: false,
    };
    match &args.statement {
        Some(statement) => Ok(session.run_input(statement).is_ok()),
        None if io::stdin().is_terminal() => {
            let session = Session {
                interactive: true,
                ..session
            };
            session.shell(&args.db)
        }
        None => session.script(io::stdin().lock()),
    }
}

struct Session {
    client: Client,
    format: OutputFormat,
    interactive: bool,
}

impl Session {
    /// One input given whole (the statement argument): a command or statements.
    fn run_input(&self, input: &str) -> Result<(), ()> {
        if input.trim_start().starts_with('\\') {
            return match command(input) {
                Action::Quit => Ok(()),
                action => self.act(&action),
            };
        }
        let mut buffer = StatementBuffer::default();
        let mut statements = buffer.push_line(input);
        statements.extend(buffer.take_rest());
        if statements.is_empty() {
            eprintln!("error: no statement given");
            return Err(());
        }
        for statement in statements {
            self.act(&Action::Statement(statement))?;
        }
        Ok(())
    }

    /// Does one action (not `Quit`); failures are printed to stderr.
    fn act(&self, action: &Action) -> Result<(), ()> {
        match action {
            Action::Statement(statement) => self.execute(statement),
            Action::Help => {
                println!("{HELP}");
                Ok(())
            }
            Action::Quit => Ok(()),
            Action::Unknown(text) => {
                eprintln!("error: unknown command {text}; \\? lists the commands");
                Err(())
            }
        }
    }

    /// Statements from a non-terminal stdin; stops at the first failure.
    fn script(&self, input: impl BufRead) -> Result<bool, String> {
        let mut buffer = StatementBuffer::default();
        let mut first = true;
        for line in input.lines() {
            let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
            let actions: Vec<Action> = if buffer.is_blank() && line.trim_start().starts_with('\\') {
                buffer = StatementBuffer::default();
                vec![command(&line)]
            } else {
                buffer
                    .push_line(&line)
                    .into_iter()
                    .map(Action::Statement)
                    .collect()
            };
            for action in actions {
                if action == Action::Quit {
                    return Ok(true);
                }
                if !first && self.format == OutputFormat::Table {
                    println!();
                }
                first = false;
                if self.act(&action).is_err() {
                    return Ok(false);
                }
            }
        }
        match buffer.take_rest() {
            Some(statement) => {
                if !first && self.format == OutputFormat::Table {
                    println!();
                }
                Ok(self.execute(&statement).is_ok())
            }
            None => Ok(true),
        }
    }

    /// The interactive shell; failures are shown and the shell goes on.
    fn shell(&self, database: &str) -> Result<bool, String> {
        use rustyline::error::ReadlineError;
        let config = rustyline::Config::builder()
            .auto_add_history(false)
            .max_history_size(10_000)
            .map_err(|e| format!("cannot set up line editing: {e}"))?
            .build();
        let mut editor = rustyline::DefaultEditor::with_config(config)
            .map_err(|e| format!("cannot set up line editing: {e}"))?;
        let history = history_path();
        if let Some(path) = &history {
            // A missing or unreadable history file only means no history yet.
            let _ = editor.load_history(path);
        }
        println!(
            "strata sql: {database} on {}. \\? for help, \\q to quit.",
            self.client.url()
        );
        let mut buffer = StatementBuffer::default();
        let mut entry = String::new();
        loop {
            let prompt = if buffer.is_blank() {
                format!("{database}=> ")
            } else {
                format!("{database}-> ")
            };
            let line = match editor.readline(&prompt) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => {
                    buffer = StatementBuffer::default();
                    entry.clear();
                    continue;
                }
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(format!("cannot read input: {e}")),
            };
            if buffer.is_blank() && line.trim_start().starts_with('\\') {
                let _ = editor.add_history_entry(line.trim());
                buffer = StatementBuffer::default();
                match command(&line) {
                    Action::Quit => break,
                    action => {
                        let _ = self.act(&action);
                    }
                }
                continue;
            }
            if !entry.is_empty() {
                entry.push('\n');
            }
            entry.push_str(&line);
            let statements = buffer.push_line(&line);
            if buffer.is_blank() && !entry.trim().is_empty() {
                let _ = editor.add_history_entry(entry.trim());
                entry.clear();
            }
            for statement in statements {
                let _ = self.execute(&statement);
            }
        }
        if let Some(path) = &history
            && let Err(e) = editor.save_history(path)
        {
            eprintln!("warning: cannot save history to {}: {e}", path.display());
        }
        Ok(true)
    }

    /// Sends one statement and prints its result, or its failure to stderr.
    fn execute(&self, statement: &str) -> Result<(), ()> {
        let started = Instant::now();
        let outcome = match self.format {
            OutputFormat::Table => self.table(statement, started),
            OutputFormat::Csv => self.pass_through(statement, "csv"),
            OutputFormat::Json => self.pass_through(statement, "json"),
        };
        outcome.map_err(|failure| {
            let text = match &failure {
                Failure::Server(failure) => render_failure(failure, statement),
                Failure::Transport(message) => format!("error: {message}"),
            };
            eprintln!("{text}");
        })
    }

    fn table(&self, statement: &str, started: Instant) -> Result<(), Failure> {
        let response = self.client.send(statement, "json")?;
        let mut body = Vec::new();
        let mut reader = response.body;
        reader.read_to_end(&mut body).map_err(|e| {
            Failure::Transport(format!(
                "cannot read the result (HTTP {}): {e}",
                response.status
            ))
        })?;
        let result = ResultSet::from_json(&body).map_err(Failure::Server)?;
        let millis = self
            .interactive
            .then(|| started.elapsed().as_secs_f64() * 1000.0);
        let mut out = io::stdout().lock();
        let printed = write!(out, "{}", result.render())
            .and_then(|()| writeln!(out, "{}", footer(result.rows.len(), millis)))
            .and_then(|()| out.flush());
        printed.map_err(|e| Failure::Transport(format!("cannot write the result: {e}")))
    }

    /// Copies the server's body to stdout as it arrives. A JSON body that ends with an
    /// `error` member (the query failed after its rows began) is a failure too.
    fn pass_through(&self, statement: &str, format: &str) -> Result<(), Failure> {
        let response = self.client.send(statement, format)?;
        let mut reader = response.body;
        let mut out = io::stdout().lock();
        let mut buf = vec![0; 64 * 1024];
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = out.flush();
                    return Err(Failure::Transport(format!("cannot read the result: {e}")));
                }
            };
            out.write_all(&buf[..n])
                .map_err(|e| Failure::Transport(format!("cannot write the result: {e}")))?;
            if format == "json" {
                remember_tail(&mut tail, &buf[..n]);
            }
        }
        out.flush()
            .map_err(|e| Failure::Transport(format!("cannot write the result: {e}")))?;
        match json_tail_error(&tail) {
            Some(failure) => Err(Failure::Server(failure)),
            None => Ok(()),
        }
    }
}

/// Bytes of a JSON result kept to find an error member at its end.
const TAIL_BYTES: usize = 64 * 1024;

fn remember_tail(tail: &mut Vec<u8>, bytes: &[u8]) {
    tail.extend_from_slice(bytes);
    if tail.len() > 2 * TAIL_BYTES {
        tail.drain(..tail.len() - TAIL_BYTES);
    }
}

/// The failure in the end of a JSON result (`…\n],"row_count":N,"error":{…}}`), if any.
/// Rows never hold a raw line break (JSON escapes them), so `\n],` only starts the end.
fn json_tail_error(tail: &[u8]) -> Option<ServerFailure> {
    let marker = b"\n],\"row_count\":";
    let at = tail.windows(marker.len()).rposition(|w| w == marker)?;
    let mut document = b"{".to_vec();
    document.extend_from_slice(&tail[at + 3..]);
    let value: serde_json::Value = serde_json::from_slice(&document).ok()?;
    value.get("error")?;
    Some(crate::sql_client::failure_from_json(200, &document))
}

/// `$HOME/.strata_history`; none when HOME is unset (history then lives only in memory).
fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".strata_history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_are_found_at_the_end() {
        let failed = b"{\"columns\":[],\"rows\":[\n[1]\n],\"row_count\":1,\"error\":{\"message\":\"m\",\"kind\":\"timeout\"}}\n";
        let failure = json_tail_error(failed).expect("an error");
        assert_eq!(failure.kind.as_deref(), Some("timeout"));
        let fine = b"{\"columns\":[],\"rows\":[\n[\"error\"]\n],\"row_count\":1}\n";
        assert!(json_tail_error(fine).is_none());
    }
}
