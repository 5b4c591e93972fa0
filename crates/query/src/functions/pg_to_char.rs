//! `to_char(time, template)` with Postgres's template patterns (`'YYYY-MM-DD HH24:MI:SS'`).
//! DataFusion's `to_char` takes chrono's `%` format and writes anything else as it is, so
//! Postgres's templates came back unchanged (`to_char(now(), 'YYYY')` was `'YYYY'`): a
//! wrong answer with no error. A template without `%` is now read as Postgres reads it
//! and turned into chrono's format; a `%` format still goes to chrono as before.
//!
//! Patterns with an exact chrono equivalent are taken: `HH24`, `HH12`, `HH`, `MI`, `SS`,
//! `MS`, `US`, `YYYY`, `YY`, `MM`, `DD`, `DDD`, `IYYY`, `IW`, `ID` (in upper or lower
//! case), `Mon`, `Dy`, `AM`/`PM`, `am`/`pm`, and with the `FM` prefix (no padding)
//! `FMMonth`, `FMDay` and the numbers. Text in double quotes and a character after `\` are
//! written as they are, as is any character that starts no pattern. Patterns without an
//! exact equivalent (`Month` and `Day` padded to nine characters, upper-case month and day
//! names, `Q`, `D`, `W`, `WW`, `J`, `CC`, `TZ`, `TH`, …) are refused with an error naming
//! them, rather than written wrong.

/// A pattern: how it is written, chrono's format for it, and chrono's format with `FM`.
/// `None`: refused (no exact chrono equivalent).
type Pattern = (&'static str, Option<&'static str>, Option<&'static str>);

/// Postgres's patterns, longest first where one starts another. Numeric patterns match in
/// upper or lower case; text patterns only as written (their case is the output's).
const PATTERNS: &[Pattern] = &[
    ("HH24", Some("%H"), Some("%-H")),
    ("HH12", Some("%I"), Some("%-I")),
    ("HH", Some("%I"), Some("%-I")),
    ("MI", Some("%M"), Some("%-M")),
    ("SSSSS", None, None),
    ("SSSS", None, None),
    ("SS", Some("%S"), Some("%-S")),
    ("MS", Some("%3f"), None),
    ("US", Some("%6f"), None),
    ("IYYY", Some("%G"), Some("%G")),
    ("IDDD", None, None),
    ("IYY", None, None),
    ("IW", Some("%V"), Some("%-V")),
    ("ID", Some("%u"), Some("%u")),
    ("IY", None, None),
    ("YYYY", Some("%Y"), Some("%Y")),
    ("Y,YYY", None, None),
    ("YYY", None, None),
    ("YY", Some("%y"), Some("%-y")),
    ("DDD", Some("%j"), Some("%-j")),
    ("DD", Some("%d"), Some("%-d")),
    ("MM", Some("%m"), Some("%-m")),
    ("WW", None, None),
    ("CC", None, None),
    ("FF", None, None),
    ("TZH", None, None),
    ("TZM", None, None),
    ("TZ", None, None),
    ("OF", None, None),
    ("RM", None, None),
    ("TH", None, None),
    ("SP", None, None),
    ("A.M.", None, None),
    ("P.M.", None, None),
    ("B.C.", None, None),
    ("A.D.", None, None),
    ("AM", Some("%p"), Some("%p")),
    ("PM", Some("%p"), Some("%p")),
    ("BC", None, None),
    ("AD", None, None),
    ("Y", None, None),
    ("I", None, None),
    ("D", None, None),
    ("W", None, None),
    ("J", None, None),
    ("Q", None, None),
];

/// Text patterns, matched only as written.
const TEXT_PATTERNS: &[Pattern] = &[
    ("Month", None, Some("%B")),
    ("Mon", Some("%b"), Some("%b")),
    ("Day", None, Some("%A")),
    ("Dy", Some("%a"), Some("%a")),
    ("am", Some("%P"), Some("%P")),
    ("pm", Some("%P"), Some("%P")),
    ("MONTH", None, None),
    ("month", None, None),
    ("MON", None, None),
    ("mon", None, None),
    ("DAY", None, None),
    ("day", None, None),
    ("DY", None, None),
    ("dy", None, None),
];

/// Whether `format` is a Postgres template rather than chrono's `%` format.
pub(super) fn is_template(format: &str) -> bool {
    !format.contains('%')
}

/// chrono's format for Postgres template `template`, or why it has no exact equivalent.
pub(super) fn chrono_format(template: &str) -> Result<String, String> {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            // Quoted text, up to the closing quote; `\"` inside is a quote.
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, q)) = chars.next() {
                match q {
                    '"' => {
                        end = i + 2;
                        break;
                    }
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            literal(&mut out, next);
                        }
                    }
                    other => literal(&mut out, other),
                }
            }
            rest = &rest[end..];
            continue;
        }
        if c == '\\' {
            let mut chars = rest[1..].chars();
            match chars.next() {
                Some(next) => {
                    literal(&mut out, next);
                    rest = &rest[1 + next.len_utf8()..];
                }
                None => {
                    literal(&mut out, '\\');
                    rest = "";
                }
            }
            continue;
        }
        let fill = rest.starts_with("FM") || rest.starts_with("fm");
        let after_fill = if fill { &rest[2..] } else { rest };
        if let Some((written, chrono, chrono_fm)) = pattern_at(after_fill) {
            let format = if fill { chrono_fm } else { chrono };
            let Some(format) = format else {
                let name = if fill {
                    format!("FM{written}")
                } else {
                    written.to_owned()
                };
                return Err(format!(
                    "to_char pattern {name} is not supported (supported: HH24, HH12, MI, SS, MS, \
                     US, YYYY, YY, MM, DD, DDD, IYYY, IW, ID, Mon, Dy, AM, PM, FMMonth, FMDay, \
                     and FM before a number; or give chrono's % format)"
                ));
            };
            out.push_str(format);
            rest = &after_fill[written.len()..];
            continue;
        }
        // `FM` before no pattern, or any other character: as it is.
        literal(&mut out, c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

/// The pattern at the start of `text`, as written there, with its chrono formats.
fn pattern_at(text: &str) -> Option<(&str, Option<&'static str>, Option<&'static str>)> {
    for &(written, chrono, chrono_fm) in TEXT_PATTERNS {
        if text.starts_with(written) {
            return Some((&text[..written.len()], chrono, chrono_fm));
        }
    }
    for &(upper, chrono, chrono_fm) in PATTERNS {
        let Some(start) = text.get(..upper.len()) else {
            continue;
        };
        if start == upper || start == upper.to_ascii_lowercase() {
            return Some((start, chrono, chrono_fm));
        }
    }
    None
}

/// Appends `c` to a chrono format as itself.
fn literal(out: &mut String, c: char) {
    if c == '%' {
        out.push_str("%%");
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_become_chrono_formats() {
        for (template, chrono) in [
            ("YYYY-MM-DD HH24:MI:SS", "%Y-%m-%d %H:%M:%S"),
            ("yyyy-mm-dd hh24:mi:ss.ms", "%Y-%m-%d %H:%M:%S.%3f"),
            ("HH12:MI AM", "%I:%M %p"),
            ("hh:mi pm", "%I:%M %P"),
            ("Dy, DD Mon YYYY", "%a, %d %b %Y"),
            ("FMDay FMDD FMMonth", "%A %-d %B"),
            ("IYYY-\"W\"IW-ID", "%G-W%V-%u"),
            ("DDD US", "%j %6f"),
            ("\"Quarter: \"YY", "Quarter: %y"),
            ("\\Y\\\"x", "Y\"x"),
            ("50%!", "50%%!"),
            ("FM-", "FM-"),
            ("", ""),
        ] {
            assert_eq!(chrono_format(template).as_deref(), Ok(chrono), "{template}");
        }
    }

    #[test]
    fn patterns_chrono_cannot_write_exactly_are_refused_by_name() {
        for (template, named) in [
            ("Month DD", "pattern Month "),
            ("Day", "pattern Day "),
            ("MONTH", "pattern MONTH "),
            ("YYYY-Q", "pattern Q "),
            ("D", "pattern D "),
            ("WW", "pattern WW "),
            ("HH24 TZ", "pattern TZ "),
            ("DDth", "pattern th "),
            ("FMMS", "pattern FMMS "),
            ("xd", "pattern d "),
        ] {
            let err = chrono_format(template).expect_err(template);
            assert!(err.contains(named), "{template}: {err}");
        }
        assert!(is_template("YYYY") && !is_template("%Y"));
    }
}
