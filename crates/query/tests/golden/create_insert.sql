-- CREATE TABLE (Lindorm / TDengine style) and INSERT ... VALUES, read back with SELECT.
CREATE TABLE sensor (
  site VARCHAR TAG,
  zone STRING TAG,
  time TIMESTAMP,
  temperature DOUBLE,
  pressure FLOAT,
  readings BIGINT,
  level INT,
  total BIGINT UNSIGNED,
  serial UBIGINT,
  ok BOOLEAN,
  label VARCHAR(32),
  comment TEXT
);
DESCRIBE sensor;
SHOW TAGS FROM sensor;
SHOW FIELDS FROM sensor;

INSERT INTO sensor (time, site, zone, temperature, readings, total, ok, label)
VALUES (1699999200000000000, 'north', 'a', 21.5, 10, 18446744073709551615, TRUE, 'first'),
       ('2023-11-14T22:01:00Z', 'north', 'a', -3.25, -9223372036854775808, 0, FALSE, 'it''s'),
       (TIMESTAMP '2023-11-14 22:02:00.5', 'south', NULL, 1e3, 42, 7, NULL, 'a, b = "c" \ d');
SELECT * FROM sensor ORDER BY time;
SHOW TAG VALUES FROM sensor WITH KEY IN (site, zone);

-- Without a column list the values follow DESCRIBE's order.
INSERT INTO sensor VALUES
  ('2023-11-14T23:00:00+01:00', 'west', 'b', 5, 6.5, 7, 8, 9, 10, true, 'all', 'columns');
SELECT time, site, zone, temperature, pressure, readings, level, total, serial, ok, label, comment
FROM sensor WHERE site = 'west';

-- now() is the engine's clock (fixed in these tests); NULL leaves a field out.
INSERT INTO db.sensor (site, time, level, comment) VALUES ('east', now(), NULL, 'now'), ('east', 1, 3, NULL);
SELECT time, site, level, comment FROM sensor WHERE site = 'east' ORDER BY time;

-- CREATE TABLE errors.
CREATE TABLE sensor (time TIMESTAMP, v DOUBLE);
CREATE TABLE IF NOT EXISTS sensor (time TIMESTAMP, site VARCHAR TAG, temperature DOUBLE);
CREATE TABLE IF NOT EXISTS sensor (time TIMESTAMP, temperature BIGINT);
CREATE TABLE IF NOT EXISTS sensor (time TIMESTAMP, site DOUBLE);
CREATE TABLE bad (time TIMESTAMP, v DOUBLE TAG);
CREATE TABLE bad (time TIMESTAMP, ts TIMESTAMP, v DOUBLE);
CREATE TABLE bad (ts TIMESTAMP, v DOUBLE);
CREATE TABLE bad (host VARCHAR TAG, v DOUBLE);
CREATE TABLE bad (time TIMESTAMP, host VARCHAR TAG);
CREATE TABLE bad (time TIMESTAMP, v DECIMAL);
CREATE TABLE bad (time TIMESTAMP, v DOUBLE, V DOUBLE);
CREATE TABLE bad (time TIMESTAMP,
  v DOUBLE
  w DOUBLE);
CREATE TABLE bad (time TIMESTAMP, v VARCHAR(0));
CREATE TABLE bad;
SHOW TABLES;

-- IF NOT EXISTS on an agreeing table adds the columns it lacks.
CREATE TABLE IF NOT EXISTS sensor (time TIMESTAMP, site VARCHAR TAG, rack VARCHAR TAG, humidity REAL);
DESCRIBE sensor;

-- INSERT errors: nothing of a failed statement is written.
INSERT INTO sensor (time, site, nope) VALUES (1, 'x', 2);
INSERT INTO sensor (time, site, temperature) VALUES (1, 'x', 'warm');
INSERT INTO sensor (time, site, readings) VALUES (1, 'x', 2), (2, 'y', 2.5);
INSERT INTO sensor (time, site, total) VALUES (1, 'x', -1);
INSERT INTO sensor (time, site, readings) VALUES (1, 'x', 99999999999999999999);
INSERT INTO sensor (time, site, ok) VALUES (1, 'x', 1);
INSERT INTO sensor (time, site, label) VALUES (1, 'x', "quoted");
INSERT INTO sensor (time, site, label) VALUES (1, 2, 'x');
INSERT INTO sensor (site, temperature) VALUES ('x', 1.0);
INSERT INTO sensor (time, site, temperature) VALUES (NULL, 'x', 1.0);
INSERT INTO sensor (time, site, temperature) VALUES ('yesterday', 'x', 1.0);
INSERT INTO sensor (time, site, temperature) VALUES (1.5, 'x', 1.0);
INSERT INTO sensor (time, site, temperature) VALUES (1, 'x');
INSERT INTO sensor (time, site, temperature) VALUES (1, 'x', NULL);
INSERT INTO sensor (time, site, site) VALUES (1, 'x', 'y');
INSERT INTO sensor (time, temperature) VALUES (1, 1.0 + 2);
INSERT INTO nope VALUES (1, 2);
INSERT INTO sensor (time, temperature) SELECT 1, 2.0;
INSERT INTO sensor (time, temperature)
  VALUES (1, 2.0),
  (3 4);
SELECT count(*) AS rows FROM sensor;

-- Names line protocol cannot write.
CREATE TABLE "#hash" (time TIMESTAMP, v DOUBLE);
CREATE TABLE "" (time TIMESTAMP, v DOUBLE);
CREATE TABLE ok ("" VARCHAR TAG, time TIMESTAMP, v DOUBLE);

-- sqlparser gives a string in place of a name, and a SHOW, no place: no position (never line 0).
INSERT INTO 'not a name' VALUES (1);
INSERT INTO sensor (time, site) VALUES (1, 'x'); SHOW TABLES;
