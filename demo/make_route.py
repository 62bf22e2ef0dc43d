#!/usr/bin/env python3
"""Generates demo/manhattan-midtown.nmea: a taxi's loop through Midtown Manhattan as a u-blox-style
NMEA log (GGA + RMC at 1 Hz) for gpsfake, and demo/zones.toml, the fleet zones covering it.

The loop follows real streets in their legal direction: north on 8th Avenue from Penn Station to
Columbus Circle, east on Central Park South, south on 5th Avenue, east on 42nd Street to Grand
Central, south on Park Avenue, west on 34th Street back to 8th Avenue. Speeds are Midtown speeds
(accelerating to 25-40 km/h between lights), the taxi stops at some crossings for a red light, and
waits at the Penn Station rank. Deterministic: the same script gives the same log.

    python3 demo/make_route.py          # rewrites both files next to this script
"""
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, lat, lon, stop kind at this point: None, "light" or "rank")
WAYPOINTS = [
    ("8th Av & W 34th St (Penn Station rank)", 40.75240, -73.99360, "rank"),
    ("8th Av & W 38th St", 40.75480, -73.99165, "light"),
    ("8th Av & W 42nd St (Port Authority)", 40.75720, -73.98970, "light"),
    ("8th Av & W 46th St", 40.75970, -73.98785, "light"),
    ("8th Av & W 50th St", 40.76230, -73.98600, "light"),
    ("8th Av & W 54th St", 40.76490, -73.98410, "light"),
    ("Columbus Circle (8th Av & W 59th St)", 40.76810, -73.98190, "light"),
    ("Central Park S & 7th Av", 40.76680, -73.97910, "light"),
    ("Central Park S & 6th Av", 40.76550, -73.97630, "light"),
    ("Grand Army Plaza (5th Av & 59th St)", 40.76430, -73.97340, "light"),
    ("5th Av & E 55th St", 40.76170, -73.97530, "light"),
    ("5th Av & E 50th St (Rockefeller Center)", 40.75850, -73.97770, "light"),
    ("5th Av & E 46th St", 40.75590, -73.97960, "light"),
    ("5th Av & E 42nd St (Public Library)", 40.75320, -73.98160, "light"),
    ("E 42nd St & Madison Av", 40.75240, -73.97990, "light"),
    ("E 42nd St & Park Av (Grand Central)", 40.75160, -73.97800, "light"),
    ("Park Av & E 39th St", 40.74970, -73.97940, "light"),
    ("Park Av & E 37th St", 40.74840, -73.98040, "light"),
    ("Park Av & E 34th St", 40.74650, -73.98190, "light"),
    ("E 34th St & Madison Av", 40.74730, -73.98370, "light"),
    ("W 34th St & 5th Av (Empire State Building)", 40.74830, -73.98550, "light"),
    ("W 34th St & 6th Av (Herald Square)", 40.74970, -73.98800, "light"),
    ("W 34th St & 7th Av", 40.75100, -73.99080, "light"),
]

# Four zones over Midtown, cut roughly along 40th Street and 6th Avenue, following the street grid
# (rotated 29 degrees), each reaching a block beyond the loop so every point of it is in a zone.
ZONES = {
    "garment": [(40.74990, -73.99690), (40.75455, -73.99350), (40.75215, -73.98830), (40.74750, -73.99170)],
    "times-square": [(40.75455, -73.99350), (40.77080, -73.98160), (40.76840, -73.97640), (40.75215, -73.98830)],
    "murray-hill": [(40.74750, -73.99170), (40.75215, -73.98830), (40.74940, -73.97660), (40.74380, -73.98070)],
    "grand-central": [(40.75215, -73.98830), (40.76840, -73.97640), (40.76510, -73.96960), (40.74940, -73.97660)],
}

START_DATE = (2026, 11, 21)  # UTC date in RMC
START_SECOND = 12 * 3600     # 12:00:00 UTC
LAPS = 3


def metres(a, b):
    lat0 = math.radians((a[0] + b[0]) / 2)
    dy = (b[0] - a[0]) * 111_320
    dx = (b[1] - a[1]) * 111_320 * math.cos(lat0)
    return math.hypot(dx, dy)


def bearing(a, b):
    lat0 = math.radians((a[0] + b[0]) / 2)
    dy = b[0] - a[0]
    dx = (b[1] - a[1]) * math.cos(lat0)
    return (math.degrees(math.atan2(dx, dy)) + 360) % 360


def drive(rng):
    """Yields (lat, lon, speed m/s, course) once per second around the loop, LAPS times."""
    points = WAYPOINTS * LAPS + [WAYPOINTS[0]]
    course = bearing(points[0][1:3], points[1][1:3])
    for index in range(len(points) - 1):
        name, lat, lon, stop = points[index]
        here, there = (lat, lon), points[index + 1][1:3]
        # Red light at about half the crossings; the rank wait once per lap.
        if stop == "rank":
            for _ in range(rng.randint(40, 70)):
                yield lat, lon, 0.0, course
        elif stop == "light" and rng.random() < 0.5:
            for _ in range(rng.randint(10, 45)):
                yield lat, lon, 0.0, course
        course = bearing(here, there)
        length = metres(here, there)
        cruise = rng.uniform(7.0, 11.0)  # 25-40 km/h
        acceleration, braking = 1.5, 2.0
        travelled, speed = 0.0, 0.0
        while travelled < length:
            remaining = length - travelled
            if speed * speed / (2 * braking) >= remaining:
                speed = max(1.0, speed - braking)
            else:
                speed = min(cruise, speed + acceleration)
            travelled = min(length, travelled + speed)
            f = travelled / length
            yield here[0] + f * (there[0] - here[0]), here[1] + f * (there[1] - here[1]), speed, course


def checksum(body):
    value = 0
    for char in body:
        value ^= ord(char)
    return f"${body}*{value:02X}"


def nmea_angle(value, degree_digits, positive, negative):
    hemisphere = positive if value >= 0 else negative
    value = abs(value)
    degrees = int(value)
    minutes = (value - degrees) * 60
    return f"{degrees:0{degree_digits}d}{minutes:07.4f}", hemisphere


def sentences(second, lat, lon, speed, course, rng):
    hh, mm, ss = second // 3600 % 24, second // 60 % 60, second % 60
    stamp = f"{hh:02d}{mm:02d}{ss:02d}.00"
    year, month, day = START_DATE
    date = f"{day:02d}{month:02d}{year % 100:02d}"
    # A few metres of receiver noise, as a real log has.
    lat += rng.gauss(0, 1.5) / 111_320
    lon += rng.gauss(0, 1.5) / (111_320 * math.cos(math.radians(lat)))
    lat_text, ns = nmea_angle(lat, 2, "N", "S")
    lon_text, ew = nmea_angle(lon, 3, "E", "W")
    knots = speed * 3600 / 1852
    satellites = rng.randint(7, 11)
    hdop = rng.uniform(0.8, 1.6)
    gga = checksum(f"GPGGA,{stamp},{lat_text},{ns},{lon_text},{ew},1,{satellites:02d},{hdop:.1f},{rng.uniform(9, 13):.1f},M,-34.2,M,,")
    rmc = checksum(f"GPRMC,{stamp},A,{lat_text},{ns},{lon_text},{ew},{knots:.2f},{course:.1f},{date},,,A")
    return gga, rmc


def main():
    rng = random.Random(20261121)
    lines = [
        "# Name: Manhattan Midtown taxi loop (generated by demo/make_route.py)",
        "# 1 Hz GGA + RMC; replay in real time with: gpsfake -c 0.5",
    ]
    second = START_SECOND
    for lat, lon, speed, course in drive(rng):
        lines.extend(sentences(second, lat, lon, speed, course, rng))
        second += 1
    with open(os.path.join(HERE, "manhattan-midtown.nmea"), "w", newline="\r\n") as log:
        log.write("\n".join(lines) + "\n")

    zone_lines = [
        "# Fleet zones of the demo (generated by demo/make_route.py): the same [[zones]] the units and",
        "# dispatchsim read. id, and polygon = [[lat, lon], ...] in order.",
    ]
    for zone_id, polygon in ZONES.items():
        vertices = ", ".join(f"[{lat:.5f}, {lon:.5f}]" for lat, lon in polygon)
        zone_lines += ["", "[[zones]]", f'id = "{zone_id}"', f"polygon = [{vertices}]"]
    with open(os.path.join(HERE, "zones.toml"), "w") as zones:
        zones.write("\n".join(zone_lines) + "\n")
    minutes = (second - START_SECOND) / 60
    print(f"{LAPS} laps, {minutes:.1f} min of driving, {len(lines) - 2} sentences")


if __name__ == "__main__":
    main()
