"""Median latency of the same statements over the Postgres wire (psycopg 3, prepared
statements, binary results) and over /sql (http.client, JSON decoded), one client.

    strata bench query --print-statements … | python3 pg_vs_sql.py HOST HTTP_PORT PG_PORT DB

Each statement's quoted literals become parameters, so every query type is one prepared
statement bound with each query's own hosts and times. Queries alternate between the two
protocols (pg, sql, pg, sql, …) after two warm-up rounds, so both see the same noise.
Prints one line per type: the medians in ms and their ratio.
"""

import http.client
import json
import re
import statistics
import sys
import time
import urllib.parse

import psycopg

HOST, HTTP_PORT, PG_PORT, DB = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
LITERAL = re.compile(r"'((?:[^']|'')*)'")

by_type = {}
for line in sys.stdin:
    entry = json.loads(line)
    by_type.setdefault(entry["type"], []).append(entry["statement"])

pg = psycopg.connect(host=HOST, port=PG_PORT, dbname=DB, user="bench", autocommit=True)
cursor = pg.cursor(binary=True)
web = http.client.HTTPConnection(HOST, HTTP_PORT)
path = "/sql?" + urllib.parse.urlencode({"db": DB})


def parameterized(statement):
    """The statement with its string literals (but not `INTERVAL '…'`) as parameters."""
    values = []

    def to_parameter(match):
        if statement[: match.start()].rstrip().upper().endswith("INTERVAL"):
            return match.group(0)
        values.append(match.group(1).replace("''", "'"))
        return "%s"

    return LITERAL.sub(to_parameter, statement.replace("%", "%%")), tuple(values)


def over_pg(statement):
    template, values = parameterized(statement)
    cursor.execute(template, values, prepare=True)
    return len(cursor.fetchall())


def over_sql(statement):
    web.request("POST", path, body=statement.encode(), headers={"Content-Type": "text/plain"})
    response = web.getresponse()
    body = response.read()
    assert response.status == 200, body[:300]
    return len(json.loads(body)["rows"])


print(f"{'query type':<24} {'pg ms':>8} {'/sql ms':>8} {'pg ÷ sql':>9} {'rows':>7}")
for query_type, statements in by_type.items():
    for statement in statements[:2]:
        assert over_pg(statement) == over_sql(statement), statement
    times = {"pg": [], "sql": []}
    rows = 0
    for statement in statements:
        for name, run in (("pg", over_pg), ("sql", over_sql)):
            started = time.perf_counter()
            rows = run(statement)
            times[name].append((time.perf_counter() - started) * 1000)
    pg_ms, sql_ms = statistics.median(times["pg"]), statistics.median(times["sql"])
    print(f"{query_type:<24} {pg_ms:8.2f} {sql_ms:8.2f} {pg_ms / sql_ms:9.2f} {rows:7}")
