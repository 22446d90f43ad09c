#!/bin/sh
# `make demo`: profile the bundled native image pipeline and write its profile.
set -eu
build=${1:-build}
mkdir -p out
echo "== ember record -- pipeline (2 worker threads, 2 s)"
"$build/ember" record --threads -o out/pipeline.folded -- "$build/examples/pipeline" 2
echo
echo "Profile written to out/pipeline.folded (folded stacks: flamegraph.pl, speedscope, inferno read it)."
