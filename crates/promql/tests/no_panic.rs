//! Bounded fuzzing of PromQL in stable CI: seeded mutations of real queries (tokens
//! dropped, repeated, swapped or replaced, numbers and durations pushed to their extremes,
//! characters inserted) parsed and evaluated, as instant and as range queries at ordinary
//! and extreme times, over series holding NaN, infinities, stale markers, counter resets
//! and broken histograms. Property: nothing panics, every answer is well formed and every
//! error has a message. A panic in a query would drop the client's connection and, in a
//! lock, poison it for every later query.
//!
//! `STRATA_FUZZ_RUNS` sets the number of mutated queries (default 3,000), `STRATA_FUZZ_SEED`
//! the seed (default 1), `STRATA_FUZZ_SHOW=1` prints each query and its outcome.

use std::time::{Duration, Instant};

use strata_promql::{
    Error, Labels, Limits, Matcher, QueryValue, SampleRun, Series, Source, WindowSummary,
    instant_query, is_stale, range_query,
};

/// A small xorshift generator: the same seed gives the same queries on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// The first sample of every series (ms), 2023-11-14.
const BASE_MS: i64 = 1_700_000_000_000;

/// Series in memory, selected by their matchers, summarized in runs of four samples.
struct Memory(Vec<Series>);

impl Memory {
    fn new() -> Self {
        let mut series = Vec::new();
        let minute = 60_000;
        for job in ["api", "db"] {
            for instance in ["host-0", "host-1", "ĥost-2"] {
                for code in ["200", "500"] {
                    let mut count = 0.0;
                    let samples = (0..240)
                        .map(|i| {
                            // A reset every 50 samples.
                            count = if i % 50 == 49 { 1.0 } else { count + 7.0 };
                            (BASE_MS + i * 15_000, count)
                        })
                        .collect();
                    series.push(Series {
                        labels: labels(&[
                            ("__name__", "http_requests_total"),
                            ("job", job),
                            ("instance", instance),
                            ("code", code),
                        ]),
                        samples,
                    });
                }
            }
        }
        let odd = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(strata_promql::STALE_NAN_BITS),
            f64::MAX,
            -f64::MAX,
            f64::MIN_POSITIVE,
            -0.0,
            1e-300,
        ];
        for (r, room) in ["hall", "lab", "attic"].into_iter().enumerate() {
            let samples = (0..120)
                .map(|i| {
                    let value = if i % 11 == r as i64 {
                        odd[(i as usize / 11) % odd.len()]
                    } else {
                        18.0 + (i % 9) as f64 - r as f64
                    };
                    (BASE_MS + i * 30_000, value)
                })
                .collect();
            series.push(Series {
                labels: labels(&[
                    ("__name__", "temperature_celsius"),
                    ("room", room),
                    ("floor", if r == 2 { "" } else { "1" }),
                ]),
                samples,
            });
        }
        // A histogram whose buckets are out of order, one bucket without a number, and a
        // series with a single sample.
        for (le, value) in [
            ("0.1", 5.0),
            ("0.5", 3.0),
            ("1", 9.0),
            ("+Inf", 10.0),
            ("x", 4.0),
        ] {
            series.push(Series {
                labels: labels(&[
                    ("__name__", "request_duration_seconds_bucket"),
                    ("handler", "/a"),
                    ("le", le),
                ]),
                samples: (0..60)
                    .map(|i| (BASE_MS + i * minute, value * (i + 1) as f64))
                    .collect(),
            });
        }
        series.push(Series {
            labels: labels(&[("__name__", "once"), ("le", "1")]),
            samples: vec![(BASE_MS + 30 * minute, 42.0)],
        });
        Memory(series)
    }

    fn matching<'a>(
        &'a self,
        matchers: &'a [Matcher],
        start_ms: i64,
        end_ms: i64,
    ) -> impl Iterator<Item = Series> + 'a {
        self.0
            .iter()
            .filter(|s| matchers.iter().all(|m| m.is_match(s.labels.get(&m.name))))
            .map(move |s| Series {
                labels: s.labels.clone(),
                samples: s
                    .samples
                    .iter()
                    .copied()
                    .filter(|&(t, _)| t >= start_ms && t <= end_ms)
                    .collect(),
            })
            .filter(|s| !s.samples.is_empty())
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::new(
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    )
}

impl Source for Memory {
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Series>, Error> {
        Ok(self.matching(matchers, start_ms, end_ms).collect())
    }

    fn summarize_each(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        visit: &mut dyn FnMut(WindowSummary) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        for series in self.matching(matchers, start_ms, end_ms) {
            // Runs of four samples without NaN (a run holds none); the rest stay samples.
            let mut runs = Vec::new();
            let mut samples = Vec::new();
            for chunk in series.samples.chunks(4) {
                if chunk.len() == 4 && chunk.iter().all(|(_, v)| !v.is_nan()) {
                    runs.push(SampleRun {
                        count: 4,
                        sum: chunk.iter().map(|(_, v)| v).sum(),
                        min: chunk.iter().map(|&(_, v)| v).fold(f64::INFINITY, f64::min),
                        max: chunk
                            .iter()
                            .map(|&(_, v)| v)
                            .fold(f64::NEG_INFINITY, f64::max),
                    });
                } else {
                    samples.extend_from_slice(chunk);
                }
            }
            visit(WindowSummary {
                labels: series.labels,
                runs,
                samples,
            })?;
        }
        Ok(true)
    }
}

/// Real queries: every function, aggregation and operator Strata evaluates, with
/// modifiers, subqueries, offsets and `@`.
const SEEDS: &[&str] = &[
    "http_requests_total{job=\"api\",code!=\"200\"}",
    "{__name__=~\"temp.*\",room!=\"hall\"}",
    "rate(http_requests_total[5m])",
    "irate(http_requests_total{instance=~\"host-[01]\"}[1m])",
    "increase(http_requests_total[1h])",
    "delta(temperature_celsius[10m])",
    "idelta(temperature_celsius[2m])",
    "resets(http_requests_total[30m])",
    "changes(temperature_celsius[30m])",
    "deriv(temperature_celsius[10m])",
    "predict_linear(temperature_celsius[10m], 600)",
    "avg_over_time(temperature_celsius[15m])",
    "sum_over_time(http_requests_total[1h])",
    "count_over_time(temperature_celsius[5m])",
    "min_over_time(temperature_celsius[5m])",
    "max_over_time(temperature_celsius[5m])",
    "last_over_time(temperature_celsius[5m])",
    "present_over_time(temperature_celsius[5m])",
    "stddev_over_time(temperature_celsius[10m])",
    "stdvar_over_time(temperature_celsius[10m])",
    "quantile_over_time(0.75, temperature_celsius[10m])",
    "absent_over_time(nonexistent[5m])",
    "holt_winters(temperature_celsius[10m], 0.5, 0.5)",
    "sum by (job) (rate(http_requests_total[5m]))",
    "avg without (instance) (http_requests_total)",
    "count(temperature_celsius)",
    "group by (room) (temperature_celsius)",
    "stddev(temperature_celsius)",
    "stdvar by (job) (http_requests_total)",
    "min(temperature_celsius)",
    "max by () (temperature_celsius)",
    "topk(2, temperature_celsius)",
    "bottomk by (job) (1, rate(http_requests_total[2m]))",
    "quantile(0.9, temperature_celsius)",
    "count_values(\"value\", floor(temperature_celsius / 5))",
    "histogram_quantile(0.9, rate(request_duration_seconds_bucket[5m]))",
    "histogram_quantile(0.5, sum by (le) (request_duration_seconds_bucket))",
    "histogram_fraction(0, 0.5, request_duration_seconds_bucket)",
    "sum(rate(http_requests_total[5m])) / sum(rate(http_requests_total{code=\"200\"}[5m]))",
    "rate(http_requests_total{code=\"500\"}[5m]) / ignoring(code) rate(http_requests_total{code=\"200\"}[5m])",
    "rate(http_requests_total[5m]) / on(job, instance) group_left sum by (job, instance) (rate(http_requests_total[5m]))",
    "sum by (job, instance) (http_requests_total) / on(job, instance) group_right(code) http_requests_total",
    "http_requests_total > bool 1000",
    "1000 < http_requests_total",
    "temperature_celsius == bool temperature_celsius",
    "http_requests_total{job=\"api\"} and http_requests_total{code=\"200\"}",
    "http_requests_total{job=\"api\"} or temperature_celsius",
    "http_requests_total unless on(instance) http_requests_total{instance=\"host-0\"}",
    "-temperature_celsius * 2 + 1 - 3 / 4",
    "2 ^ temperature_celsius % 3",
    "abs(ceil(floor(round(temperature_celsius, 0.5))))",
    "sqrt(ln(exp(log2(log10(temperature_celsius)))))",
    "sgn(temperature_celsius - 20)",
    "clamp(temperature_celsius, 22, 18)",
    "clamp_min(clamp_max(temperature_celsius, 20), 19)",
    "timestamp(rate(http_requests_total{job=\"db\"}[5m]))",
    "time() - vector(1)",
    "scalar(temperature_celsius{room=\"hall\"}) * temperature_celsius",
    "sort_desc(sort(temperature_celsius))",
    "label_replace(temperature_celsius, \"where\", \"$1-x\", \"room\", \"(.*)a(.*)\")",
    "label_join(http_requests_total, \"id\", \"/\", \"job\", \"instance\", \"code\")",
    "absent(http_requests_total{job=\"x\"})",
    "max_over_time(rate(http_requests_total[2m])[10m:1m])",
    "avg_over_time(temperature_celsius[15m:])",
    "rate(http_requests_total[5m] offset 10m)",
    "http_requests_total offset -5m",
    "temperature_celsius @ 1700001000",
    "sum_over_time(temperature_celsius[5m] @ end())",
    "rate(http_requests_total[5m] @ start() offset 1m)",
    "hour(timestamp(temperature_celsius)) + minute() + day_of_week() + month() + year()",
    "day_of_month(temperature_celsius * 86400 * 30)",
    "days_in_month(vector(1709000000))",
    "once",
    "(((temperature_celsius)))",
    "count by (__name__) ({__name__=~\".+\"})",
    "1 + 2 * 3 ^ -4 % 5 > bool 0",
    "\"a string\"",
    "inf + nan",
];

/// Pieces a mutation may insert or replace a token with.
const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "@",
    "=",
    "!=",
    "=~",
    "!~",
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    "==",
    ">",
    "<=",
    "bool",
    "and",
    "or",
    "unless",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "by",
    "without",
    "offset",
    "start()",
    "end()",
    "sum",
    "rate",
    "topk",
    "quantile",
    "count_values",
    "histogram_quantile",
    "label_replace",
    "scalar",
    "vector",
    "absent",
    "time()",
    "temperature_celsius",
    "http_requests_total",
    "once",
    "le",
    "__name__",
    "\"\"",
    "\"(\"",
    "\"$1$2$99\"",
    "\"\\xff\"",
    "'",
    "\"",
    "`x`",
    "#",
    "0",
    "-1",
    "1e308",
    "-1e308",
    "9223372036854775807",
    "0x7fffffff",
    "1.8e19",
    "0xffffffffffffffffff",
    "Inf",
    "NaN",
    "0s",
    "1ms",
    "1y",
    "99999999y",
    "5m1s",
    "[1s:1ms]",
    "[100y]",
    "[0s]",
    "@ 0",
    "@ -1e18",
    "@ 1e18",
    "offset 100000y",
];

fn tokens(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    for c in query.chars() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                    out.push(std::mem::take(&mut current));
                }
            }
            None if c == '"' || c == '\'' || c == '`' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                current.push(c);
                quote = Some(c);
            }
            None if c.is_alphanumeric() || c == '_' || c == '.' => current.push(c),
            None => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                if !c.is_whitespace() {
                    out.push(c.to_string());
                }
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Valid PromQL built from seeds: two joined by an operator, one wrapped in a function or
/// an aggregation, or its numbers and durations replaced by others (extremes included).
/// Most of these parse, so they reach the evaluator.
fn combine(rng: &mut Rng) -> String {
    let a = rng.pick(SEEDS);
    let b = rng.pick(SEEDS);
    match rng.below(3) {
        0 => {
            let op = rng.pick(&[
                "+", "-", "*", "/", "%", "^", "==", "!=", ">", "<", ">=", "<= bool", "and", "or",
                "unless", "atan2",
            ]);
            let matching = rng.pick(&[
                "",
                "on(job)",
                "ignoring(code)",
                "on(instance) group_left",
                "ignoring(le) group_right(job)",
                "on()",
            ]);
            format!("({a}) {op} {matching} ({b})")
        }
        1 => {
            let wrap = rng.pick(&[
                "sum by (job) ({})",
                "topk(3, {})",
                "quantile(1.5, {})",
                "count_values(\"x\", {})",
                "rate(({})[5m:30s])",
                "max_over_time(({})[1h:])",
                "abs({})",
                "scalar({})",
                "-({})",
                "({}) offset 1m",
                "timestamp({})",
                "sort_desc({})",
                "absent({})",
                "label_replace({}, \"le\", \"$1\", \"room\", \"(.)\")",
                "histogram_quantile(0.5, {})",
                "clamp({}, -Inf, NaN)",
            ]);
            wrap.replace("{}", a)
        }
        _ => tokens(a)
            .into_iter()
            .map(|t| {
                if t.starts_with(|c: char| c.is_ascii_digit()) {
                    rng.pick(&[
                        "1s", "15s", "1h", "1d", "1ms", "0.5", "2", "1e-3", "1e308", "0x10", "1y",
                        "999999y", "3.5", "0", "1.5e19", "Inf",
                    ])
                    .to_string()
                } else {
                    t
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// One to four edits of `seed`.
fn mutate(seed: &str, rng: &mut Rng) -> String {
    let mut toks = tokens(seed);
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(toks.len().max(1));
        match rng.below(7) {
            0 if !toks.is_empty() => {
                toks.remove(i);
            }
            1 if !toks.is_empty() => {
                let t = toks[i].clone();
                toks.insert(i, t);
            }
            2 if toks.len() > 1 => {
                let j = rng.below(toks.len());
                toks.swap(i, j);
            }
            3 if !toks.is_empty() => toks[i] = rng.pick(PIECES).to_string(),
            4 => toks.insert(i.min(toks.len()), rng.pick(PIECES).to_string()),
            5 if !toks.is_empty() => {
                // Push a number or a duration to an extreme.
                let t = &toks[i];
                if t.starts_with(|c: char| c.is_ascii_digit()) {
                    toks[i] = rng
                        .pick(&["0", "1e308", "99999999999999999999", "9999999y", "0.0001"])
                        .to_string();
                }
            }
            _ => {
                // A byte-level edit inside a token: a character inserted.
                if let Some(t) = toks.get_mut(i) {
                    let c = rng.pick(&["\\", "\"", "\u{0}", "é", "\u{10FFFF}", "{", "~"]);
                    let at = (0..=t.len())
                        .filter(|&k| t.is_char_boundary(k))
                        .nth(rng.below(t.chars().count() + 1))
                        .unwrap_or(0);
                    t.insert_str(at, c);
                }
            }
        }
    }
    toks.join(" ")
}

/// What every answer must be: finite times, series sorted by labels in a matrix.
fn check_answer(query: &str, answer: &QueryValue) {
    match answer {
        QueryValue::Scalar(..) | QueryValue::String(..) => {}
        QueryValue::Vector(v) => {
            for (labels, _, value) in v {
                assert!(
                    !is_stale(*value),
                    "{query}: a stale marker answered for {labels:?}"
                );
            }
        }
        QueryValue::Matrix(m) => {
            for (labels, points) in m {
                assert!(
                    points.windows(2).all(|w| w[0].0 < w[1].0),
                    "{query}: points of {labels:?} out of order"
                );
            }
        }
    }
}

#[test]
fn mutated_queries_never_panic_and_errors_have_messages() {
    let runs: usize = std::env::var("STRATA_FUZZ_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let seed: u64 = std::env::var("STRATA_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let show = std::env::var("STRATA_FUZZ_SHOW").is_ok_and(|v| v == "1");
    let source = Memory::new();
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let times = [
        BASE_MS + 30 * 60_000,
        BASE_MS + 3_600_000,
        BASE_MS - 1,
        0,
        -1,
        strata_promql::MAX_SPAN_MS,
        -strata_promql::MAX_SPAN_MS,
    ];
    let (mut answered, mut failed) = (0usize, 0usize);
    for run in 0..runs {
        let query = if let Some(seed) = SEEDS.get(run) {
            seed.to_string()
        } else {
            if rng.below(2) == 0 {
                combine(&mut rng)
            } else {
                let seed = SEEDS[rng.below(SEEDS.len())];
                mutate(seed, &mut rng)
            }
        };
        // Small limits and a deadline keep every run bounded; hitting them is an answer.
        let limits = Limits {
            max_samples: 200_000,
            max_series: 1_000,
            deadline: Some((
                Instant::now() + Duration::from_secs(2),
                Duration::from_secs(2),
            )),
            cancel: None,
        };
        // The server always uses the default; a 1 ms lookback leaves steps without a value.
        if show {
            eprintln!("{query}");
        }
        let lookback = rng.pick(&[strata_promql::DEFAULT_LOOKBACK_MS, 1]);
        let outcome = if rng.below(2) == 0 {
            let at = times[rng.below(times.len())];
            instant_query(&source, &query, at, lookback, limits)
        } else {
            let start = times[rng.below(3)] - rng.below(3_600_000) as i64;
            let end = start + rng.pick(&[0i64, 60_000, 3_600_000, 86_400_000]);
            let mut step = rng.pick(&[15_000i64, 60_000, 1, i64::MAX, 0, -5]);
            // The server refuses more than 11,000 steps, as Prometheus does.
            if step > 0 && (end - start) / step > 11_000 {
                step = (end - start) / 11_000 + 1;
            }
            range_query(&source, &query, start, end, step, lookback, limits)
        };
        match &outcome {
            Ok(answer) => {
                check_answer(&query, answer);
                answered += 1;
            }
            Err(e) => {
                assert!(
                    !e.to_string().is_empty(),
                    "{query}: an error without a message"
                );
                failed += 1;
            }
        }
        if show {
            eprintln!("  -> {outcome:?}");
        }
    }
    // The seeds themselves must mostly answer, or the mutations explore nothing.
    assert!(
        answered >= SEEDS.len() / 2,
        "{answered} answered, {failed} failed"
    );
    eprintln!("{runs} queries: {answered} answered, {failed} failed, no panic");
}
