#!/usr/bin/env bash
# Runs every fuzz target of nodelet's module (each func FuzzX(f *testing.F)
# in a _test.go file outside test/e2e) for a bounded time, one after the
# other, each with one worker (-parallel 1) so that it leaves the machine
# to others. A target that finds a crash or a broken property fails the
# run, and go test writes the input under the package's
# testdata/fuzz/FuzzX/, where it is to be committed with the fix: from
# then on the ordinary unit tests run it.
#
#   hack/fuzz.sh                      every target, FUZZTIME (10s) each
#   FUZZTIME=5m hack/fuzz.sh          longer
#   hack/fuzz.sh FuzzReadLogs ...     only the targets named
#
# The inputs a target found interesting are kept in Go's fuzz cache (under
# .cache/go-build/fuzz), so that each run goes on from the last.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit

FUZZTIME=${FUZZTIME:-10s}

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

main() {
	local wanted=("$@") dir target failed=() ran=0 started
	# Global: the EXIT trap runs after main returns.
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	while read -r dir target; do
		if ((${#wanted[@]} > 0)) && [[ " ${wanted[*]} " != *" $target "* ]]; then
			continue
		fi
		started=$SECONDS
		log "fuzzing $target in ./$dir for $FUZZTIME"
		if ! nice -n 10 go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" -parallel 1 "./$dir" 2>&1 | tee "$out"; then
			if spurious_deadline "$out"; then
				log "$target: 'context deadline exceeded' at the end of -fuzztime without a failing input is Go's own race (go.dev/issue/75804), not a finding"
			else
				failed+=("$target (./$dir)")
			fi
		fi
		log "$target took $((SECONDS - started))s"
		ran=$((ran + 1))
	done < <(targets)
	((ran > 0)) || die "no fuzz target matches ${wanted[*]}"
	if ((${#failed[@]} > 0)); then
		log "failed: ${failed[*]}; the inputs are under each package's testdata/fuzz/"
		return 1
	fi
	log "$ran fuzz targets ran for $FUZZTIME each"
}

main "$@"
