-- Strata through psql: statements, meta-commands, session settings and errors.
CREATE TABLE weather (city VARCHAR TAG, time TIMESTAMP, temp DOUBLE, rain BIGINT, sunny BOOLEAN);
INSERT INTO weather (time, city, temp, rain, sunny) VALUES
  ('2026-01-01T00:00:00Z', 'paris', 3.5, 2, false),
  ('2026-01-01T01:00:00.25Z', 'paris', 2.75, 0, true),
  ('2026-01-01T00:00:00Z', 'oslo', -7.125, 5, false);
SELECT * FROM weather ORDER BY city, time;
SELECT city, avg(temp) AS mean, sum(rain) AS rain FROM weather GROUP BY city ORDER BY city;
SELECT date_trunc('hour', time) AS hour, count(*) FROM weather GROUP BY 1 ORDER BY 1;
SELECT city, temp FROM weather WHERE time >= TIMESTAMP '2026-01-01T00:30:00Z';
SELECT time_bucket(INTERVAL '30 minutes', time) AS bucket, count(*) AS n FROM weather GROUP BY 1 ORDER BY 1;
SELECT extract(epoch from time)::BIGINT AS epoch, temp::INT AS t FROM weather ORDER BY time, city LIMIT 2 OFFSET 1;
SELECT count(*) AS recent FROM weather WHERE time > now() - interval '1 hour';
SHOW TABLES;
DESCRIBE weather;
\dt
\d weather
\dn
\l
\d+ weather
\dt+
\l+
\du
\dT
\df
\dx
\db
\dp
\dL
\do
\dD
\dc
\dy
\des
\dew
SELECT make_array('a', 'b c', NULL, '') AS texts, array_agg(rain ORDER BY time) AS rains FROM weather WHERE city = 'paris';
SELECT pg_size_pretty(pg_table_size('weather')) AS unflushed, pg_size_pretty(10485248::BIGINT) AS ten_mb;
COPY (SELECT city, temp, sunny, time FROM weather ORDER BY city, time) TO STDOUT WITH (FORMAT csv, HEADER);
\copy (SELECT city, rain, E'a\tb' AS odd FROM weather ORDER BY city, time) TO STDOUT
COPY weather TO '/tmp/strata-copy-is-refused';
COPY weather (time, city, temp, rain, sunny) FROM STDIN WITH (FORMAT csv);
2026-01-02T00:00:00Z,bergen,4.5,7,t
2026-01-02T01:00:00Z,"bergen",,0,f
\.
SELECT city, temp, rain, sunny FROM public.weather WHERE city = 'bergen' ORDER BY time;
COPY weather (time, city, rain) FROM STDIN;
2026-01-03T00:00:00Z	bergen	many
\.
SELECT relname, relkind FROM pg_catalog.pg_class WHERE relnamespace = 2200 ORDER BY 1;
\d pg_catalog.pg_am
SELECT attname, format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute
  WHERE attrelid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'weather') ORDER BY attnum;
SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = current_schema();
\x
SELECT * FROM weather WHERE city = 'oslo';
\x
SET application_name = 'psql-script';
SHOW application_name;
SELECT current_setting('application_name') AS name, set_config('application_name', 'renamed', false) AS renamed;
SHOW application_name;
SELECT current_setting('no_such_setting');
SELECT generate_series(1, 3);
SELECT generate_series(TIMESTAMP '2026-01-01 00:00:00', TIMESTAMP '2026-01-01 01:00:00', INTERVAL '30 minutes') AS t;
SELECT count(*) FROM pg_class WHERE relname = 'weather';
SELECT name, setting, context, vartype FROM pg_catalog.pg_settings WHERE name IN ('max_index_keys', 'block_size', 'max_identifier_length', 'integer_datetimes') ORDER BY name;
SET DateStyle = 'ISO, DMY';
SELECT s.name, s.setting, s.source, s.reset_val FROM pg_settings s WHERE s.name = 'DateStyle';
RESET DateStyle;
SELECT typname, typinput, typsend FROM pg_catalog.pg_type WHERE typinput = 'pg_catalog.array_in'::regproc AND typelem IN (20, 1114) ORDER BY 1;
SELECT typname, typlen, typinput, typoutput, typreceive FROM pg_type WHERE typname IN ('name', 'int4', 'timestamptz', 'numeric') ORDER BY 1;
SELECT 'a_1' LIKE 'a!_%' ESCAPE '!' AS escaped, 'ab1' LIKE 'a!_%' ESCAPE '!' AS unescaped;
SELECT (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = a.attrelid), count(*) FROM pg_catalog.pg_attribute a WHERE a.attname = 'rain' GROUP BY a.attrelid;
SELECT max(temp), min(temp), 1::int, NULL::timestamptz, temp::int, CASE WHEN true THEN 1 END FROM weather GROUP BY temp ORDER BY 1 LIMIT 1;
SELECT 1, 1, city, city, time::date FROM weather ORDER BY time, city LIMIT 2;
SELECT 2::float8 AS two, 1e20::float8 AS big, 1e-5::float8 AS small, 'inf'::float8 AS inf, '-inf'::float8 AS ninf, 'nan'::float8 AS nan, '-0'::float8 AS nzero, 1234567::float4 AS f4;
SELECT INTERVAL '1 day 2 hours 3.5 seconds' AS i, INTERVAL '-1 month' AS m, TIMESTAMP '2023-11-14 00:00:00' - TIMESTAMP '2023-11-15 01:00:00.5' AS d, max(time) - min(time) AS span FROM weather;
SELECT city FROM weather ORDER BY time, city OFFSET 1 ROWS FETCH FIRST 2 ROWS ONLY;
SELECT current_user, session_user;
SELECT pg_typeof(temp) AS temp, pg_typeof(city) AS city, pg_typeof(time) AS time, pg_typeof(rain) AS rain, pg_typeof(sunny) AS sunny, pg_typeof(time - time) AS span FROM weather LIMIT 1;
SELECT mod(-7, 3) AS m, div(-7, 2) AS d, width_bucket(5.35, 0.024, 10.06, 5) AS b, md5('abc') AS h;
SELECT current_database(), current_schema();
SELECT 1 AS one \; SELECT 'two' AS two;
BEGIN;
SELECT count(*) FROM weather;
COMMIT;
SELECT * FROM missing;
SELECT nope FROM weather;
SELEC 1;
SELECT 1 / 0;
SHOW no_such_setting;
DROP TABLE weather;
SELECT count(*) FROM weather;
