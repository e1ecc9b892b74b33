#!/usr/bin/env python3
"""Regenerates the README's simulator figures from the build.

Every fenced block in README.md that follows a line

    <!-- figures: lms ARGS -->

is replaced by what `BUILD/bin/lms ARGS` prints (stdout and stderr), so a
table in the README is what the commit it lands in prints.  Usage:

    scripts/readme-figures.py [--check] [BUILD]     (BUILD: build)

--check changes nothing and exits 1 if a block differs from the build.
"""
import os
import shlex
import subprocess
import sys

MARK = "<!-- figures: lms "


def run(lms, args, cwd):
    p = subprocess.run([lms] + shlex.split(args), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"readme-figures: lms {args} exited {p.returncode}:\n"
                 f"{p.stdout}")
    return p.stdout.rstrip("\n").split("\n")


def main():
    argv = sys.argv[1:]
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(argv[0] if argv else os.path.join(root, "build"))
    lms = os.path.join(build, "bin", "lms")
    if not os.access(lms, os.X_OK):
        sys.exit(f"readme-figures: no {lms}; build first (make build)")
    path = os.path.join(root, "README.md")
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
            sys.exit(f"readme-figures: README.md:{i}: no ``` block after "
                     f"the marker")
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            sys.exit(f"readme-figures: README.md:{i + 1}: block not closed")
        fresh = run(lms, args, cwd=build)
        if fresh != lines[i + 1:end]:
            changed.append(args)
        out.append(lines[i])
        out.extend(fresh)
        out.append(lines[end])
        i = end + 1
        blocks += 1
    if check:
        for a in changed:
            print(f"README.md differs from the build: lms {a}")
        print(f"readme-figures: {blocks} blocks, {len(changed)} differ")
        sys.exit(1 if changed else 0)
    if changed:
        open(path, "w", encoding="utf-8").write("\n".join(out))
    print(f"readme-figures: {blocks} blocks, {len(changed)} regenerated")


if __name__ == "__main__":
    main()
