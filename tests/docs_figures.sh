#!/usr/bin/env bash
# docs_figures.sh BUILD - the simulator figures in README.md and docs/*.md
# are what this build prints (scripts/readme-figures.py --check): a table
# that a code change altered fails here until it is regenerated with
# `python3 scripts/readme-figures.py BUILD`.  Skipped (77) without gnuplot,
# whose charts `lms demo` names in its output.
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v gnuplot >/dev/null 2>&1; then
  echo "SKIP: no gnuplot: lms demo's output, one of the figures, names its charts (install gnuplot-nox)"
  exit 77
fi
exec python3 "$root/scripts/readme-figures.py" --check "$1"
