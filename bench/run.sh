#!/bin/sh
# ember benchmarks: target slowdown and profiler CPU per sample, vs perf.
#   sh bench/run.sh BUILD_DIR [bench.py options]     (make bench: BUILD_DIR=build)
# Prints markdown tables and verdicts; see bench/RESULTS.md for the last run.
set -eu
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
here=$(cd "$here" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
if [ -x /usr/bin/python3 ]; then
	py=/usr/bin/python3
elif command -v python3 >/dev/null 2>&1; then
	py=$(command -v python3)
	echo "bench: WARNING: no /usr/bin/python3, running with $py" >&2
else
	echo "bench: no python3 found; the bench needs Python 3 (stdlib only)" >&2
	exit 2
fi
if ! command -v gcc >/dev/null 2>&1 && [ -z "${CC:-}" ]; then
	echo "bench: no gcc (or \$CC) to compile the bench targets" >&2
	exit 2
fi
exec "$py" "$here/bench.py" "$build" "$@"
