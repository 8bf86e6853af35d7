#!/usr/bin/env bash
# Runs every fuzz target of nodelet's module (each func FuzzX(f *testing.F)
# in a _test.go file outside test/e2e) for a bounded time, one after the
# other, each with one worker (-parallel 1) so that it leaves the machine
# to others.
#
#   hack/fuzz.sh                      every target, FUZZTIME (10s) each
#   FUZZTIME=5m hack/fuzz.sh          longer
#   hack/fuzz.sh FuzzReadLogs ...     only the targets named
#   FUZZTIME=1x hack/fuzz.sh          keep what the fuzz cache holds,
#                                     hardly fuzzing
#   FUZZ_KEEP_CORPUS=false hack/fuzz.sh   fuzz, leaving testdata alone
#                                     (a test run's, not worth a commit)
#
# What is kept where:
#   Go's fuzz cache, $(go env GOCACHE)/fuzz/<import path>/FuzzX/ (outside
#     the clone: hack/lib.sh), holds every input that gave new coverage,
#     so that each run on this machine goes on from the last. A fresh
#     machine (CI) starts with it empty.
#   The package's testdata/fuzz/FuzzX/ is the committed corpus: every
#     plain `go test` replays it, and fuzzing starts from it. After a
#     target passes, the script copies the cache's inputs for it there,
#     within the caps below, and replays the target on them: if that
#     fails, the copies are taken out again and the run fails, so no
#     input that fails go test is committed unnoticed.
#   A target that finds a crash or a broken property fails the run, and
#     go test writes that input under testdata/fuzz/FuzzX/ itself; nothing
#     else is copied for that target, and the input is to be committed
#     with the fix.
#
# To grow the committed corpus: `make fuzz FUZZTIME=5m` (or hack/fuzz.sh
# with the targets you changed), check that `go test` passes, and commit
# the new files under */testdata/fuzz/.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit

FUZZTIME=${FUZZTIME:-10s}
FUZZ_KEEP_CORPUS=${FUZZ_KEEP_CORPUS:-true}

# The committed corpus is replayed by every unit run and shows in every
# diff, and it only has to give a fresh machine a head start: the fuzz
# cache keeps everything for the machine that found it. So a target keeps
# at most CORPUS_MAX_FILES inputs in CORPUS_MAX_BYTES (19 targets: at most
# about 1.2 MiB), smallest first: every cached input reached new coverage,
# and small ones cost the least to read and replay. Inputs are mostly
# under 200 bytes, and a 20s run finds 4 to 150 a target, so the count
# binds first and leaves longer runs room to add. An input over
# CORPUS_MAX_FILE_BYTES would take an eighth of its target's share for
# what is seldom more than one new branch, so it stays in the cache only.
# A full folder takes nothing more: to renew it, delete its files and run
# its target again.
CORPUS_MAX_FILES=256
CORPUS_MAX_BYTES=$((64 << 10))
CORPUS_MAX_FILE_BYTES=$((8 << 10))

# targets prints "package-dir target" for every fuzz target.
targets() {
	grep -rEo --include='*_test.go' --exclude-dir=.cache --exclude-dir=e2e \
		'^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . |
		sed -E 's|^\./(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*|\1 \2|' |
		sort
}

# spurious_deadline tells whether a failed run's output (file $1) is only
# the fuzz coordinator's deadline race of Go before 1.27: the target
# failed with "context deadline exceeded" and no input was written.
spurious_deadline() {
	grep -q '^    context deadline exceeded$' "$1" && ! grep -q 'Failing input written' "$1"
}

# keep_corpus copies the fuzz cache's inputs for target $2 of package
# directory $1 into its testdata/fuzz/$2/, within the caps above and
# skipping any whose content is there already, then replays the target
# with plain go test. Go names each input by the hash of its content, and
# the copies keep those names, so that running it again changes nothing.
# The cache may hold inputs that the fuzzer skips but plain go test
# rejects (written before the target's arguments changed: Go ignores
# malformed cache files without a word): if the replay fails, every copy
# of this run is removed again and keep_corpus fails, naming the culprits.
keep_corpus() {
	local dir=$1 target=$2 cache dest file size sum count=0 total=0 added=() named=()
	local -A have=()
	cache="$(go env GOCACHE)/fuzz/$(go list "./$dir")/$target" || return 1
	dest="$dir/testdata/fuzz/$target"
	[[ -d $cache ]] || return 0
	if [[ -d $dest ]]; then
		for file in "$dest"/*; do
			[[ -f $file ]] || continue
			sum=$(sha256sum <"$file")
			have[${sum%% *}]=1
			count=$((count + 1))
			total=$((total + $(stat -c %s "$file")))
		done
	fi
	while read -r size file; do
		((count < CORPUS_MAX_FILES && size <= CORPUS_MAX_FILE_BYTES && total + size <= CORPUS_MAX_BYTES)) || break
		sum=$(sha256sum <"$file")
		[[ -z ${have[${sum%% *}]:-} ]] || continue
		{ mkdir -p "$dest" && cp "$file" "$dest/"; } || return 1
		added+=("$dest/$(basename "$file")")
		have[${sum%% *}]=1
		count=$((count + 1))
		total=$((total + size))
	done < <(find "$cache" -maxdepth 1 -type f -printf '%s %p\n' | sort -k1,1n -k2,2)
	if ((${#added[@]} == 0)); then
		log "$target: no new input to keep ($count in ./$dest, $total bytes)"
		return 0
	fi
	if ! nice -n 10 go test -run "^$target\$" -count=1 "./$dir" >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "${added[@]}"
		for file in "${added[@]}"; do
			grep -qF "$(basename "$file")" "$out" && named+=("$cache/$(basename "$file")")
		done
		log "$target: plain go test failed on inputs from the fuzz cache (output above), so none was kept: ${named[*]:-no input named}; delete one that was written for the target's former arguments, move a finding to ./$dest and fix it"
		return 1
	fi
	log "$target: kept ${#added[@]} new inputs ($count in ./$dest, $total bytes)"
}

# fuzz fuzzes target $2 of package directory $1 for FUZZTIME.
fuzz() {
	local dir=$1 target=$2
	log "fuzzing $target in ./$dir for $FUZZTIME"
	nice -n 10 go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" -parallel 1 "./$dir" 2>&1 | tee "$out" && return 0
	spurious_deadline "$out" || return 1
	log "$target: 'context deadline exceeded' at the end of -fuzztime without a failing input is Go's own race (go.dev/issue/75804), not a finding"
}

main() {
	local wanted=("$@") dir target failed=() unkept=() ran=0 started
	# Global: the EXIT trap runs after main returns.
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	while read -r dir target; do
		if ((${#wanted[@]} > 0)) && [[ " ${wanted[*]} " != *" $target "* ]]; then
			continue
		fi
		started=$SECONDS
		if ! fuzz "$dir" "$target"; then
			failed+=("$target (./$dir)")
		elif $FUZZ_KEEP_CORPUS && ! keep_corpus "$dir" "$target"; then
			unkept+=("$target (./$dir)")
		fi
		log "$target took $((SECONDS - started))s"
		ran=$((ran + 1))
	done < <(targets)
	((ran > 0)) || die "no fuzz target matches ${wanted[*]}"
	if ((${#failed[@]} > 0)); then
		log "failed: ${failed[*]}; the inputs are under each package's testdata/fuzz/"
	fi
	if ((${#unkept[@]} > 0)); then
		log "fuzz cache inputs that fail plain go test, not kept: ${unkept[*]}"
	fi
	((${#failed[@]} + ${#unkept[@]} == 0)) || return 1
	log "$ran fuzz targets ran for $FUZZTIME each"
}

main "$@"
