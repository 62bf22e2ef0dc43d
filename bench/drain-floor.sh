#!/usr/bin/env bash
# What the drain target (>= 80 %) asks of any store-and-forward client on this machine: the limit
# (mosquitto_pub -l) against a small C client with libmosquitto and libsqlite3 that drains the same
# messages from an SQLite outbox the way the rules ask (at most 10 in flight, a row marked delivered
# only on its PUBACK and before the next message goes out, so a kill sends again at most what was
# in flight), and the same C client with the store left out. No Swift, no daemon: the floor of the
# work, measured in one run, as a share of the limit's message rate.
# Usage: bench/drain-floor.sh [runs]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
work=$(mktemp -d /tmp/taxiunitd-drain-floor-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/floor.c" <<'C'
// drain DB PORT INFLIGHT STORE: publishes the outbox's undelivered rows at QoS 1, oldest first.
// STORE=1: each PUBACK is committed (delivered_at set) before the next row is read and sent.
// STORE=2: the same, half a window of PUBACKs per commit.
// STORE=3: as 1, but the PUBACK is appended to a table of its own instead of updating the row.
// STORE=0: rows are read once up front and nothing is written.
// load DB FILE: one row per line of FILE.
#include <mosquitto.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sqlite3 *db;
static sqlite3_stmt *next_row, *mark;
static struct mosquitto *mosq;
static int store, inflight, max_inflight, remaining;
static long long cursor, in_flight_rows[65536], acknowledged[65536];
static int unmarked;
static char **preloaded; static int *preloaded_len, preloaded_count, preloaded_next;

static void check(int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) { fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db)); exit(1); }
}

static int send_next(void) {
    int mid, rc;
    if (!store) {
        if (preloaded_next == preloaded_count) return 0;
        rc = mosquitto_publish(mosq, &mid, "limit/floor", preloaded_len[preloaded_next], preloaded[preloaded_next], 1, false);
        preloaded_next++;
    } else {
        sqlite3_bind_int64(next_row, 1, cursor);
        if (sqlite3_step(next_row) != SQLITE_ROW) { sqlite3_reset(next_row); return 0; }
        cursor = sqlite3_column_int64(next_row, 0);
        rc = mosquitto_publish(mosq, &mid, "limit/floor", sqlite3_column_bytes(next_row, 1), sqlite3_column_blob(next_row, 1), 1, false);
        sqlite3_reset(next_row);
        in_flight_rows[mid & 65535] = cursor;
    }
    if (rc != MOSQ_ERR_SUCCESS) { fprintf(stderr, "publish: %s\n", mosquitto_strerror(rc)); exit(1); }
    inflight++;
    return 1;
}

static void on_connect(struct mosquitto *m, void *u, int rc) {
    (void)m; (void)u;
    if (rc) { fprintf(stderr, "connect: %d\n", rc); exit(1); }
    while (inflight < max_inflight && send_next()) {}
}

static void on_publish(struct mosquitto *m, void *u, int mid) {
    (void)m; (void)u;
    inflight--; remaining--;
    if (store) {
        acknowledged[unmarked++] = in_flight_rows[mid & 65535];
        // Half a window of PUBACKs per commit (STORE=2), or each alone; nothing is sent before its
        // PUBACKs are marked, so a kill still finds at most a window sent but unmarked.
        if (store == 2 && unmarked < max_inflight / 2 && remaining > inflight) return;
        check(sqlite3_exec(db, "BEGIN", 0, 0, 0), "begin");
        for (int i = 0; i < unmarked; i++) {
            sqlite3_bind_int64(mark, 1, time(0));
            sqlite3_bind_int64(mark, 2, acknowledged[i]);
            check(sqlite3_step(mark), "mark"); sqlite3_reset(mark);
        }
        check(sqlite3_exec(db, "COMMIT", 0, 0, 0), "commit");
        unmarked = 0;
    }
    while (inflight < max_inflight && send_next()) {}
    if (remaining == 0) mosquitto_disconnect(mosq);
}

static void open_db(const char *path) {
    check(sqlite3_open(path, &db), "open");
    check(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", 0, 0, 0), "pragma");
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "load")) {
        open_db(argv[2]);
        check(sqlite3_exec(db,
            "CREATE TABLE outbox (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE, payload BLOB NOT NULL, delivered_at INTEGER);"
            "CREATE INDEX outbox_pending ON outbox(id) WHERE delivered_at IS NULL;"
            "CREATE INDEX outbox_delivered ON outbox(delivered_at) WHERE delivered_at IS NOT NULL;"
            "CREATE TABLE acknowledged (id INTEGER PRIMARY KEY, at INTEGER NOT NULL);"
            "BEGIN", 0, 0, 0), "schema");
        sqlite3_stmt *insert;
        check(sqlite3_prepare_v2(db, "INSERT INTO outbox (message_id, payload) VALUES (printf('m%08d', ?), ?)", -1, &insert, 0), "prepare");
        FILE *f = fopen(argv[3], "r"); char *line = 0; size_t cap = 0; ssize_t n; int i = 0;
        while ((n = getline(&line, &cap, f)) > 0) {
            if (line[n - 1] == '\n') n--;
            sqlite3_bind_int(insert, 1, ++i); sqlite3_bind_blob(insert, 2, line, (int)n, SQLITE_TRANSIENT);
            check(sqlite3_step(insert), "insert"); sqlite3_reset(insert);
        }
        check(sqlite3_exec(db, "COMMIT", 0, 0, 0), "commit");
        return 0;
    }
    if (argc != 6 || strcmp(argv[1], "drain")) { fprintf(stderr, "usage: floor load DB FILE | floor drain DB PORT INFLIGHT STORE\n"); return 2; }
    open_db(argv[2]);
    max_inflight = atoi(argv[4]); store = atoi(argv[5]);
    check(sqlite3_prepare_v2(db, "SELECT id, payload FROM outbox WHERE delivered_at IS NULL AND id > ? ORDER BY id LIMIT 1", -1, &next_row, 0), "prepare");
    check(sqlite3_prepare_v2(db, store == 3 ? "INSERT INTO acknowledged (at, id) VALUES (?, ?)" : "UPDATE outbox SET delivered_at = ? WHERE id = ?", -1, &mark, 0), "prepare");
    sqlite3_stmt *count; check(sqlite3_prepare_v2(db, "SELECT id, payload FROM outbox WHERE delivered_at IS NULL ORDER BY id", -1, &count, 0), "prepare");
    while (sqlite3_step(count) == SQLITE_ROW) {
        remaining++;
        if (!store) {
            preloaded = realloc(preloaded, remaining * sizeof *preloaded); preloaded_len = realloc(preloaded_len, remaining * sizeof *preloaded_len);
            int length = sqlite3_column_bytes(count, 1);
            preloaded_len[preloaded_count] = length;
            preloaded[preloaded_count] = malloc(length);
            memcpy(preloaded[preloaded_count], sqlite3_column_blob(count, 1), length);
            preloaded_count++;
        }
    }
    sqlite3_finalize(count);
    mosquitto_lib_init();
    mosq = mosquitto_new("drain-floor", false, 0);
    mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(mosq, on_connect);
    mosquitto_publish_callback_set(mosq, on_publish);
    if (mosquitto_connect(mosq, "127.0.0.1", atoi(argv[3]), 60)) { fprintf(stderr, "cannot connect\n"); return 1; }
    mosquitto_loop_forever(mosq, -1, 1);
    return remaining != 0;
}
C
gcc -O2 "$work/floor.c" -o "$work/floor" $(pkg-config --cflags --libs libmosquitto sqlite3)

# The drain bench's messages: 500 events, one live position, 1728 backfill batches of 50 points.
python3 - "$work/payloads.txt" <<'PY'
import random, sys
random.seed(4)
with open(sys.argv[1], "w") as out:
    for i in range(1, 501):
        out.write('{"event":"meter","id":"bench-event-%d","seq":%d,"t":%d,"unit":"B1"}\n' % (i, i, 1795000000000 + i))
    out.write('{"id":"00000000-0000-7000-8000-000000000000","points":[{"acc":3.5,"hdg":10.5,"lat":46.5,"lon":7.5,"spd":8.3,"t":1795086399000}],"seq":1,"unit":"B1"}\n')
    for b in range(1728):
        rows = ",".join("[%d,%d,%d,%d,%d,%d]" % (1000, random.randint(-900, 900), random.randint(-900, 900),
                        random.randint(-300, 300), random.randint(-99, 99), random.randint(-9, 9)) for _ in range(50))
        out.write('{"backfill":true,"id":"00000000-0000-7000-8000-%012d","points":[%s],"seq":%d,"unit":"B1"}\n' % (b, rows, b + 2))
PY
MESSAGES=$(wc -l < "$work/payloads.txt")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' \
    "$port" "$( [ "$(id -u)" = 0 ] && echo "user root" )" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do mosquitto_pub -p "$port" -t bench/ping -m x 2>/dev/null && break; sleep 0.05; done

rate() { # $@: the publisher; prints messages/s from the first to the last message the subscriber got
    timeout 60 mosquitto_sub -p "$port" -q 1 -t 'limit/#' -F '%U' -C "$MESSAGES" > "$work/times.txt" &
    local sub=$!
    sleep 0.3
    "$@" > /dev/null
    wait "$sub"
    awk 'NR == 1 {first = $1} {last = $1} END {printf "%.0f", (NR - 1) / (last - first)}' "$work/times.txt"
}

printf "%-4s %14s %12s %12s %12s %12s %9s %9s %9s %9s\n" run "mosquitto_pub" "C no store" "C update" "C append" "C update/5" "no store" "update" "append" "update/5"
for run in $(seq "$RUNS"); do
    rm -f "$work"/outbox.sqlite*
    "$work/floor" load "$work/outbox.sqlite" "$work/payloads.txt"
    sqlite3 "$work/outbox.sqlite" "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
    cp "$work/outbox.sqlite" "$work/pristine.sqlite"
    limit=$(rate mosquitto_pub -p "$port" -q 1 -t limit/floor -l < "$work/payloads.txt")
    bare=$(rate "$work/floor" drain "$work/outbox.sqlite" "$port" 10 0)
    stored=$(rate "$work/floor" drain "$work/outbox.sqlite" "$port" 10 1)
    cp "$work/pristine.sqlite" "$work/outbox.sqlite"; rm -f "$work"/outbox.sqlite-*
    gathered=$(rate "$work/floor" drain "$work/outbox.sqlite" "$port" 10 2)
    cp "$work/pristine.sqlite" "$work/outbox.sqlite"; rm -f "$work"/outbox.sqlite-*
    appended=$(rate "$work/floor" drain "$work/outbox.sqlite" "$port" 10 3)
    awk -v r="$run" -v l="$limit" -v b="$bare" -v s="$stored" -v a="$appended" -v g="$gathered" 'BEGIN {
        printf "%-4s %14d %12d %12d %12d %12d %8.0f%% %8.0f%% %8.0f%% %8.0f%%\n", r, l, b, s, a, g, 100 * b / l, 100 * s / l, 100 * a / l, 100 * g / l}'
done
cat <<'EOF'
messages/s from the first to the last message at a subscriber, then as shares of mosquitto_pub's rate
(the drain target for the daemon: >= 80 %). The C client drains the outbox with at most 10 in flight:
  no store    rows read up front, nothing written: libmosquitto alone
  update      each PUBACK committed (delivered_at set) before the next row is read and sent
  append      the same, the PUBACK appended to a table of its own instead of rewriting the row
  update/5    half a window of PUBACKs per commit; nothing sent until they are marked. The broker
              holds each PUBACK after the first until the client's TCP acknowledges it, and the
              client's kernel delays that while it has nothing to send: ~40 ms per commit.
EOF
