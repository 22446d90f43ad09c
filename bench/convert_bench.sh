#!/bin/sh
# Time `ember convert BIG.folded -o BIG.svg` on a generated 200,000-line,
# ~100 MB folded file (deep Python + native stacks), best of 3, with peak RSS;
# and flamegraph.pl on the same file when it is on PATH.
# With a second build directory (an earlier revision), each round times both,
# one after the other, so their ratio is taken on the same machine state.
# usage: bench/convert_bench.sh BUILD_DIR [REFERENCE_BUILD_DIR]
set -eu
build=${1:-build}
ref=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/gen_folded.py" "$tmp/big.folded" 200000 100
echo "input: $(wc -l < "$tmp/big.folded") lines, $(du -m "$tmp/big.folded" | cut -f1) MB"
for i in 1 2 3; do
	/usr/bin/time -f "ember convert: %e s wall, %U s user, %M KB peak RSS" \
		"$build/ember" convert -q "$tmp/big.folded" -o "$tmp/big.svg"
	if [ -n "$ref" ]; then
		/usr/bin/time -f "reference convert: %e s wall, %U s user, %M KB peak RSS" \
			"$ref/ember" convert -q "$tmp/big.folded" -o "$tmp/ref.svg"
	fi
done
[ -z "$ref" ] || { cmp -s "$tmp/big.svg" "$tmp/ref.svg" && echo "SVG identical to the reference build's" ||
	echo "SVG DIFFERS from the reference build's"; }
echo "output: $(du -k "$tmp/big.svg" | cut -f1) KB SVG"
if command -v flamegraph.pl >/dev/null 2>&1; then
	/usr/bin/time -f "flamegraph.pl: %e s wall, %M KB peak RSS" flamegraph.pl "$tmp/big.folded" > "$tmp/fg.svg"
else
	echo "flamegraph.pl not on PATH: skipped (it took ~56 s on such a file, 242 s on a 361 MB one)"
fi
