# Sourced by the lake's measurement scripts (lake.sh, lake-load.sh, lake-query.sh,
# lake-recent.sh): a release server on 127.0.0.1:$port writing its log to
# $work/server.log, and its metrics. The caller sets bin, work and port.

# The value of metric $1 on the server's /metrics.
metric() { curl -fsS "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# Starts a server on data directory $1 with the flags after it; prints its pid.
serve_in() { "$bin" serve --data-dir "$1" --http "127.0.0.1:$port" --pg off "${@:2}" >>"$work/server.log" 2>&1 & echo $!; }
# Stops server $1 (a clean stop flushes its memtables) and waits until it is gone.
stop() { kill -TERM "$1"; while kill -0 "$1" 2>/dev/null; do sleep 0.1; done; }
# Waits up to a minute for the server to answer /ping.
wait_up() { for _ in $(seq 600); do curl -fsS "http://127.0.0.1:$port/ping" >/dev/null 2>&1 && return; sleep 0.1; done; exit 1; }
