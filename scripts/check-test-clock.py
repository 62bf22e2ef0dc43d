#!/usr/bin/env python3
"""Fails when a test that runs the daemon, the engine or the store against the real clock holds a
literal epoch time (10-digit seconds or 13-digit milliseconds between 2000 and 2100).

Such a test passes until the calendar passes its fixture: the unit's retention, offer windows and
command expiry compare stored times with the clock, so a fixture dated last week is purged. Times
come from `TestClock` (Tests/TestHarness) at the test's start instead.

Exempt by path: golden files and the suites and files that are pure (they hand the code a pinned
"now" and never let it read the clock). Usage: scripts/check-test-clock.py [repository root]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)

SCANNED = ["Tests", "bench/terminal-latency"]
EXEMPT = {
    # Frozen formats written by earlier releases: their times are what those releases wrote.
    "Tests/Fixtures": "golden files",
    # Pure suites: every time is an argument; nothing in them reads a clock.
    "Tests/UnitCoreTests": "pure",
    "Tests/UnitConfigTests": "pure",
    "Tests/FleetControlTests": "pure",
    "Tests/DriverKeysTests": "pure",
    "Tests/DriverDisplayTests": "pure",
    "Tests/DispatchCoreTests": "pure",
    "Tests/FuzzTests": "pure",
    "Tests/SystemServiceTests/HumanReadableTests.swift": "pure formatting of given times",
    # Reads the golden stores with a pinned now (their rows' ages are frozen with them).
    "Tests/LocalCacheTests/StoreGoldenTests.swift": "golden store reader, pinned now",
    # Parses gpsd's recorded JSON: the times are the recording's, judged against a pinned now.
    "Tests/GPSReaderTests/GPSDConnectionTests.swift": "recorded gpsd reports, pinned now",
}
SOURCE_SUFFIXES = {".swift", ".py", ".sh"}

NUMBER = re.compile(r"(?<![\w.])\d[\d_]*\d(?!\w)")
YEAR_2000_S, YEAR_2100_S = 946_684_800, 4_102_444_800


def is_epoch(token: str) -> bool:
    digits = token.replace("_", "")
    value = int(digits)
    if len(digits) == 10:
        return YEAR_2000_S <= value <= YEAR_2100_S
    if len(digits) == 13:
        return YEAR_2000_S * 1000 <= value <= YEAR_2100_S * 1000
    return False


def exempt(relative: str) -> bool:
    return any(relative == path or relative.startswith(path + "/") for path in EXEMPT)


def main() -> int:
    findings = []
    scanned = 0
    for top in SCANNED:
        for path in sorted((root / top).rglob("*")):
            relative = path.relative_to(root).as_posix()
            if not path.is_file() or path.suffix not in SOURCE_SUFFIXES or exempt(relative):
                continue
            scanned += 1
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                for match in NUMBER.finditer(line):
                    if is_epoch(match.group()):
                        findings.append(f"{relative}:{number}: literal epoch time {match.group()}")
    for finding in findings:
        print(finding)
    if findings:
        print(f"test clock: {len(findings)} literal epoch time(s) in tests that run against the real clock; "
              "take times from TestClock (Tests/TestHarness/TestClock.swift) at the test's start")
        return 1
    print(f"test clock: {scanned} test files hold no literal epoch time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
