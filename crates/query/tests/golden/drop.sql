-- DROP TABLE: the table and its rows are gone for good, even for a table re-created
-- under the same name.
SELECT count(*) AS rows FROM mem;
DROP TABLE mem;
SHOW TABLES;
SELECT count(*) FROM mem;
DESCRIBE mem;
DROP TABLE mem;
DROP TABLE IF EXISTS mem;
DROP TABLE IF EXISTS db.mem;
DROP TABLE "Weather";
SHOW TABLES;

CREATE TABLE mem (host VARCHAR TAG, time TIMESTAMP, used BIGINT);
DESCRIBE mem;
SELECT count(*) AS rows FROM mem;
SHOW TAG VALUES FROM mem WITH KEY = host;
INSERT INTO mem VALUES (1699999200000000000, 'h9', 5);
SELECT * FROM mem;
SHOW TAG VALUES FROM mem WITH KEY = host;

DROP TABLE;
DROP TABLE mem, cpu;
DROP TABLE IF mem;
