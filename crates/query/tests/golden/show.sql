-- SHOW and DESCRIBE over the shared data set (data.lp): answered from the catalog and
-- the series indexes of the three shards.
SHOW TABLES;
show tables;
SHOW TABLES FROM db;
SHOW TABLES IN nowhere;

SHOW TAGS FROM cpu;
SHOW FIELDS FROM cpu;
SHOW FIELDS FROM mem;
DESCRIBE cpu;
DESC mem;
describe db.cpu;
DESCRIBE strata.db.mem;

-- Unquoted names are lower-cased, as in SELECT; quote names with capitals.
DESCRIBE Weather;
DESCRIBE "Weather";
SHOW TAGS FROM "Weather";
SHOW TAG VALUES FROM "Weather" WITH KEY = "City";

SHOW TAG VALUES FROM cpu WITH KEY = host;
SHOW TAG VALUES FROM cpu WITH KEY = 'region';
SHOW TAG VALUES FROM cpu WITH KEY IN (region, dc, host);
SHOW TAG VALUES FROM mem WITH KEY IN ("host");
/* comments anywhere */ SHOW -- a tag list
  TAGS FROM mem;

-- Errors say what and where.
SHOW TAGS FROM nope;
SHOW FIELDS cpu;
SHOW TAG VALUES FROM cpu WITH KEY = nope;
SHOW TAG VALUES FROM cpu WITH KEY host;
SHOW TAG VALUES FROM cpu
  WITH KEY IN (host, region;
DESCRIBE cpu extra;
DESCRIBE other.db.cpu;
