#!/usr/bin/python3
"""Writes the make fragment the Embedded Swift build reads (Makefile, `make module helper`).

Package.swift is the one statement of the targets and their dependencies; this reads it as
SwiftPM resolved it (`swift package describe --type json`, on standard input) and writes, for
every target the named roots reach:

    NAME.module   a Swift target's module name
    NAME.sources  its sources, as SwiftPM compiles them (excludes applied)
    NAME.swift    the Swift targets it depends on, directly or not, dependencies first
    NAME.c        the C targets it depends on, directly or not
    NAME.include  a C target's header directory (its module map's)
    NAME.headers  the files in it

and into SIGNATURES/NAME what of that concerns a target and those it depends on, rewritten only
when it changed: a target's objects depend on it, so an edit that changes no target rebuilds
nothing, and one that does rebuilds what it concerns.

Usage: swift package describe --type json | embedded-graph.py SIGNATURES ROOT...
"""

import json
import os
import sys


def fail(message):
    sys.exit("embedded-graph: " + message)


def main(signatures, roots):
    package = json.load(sys.stdin)
    targets = {target["name"]: target for target in package["targets"]}
    order = []  # Swift and C targets, each after everything it depends on
    state = {}

    def visit(name, path):
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            fail("a dependency cycle: " + " -> ".join(path + [name]))
        target = targets.get(name)
        if target is None:
            fail(f"{path[-1]} depends on {name}, which is no target of this package "
                 "(Embedded Swift builds no other package's products)")
        state[name] = "visiting"
        for dependency in target.get("target_dependencies", []):
            visit(dependency, path + [name])
        state[name] = "done"
        order.append(name)

    for root in roots:
        visit(root, [])

    def closure(name):
        found = set()
        stack = list(targets[name].get("target_dependencies", []))
        while stack:
            dependency = stack.pop()
            if dependency not in found:
                found.add(dependency)
                stack.extend(targets[dependency].get("target_dependencies", []))
        return [other for other in order if other in found]

    def is_swift(name):
        return targets[name]["module_type"] == "SwiftTarget"

    def words(values):
        for value in values:
            if not value or any(c.isspace() or c in "$#%:;=\\" for c in value):
                fail(f"{value!r} cannot be written in a make variable")
        return " ".join(values)

    entries = {}
    for name in order:
        target = targets[name]
        path = target["path"]
        sources = [os.path.join(path, source) for source in target.get("sources", [])]
        if is_swift(name):
            dependencies = closure(name)
            entries[name] = [
                f"{name}.module := {words([target['c99name']])}",
                f"{name}.sources := {words(sources)}",
                f"{name}.swift := {words([d for d in dependencies if is_swift(d)])}",
                f"{name}.c := {words([d for d in dependencies if not is_swift(d)])}",
            ]
        else:
            # A system library's module map is in its directory; a C target's public headers
            # are in include/ (SwiftPM's default, which no target here overrides).
            include = path if target["module_type"] == "SystemLibraryTarget" else os.path.join(path, "include")
            if not os.path.isdir(include):
                fail(f"{name}: no header directory {include}")
            headers = sorted(os.path.join(include, entry) for entry in os.listdir(include)
                             if os.path.isfile(os.path.join(include, entry)))
            entries[name] = [
                f"{name}.sources := {words([s for s in sources if s.endswith('.c')])}",
                f"{name}.include := {words([include])}",
                f"{name}.headers := {words(headers)}",
            ]
    os.makedirs(signatures, exist_ok=True)
    for name in order:
        text = "\n".join(line for other in closure(name) + [name] for line in entries[other]) + "\n"
        path = os.path.join(signatures, name)
        try:
            with open(path) as existing:
                if existing.read() == text:
                    continue
        except FileNotFoundError:
            pass
        with open(path + ".tmp", "w") as signature:
            signature.write(text)
        os.replace(path + ".tmp", path)
    lines = [
        "# Generated from Package.swift by scripts/embedded-graph.py (swift package describe).",
        "# Do not edit: `make` rewrites it when Package.swift or a source directory changes.",
        "EMBEDDED_SWIFT := " + words([name for name in order if is_swift(name)]),
        "EMBEDDED_C := " + words([name for name in order if not is_swift(name)]),
    ]
    sys.stdout.write("\n".join(lines + [line for name in order for line in entries[name]]) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        fail("usage: swift package describe --type json | embedded-graph.py SIGNATURES ROOT...")
    main(sys.argv[1], sys.argv[2:])
