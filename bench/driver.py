#!/usr/bin/env python3
"""Scripted drivers for the fleet benchmark: one process for every unit of the run.

Watches job offers on the broker (through mosquitto_sub) and answers each through that unit's
control socket after a random 1-5 s of "thinking", as `taxiunitctl press` would: accept (90 %) or
reject (10 %). An accepted job is driven to the end (arrived after 10-30 s, passenger on board 2 s
later, clear after a 20-60 s ride) so the taxi comes back to its zone's queue.

    driver.py MQTT_PORT FLEET SOCKET_DIR UNIT_ID...   (sockets are SOCKET_DIR/UNIT_ID.sock)
"""
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
    port, fleet, socket_dir, units = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    rng = random.Random(8)
    loop = asyncio.get_running_loop()
    counts = {"accept": 0, "reject": 0, "failed": 0}

    # How long the unit took to answer an accept or reject: the engine stores the reply
    # (synchronous=FULL) and hands it to libmosquitto before it answers.
    answered_ms = []

    def timed_press(path, word):
        started = time.monotonic()
        response = press(path, word)
        return response, (time.monotonic() - started) * 1000

    async def send(unit, word):
        try:
            response, took_ms = await loop.run_in_executor(None, timed_press, f"{socket_dir}/{unit}.sock", word)
            if not response.get("ok"):
                counts["failed"] += 1
            elif word in ("accept", "reject"):
                answered_ms.append(took_ms)
        except OSError:
            counts["failed"] += 1

    async def answer(unit, job):
        await asyncio.sleep(rng.uniform(1, 5))
        word = "accept" if rng.random() < 0.9 else "reject"
        counts[word] += 1
        await send(unit, word)
        if word == "accept":
            await asyncio.sleep(rng.uniform(10, 30))
            await send(unit, "arrived")
            await asyncio.sleep(2)
            await send(unit, "pob")
            await asyncio.sleep(rng.uniform(20, 60))
            await send(unit, "clear")

    for unit in units:
        await send(unit, "duty")
    print(f"driver: {len(units)} units on duty", flush=True)

    def report_and_exit():
        print(f"driver: {counts}", flush=True)
        if answered_ms:
            ranked = sorted(answered_ms)
            at = lambda share: ranked[min(len(ranked) - 1, math.ceil(share * len(ranked)) - 1)]
            print(f"driver: accept/reject answered n={len(ranked)} p50 {at(0.5):.0f} ms  p95 {at(0.95):.0f} ms  "
                  f"p99 {at(0.99):.0f} ms  max {ranked[-1]:.0f} ms", flush=True)
        offers.kill()
        sys.exit(0)

    loop.add_signal_handler(signal.SIGTERM, report_and_exit)
    offers = await asyncio.create_subprocess_exec(
        "mosquitto_sub", "-p", port, "-q", "1", "-v", "-t", f"taxi/{fleet}/+/job/offer",
        stdout=asyncio.subprocess.PIPE)
    tasks = set()
    while line := await offers.stdout.readline():
        topic, _, payload = line.decode().partition(" ")
        unit = topic.split("/")[2]
        job = json.loads(payload)["job"]
        task = asyncio.create_task(answer(unit, job))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
