#!/usr/bin/env python3
"""Regenerates the simulator figures of the README and docs/*.md from the
build.

Every fenced block in README.md or docs/*.md that follows a line

    <!-- figures: lms ARGS -->

is replaced by what `BUILD/bin/lms ARGS` prints (stdout and stderr, less
`lms sim`'s progress lines, which come only when a run is slow), so a
table in the documentation is what the commit it lands in prints.  Usage:

    scripts/readme-figures.py [--check] [BUILD]     (BUILD: build)

--check changes nothing and exits 1 if a block differs from the build.
"""
import os
import re
import shlex
import subprocess
import sys

MARK = "<!-- figures: lms "
# `lms sim`'s progress, printed once a run has taken two seconds: how
# many appear depends on the machine's speed, not on the figures.
PROGRESS = re.compile(r"^lms sim: run \d+ of \d+: ")


def run(lms, args, cwd):
    p = subprocess.run([lms] + shlex.split(args), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"readme-figures: lms {args} exited {p.returncode}:\n"
                 f"{p.stdout}")
    return [l for l in p.stdout.rstrip("\n").split("\n")
            if not PROGRESS.match(l)]


def regenerate(lms, build, path, name):
    """The file's lines with every marked block as the build prints it, the
    markers' arguments whose block changed, and the count of blocks."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, changed, blocks = [], 0, [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not line.startswith(MARK) or not line.endswith("-->"):
            continue
        args = line[len(MARK):-3].strip()
        if i >= len(lines) or not lines[i].startswith("```"):
            sys.exit(f"readme-figures: {name}:{i}: no ``` block after "
                     f"the marker")
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            sys.exit(f"readme-figures: {name}:{i + 1}: block not closed")
        fresh = run(lms, args, cwd=build)
        if fresh != lines[i + 1:end]:
            changed.append(args)
        out.append(lines[i])
        out.extend(fresh)
        out.append(lines[end])
        i = end + 1
        blocks += 1
    return out, changed, blocks


def main():
    argv = sys.argv[1:]
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(argv[0] if argv else os.path.join(root, "build"))
    lms = os.path.join(build, "bin", "lms")
    if not os.access(lms, os.X_OK):
        sys.exit(f"readme-figures: no {lms}; build first (make build)")
    docs = os.path.join(root, "docs")
    names = ["README.md"] + sorted(
        "docs/" + f for f in os.listdir(docs) if f.endswith(".md"))
    total, ndiff = 0, 0
    for name in names:
        path = os.path.join(root, name)
        out, changed, blocks = regenerate(lms, build, path, name)
        total += blocks
        ndiff += len(changed)
        for a in changed:
            print(f"{name} differs from the build: lms {a}")
        if changed and not check:
            open(path, "w", encoding="utf-8").write("\n".join(out))
    if check:
        print(f"readme-figures: {total} blocks, {ndiff} differ")
        sys.exit(1 if ndiff else 0)
    print(f"readme-figures: {total} blocks, {ndiff} regenerated")


if __name__ == "__main__":
    main()
