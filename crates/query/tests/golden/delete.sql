-- DELETE: rows by time range and series; rows written afterwards are kept.
SELECT host, time, usage_user FROM cpu ORDER BY host, time;
DELETE FROM cpu WHERE host = 'h1' AND time >= '2023-11-14T22:01:00Z';
SELECT host, time, usage_user FROM cpu ORDER BY host, time;
INSERT INTO cpu (time, host, region, usage_user) VALUES ('2023-11-14T22:01:00Z', 'h1', 'eu', 14.0);
DELETE FROM cpu WHERE (region = 'us' OR dc IN ('tokyo')) AND time BETWEEN 1699999200000000000 AND 1699999200000000000;
SELECT host, time, usage_user FROM cpu ORDER BY host, time;
-- dc <> 'tokyo' has SQL's meaning: the series without a dc do not match.
DELETE FROM cpu WHERE dc <> 'tokyo' AND time > TIMESTAMP '2023-11-14T22:00:00';
SELECT host, time, usage_user FROM cpu ORDER BY host, time;
DELETE FROM cpu WHERE time < 0 AND time > 10;
DELETE FROM "Weather";
SELECT count(*) AS n FROM "Weather";

DELETE FROM nope;
DELETE FROM cpu WHERE usage_user > 1;
DELETE FROM cpu WHERE zone = 'x';
DELETE FROM cpu WHERE host LIKE 'h%';
DELETE FROM cpu WHERE time <> 5;
DELETE FROM cpu WHERE host = 'h1' OR time < 5;
DELETE FROM cpu WHERE time < '2023-13-01';
DELETE FROM cpu WHERE host = h1;
DELETE cpu;
SELECT count(*) AS n FROM cpu;
