#!/usr/bin/env python3
"""Package.swift declares every module a target imports, and no module of ours a target does not.

A module reached only through another target's dependencies builds today and breaks when that
target drops it; a declared module nobody imports links code for nothing. Run by `make test`.
"""
import json
import os
import re
import subprocess
import sys

# The toolchain's and the platform's own modules: never declared in Package.swift.
TOOLCHAIN = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "CoreFoundation", "Dispatch",
    "Synchronization", "RegexBuilder", "_Concurrency", "Testing", "XCTest", "Glibc", "Musl", "Darwin",
}
IMPORT = re.compile(
    r"^\s*(?:@testable\s+|@_implementationOnly\s+|(?:public|package|internal)\s+)?import\s+"
    r"(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_][A-Za-z_0-9]*)")


def imports_of(directory):
    """Modules the Swift files under `directory` import, skipping multi-line string literals."""
    found = set()
    for root, _, files in os.walk(directory):
        for name in files:
            if not name.endswith(".swift"):
                continue
            in_string = False
            with open(os.path.join(root, name), encoding="utf-8") as source:
                for line in source:
                    if not in_string and (match := IMPORT.match(line)):
                        found.add(match.group(1))
                    if line.count('"""') % 2 == 1:
                        in_string = not in_string
    return found


def main():
    package = json.loads(subprocess.run(
        ["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout)
    ours = {target["name"] for target in package["targets"]}
    problems = []
    for target in package["targets"]:
        name = target["name"]
        directory = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + name
        if target["type"] == "system":
            continue
        declared = {value[0] for dependency in target["dependencies"] for value in dependency.values()}
        imported = imports_of(directory)
        for module in sorted(imported - declared - TOOLCHAIN - {name}):
            problems.append(f"{name} imports {module}, which its dependencies in Package.swift do not name")
        for module in sorted((declared & ours) - imported):
            problems.append(f"{name} depends on {module} in Package.swift and never imports it")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
