//! Server counters and the Prometheus text rendering of `/metrics` (written by hand: the
//! format is a few lines per metric and a crate would pull in a registry we do not need).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use strata_storage::EngineStats;
use strata_storage::write_stages::WriteStage;

/// Upper bounds of the write latency histogram, in seconds: from 0.5 ms (a small batch in
/// page cache) to 10 s (a large batch waiting on back-pressure or fsync).
const LATENCY_BUCKETS_S: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Counters kept by the server (the engine keeps its own; see [`EngineStats`]).
#[derive(Debug, Default)]
pub struct Metrics {
    /// HTTP requests by (endpoint, status).
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    /// Write latency bucket counts (non-cumulative), plus one for +Inf.
    latency_counts: [AtomicU64; LATENCY_BUCKETS_S.len() + 1],
    latency_sum_us: AtomicU64,
    latency_count: AtomicU64,
    /// Lines rejected over HTTP.
    pub http_bad_lines: AtomicU64,
    /// Lines rejected over TCP (syntax, schema or over the length cap).
    pub tcp_bad_lines: AtomicU64,
    /// Rows stored from HTTP writes.
    pub http_rows: AtomicU64,
    /// Rows stored from TCP writes.
    pub tcp_rows: AtomicU64,
    /// TCP connections accepted.
    pub tcp_connections: AtomicU64,
    /// Data points stored from OpenTSDB telnet `put`s.
    pub opentsdb_rows: AtomicU64,
    /// OpenTSDB telnet lines refused (bad `put`s, unknown commands, refused points).
    pub opentsdb_bad_lines: AtomicU64,
    /// OpenTSDB telnet connections accepted.
    pub opentsdb_connections: AtomicU64,
    /// HTTP connections accepted (and served).
    pub http_connections: AtomicU64,
    /// HTTP connections open now.
    pub http_connections_open: AtomicU64,
    /// HTTP connections closed at once because `max_connections` were open.
    pub http_connections_refused: AtomicU64,
    /// TCP connections closed because their first line was not `auth <auth token>`.
    pub tcp_auth_failures: AtomicU64,
    /// Backups taken through `/api/v1/backup`.
    pub backups: AtomicU64,
    /// When the last backup was taken (ns since the epoch; 0: none since start).
    pub last_backup_ns: AtomicU64,
    /// Writes answered 503 because too many bytes were in flight.
    pub overload_rejections: AtomicU64,
    /// Write-body bytes held right now.
    pub inflight_write_bytes: AtomicU64,
    /// SQL statements whose result was sent in full.
    queries_ok: AtomicU64,
    /// SQL statements that failed, timed out, were refused or whose client went away.
    queries_error: AtomicU64,
    /// Total time of SQL statements, from admission to the end of the result, microseconds.
    query_duration_sum_us: AtomicU64,
}

impl Metrics {
    /// Counts one HTTP request.
    pub fn count_request(&self, endpoint: &'static str, status: u16) {
        let mut requests = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *requests.entry((endpoint, status)).or_insert(0) += 1;
    }

    /// Records the latency of one write request.
    pub fn observe_write(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = LATENCY_BUCKETS_S
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKETS_S.len());
        self.latency_counts[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.latency_sum_us.fetch_add(micros, Ordering::Relaxed);
        self.latency_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one SQL statement: how long it took (to its result's end) and whether its
    /// result was sent in full.
    pub fn observe_query(&self, elapsed: Duration, ok: bool) {
        let counter = if ok {
            &self.queries_ok
        } else {
            &self.queries_error
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.query_duration_sum_us
            .fetch_add(micros, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of these counters and the engine's.
    pub fn render(&self, engine: &EngineStats) -> String {
        let mut out = String::with_capacity(4096);
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        counter(
            &mut out,
            "strata_rows_written_total",
            "Rows stored since start (all protocols).",
            engine.rows_written,
        );
        counter(
            &mut out,
            "strata_points_written_total",
            "Field values stored since start (all protocols).",
            engine.points_written,
        );
        help(
            &mut out,
            "strata_protocol_rows_written_total",
            "Rows stored since start, by protocol.",
            "counter",
        );
        let _ = writeln!(
            out,
            "strata_protocol_rows_written_total{{protocol=\"http\"}} {}",
            load(&self.http_rows)
        );
        let _ = writeln!(
            out,
            "strata_protocol_rows_written_total{{protocol=\"tcp\"}} {}",
            load(&self.tcp_rows)
        );
        let _ = writeln!(
            out,
            "strata_protocol_rows_written_total{{protocol=\"opentsdb\"}} {}",
            load(&self.opentsdb_rows)
        );
        help(
            &mut out,
            "strata_bad_lines_total",
            "Lines (and OpenTSDB data points) rejected, by protocol.",
            "counter",
        );
        let _ = writeln!(
            out,
            "strata_bad_lines_total{{protocol=\"http\"}} {}",
            load(&self.http_bad_lines)
        );
        let _ = writeln!(
            out,
            "strata_bad_lines_total{{protocol=\"tcp\"}} {}",
            load(&self.tcp_bad_lines)
        );
        let _ = writeln!(
            out,
            "strata_bad_lines_total{{protocol=\"opentsdb\"}} {}",
            load(&self.opentsdb_bad_lines)
        );
        help(
            &mut out,
            "strata_http_requests_total",
            "HTTP requests by endpoint and status.",
            "counter",
        );
        {
            let requests = self
                .requests
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for ((endpoint, status), count) in requests.iter() {
                let _ = writeln!(
                    out,
                    "strata_http_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {count}"
                );
            }
        }
        help(
            &mut out,
            "strata_write_request_duration_seconds",
            "Latency of HTTP write requests, from the first body byte to the response.",
            "histogram",
        );
        let mut cumulative = 0;
        for (i, bound) in LATENCY_BUCKETS_S.iter().enumerate() {
            cumulative += load(&self.latency_counts[i]);
            let _ = writeln!(
                out,
                "strata_write_request_duration_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        cumulative += load(&self.latency_counts[LATENCY_BUCKETS_S.len()]);
        let _ = writeln!(
            out,
            "strata_write_request_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let sum_s = load(&self.latency_sum_us) as f64 / 1e6;
        let _ = writeln!(out, "strata_write_request_duration_seconds_sum {sum_s}");
        let _ = writeln!(
            out,
            "strata_write_request_duration_seconds_count {}",
            load(&self.latency_count)
        );
        help(
            &mut out,
            "strata_queries_total",
            "SQL statements by outcome: ok (result sent in full) or error.",
            "counter",
        );
        let (queries_ok, queries_error) = (load(&self.queries_ok), load(&self.queries_error));
        let _ = writeln!(out, "strata_queries_total{{status=\"ok\"}} {queries_ok}");
        let _ = writeln!(
            out,
            "strata_queries_total{{status=\"error\"}} {queries_error}"
        );
        help(
            &mut out,
            "strata_query_duration_seconds",
            "Time of SQL statements, from the request to the end of the result.",
            "summary",
        );
        let query_sum_s = load(&self.query_duration_sum_us) as f64 / 1e6;
        let _ = writeln!(out, "strata_query_duration_seconds_sum {query_sum_s}");
        let _ = writeln!(
            out,
            "strata_query_duration_seconds_count {}",
            queries_ok + queries_error
        );
        counter(
            &mut out,
            "strata_http_connections_total",
            "HTTP connections accepted and served.",
            load(&self.http_connections),
        );
        gauge(
            &mut out,
            "strata_http_connections_open",
            "HTTP connections open now.",
            load(&self.http_connections_open),
        );
        counter(
            &mut out,
            "strata_http_connections_refused_total",
            "HTTP connections closed at once because --max-connections were open.",
            load(&self.http_connections_refused),
        );
        counter(
            &mut out,
            "strata_tcp_connections_total",
            "TCP line-protocol connections accepted.",
            load(&self.tcp_connections),
        );
        counter(
            &mut out,
            "strata_opentsdb_connections_total",
            "OpenTSDB telnet connections accepted.",
            load(&self.opentsdb_connections),
        );
        counter(
            &mut out,
            "strata_backups_total",
            "Backups taken since start.",
            load(&self.backups),
        );
        gauge(
            &mut out,
            "strata_last_backup_timestamp_seconds",
            "When the last backup since start was taken (0: none).",
            load(&self.last_backup_ns) / 1_000_000_000,
        );
        counter(
            &mut out,
            "strata_tcp_auth_failures_total",
            "TCP connections refused for a missing or wrong auth line.",
            load(&self.tcp_auth_failures),
        );
        counter(
            &mut out,
            "strata_overload_rejections_total",
            "Writes answered 503 because too many bytes were in flight.",
            load(&self.overload_rejections),
        );
        gauge(
            &mut out,
            "strata_inflight_write_bytes",
            "Write-body bytes held by HTTP requests now.",
            load(&self.inflight_write_bytes),
        );
        gauge(
            &mut out,
            "strata_series",
            "Live series over all shards.",
            engine.series,
        );
        counter(
            &mut out,
            "strata_series_retired_total",
            "Series that left the series index because every row of theirs was gone.",
            engine.series_retired,
        );
        gauge(&mut out, "strata_parts", "Live part files.", engine.parts);
        let files = strata_storage::part::PartFiles::global().stats();
        gauge(
            &mut out,
            "strata_part_files_open",
            "Part files open now; they are kept within strata_part_files_open_max.",
            files.open as u64,
        );
        gauge(
            &mut out,
            "strata_part_files_open_max",
            "Most part files kept open: half the process's limit of open files.",
            files.budget as u64,
        );
        let indexes = strata_storage::part::PartIndexes::global().stats();
        gauge(
            &mut out,
            "strata_part_index_bytes",
            "Bytes of parts' indexes held in memory; kept within strata_part_index_bytes_max.",
            indexes.bytes as u64,
        );
        gauge(
            &mut out,
            "strata_part_index_bytes_max",
            "Most bytes of parts' indexes held: a sixteenth of the memory the process may use.",
            indexes.budget_bytes as u64,
        );
        counter(
            &mut out,
            "strata_part_index_reloads_total",
            "Indexes dropped to keep within the budget and read again from their parts (many \
             mean the history queried needs more memory).",
            indexes.reloads,
        );
        counter(
            &mut out,
            "strata_part_file_reopens_total",
            "Reads that opened again a part file closed to keep within the budget (many \
             mean the limit of open files is low for the parts read).",
            files.reopens,
        );
        gauge(
            &mut out,
            "strata_parts_quarantined",
            "Damaged parts set aside since start (their rows are not queried; see /health).",
            engine.parts_quarantined,
        );
        gauge(
            &mut out,
            "strata_shards_refusing_writes",
            "Shards that refuse writes now: WAL writes or flushes fail, a full disk most often \
             (see /health).",
            engine.shards_refusing_writes,
        );
        gauge(
            &mut out,
            "strata_part_bytes",
            "Bytes of live part files.",
            engine.part_bytes,
        );
        gauge(
            &mut out,
            "strata_memtable_bytes",
            "Bytes held in memtables.",
            engine.memtable_bytes,
        );
        counter(
            &mut out,
            "strata_flushes_total",
            "Memtable flushes since start.",
            engine.flushes,
        );
        counter(
            &mut out,
            "strata_merges_total",
            "Part merges since start (assisted ones included).",
            engine.merges,
        );
        counter(
            &mut out,
            "strata_assisted_merges_total",
            "Merges run by writes, before their rows, because a partition held more than \
             merge_assist_parts parts.",
            engine.assisted_merges,
        );
        counter(
            &mut out,
            "strata_backpressure_waits_total",
            "Times a writer waited for a flush.",
            engine.backpressure_waits,
        );
        counter(
            &mut out,
            "strata_wal_syncs_total",
            "WAL fsyncs since start.",
            engine.wal_syncs,
        );
        render_write_stages(&mut out, engine);
        counter(
            &mut out,
            "strata_wal_bytes_written_total",
            "WAL bytes written since start.",
            engine.wal_bytes_written,
        );
        counter(
            &mut out,
            "strata_retention_rows_rejected_total",
            "Written rows refused for being older than their database's retention.",
            engine.retention_rows_rejected,
        );
        counter(
            &mut out,
            "strata_retention_rows_dropped_total",
            "Rows removed from disk by retention since start.",
            engine.retention_rows_dropped,
        );
        counter(
            &mut out,
            "strata_retention_bytes_dropped_total",
            "Bytes of part files freed by retention since start.",
            engine.retention_bytes_dropped,
        );
        counter(
            &mut out,
            "strata_retention_parts_dropped_total",
            "Parts deleted whole by retention since start.",
            engine.retention_parts_dropped,
        );
        counter(
            &mut out,
            "strata_retention_parts_rewritten_total",
            "Parts rewritten without expired rows since start.",
            engine.retention_parts_rewritten,
        );
        gauge(
            &mut out,
            "strata_tombstones_pending",
            "Deletes whose rows some part may still hold (purged by maintenance).",
            engine.tombstones_pending,
        );
        gauge(
            &mut out,
            "strata_downsamples",
            "Downsamples (continuous aggregates) defined.",
            engine.downsamples,
        );
        counter(
            &mut out,
            "strata_downsample_rows_written_total",
            "Rows written into downsample tables since start.",
            engine.downsample_rows_written,
        );
        counter(
            &mut out,
            "strata_downsample_rounds_total",
            "Rounds of downsample upkeep since start.",
            engine.downsample_rounds,
        );
        help(
            &mut out,
            "strata_downsample_lag_seconds",
            "How far the most lagging downsample is behind the flushed rows of its source.",
            "gauge",
        );
        let _ = writeln!(
            out,
            "strata_downsample_lag_seconds {:.3}",
            engine.downsample_lag_ns as f64 / 1e9
        );
        out
    }
}

/// Appends the write path's time by stage (`strata_write_stage_seconds_total{stage="…"}`,
/// summed over threads) and how often a writer found a shard busy.
fn render_write_stages(out: &mut String, engine: &EngineStats) {
    help(
        out,
        "strata_write_stage_seconds_total",
        "Time spent in each stage of the write path since start, summed over threads \
         (parse, catalog, lock_wait, backpressure, series, memtable, wal_append, wal_commit; \
         flush and merge on the shards' flush and maintenance threads). Divide by \
         strata_points_written_total for the cost per point.",
        "counter",
    );
    for (stage, ns) in WriteStage::ALL.iter().zip(engine.write_stage_ns) {
        let _ = writeln!(
            out,
            "strata_write_stage_seconds_total{{stage=\"{}\"}} {:.9}",
            stage.name(),
            ns as f64 / 1e9
        );
    }
    counter(
        out,
        "strata_write_shard_busy_total",
        "Times a write found a shard's lock held and served another shard first.",
        engine.shard_busy,
    );
}

/// Appends `strata_database_part_bytes{database="…"}` for each `(database, bytes)`.
pub fn render_database_bytes(out: &mut String, databases: &[(String, u64)]) {
    help(
        out,
        "strata_database_part_bytes",
        "Bytes of live part files by database (each part's header, index and footer shared \
         among its tables in proportion to their data; dropped tables not counted).",
        "gauge",
    );
    for (database, bytes) in databases {
        let _ = writeln!(
            out,
            "strata_database_part_bytes{{database=\"{}\"}} {bytes}",
            escape_label(database)
        );
    }
}

/// Appends the lake's counters (`strata_lake_*`; a read-only server's mirror has its own).
pub fn render_lake(out: &mut String, lake: &strata_lake::LakeStats) {
    use std::sync::atomic::Ordering::Relaxed;
    if lake.mirror {
        render_lake_mirror(out, lake);
        return;
    }
    let counters = [
        (
            "strata_lake_rounds_total",
            "Tiering rounds run since start.",
            lake.rounds.load(Relaxed),
        ),
        (
            "strata_lake_partitions_tiered_total",
            "Shard partitions (per table) copied to the lake since start.",
            lake.partitions_copied.load(Relaxed),
        ),
        (
            "strata_lake_rows_tiered_total",
            "Rows written into lake files since start.",
            lake.rows.load(Relaxed),
        ),
        (
            "strata_lake_bytes_tiered_total",
            "Bytes of lake files written since start.",
            lake.bytes.load(Relaxed),
        ),
        (
            "strata_lake_files_added_total",
            "Lake files committed since start.",
            lake.files_added.load(Relaxed),
        ),
        (
            "strata_lake_files_removed_total",
            "Lake files removed from their Delta tables (replaced, expired, deleted) since start.",
            lake.files_removed.load(Relaxed),
        ),
        (
            "strata_lake_files_vacuumed_total",
            "Lake files deleted from the store by vacuums (unreferenced for 7 days) since start.",
            lake.files_vacuumed.load(Relaxed),
        ),
        (
            "strata_lake_parts_released_total",
            "Local parts deleted or rewritten since start because the lake holds their rows (reads take them from the lake).",
            lake.parts_released.load(Relaxed),
        ),
        (
            "strata_lake_commits_total",
            "Delta versions committed since start.",
            lake.commits.load(Relaxed),
        ),
        (
            "strata_lake_failures_total",
            "Tables whose tiering failed in a round (retried with backoff) since start.",
            lake.failures.load(Relaxed),
        ),
    ];
    for (name, text, value) in counters {
        counter(out, name, text, value);
    }
    let gauges = [
        (
            "strata_lake_last_commit_timestamp_seconds",
            "Engine time of the last lake commit (0: none since start).",
            lake.last_commit_ns.load(Relaxed),
        ),
        (
            "strata_lake_lag_seconds",
            "How long the oldest partition due for the lake has waited past --tier-after (0: none).",
            lake.lag_ns.load(Relaxed),
        ),
    ];
    for (name, text, ns) in gauges {
        help(out, name, text, "gauge");
        let _ = writeln!(out, "{name} {:.3}", ns as f64 / 1e9);
    }
    let name = "strata_lake_yield_seconds_total";
    help(
        out,
        name,
        "Time tiering rounds waited, before copies, for heavy ingest to ease, since start.",
        "counter",
    );
    let _ = writeln!(
        out,
        "{name} {:.3}",
        lake.yielded_ns.load(Relaxed) as f64 / 1e9
    );
}

/// A read-only server's mirror of the lake (`strata_lake_mirror_*`).
fn render_lake_mirror(out: &mut String, lake: &strata_lake::LakeStats) {
    use std::sync::atomic::Ordering::Relaxed;
    let counters = [
        (
            "strata_lake_mirror_refreshes_total",
            "Refreshes of this read-only server's mirror of the lake since start.",
            lake.rounds.load(Relaxed),
        ),
        (
            "strata_lake_mirror_failures_total",
            "Tables (or listings) a refresh could not mirror (retried with backoff) since start.",
            lake.failures.load(Relaxed),
        ),
        (
            "strata_lake_mirror_series_total",
            "Series registered from the lake's files since start.",
            lake.mirrored_series.load(Relaxed),
        ),
    ];
    for (name, text, value) in counters {
        counter(out, name, text, value);
    }
    let gauges = [
        (
            "strata_lake_mirror_tables",
            "Lake tables mirrored at the last refresh.",
            lake.mirrored_tables.load(Relaxed),
        ),
        (
            "strata_lake_mirror_files",
            "Live lake files of the mirrored tables at the last refresh.",
            lake.mirrored_files.load(Relaxed),
        ),
    ];
    for (name, text, value) in gauges {
        help(out, name, text, "gauge");
        let _ = writeln!(out, "{name} {value}");
    }
    let name = "strata_lake_mirror_last_refresh_timestamp_seconds";
    help(
        out,
        name,
        "Engine time of the last refresh without a failure (0: none since start).",
        "gauge",
    );
    let _ = writeln!(
        out,
        "{name} {:.3}",
        lake.last_refresh_ns.load(Relaxed) as f64 / 1e9
    );
}

/// A label value as the text format writes it: `\`, `"` and newline escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn help(out: &mut String, name: &str, text: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {text}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn counter(out: &mut String, name: &str, text: &str, value: u64) {
    help(out, name, text, "counter");
    let _ = writeln!(out, "{name} {value}");
}

fn gauge(out: &mut String, name: &str, text: &str, value: u64) {
    help(out, name, text, "gauge");
    let _ = writeln!(out, "{name} {value}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_bytes_are_labelled_and_escaped() {
        let mut text = String::new();
        render_database_bytes(&mut text, &[("plain".into(), 10), ("a\"b\\c\nd".into(), 7)]);
        assert!(
            text.contains("strata_database_part_bytes{database=\"plain\"} 10\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_database_part_bytes{database=\"a\\\"b\\\\c\\nd\"} 7\n"),
            "{text}"
        );
        assert_eq!(
            text.matches("# TYPE strata_database_part_bytes gauge")
                .count(),
            1
        );
    }

    #[test]
    fn histogram_is_cumulative_and_requests_are_labelled() {
        let metrics = Metrics::default();
        metrics.observe_write(Duration::from_micros(300));
        metrics.observe_write(Duration::from_millis(30));
        metrics.observe_write(Duration::from_secs(60));
        metrics.count_request("write", 204);
        metrics.count_request("write", 204);
        metrics.observe_query(Duration::from_millis(500), true);
        metrics.observe_query(Duration::from_millis(250), false);
        let mut engine = EngineStats::default();
        engine.write_stage_ns[WriteStage::LockWait as usize] = 1_500_000_000;
        engine.shard_busy = 7;
        let text = metrics.render(&engine);
        assert!(
            text.contains("strata_write_stage_seconds_total{stage=\"lock_wait\"} 1.500000000\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_write_stage_seconds_total{stage=\"parse\"} 0.000000000\n"),
            "{text}"
        );
        assert!(text.contains("strata_write_shard_busy_total 7\n"), "{text}");
        assert!(
            text.contains("strata_write_request_duration_seconds_bucket{le=\"0.0005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_write_request_duration_seconds_bucket{le=\"0.05\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_write_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_write_request_duration_seconds_count 3\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_http_requests_total{endpoint=\"write\",status=\"204\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_queries_total{status=\"ok\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_queries_total{status=\"error\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_query_duration_seconds_sum 0.75\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_query_duration_seconds_count 2\n"),
            "{text}"
        );
        // Every sample line belongs to a metric announced by # TYPE.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            let base = name
                .trim_end_matches("_bucket")
                .trim_end_matches("_sum")
                .trim_end_matches("_count");
            assert!(text.contains(&format!("# TYPE {base} ")), "{line}");
        }
    }
}
