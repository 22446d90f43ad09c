#!/bin/sh
# Whether two ember binaries write the same bytes: every profile in CORPUS
# (.ember and .folded files) converted to every format (with and without
# --threads), its report by function, line and module, and ember diff of
# each pair of neighbours in every diff format.  For restructurings that
# must not change any output.
#   scripts/same-outputs.sh OLD_EMBER NEW_EMBER CORPUS_DIR
# Prints one line per differing file and a count; exit 1 when any differs.
set -u
old=$1 new=$2 corpus=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/old" "$work/new"
run() {   # run SIDE NAME ARGS...: the command's outputs land in $work/SIDE
	side=$1 name=$2
	shift 2
	bin=$old
	[ "$side" = new ] && bin=$new
	(cd "$work/$side" && "$bin" "$@" >"$name.stdout" 2>"$name.stderr"; echo $? >"$name.rc")
}
prev=""
files=0
for f in "$corpus"/*.ember "$corpus"/*.folded; do
	[ -f "$f" ] || continue
	b=$(basename "$f")
	for side in old new; do
		for t in "" --threads; do
			run $side "conv-$b$t" convert "$f" $t -o "$b$t.svg" -o "$b$t.folded" -o "$b$t.prof" \
				-o "$b$t.speedscope.json" -o "$b$t.pb.gz" -o "$b$t.trace.json" -o "$b$t.ember"
		done
		for k in function line module; do
			run $side "report-$b-$k" report "$f" --by $k --top 0
		done
		if [ -n "$prev" ]; then
			for k in function line module; do
				run $side "diff-$b-$k" diff "$prev" "$f" --by $k --top 0 -o "diff-$b-$k.svg" \
					-o "diff-$b-$k.csv" -o "diff-$b-$k.md" -o "diff-$b-$k.txt" -o "diff-$b-$k.folded" \
					-o "diff-$b-$k.pb.gz"
			done
			run $side "diffabs-$b" diff "$prev" "$f" --normalize absolute -o "diffabs-$b.csv"
		fi
	done
	prev=$f
done
bad=0
for o in "$work"/old/*; do
	n="$work/new/$(basename "$o")"
	files=$((files + 1))
	if ! cmp -s "$o" "$n"; then
		echo "differs: $(basename "$o")"
		bad=$((bad + 1))
	fi
done
nn=$(ls "$work/new" | wc -l)
[ "$nn" -eq "$files" ] || { echo "new wrote $nn files, old $files"; bad=$((bad + 1)); }
echo "$files files compared, $bad differ"
[ "$bad" -eq 0 ]
