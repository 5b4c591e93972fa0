//! The seeded statement generator: the pieces statements are built from (time ranges in
//! every literal form, tag and field conditions, intervals, fills) over the real schema of
//! [`super::data`]; the templates themselves are in [`super::templates`].

use strata_bench::rng::Rng;

use super::data::{Field, Kind, MEASUREMENTS, Measurement, SPAN_S, T0_S, Values};
use super::templates::{SEPARATE, TEMPLATES, Template};

/// One generated statement.
#[derive(Debug, Clone)]
pub struct Statement {
    /// The InfluxQL text (`q=`).
    pub text: String,
    /// The template that made it (a category for the known-differences list).
    pub category: &'static str,
    /// The `epoch=` parameter, if any.
    pub epoch: Option<&'static str>,
    /// Made to fail: only the presence of an error and the HTTP status are compared.
    pub expect_error: bool,
}

/// `count` statements from `seed`: templates in turn (so every one is used about as
/// often), each filled in from the seeded generator.
/// Then the [`SEPARATE`] templates' statements.
pub fn generate(seed: u64, count: usize) -> Vec<Statement> {
    let mut g = Gen {
        rng: Rng::new(seed ^ 0x5e1e_c700),
    };
    let mut out: Vec<Statement> = (0..count)
        .map(|i| {
            let (category, template) = TEMPLATES[i % TEMPLATES.len()];
            g.statement(category, template)
        })
        .collect();
    for (n, (category, template, times)) in SEPARATE.iter().enumerate() {
        let mut g = Gen {
            rng: Rng::new(seed ^ 0x5e9a_4a7e ^ (n as u64) << 32),
        };
        out.extend((0..*times).map(|_| g.statement(category, *template)));
    }
    out
}

/// The seeded source of statement pieces.
pub struct Gen {
    /// The generator everything draws from.
    pub rng: Rng,
}

/// GROUP BY time intervals: at most 120 buckets over the longest range.
pub const INTERVALS: &[&str] = &["1m", "2m", "5m", "10m", "15m", "30m", "1h", "90s"];
/// GROUP BY time offsets.
const OFFSETS: &[&str] = &["1m", "-2m", "30s", "7m", "-15s"];

impl Gen {
    /// A statement of `template`, with an `epoch=` drawn for it.
    fn statement(&mut self, category: &'static str, template: Template) -> Statement {
        let (text, expect_error) = template(self);
        let epoch = if expect_error || self.chance(0.7) || text.starts_with("SHOW") {
            None
        } else {
            Some(self.pick(&["ms", "s", "ms", "s", "u", "ns"]))
        };
        Statement {
            text,
            category,
            epoch,
            expect_error,
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.next_f64() < p
    }

    /// `make(self)` with probability `p`, else "".
    pub fn maybe(&mut self, p: f64, make: impl FnOnce(&mut Gen) -> String) -> String {
        if self.chance(p) {
            make(self)
        } else {
            String::new()
        }
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        self.rng.choose(items)
    }

    /// One of `items`, by reference.
    pub fn one<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.below(items.len() as u64) as usize]
    }

    /// In `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.rng.below((hi - lo + 1) as u64) as i64
    }

    /// Any measurement.
    pub fn measurement(&mut self) -> &'static Measurement {
        self.one(MEASUREMENTS)
    }

    /// A measurement with a numeric field, and that field.
    pub fn numeric(&mut self) -> (&'static Measurement, &'static Field) {
        let m = self.measurement();
        let fields = m.numeric_fields();
        (m, self.pick(&fields))
    }

    /// A field of `m`, sometimes written as a quoted identifier.
    pub fn field_name(&mut self, f: &Field) -> String {
        self.ident(f.name)
    }

    /// `name`, sometimes double-quoted.
    pub fn ident(&mut self, name: &str) -> String {
        if self.chance(0.2) {
            format!("\"{name}\"")
        } else {
            name.to_owned()
        }
    }

    /// 1 to `most` distinct fields of `m`.
    pub fn fields(&mut self, m: &'static Measurement, most: usize) -> Vec<&'static Field> {
        let mut out: Vec<&'static Field> = Vec::new();
        let n = self.int(1, most.min(m.fields.len()) as i64);
        while out.len() < n as usize {
            let f = self.one(m.fields);
            if !out.iter().any(|o| o.name == f.name) {
                out.push(f);
            }
        }
        out
    }

    /// A time instant in milliseconds around the data (a little before it to its end),
    /// aligned to a minute, a second or a millisecond.
    pub fn instant(&mut self, lo_min: i64, hi_min: i64) -> i64 {
        let minute = self.int(lo_min, hi_min);
        let base = (T0_S + minute * 60) * 1000;
        match self.int(0, 3) {
            0 | 1 => base,
            2 => base + self.int(1, 59) * 1000,
            _ => base + self.int(1, 59_999),
        }
    }

    /// `ms` as a time literal in one of InfluxQL's forms: an RFC 3339 string, an epoch
    /// duration in ms or s, a bare integer of nanoseconds.
    pub fn time_literal(&mut self, ms: i64) -> String {
        match self.int(0, 5) {
            0 | 1 => format!("'{}'", rfc3339(ms)),
            2 => format!("{ms}ms"),
            3 if ms % 1000 == 0 => format!("{}s", ms / 1000),
            4 => format!("{}", i128::from(ms) * 1_000_000),
            _ => format!("'{}'", rfc3339(ms)),
        }
    }

    /// A bounded time condition: `time >= A AND time < B` (operators vary), A and B within
    /// the data, the range 10 minutes to a little over two hours.
    pub fn time_range(&mut self) -> String {
        let start = self.instant(-5, SPAN_S / 60 - 15);
        let end = (start + self.int(10, 130) * 60_000).min((T0_S + SPAN_S + 300) * 1000);
        let lower = self.pick(&[">=", ">", ">="]);
        let upper = self.pick(&["<", "<=", "<"]);
        let (a, b) = (self.time_literal(start), self.time_literal(end));
        if self.chance(0.1) {
            // Arithmetic on a time literal.
            let (a, b) = (rfc3339(start - 60_000), rfc3339(end + 60_000));
            return format!("time {lower} '{a}' + 1m AND time {upper} '{b}' - 1m");
        }
        if self.chance(0.5) {
            format!("time {lower} {a} AND time {upper} {b}")
        } else {
            format!("{b} {} time AND time {lower} {a}", flip(upper))
        }
    }

    /// A time condition that may be open above (`time > A` alone: up to now()).
    pub fn time_lower_or_range(&mut self) -> String {
        if self.chance(0.3) {
            let start = self.instant(-5, SPAN_S / 60 - 15);
            let a = self.time_literal(start);
            format!("time >= {a}")
        } else {
            self.time_range()
        }
    }

    /// One tag comparison on `m`: `=`, `!=`, `=~`, `!~`, or `= ''` (series without it).
    pub fn tag_atom(&mut self, m: &Measurement) -> String {
        let key = self.pick(m.tag_keys);
        let values = m.tag_values(key);
        let value = self.pick(&values);
        let missing = values.len() < m.series.len()
            && m.series.iter().any(|s| !s.iter().any(|(k, _)| *k == key));
        let k = self.ident(key);
        match self.int(0, 6) {
            0 | 1 => format!("{k} = '{value}'"),
            2 => format!("{k} != '{value}'"),
            3 => format!("{k} =~ /^{}/", regex_escape(&value[..1])),
            4 if self.chance(0.5) => format!("{k} !~ /^{}/", regex_escape(&value[..1])),
            4 => format!("{k} !~ /{}$/", regex_escape(&value[value.len() - 1..])),
            5 if missing => format!("{k} = ''"),
            _ => format!(
                "{k} =~ /{}|{}/",
                regex_escape(value),
                regex_escape(values[0])
            ),
        }
    }

    /// One to three tag comparisons joined by AND / OR, with parentheses.
    pub fn tag_cond(&mut self, m: &Measurement) -> String {
        let first = self.tag_atom(m);
        match self.int(0, 3) {
            0 | 1 => first,
            2 => {
                let second = self.tag_atom(m);
                let op = self.pick(&["AND", "OR"]);
                format!("({first} {op} {second})")
            }
            _ => {
                let (second, third) = (self.tag_atom(m), self.tag_atom(m));
                format!("(({first} OR {second}) AND {third})")
            }
        }
    }

    /// One comparison of a field of `m` with a literal of its type.
    pub fn field_atom(&mut self, m: &Measurement) -> String {
        let f = self.one(m.fields);
        self.field_atom_of(f)
    }

    /// One comparison of field `f` with a literal of its type.
    pub fn field_atom_of(&mut self, f: &Field) -> String {
        let name = self.field_name(f);
        match f.values {
            Values::Walk(lo, hi) => {
                let op = self.pick(&[">", "<", ">=", "<=", "!="]);
                let x = lo + (hi - lo) * (0.2 + 0.6 * self.rng.next_f64());
                match f.kind {
                    Kind::Integer => format!("{name} {op} {}", x.round() as i64),
                    _ => format!("{name} {op} {:.2}", x),
                }
            }
            Values::Counter => format!("{name} > {}", self.int(100_000, 2_000_000)),
            Values::Strings(choices) => {
                let choice = self.pick(&choices[..2]);
                match self.int(0, 2) {
                    0 => format!("{name} = '{choice}'"),
                    1 => format!("{name} != '{choice}'"),
                    _ => format!("{name} =~ /^{}/", &choice[..1]),
                }
            }
            Values::Bool => format!("{name} = {}", self.pick(&["true", "false"])),
        }
    }

    /// One or two field comparisons (AND / OR).
    pub fn field_cond(&mut self, m: &Measurement) -> String {
        let first = self.field_atom(m);
        if self.chance(0.5) {
            return first;
        }
        let (op, second) = (self.pick(&["AND", "OR"]), self.field_atom(m));
        format!("({first} {op} {second})")
    }

    /// ` WHERE ...` from the non-empty parts, ANDed; "" when none.
    pub fn where_clause(&mut self, parts: &[String]) -> String {
        let parts: Vec<&String> = parts.iter().filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return String::new();
        }
        let joined: Vec<&str> = parts.iter().map(|p| p.as_str()).collect();
        format!(" WHERE {}", joined.join(" AND "))
    }

    /// `time(i)` or `time(i, offset)`.
    pub fn group_time(&mut self) -> String {
        let interval = self.pick(INTERVALS);
        if self.chance(0.3) {
            format!("time({interval}, {})", self.pick(OFFSETS))
        } else {
            format!("time({interval})")
        }
    }

    /// ` fill(...)` or "" (the default, null); `numeric` allows linear and a number.
    pub fn fill(&mut self, numeric: bool) -> String {
        let choices: &[&str] = if numeric {
            &["", "null", "none", "previous", "linear", "0", "-1"]
        } else {
            &["", "null", "none", "previous"]
        };
        match self.pick(choices) {
            "" => String::new(),
            fill => format!(" fill({fill})"),
        }
    }

    /// A GROUP BY list of tags of `m`: one key, two, or `*`.
    pub fn group_tags(&mut self, m: &Measurement) -> String {
        match self.int(0, 3) {
            0 | 1 => {
                let key = self.pick(m.tag_keys);
                self.ident(key)
            }
            2 => m.tag_keys.join(", "),
            _ => "*".to_owned(),
        }
    }

    /// ` LIMIT n [OFFSET k]`, sometimes.
    pub fn limit(&mut self) -> String {
        if self.chance(0.6) {
            return String::new();
        }
        let n = self.int(1, 20);
        if self.chance(0.4) {
            format!(" LIMIT {n} OFFSET {}", self.int(1, 10))
        } else {
            format!(" LIMIT {n}")
        }
    }
}

fn flip(op: &str) -> &'static str {
    match op {
        "<" => ">",
        "<=" => ">=",
        ">" => "<",
        _ => "<=",
    }
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$/".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// RFC 3339 in UTC with milliseconds when not whole, like `2023-11-14T22:10:00.250Z`.
pub fn rfc3339(ms: i64) -> String {
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rest / 3600, rest / 60 % 60, rest % 60);
    let frac = if milli == 0 {
        String::new()
    } else {
        format!(".{milli:03}")
    };
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{frac}Z")
}
