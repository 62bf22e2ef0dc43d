#!/usr/bin/env python3
"""Fleet benchmark: N real taxiunitd processes (each its own SQLite file, client id, unit id and
control socket), GPS from shared gpsfake replays of the demo route (one per 50 units) started 5 s apart, one local
mosquitto, dispatchsim generating requests at --rate per second over the 4 Midtown zones for
--duration seconds, and scripted drivers (bench/driver.py) answering every offer after 1-5 s.

The scenario has pre-bookings and next jobs in it. Every --prebook-every-th request of a zone is a
reservation --prebook-ahead-s ahead, which dispatchsim offers at once as a pre-booking (`[dispatch]
prebook_lead_s`) and the units hold (`[job] reservation_lead_min`) until its window opens. A rush of
--surge times the fleet's size in requests over --surge-s seconds from --surge-at-s takes every free
taxi, so that requests are stacked as next jobs on taxis on board whose drivers said "clear soon"
(--soon-share of the rides). dispatchsim waits up to --wait-held s after the run for held jobs to start.

Runs a small baseline fleet first, then the fleet under test, in the same run, and prints both:
offer -> reply latency without the driver's think time (p50/p95/p99), request -> assignment, and
the units' total and per-unit RSS and CPU.

    bench/fleet.sh [--units 500] [--duration 600] [--rate 2] [--baseline-units 10] [--baseline-duration 60] [--system-clock]
                   [--prebook-every 5] [--prebook-ahead-s 75] [--reservation-lead-min 1]
                   [--surge 1.2] [--surge-at-s duration/6] [--surge-s 20] [--soon-share 0.5] [--wait-held 120]

--system-clock sets the units' `[gps] trust_system_clock`: their stamps then come from the machine's
clock, not from the replay's GPS time, which runs at gpsfake's pace and so leaks the replay's lag
into the think time the round trip is corrected by. On by default since the scenario has
pre-bookings: their meeting times are the machine's, and the replay's GPS time (21 Nov 2026) would
put every window days ahead. `--no-system-clock` for figures comparable with runs before that.
"""
import argparse
import json
import tomllib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on {port}")


class Group:
    """Children in process groups of their own, stopped together."""

    def __init__(self):
        self.children = []

    def start(self, args, log, **kwargs):
        child = subprocess.Popen(args, stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
        self.children.append(child)
        return child

    def stop(self, children=None, grace=10):
        children = self.children if children is None else children
        for child in children:
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + grace
        for child in children:
            try:
                child.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        self.children = [c for c in self.children if c not in children]


def usage(pids):
    """(total RSS bytes, total CPU seconds) of the processes."""
    rss = cpu = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            rss += int(fields[21]) * PAGE
        except (FileNotFoundError, ProcessLookupError):
            pass
    return rss, cpu


def memory(pids):
    """(PSS, private) bytes in total: RSS counts the shared libraries (Foundation, ICU data, the
    Swift runtime) once per process, PSS shares them out, private is what one more unit costs."""
    pss = private = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                for line in rollup:
                    key, _, value = line.partition(":")
                    if key == "Pss":
                        pss += int(value.split()[0]) * 1024
                    elif key in ("Private_Clean", "Private_Dirty"):
                        private += int(value.split()[0]) * 1024
        except (FileNotFoundError, ProcessLookupError):
            pass
    return pss, private


def rank(samples, p):
    """Nearest-rank percentile, as dispatchsim prints them."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)] if ordered else None


def percentiles(samples):
    if not samples:
        return "n=0"
    return f"n={len(samples)} p50 {rank(samples, 0.5)} ms  p95 {rank(samples, 0.95)} ms  p99 {rank(samples, 0.99)} ms  max {max(samples)} ms"


def start_units(ids, bin_dir, directory, broker_port, gpsd_ports, group, extra=""):
    """A taxiunitd for each id, with its own store and control socket in directory, its GPS from
    one of gpsd_ports in turn, the demo's zones and `extra` TOML; returns the processes."""
    units = []
    with open(f"{ROOT}/demo/zones.toml") as f:
        zones = f.read()
    for index, unit in enumerate(ids):
        config = os.path.join(directory, f"{unit}.toml")
        with open(config, "w") as f:
            f.write(f"""[unit]
id = "{unit}"
fleet = "bench"
[gpsd]
port = {gpsd_ports[index % len(gpsd_ports)]}
[mqtt]
port = {broker_port}
reconnect_max_s = 5
[store]
path = "{directory}/{unit}.sqlite"
[control]
socket = "{directory}/{unit}.sock"
[log]
level = "warning"
""")
            f.write(extra)
            # The units get the dispatcher's zones, as a fleet's units do: their status names the zone.
            f.write(zones)
        units.append(group.start([f"{bin_dir}/taxiunitd", "--config", config], os.path.join(directory, f"{unit}.log")))
        # Starting hundreds of processes at once starves the ones already up.
        if index % 20 == 19:
            time.sleep(0.5)
    return units


def start_broker(work, group):
    """A local mosquitto for the benches; returns its process and port."""
    port = free_port()
    with open(f"{work}/mosquitto.conf", "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\n"
                + ("user root\n" if os.getuid() == 0 else ""))
    broker = group.start(["mosquitto", "-c", f"{work}/mosquitto.conf"], f"{work}/mosquitto.log")
    wait_port(port)
    return broker, port


def run_fleet(name, count, args, bin_dir, work, broker, broker_port, gpsd_ports, group):
    print(f"== {name}: {count} units, {args.rate} requests/s for {args.duration if name == 'fleet' else args.baseline_duration} s", flush=True)
    duration = args.duration if name == "fleet" else args.baseline_duration
    directory = os.path.join(work, name)
    os.makedirs(directory)
    ids = [f"{name[0].upper()}{n:03d}" for n in range(1, count + 1)]
    units = start_units(ids, bin_dir, directory, broker_port, gpsd_ports, group,
                        f"[gps]\ntrust_system_clock = {'true' if args.system_clock else 'false'}\n"
                        f"[job]\nreservation_lead_min = {args.reservation_lead_min}\nexpected_job_min = {args.expected_job_min}\n")
    deadline = time.time() + 120
    while not all(os.path.exists(f"{directory}/{unit}.sock") for unit in ids):
        if time.time() > deadline:
            raise SystemExit(f"{name}: not every unit came up; see {directory}")
        time.sleep(0.5)
    time.sleep(5)
    pids = [u.pid for u in units]
    idle_rss, _ = usage(pids)

    driver = group.start([sys.executable, f"{ROOT}/bench/driver.py", "--soon-share", str(args.soon_share), str(broker_port), "bench",
                          directory] + ids,
                         os.path.join(directory, "driver.log"))
    time.sleep(3 + count / 100)
    stats_path = os.path.join(directory, "stats.json")
    scenario = os.path.join(directory, "scenario.toml")
    with open(scenario, "w") as f:
        f.write(scenario_toml(args, count, duration))
    dispatcher = group.start(
        [f"{bin_dir}/dispatchsim", "--zones", f"{ROOT}/demo/zones.toml", "--port", str(broker_port), "--fleet", "bench",
         "--scenario", scenario, "--duration", str(duration), "--wait-held", str(args.wait_held), "--respond-within", "30", "--quiet",
         "--seed", str(count), "--stats-json", stats_path],
        os.path.join(directory, "dispatchsim.log"))
    _, cpu_start = usage(pids)
    _, broker_cpu_start = usage([broker.pid])
    started = time.time()
    peak_rss = 0
    dispatcher_cpu = 0
    while dispatcher.poll() is None:
        time.sleep(5)
        rss, _ = usage(pids)
        peak_rss = max(peak_rss, rss)
        # Its last reading before it exits: up to 5 s of its end are not counted.
        dispatcher_cpu = usage([dispatcher.pid])[1] or dispatcher_cpu
        elapsed = time.time() - started
        if int(elapsed) % 60 < 5:
            print(f"   {elapsed:5.0f} s  units RSS {rss / 2**20:7.0f} MiB", flush=True)
    _, cpu_end = usage(pids)
    _, broker_cpu_end = usage([broker.pid])
    pss, private = memory(pids)
    wall = time.time() - started
    alive = sum(1 for u in units if u.poll() is None)
    group.stop([driver])
    group.stop(units)
    with open(os.path.join(directory, "driver.log")) as f:
        driver_lines = f.readlines()
    answered = [line.strip() for line in driver_lines if line.startswith("driver: accept/reject answered")]
    by_reason = [line.strip() for line in driver_lines if line.startswith("driver: jobs started by reason")]
    with open(stats_path) as f:
        stats = json.load(f)
    with open(os.path.join(directory, "driver-think.json")) as f:
        think = {(unit, job): ms for unit, job, ms in json.load(f)}
    # Offers shown beside a job in hand have no `offered` event: their think time is the driver's own.
    stats["beside_transit_ms"] = [ms - think[(unit, job)] for unit, job, reply, ms in stats["beside_offer_replies"]
                                  if reply in ("accept", "reject") and (unit, job) in think]
    stats.update(
        name=name, system_clock=args.system_clock, press=answered[-1].removeprefix("driver: ") if answered else None,
        started_by_reason=by_reason[-1].removeprefix("driver: ") if by_reason else None, units=count, alive=alive, idle_rss=idle_rss, peak_rss=peak_rss, pss=pss, private=private,
        cpu_s=cpu_end - cpu_start, wall_s=wall, broker_cpu_s=broker_cpu_end - broker_cpu_start, dispatcher_cpu_s=dispatcher_cpu,
        summary=open(os.path.join(directory, "dispatchsim.log")).read().split("----- dispatchsim summary", 1)[-1])
    return stats


def scenario_toml(args, units, duration):
    """dispatchsim's scenario: the steady demand with its share of pre-bookings in every zone, and
    the rush that leaves no taxi free, so that requests are stacked on taxis clear soon."""
    with open(f"{ROOT}/demo/zones.toml", "rb") as f:
        zones = [zone["id"] for zone in tomllib.load(f)["zones"]]
    surge_at = duration / 6 if args.surge_at_s is None else args.surge_at_s
    lines = ["[dispatch]", f"prebook_lead_s = {args.reservation_lead_min * 60}", ""]
    for zone in zones:
        lines += ["[[generate]]", f'zone = "{zone}"', f"per_minute = {args.rate * 60 / len(zones)}"]
        if args.prebook_every:
            lines += [f"prebook_every = {args.prebook_every}", f"prebook_ahead_s = {args.prebook_ahead_s}"]
        lines.append("")
        if args.surge > 0 and args.surge_s > 0:
            lines += ["[[generate]]", f'zone = "{zone}"', f"per_minute = {args.surge * units / len(zones) / args.surge_s * 60}",
                      f"first_at_s = {surge_at}", f"until_s = {surge_at + args.surge_s}", ""]
    return "\n".join(lines)


def all_transit(stats):
    """Offer -> reply without the think time: offers the unit showed as its state (its `offered`
    event and reply on its clock) and offers beside a job in hand (the driver's timing)."""
    return stats["offer_to_reply_transit_ms"] + stats["beside_transit_ms"]


def within(samples, limit):
    """The share of samples at or below limit, in percent."""
    return 100 * sum(1 for v in samples if v <= limit) / len(samples) if samples else 0


def describe(stats):
    assignment = stats["request_to_assignment_ms"]
    system = stats["request_to_assignment_without_think_ms"]
    mib = 2**20
    lines = [
        f"--- {stats['name']}: {stats['units']} units ({stats['alive']} still running at the end), {stats['wall_s']:.0f} s",
        f"requests {stats['requests']}  accepted {stats['accepted']}  rejected {stats['rejected']}  "
        f"timed-out {stats['timed_out']}  unserved {stats['unserved']}  busy {stats['busy']}  expired {stats['expired']}",
        f"pre-bookings: offered {stats['pre_booking_offers']}, held {stats['pre_bookings_held']}, started {stats['pre_bookings_started']}; "
        f"next jobs: offered {stats['next_offers']}, stacked {stats['next_jobs_held']}, started {stats['next_jobs_started']}; "
        f"held and planned again {stats['held_replanned']}",
        f"  the units started jobs (their en_route events, by reason): {stats['started_by_reason']}",
        f"offer -> reply, think time excluded  {percentiles(stats['offer_to_reply_transit_ms'])}",
        f"  offers beside a job in hand, answered by the driver, the driver's think time excluded (its own clock)  "
        f"{percentiles(stats['beside_transit_ms'])}",
        f"  all offers answered by the driver, think time excluded  {percentiles(all_transit(stats))}",
        f"offer -> reply, as seen by dispatch  {percentiles(stats['offer_to_reply_ms'])}",
    ]
    if stats["system_clock"]:
        # Both legs are differences of this machine's clock only when the units stamp with it.
        lines += [
            f"  offer -> the unit's offered event  {percentiles(stats.get('offer_leg_ms', []))}",
            f"  the unit's reply -> dispatch       {percentiles(stats.get('reply_leg_ms', []))}",
        ]
    if stats["press"]:
        # The unit's part of the reply leg: its control socket answers once the reply is stored and handed over.
        lines.append(f"  taxiunitctl-style {stats['press']}")
    lines += [
        f"request -> assignment                {percentiles(assignment)}   within 5 s {within(assignment, 5000):.1f} %, "
        f"within 10 s {within(assignment, 10000):.1f} %",
        f"  the same, drivers' think time out  {percentiles(system)}   within 5 s {within(system, 5000):.1f} %, "
        f"within 10 s {within(system, 10000):.1f} % ({len(system)} of {len(assignment)} with every think time known)",
        f"units RSS: idle {stats['idle_rss'] / mib:.0f} MiB, peak {stats['peak_rss'] / mib:.0f} MiB "
        f"({stats['peak_rss'] / mib / stats['units']:.1f} MiB per unit); at the end PSS {stats['pss'] / mib / stats['units']:.1f} MiB "
        f"and private {stats['private'] / mib / stats['units']:.1f} MiB per unit",
        f"units CPU: {stats['cpu_s']:.0f} s over {stats['wall_s']:.0f} s = {100 * stats['cpu_s'] / stats['wall_s']:.0f} % of one core "
        f"({100 * stats['cpu_s'] / stats['wall_s'] / stats['units']:.2f} % per unit) on {os.cpu_count()} cores",
        # Where the units' messages are carried and read: a slower dispatcher or broker lengthens every round trip.
        f"mosquitto CPU {100 * stats['broker_cpu_s'] / stats['wall_s']:.0f} %, "
        f"dispatchsim CPU {100 * stats['dispatcher_cpu_s'] / stats['wall_s']:.0f} % of one core",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=500)
    parser.add_argument("--duration", type=float, default=600)
    parser.add_argument("--rate", type=float, default=2.0)
    parser.add_argument("--baseline-units", type=int, default=10)
    parser.add_argument("--baseline-duration", type=float, default=60)
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build/release"))
    parser.add_argument("--prebook-every", type=int, default=5, help="every n-th request of a zone is a pre-booking; 0: none")
    parser.add_argument("--prebook-ahead-s", type=float, default=75, help="how far ahead of its request a pre-booking meets")
    parser.add_argument("--reservation-lead-min", type=int, default=1,
                        help="the units' [job] reservation_lead_min, and dispatchsim's prebook_lead_s in seconds")
    parser.add_argument("--expected-job-min", type=int, default=1,
                        help="the units' [job] expected_job_min: how long a job keeps a taxi from a pre-booking (the bench's last a minute)")
    parser.add_argument("--surge", type=float, default=1.2, help="requests of the rush, per unit of the fleet; 0: no rush")
    parser.add_argument("--surge-at-s", type=float, default=None, help="when the rush starts (default: a sixth of the duration)")
    parser.add_argument("--surge-s", type=float, default=20, help="how long the rush lasts")
    parser.add_argument("--soon-share", type=float, default=0.5, help="the share of rides the drivers announce clear soon")
    parser.add_argument("--wait-held", type=float, default=120, help="how long dispatchsim waits after the run for held jobs to start")
    parser.add_argument("--system-clock", action=argparse.BooleanOptionalAction, default=True,
                        help="units stamp with the system clock instead of the replay's GPS time (21 Nov 2026), "
                             "on which a pre-booking's window never opens in the run")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="taxiunitd-fleet-")
    group = Group()
    try:
        broker, broker_port = start_broker(work, group)
        # gpsd serves a limited number of clients (64 in Debian's build): one replay per 50 units,
        # started 5 s apart so the fleet is spread along the route.
        gpsd_ports = []
        replays = max(2, math.ceil(max(args.units, args.baseline_units) / 50))
        for replay in range(replays):
            port = free_port()
            group.start(["gpsfake", "-q", "-P", str(port), "-c", "0.5", f"{ROOT}/demo/manhattan-midtown.nmea"], f"{work}/gpsfake-{replay}.log")
            wait_port(port)
            gpsd_ports.append(port)
            time.sleep(5)
        results = [run_fleet("baseline", args.baseline_units, args, args.bin, work, broker, broker_port, gpsd_ports, group),
                   run_fleet("fleet", args.units, args, args.bin, work, broker, broker_port, gpsd_ports, group)]
        print()
        for stats in results:
            print(describe(stats))
        fleet = results[1]
        transit_p95 = rank(fleet["offer_to_reply_transit_ms"], 0.95)
        system = fleet["request_to_assignment_without_think_ms"]
        targets = [
            ("seed: request -> assignment, drivers' think time out, 95 % within 5 s and all within 10 s",
             bool(system) and within(system, 5000) >= 95 and within(system, 10000) == 100),
            ("offer -> reply p95 < 500 ms (think time excluded)", transit_p95 is not None and transit_p95 < 500),
            ("offer -> reply p95 < 100 ms (think time excluded, every offer a driver answered) with pre-bookings and stacking",
             rank(all_transit(fleet), 0.95) is not None and rank(all_transit(fleet), 0.95) < 100),
            ("pre-bookings held and started, next jobs stacked and started, in the fleet's run",
             all(fleet[key] > 0 for key in ("pre_bookings_held", "pre_bookings_started", "next_jobs_held", "next_jobs_started"))),
            ("RSS per unit <= 12 MB", fleet["peak_rss"] / fleet["units"] <= 12 * 10**6),
            ("PSS per unit <= 12 MB (shared libraries shared out)", fleet["pss"] / fleet["units"] <= 12 * 10**6),
        ]
        print_targets(targets)
    finally:
        finish(group, work)


def print_targets(targets):
    print("--- targets")
    for label, met in targets:
        print(f"{'met    ' if met else 'NOT met'}  {label}")


def finish(group, work):
    """Stops every process of the run and removes its files, unless KEEP_BENCH_FILES asks to keep them."""
    group.stop()
    if os.environ.get("KEEP_BENCH_FILES"):
        print(f"files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
