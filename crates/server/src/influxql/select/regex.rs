//! InfluxQL's regular expressions (Go's RE2 syntax), matched with the `regex` crate, whose
//! syntax is RE2's. Patterns are unanchored, as in InfluxDB: `/cpu/` matches `cpu_total`.

/// A compiled InfluxQL regex.
#[derive(Debug, Clone)]
pub(crate) struct Regex(regex::Regex);

/// Bounds what one pattern may compile to, so a hostile pattern cannot take the server's
/// memory (the crate's default is 10 MiB too; stated here because it is a limit we rely on).
const REGEX_SIZE_LIMIT_BYTES: usize = 10 << 20;

impl Regex {
    /// Compiles `pattern`; the error reads as InfluxDB's does.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT_BYTES)
            .build()
            .map(Regex)
            .map_err(|e| {
                // The crate's message spans lines (pattern, caret, cause): keep the cause,
                // in InfluxDB's one-line form `error parsing regexp: <cause>: `<pattern>``.
                let text = e.to_string();
                let cause = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or_default()
                    .trim()
                    .trim_start_matches("error: ");
                format!("error parsing regexp: {cause}: `{pattern}`")
            })
    }

    /// Whether `text` contains a match.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}
