#!/bin/sh
# `make demo`: profile the bundled native image pipeline and write its profile.
set -eu
build=${1:-build}
mkdir -p out
echo "== ember record -- pipeline (2 worker threads, 2 s)"
"$build/ember" record --threads -o out/pipeline.svg -o out/pipeline.ember -o out/pipeline.folded \
	-- "$build/examples/pipeline" 2
echo
echo "Open out/pipeline.svg in a browser (click to zoom, Ctrl-F to search)."
echo "More formats from the same run: $build/ember convert out/pipeline.ember -o out/pipeline.prof"
