-- Time-series SQL over two hosts' readings every 7 minutes for two hours (timeseries.lp,
-- written out of order; h2 lacks usage in some rows). The clock is 2023-11-15T02:00:00Z.

-- time_bucket is date_bin: epoch-aligned buckets, or aligned on an origin.
SELECT time_bucket(INTERVAL '30 minutes', time) AS bucket, count(*) AS n, max(usage) AS max_usage
FROM cpu GROUP BY bucket ORDER BY bucket;
SELECT date_bin(INTERVAL '1 hour', time, TIMESTAMP '2000-01-01T00:15:00') AS bucket, host, count(usage) AS n
FROM cpu GROUP BY bucket, host ORDER BY bucket, host;
SELECT date_trunc('hour', time) AS hour, min(count) AS lo, max(count) AS hi FROM cpu GROUP BY hour ORDER BY hour;

-- first/last: the value at the earliest / latest time, nulls skipped; first(x, t) names the time.
SELECT host, first(usage) AS f, last(usage) AS l, first(count, time) AS fc, last(count) AS lc
FROM cpu GROUP BY host ORDER BY host;
SELECT time_bucket(INTERVAL '1 hour', time) AS bucket, first(usage) AS open, last(usage) AS close,
       min(usage) AS low, max(usage) AS high
FROM cpu WHERE host = 'h2' GROUP BY bucket ORDER BY bucket;
SELECT count(*) AS n, sum(count) AS total, avg(usage) AS mean, first(usage) AS f, last(usage) AS l FROM cpu;

-- The latest row of each host (TSBS lastpoint).
SELECT DISTINCT ON (host) * FROM cpu ORDER BY host, time DESC;

-- RFC 3339 literals and now() arithmetic in ranges.
SELECT count(*) AS n FROM cpu WHERE time >= '2023-11-14T23:00:00Z' AND time < '2023-11-14T23:30:00Z';
SELECT count(*) AS n FROM cpu WHERE time > now() - INTERVAL '3 hours 30 minutes';
SELECT now() AS now, now() - INTERVAL '1 day' AS yesterday;

-- Misuse is a clear error.
SELECT first() FROM cpu;
SELECT first(usage, host) FROM cpu;
SELECT time_bucket(INTERVAL '1 month', time) AS b, count(*) FROM cpu GROUP BY b;
