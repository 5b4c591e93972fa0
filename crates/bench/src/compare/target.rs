//! `--target NAME=URL[,pid=PID][,data=DIR][,kind=KIND]`: what kind of server a target is
//! ([`TargetKind`]), the query languages it speaks ([`Language`]), and the parsed spec
//! ([`TargetSpec`]).

use std::path::PathBuf;

use serde::Serialize;

use crate::http::HttpUrl;

/// What kind of server a target is: decides the database setup, the flush before bytes per
/// point, and the query languages it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// Strata: InfluxQL on `/query`, PromQL on `/api/v1/query_range`.
    Strata,
    /// InfluxDB 1.x: InfluxQL on `/query`.
    #[serde(rename = "influxdb")]
    InfluxDb,
    /// VictoriaMetrics: PromQL on `/api/v1/query_range`.
    #[serde(rename = "victoriametrics")]
    VictoriaMetrics,
}

impl TargetKind {
    const ALL: [TargetKind; 3] = [
        TargetKind::Strata,
        TargetKind::InfluxDb,
        TargetKind::VictoriaMetrics,
    ];

    /// `strata`, `influxdb` or `victoriametrics`.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Strata => "strata",
            TargetKind::InfluxDb => "influxdb",
            TargetKind::VictoriaMetrics => "victoriametrics",
        }
    }

    /// The kind named `name` exactly (case-insensitive).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// The languages its queries run in: its own, and for Strata also PromQL when
    /// `promql_on_strata` (so it has a same-language number beside VictoriaMetrics).
    pub fn languages(self, promql_on_strata: bool) -> Vec<Language> {
        match self {
            TargetKind::Strata if promql_on_strata => vec![Language::InfluxQl, Language::PromQl],
            TargetKind::Strata | TargetKind::InfluxDb => vec![Language::InfluxQl],
            TargetKind::VictoriaMetrics => vec![Language::PromQl],
        }
    }
}

/// A query language of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// TSBS's InfluxQL, `POST /query`.
    #[serde(rename = "influxql")]
    InfluxQl,
    /// TSBS's PromQL, `GET /api/v1/query_range`.
    #[serde(rename = "promql")]
    PromQl,
}

impl Language {
    /// `influxql` or `promql`.
    pub fn name(self) -> &'static str {
        match self {
            Language::InfluxQl => "influxql",
            Language::PromQl => "promql",
        }
    }
}

/// One `--target NAME=URL[,pid=PID][,data=DIR][,kind=KIND]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSpec {
    /// The name in the table (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// `http://host:port[/path]` as given.
    pub url: String,
    /// The URL, split.
    pub http: HttpUrl,
    /// What server it is.
    pub kind: TargetKind,
    /// Its process id: CPU time, peak RSS and allowed cores from /proc.
    pub pid: Option<u32>,
    /// Its data directory: bytes per point after the load.
    pub data: Option<PathBuf>,
}

/// The options a spec may carry after its URL.
const SPEC_KEYS: &str = "pid=PID, data=DIR, kind=strata|influxdb|victoriametrics";

impl TargetSpec {
    /// Parses `NAME=URL[,pid=PID][,data=DIR][,kind=KIND]`; the kind defaults from NAME
    /// when NAME is a kind's name. Every mistake is an error naming the spec.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let bad = |why: String| format!("--target {spec:?}: {why}");
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=URL[,pid=PID][,data=DIR][,kind=KIND]".into()))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(bad(format!(
                "the name {name:?} must be letters, digits, '-', '_' or '.'"
            )));
        }
        let mut parts = rest.split(',');
        let url = parts.next().unwrap_or_default().trim().to_string();
        let http = HttpUrl::parse(&url).map_err(|e| bad(e.to_string()))?;
        let (mut pid, mut data, mut kind) = (None, None, None);
        for option in parts {
            let (key, value) = option
                .split_once('=')
                .ok_or_else(|| bad(format!("{option:?} is not KEY=VALUE ({SPEC_KEYS})")))?;
            let (key, value) = (key.trim(), value.trim());
            let duplicate = || bad(format!("{key} is given twice"));
            match key {
                "pid" => {
                    let parsed = value
                        .parse::<u32>()
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| bad(format!("pid {value:?} is not a process id")))?;
                    if pid.replace(parsed).is_some() {
                        return Err(duplicate());
                    }
                }
                "data" => {
                    if value.is_empty() {
                        return Err(bad("data= needs a directory".into()));
                    }
                    if data.replace(PathBuf::from(value)).is_some() {
                        return Err(duplicate());
                    }
                }
                "kind" => {
                    let parsed = TargetKind::parse(value).ok_or_else(|| {
                        bad(format!(
                            "unknown kind {value:?}: strata, influxdb or victoriametrics"
                        ))
                    })?;
                    if kind.replace(parsed).is_some() {
                        return Err(duplicate());
                    }
                }
                _ => return Err(bad(format!("unknown option {key:?} ({SPEC_KEYS})"))),
            }
        }
        let kind = kind.or_else(|| TargetKind::parse(name)).ok_or_else(|| {
            bad(format!(
                "name {name:?} is not a kind: add kind=strata, kind=influxdb or \
                 kind=victoriametrics"
            ))
        })?;
        Ok(Self {
            name: name.to_string(),
            url,
            http,
            kind,
            pid,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<TargetSpec, String> {
        TargetSpec::parse(text)
    }

    #[test]
    fn target_specs_parse_with_kind_from_the_name() {
        let s = spec("strata=http://127.0.0.1:8086").unwrap();
        assert_eq!(
            (s.name.as_str(), s.kind, s.pid, s.data),
            ("strata", TargetKind::Strata, None, None)
        );
        assert_eq!(s.http.authority, "127.0.0.1:8086");
        let s =
            spec("vm=http://127.0.0.1:8428/,pid=42,data=/var/lib/vm,kind=victoriametrics").unwrap();
        assert_eq!(s.name, "vm");
        assert_eq!(s.kind, TargetKind::VictoriaMetrics);
        assert_eq!(s.pid, Some(42));
        assert_eq!(s.data, Some(PathBuf::from("/var/lib/vm")));
        assert_eq!(s.http.base_path, "");
        let s = spec("InfluxDB=http://h:8087,kind=influxdb").unwrap();
        assert_eq!(s.kind, TargetKind::InfluxDb);
        assert_eq!(
            spec("influxdb=http://h:8087").unwrap().kind,
            TargetKind::InfluxDb
        );
    }

    #[test]
    fn bad_target_specs_say_what_is_wrong() {
        let err = |text: &str| spec(text).unwrap_err();
        assert!(
            err("strata").contains("expected NAME=URL"),
            "{}",
            err("strata")
        );
        assert!(err("=http://h:1").contains("must be letters"));
        assert!(err("a b=http://h:1,kind=strata").contains("must be letters"));
        assert!(err("strata=127.0.0.1:8086").contains("only http://"));
        assert!(err("peer=http://h:1").contains("add kind=strata"));
        assert!(err("peer=http://h:1,kind=mysql").contains("unknown kind \"mysql\""));
        assert!(err("strata=http://h:1,pid=abc").contains("not a process id"));
        assert!(err("strata=http://h:1,pid=0").contains("not a process id"));
        assert!(err("strata=http://h:1,pid=1,pid=2").contains("pid is given twice"));
        assert!(err("strata=http://h:1,data=").contains("needs a directory"));
        assert!(err("strata=http://h:1,port=3").contains("unknown option \"port\""));
        assert!(err("strata=http://h:1,verbose").contains("not KEY=VALUE"));
        assert!(err("strata=http://h:1,pid=x").starts_with("--target \"strata=http"));
    }

    #[test]
    fn languages_by_kind() {
        assert_eq!(
            TargetKind::Strata.languages(true),
            [Language::InfluxQl, Language::PromQl]
        );
        assert_eq!(TargetKind::Strata.languages(false), [Language::InfluxQl]);
        assert_eq!(TargetKind::InfluxDb.languages(true), [Language::InfluxQl]);
        assert_eq!(
            TargetKind::VictoriaMetrics.languages(false),
            [Language::PromQl]
        );
    }
}
