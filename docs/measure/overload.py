#!/usr/bin/env python3
"""Memory under overload (docs/reliability.md): 64 writers sending 32 MiB bodies for SECS
seconds (default 60), then 200 clients running heavy SQL queries for 60 s, against
`strata serve` with default flags on 127.0.0.1:18087; RSS sampled every 0.2 s, and with
the memtable and in-flight write bytes every 10 s.
Usage: [SECS=150] overload.py STRATA_BINARY DATA_DIR"""
import http.client, os, subprocess, sys, threading, time, collections, urllib.parse

binary, data = sys.argv[1], sys.argv[2]
subprocess.run(["rm", "-rf", data]); os.makedirs(data)
server = subprocess.Popen([binary, "serve", "--data-dir", data, "--http", "127.0.0.1:18087"],
                          stdout=subprocess.DEVNULL, stderr=open(data + ".log", "w"))
for _ in range(100):
    try:
        c = http.client.HTTPConnection("127.0.0.1", 18087, timeout=2); c.request("GET", "/ping"); c.getresponse().read(); break
    except Exception:
        time.sleep(0.1)

def rss():
    kb = {}
    for line in open(f"/proc/{server.pid}/status"):
        k, v = line.split(":", 1)
        if k in ("VmRSS", "VmHWM"):
            kb[k] = int(v.split()[0])
    return kb

peak = [0]
stop_sampling = threading.Event()
series = []
def memtable():
    c = http.client.HTTPConnection("127.0.0.1", 18087, timeout=5); c.request("GET", "/metrics"); text = c.getresponse().read().decode()
    m = {}
    for line in text.splitlines():
        for k in ("strata_memtable_bytes", "strata_inflight_write_bytes"):
            if line.startswith(k + " "):
                m[k] = int(float(line.split()[1])) >> 20
    return m
def sampler():
    last = 0
    while not stop_sampling.is_set():
        peak[0] = max(peak[0], rss()["VmRSS"]); time.sleep(0.2)
        if time.time() - last >= 10:
            last = time.time()
            try:
                series.append((round(time.time()), rss()["VmRSS"] >> 10, memtable()))
            except Exception as e:
                series.append(str(e))
threading.Thread(target=sampler, daemon=True).start()

def body(k, mb=32):
    lines, size, i = [], 0, 0
    base = 1_700_000_000_000_000_000 + k * 10**12
    while size < mb << 20:
        line = f"m,host=h{(i * 7 + k) % 5000},region=r{i % 13} v={(i * 2654435761) % 1000003}i,u={i * 0.37:.3f} {base + i * 1000}\n"
        lines.append(line); size += len(line); i += 1
    return "".join(lines).encode(), i

def hammer(n_threads, seconds, make_request):
    counts = collections.Counter(); lock = threading.Lock(); end = time.time() + seconds
    def run(t):
        while time.time() < end:
            try:
                status = make_request(t)
            except Exception as e:
                status = type(e).__name__
            with lock:
                counts[status] += 1
    threads = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    [t.start() for t in threads]; [t.join() for t in threads]
    return counts

print("idle RSS", rss(), flush=True)
bodies = [body(k) for k in range(4)]
print("bodies", [len(b) for b, _ in bodies], "rows each", [n for _, n in bodies], flush=True)

def write(t):
    b, _ = bodies[t % 4]
    c = http.client.HTTPConnection("127.0.0.1", 18087, timeout=120)
    c.request("POST", "/write?db=ovl", body=b); r = c.getresponse(); r.read(); c.close()
    return r.status

peak[0] = 0
w = hammer(64, int(os.environ.get("SECS", "60")), write)
print("writers: 64 threads x 32 MiB bodies:", dict(w), "peak RSS MiB", peak[0] // 1024, rss(), flush=True)
for row in series: print("  ", row)
series.clear()

queries = [
    "SELECT host, count(*) AS n, avg(v) AS a FROM m GROUP BY host ORDER BY n DESC",
    "SELECT * FROM m ORDER BY u DESC LIMIT 10",
    "SELECT region, host, max(u), min(v) FROM m GROUP BY region, host",
]
def query(t):
    q = urllib.parse.quote(queries[t % len(queries)])
    c = http.client.HTTPConnection("127.0.0.1", 18087, timeout=120)
    c.request("GET", f"/sql?db=ovl&q={q}"); r = c.getresponse(); r.read(); c.close()
    return r.status

peak[0] = 0
q = hammer(200, 60, query)
print("queries: 200 threads, 60 s:", dict(q), "peak RSS MiB", peak[0] // 1024, rss(), flush=True)
for row in series: print("  ", row)
stop_sampling.set()
server.terminate(); server.wait()
