#!/usr/bin/env python3
"""Scripted drivers for the fleet benchmark: one process for every unit of the run.

Watches job offers and the units' events on the broker (through mosquitto_sub) and answers each
offer through that unit's control socket after a random 1-5 s of "thinking", as `taxiunitctl press`
would: accept (90 %) or reject (10 %). Every job a unit starts (its event to `en_route`: an accepted
offer, a pre-booking whose window opened, a next job after a ride) is driven to the end (arrived
after 10-30 s, passenger on board 2 s later, clear after a 20-60 s ride) so the taxi comes back to
its zone's queue. With --soon-share, that share of rides is announced clear soon (`soon`) 1-3 s
after the passenger boards, so the dispatcher may stack a next job on the taxi.

    driver.py [--soon-share 0.5] MQTT_PORT FLEET SOCKET_DIR UNIT_ID...   (sockets are SOCKET_DIR/UNIT_ID.sock)
"""
import argparse
import asyncio
import json
import math
import random
import signal
import socket
import sys
import time


def press(path, word):
    """One JSON line request, one JSON line response: the control socket's protocol."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(10)
        connection.connect(path)
        connection.sendall((json.dumps({"cmd": "press", "input": word}) + "\n").encode())
        response = b""
        while not response.endswith(b"\n"):
            chunk = connection.recv(4096)
            if not chunk:
                break
            response += chunk
    return json.loads(response or b"{}")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--soon-share", type=float, default=0.0)
    parser.add_argument("port")
    parser.add_argument("fleet")
    parser.add_argument("socket_dir")
    parser.add_argument("units", nargs="+")
    args = parser.parse_args()
    port, fleet, socket_dir, units = args.port, args.fleet, args.socket_dir, args.units
    rng = random.Random(8)
    loop = asyncio.get_running_loop()
    counts = {"accept": 0, "reject": 0, "failed": 0, "soon": 0}
    # Jobs the units started, by the event's reason; each (unit, job) driven once (QoS 1 may repeat an event).
    started = {}
    driven = set()

    # How long the unit took to answer an accept or reject: the engine stores the reply
    # (synchronous=FULL) and hands it to libmosquitto before it answers.
    answered_ms = []

    # Per offer answered, the driver's think time: from the offer reaching this process to the
    # press starting on the control socket (ms). dispatchsim cannot take it out of the round trip of
    # an offer shown beside a job in hand, which has no `offered` event; fleet.py does with these.
    think_ms = []

    def timed_press(path, word):
        started = time.monotonic()
        response = press(path, word)
        return response, (time.monotonic() - started) * 1000, started

    async def send(unit, word):
        """The press's start (monotonic), or None when it failed."""
        try:
            response, took_ms, started = await loop.run_in_executor(None, timed_press, f"{socket_dir}/{unit}.sock", word)
            if not response.get("ok"):
                counts["failed"] += 1
                return None
            if word in ("accept", "reject"):
                answered_ms.append(took_ms)
            return started
        except OSError:
            counts["failed"] += 1
            return None

    async def answer(unit, job, seen):
        await asyncio.sleep(rng.uniform(1, 5))
        word = "accept" if rng.random() < 0.9 else "reject"
        counts[word] += 1
        started = await send(unit, word)
        if started is not None:
            think_ms.append([unit, job, round((started - seen) * 1000)])

    async def drive(unit, job):
        await asyncio.sleep(rng.uniform(10, 30))
        await send(unit, "arrived")
        await asyncio.sleep(2)
        await send(unit, "pob")
        ride = rng.uniform(20, 60)
        if rng.random() < args.soon_share:
            early = rng.uniform(1, 3)
            await asyncio.sleep(early)
            counts["soon"] += 1
            await send(unit, "soon")
            ride -= early
        await asyncio.sleep(ride)
        await send(unit, "clear")

    for unit in units:
        await send(unit, "duty")
    print(f"driver: {len(units)} units on duty", flush=True)

    def report_and_exit():
        print(f"driver: {counts}", flush=True)
        print(f"driver: jobs started by reason {started}", flush=True)
        if answered_ms:
            ranked = sorted(answered_ms)
            at = lambda share: ranked[min(len(ranked) - 1, math.ceil(share * len(ranked)) - 1)]
            print(f"driver: accept/reject answered n={len(ranked)} p50 {at(0.5):.0f} ms  p95 {at(0.95):.0f} ms  "
                  f"p99 {at(0.99):.0f} ms  max {ranked[-1]:.0f} ms", flush=True)
        with open(f"{socket_dir}/driver-think.json", "w") as f:
            json.dump(think_ms, f)
        offers.kill()
        sys.exit(0)

    loop.add_signal_handler(signal.SIGTERM, report_and_exit)
    offers = await asyncio.create_subprocess_exec(
        "mosquitto_sub", "-p", port, "-q", "1", "-v", "-t", f"taxi/{fleet}/+/job/offer", "-t", f"taxi/{fleet}/+/event",
        stdout=asyncio.subprocess.PIPE)
    tasks = set()
    while line := await offers.stdout.readline():
        topic, _, payload = line.decode().partition(" ")
        unit = topic.split("/")[2]
        message = json.loads(payload)
        if topic.endswith("/job/offer"):
            task = asyncio.create_task(answer(unit, message["job"], time.monotonic()))
        elif message.get("to") == "en_route" and message.get("job") and (unit, message["job"]) not in driven:
            driven.add((unit, message["job"]))
            reason = message.get("reason", "none")
            started[reason] = started.get(reason, 0) + 1
            task = asyncio.create_task(drive(unit, message["job"]))
        else:
            continue
        tasks.add(task)
        task.add_done_callback(tasks.discard)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
