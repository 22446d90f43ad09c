#!/bin/sh
# Long fuzzing runs (`make fuzz`): each harness of BUILD (a build configured
# with EMBER_FUZZ) for SECONDS, one after the other, one process each, at
# low priority.  FUZZ_TARGETS picks harnesses (default: every one with a
# seed directory), FUZZ_FLAGS adds libFuzzer options (e.g. "-fork=1
# -ignore_crashes=1" to go on past a crash).  Inputs that reach new code
# are kept in BUILD/tests/fuzz/corpus-work/NAME (the next run starts from
# them), crashes go to BUILD/tests/fuzz/crashes/NAME, the output to
# BUILD/tests/fuzz/NAME.log.  Exit status 1 when any harness crashed.
#
#   tests/fuzz/run.sh BUILD SECONDS
set -u
build=${1:?usage: run.sh BUILD SECONDS}
seconds=${2:?usage: run.sh BUILD SECONDS}
src=$(cd "$(dirname "$0")" && pwd)
dir=$build/tests/fuzz
targets=${FUZZ_TARGETS:-$(ls "$src/corpus")}
status=0
for name in $targets; do
	bin=$dir/fuzz_$name
	if [ ! -x "$bin" ]; then
		echo "fuzz.$name: no harness $bin (build the ember_fuzzers target)" >&2
		status=1
		continue
	fi
	work=$dir/corpus-work/$name
	crashes=$dir/crashes/$name
	log=$dir/$name.log
	mkdir -p "$work" "$crashes"
	dict=
	[ -f "$src/dict/$name.dict" ] && dict=-dict=$src/dict/$name.dict
	start=$(date +%s)
	# shellcheck disable=SC2086
	nice -n 10 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		$dict ${FUZZ_FLAGS:-} -artifact_prefix="$crashes/" "$work" "$src/corpus/$name" >"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	# (-fork prints no final stats: its last progress line counts them)
	[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9][0-9]*\).*cov:.*/\1/p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
	corpus=$(ls "$work" | wc -l)
	found=$(ls "$crashes" | wc -l)
	echo "fuzz.$name: ${took} s, ${execs:-?} executions, $cov, $corpus inputs kept, $found crash files (log: $log)"
	if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
		status=1
	fi
done
exit $status
