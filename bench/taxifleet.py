#!/usr/bin/env python3
"""taxifleet against a fleet of N real taxiunitd units (each its own SQLite file and unit id, GPS
from gpsfake replays of the demo route, one per 50 units) on one local mosquitto, each measured
beside a baseline in the same run:

- status: `taxifleet status --json` until it printed every unit, against mosquitto_sub taking the
  same retained status, telemetry and pos/last messages (the broker's own floor). taxifleet waits
  for half a second without a retained message before it prints (docs/fleet.md), so about 0.5 s
  of its time is that wait.
- push: `taxifleet push --json` of a fleet document until every unit's config/ack came, against
  mosquitto_pub of the same signed document with mosquitto_sub counting the acks.
- the live page while the fleet moves: `taxifleet serve`'s /fleet.json answer time (p50/p95 of
  20 requests) against its static page, and the server-sent events of 10 s (how many, how large).

    bench/taxifleet.sh [--units 500]

Targets: status under 2 s and all acks reported with 500 units; the page answers
/fleet.json within 1 s at p95 while 500 units move.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import Group, finish, free_port, percentiles, print_targets, rank, start_broker, start_units, wait_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(args, **kwargs):
    started = time.monotonic()
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    return time.monotonic() - started, result


def retained_count(broker_port, filters):
    """How many retained messages the broker holds on filters."""
    args = ["mosquitto_sub", "-p", str(broker_port), "--retained-only", "-W", "3", "-v"]
    for topic in filters:
        args += ["-t", topic]
    return len(subprocess.run(args, capture_output=True, text=True).stdout.splitlines())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=500)
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build/release"))
    args = parser.parse_args()
    taxifleet = os.path.join(args.bin, "taxifleet")
    work = tempfile.mkdtemp(prefix="taxifleet-bench-")
    group = Group()
    try:
        _, broker_port = start_broker(work, group)
        gpsd_ports = []
        for replay in range(max(1, (args.units + 49) // 50)):
            port = free_port()
            group.start(["gpsfake", "-q", "-P", str(port), "-c", "0.5", f"{ROOT}/demo/manhattan-midtown.nmea"], f"{work}/gpsfake-{replay}.log")
            wait_port(port)
            gpsd_ports.append(port)
        key = os.path.join(work, "fleet.key")
        trusted_key = "[fleet]\n" + subprocess.run([taxifleet, "gen-key", "--out", key], capture_output=True, text=True, check=True).stdout
        common = ["--port", str(broker_port), "--fleet", "bench"]

        print(f"== {args.units} units starting", flush=True)
        started = time.monotonic()
        ids = [f"U{n:03d}" for n in range(1, args.units + 1)]
        start_units(ids, args.bin, work, broker_port, gpsd_ports, group,
                    "[reporting]\ninterval_s = 5\n[telemetry]\ninterval_s = 10\n" + trusted_key)
        filters = [f"taxi/bench/+/{name}" for name in ("status", "telemetry", "pos/last")]
        deadline = time.monotonic() + 600
        while True:
            # Every unit online, with its telemetry and a first fix.
            count = retained_count(broker_port, filters)
            if count >= 3 * args.units:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"after 600 s the broker holds {count} of {3 * args.units} retained messages; see {work}")
            time.sleep(5)
        print(f"   all {args.units} units online with telemetry and a fix after {time.monotonic() - started:.0f} s", flush=True)

        print("== status", flush=True)
        status_times, floor_times = [], []
        # The floor: the broker's own client, ending as soon as it has every retained message.
        floor = ["mosquitto_sub", "-p", str(broker_port), "--retained-only", "-C", str(3 * args.units), "-W", "30"]
        for topic in filters:
            floor += ["-t", topic]
        for _ in range(5):
            elapsed, result = timed([taxifleet, "status", "--json"] + common)
            rows = json.loads(result.stdout)
            if len(rows) != args.units:
                raise SystemExit(f"taxifleet status showed {len(rows)} of {args.units} units")
            status_times.append(round(elapsed * 1000))
            elapsed, _ = timed(floor)
            floor_times.append(round(elapsed * 1000))
        print(f"   taxifleet status --json ({args.units} rows)      {percentiles(status_times)}")
        print(f"   mosquitto_sub, the same retained messages  {percentiles(floor_times)}")

        print("== push", flush=True)
        settings = os.path.join(work, "fleet.toml")
        with open(settings, "w") as f:
            f.write("[reporting]\ninterval_s = 6\n")
        elapsed, result = timed([taxifleet, "push", "--json", "--wait", "300", "--key", key] + common + [settings])
        answer = json.loads(result.stdout.splitlines()[-1])
        applied = sum(1 for a in answer["answers"] if a.get("result") == "applied")
        print(f"   taxifleet push: {applied} of {args.units} applied, outcome {answer['outcome']}, {elapsed:.2f} s")
        # The floor: the same kind of document signed by taxifleet, published by mosquitto_pub, acks counted by mosquitto_sub.
        document = os.path.join(work, "doc.json")
        with open(document, "w") as f:
            f.write(json.dumps({"settings": {"reporting": {"interval_s": 7}}, "version": answer["version"] + 1}))
        signed = subprocess.run([taxifleet, "sign-config", "--key", key, "--topic", "taxi/bench/config", document],
                                capture_output=True, text=True, check=True).stdout.strip()
        counter = subprocess.Popen(["mosquitto_sub", "-p", str(broker_port), "-t", "taxi/bench/+/config/ack", "-C", str(args.units), "-W", "300"],
                                   stdout=subprocess.PIPE, text=True)
        time.sleep(1)
        started = time.monotonic()
        subprocess.run(["mosquitto_pub", "-p", str(broker_port), "-t", "taxi/bench/config", "-r", "-q", "1", "-m", signed], check=True)
        acks = counter.communicate()[0].splitlines()
        print(f"   mosquitto_pub + mosquitto_sub: {len(acks)} acks, {time.monotonic() - started:.2f} s")

        print("== the live page while the fleet moves", flush=True)
        page_port = free_port()
        group.start([taxifleet, "serve", "--listen", f"127.0.0.1:{page_port}"] + common, f"{work}/serve.log")
        wait_port(page_port)
        time.sleep(3)

        def fetch_times(path, times=20):
            samples = []
            for _ in range(times):
                elapsed, _ = timed(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{page_port}{path}"])
                samples.append(round(elapsed * 1000))
            return samples

        snapshot = urllib.request.urlopen(f"http://127.0.0.1:{page_port}/fleet.json").read()
        json_times, page_times = fetch_times("/fleet.json"), fetch_times("/")
        print(f"   /fleet.json ({len(snapshot) / 1024:.0f} KiB, {len(json.loads(snapshot)['units'])} units) {percentiles(json_times)}")
        print(f"   / (the static page, baseline)            {percentiles(page_times)}")
        events, size, started = 0, 0, time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{page_port}/events", timeout=15) as stream:
            while time.monotonic() - started < 10:
                line = stream.readline()
                if line.startswith(b"data: "):
                    events += 1
                    size += len(line)
        print(f"   /events: {events} snapshots in 10 s, {size / max(events, 1) / 1024:.0f} KiB each")

        print_targets([
            (f"status of {args.units} units under 2 s (p95)", rank(status_times, 0.95) < 2000),
            (f"push reports all {args.units} acks", applied == args.units),
            ("/fleet.json p95 under 1 s while the fleet moves", rank(json_times, 0.95) < 1000),
        ])
    finally:
        finish(group, work)


if __name__ == "__main__":
    main()
