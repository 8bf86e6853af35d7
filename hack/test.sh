#!/usr/bin/env bash
# Runs nodelet's tests in phases, each under a time limit, and ends, however
# the run ends (a failure, a phase out of time, Ctrl-C, a SIGTERM), with the
# phase table, the slowest tests, every skip with its reason, and every
# failing, flaky or unfinished test with what it said.
#
#   hack/test.sh              the gate: what `make test` and CI run
#   hack/test.sh full         every tier (`make test-full`)
#   hack/test.sh PHASE...     only those phases, in the gate's tier unless
#                             TIER=full (`hack/test.sh unit`, `TIER=full
#                             hack/test.sh e2e-runtime`)
#
# The two tiers. Every test is in exactly one, written beside it: an e2e
# test is in the full tier when its file starts with `//go:build full`
# (test/e2e/doc.go says which and why), everything else is in the gate.
# The full tier is the gate plus:
#   fuzz         every fuzz target for FUZZTIME (20s; hack/fuzz.sh)
#   e2e-*        built with -tags full, so every test of each mode runs; the
#                runtime mode with the slow lane beside it (the tests that
#                wait minutes on a clock, on a stack of their own)
#   chaos        CHAOS_FULL_DURATION (10m) with a seed taken from the commit,
#                so that each commit plays another scenario
#
# The phases, in order, with the limits PHASE_LIMITS gives (seconds; a phase
# past its limit is stopped, reported TIMEOUT, its logs kept, and the run
# goes on with the next phase):
#   setup          packages, tools, images, the runtimes and kubelet the e2e
#                  modes run, the VM tests' guest image (hack/install-deps.sh,
#                  build-tools.sh, build-images.sh, build-runtime.sh, vm.sh image)
#   lint           gofmt, go vet, golangci-lint (.golangci.yml), the
#                  file-length budget, no tracked file over 1 MiB,
#                  hack/lint's proof that the pure-code rules catch a
#                  violation, and the generated docs pages as committed
#                  (`make docs` leaves the tree unchanged)
#   unit           go test -race on every package but the e2e and chaos
#                  suites and hack/lint (envtest's binaries from
#                  .cache/bin), replaying each fuzz target's committed
#                  corpus; the benchmark harness's tests
#   fuzz           (full tier only)
#   e2e-runtime    test/e2e on a stack whose runtime runs CNI: every test
#                  but the other modes'
#   e2e-agent      the TestNetwork cases on a stack in the agent network mode
#   e2e-userns     the TestPodUserNamespace cases on containerd 2 and runc 1.5
#   e2e-companion  the TestCompanion cases: the chart on a real kubelet's node
#                  (full tier: without NodeRestriction on the API server)
#   e2e-systemd    the cgroup cases on a stack with the systemd cgroup driver
#   vm             test/vm: nodelet installed by deploy/host/INSTALL.md from
#                  the release tarball in a guest with systemd as PID 1 and
#                  cgroup v2 (hack/vm.sh), joined to a control plane on
#                  this machine (profile vm); the gate runs its smoke test
#   chaos          test/chaos: pods churned while every kind of fault is
#                  injected, then invariants and leaks checked
#
# Each go test runs with -json: its output is shown as go test -v shows it
# and kept in .cache/test-output/PHASE.json, from which hack/testreport
# prints the report. When at most RETRY_MAX top-level tests of a run fail
# (and the run failed in no other way), they run once more; one that passes
# then is reported FLAKY by name, and its phase passes: a flake is a bug to
# find, shown, not hidden, and not a reason to stop every other change.
#
# E2E_RUN narrows each e2e phase to the tests it matches (go test -run);
# `make e2e RUN=TestX` runs them against an e2e stack left up, see
# hack/e2e.sh.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit

# Each run's go test -json files; a run on another profile (E2E_PROFILE,
# beside this one) keeps its own.
if [[ ${E2E_PROFILE:-e2e} == e2e ]]; then
	TEST_OUTPUT_DIR=$CACHE_DIR/test-output
else
	TEST_OUTPUT_DIR=$CACHE_DIR/test-output-$E2E_PROFILE
fi
TESTREPORT=$CACHE_DIR/bin/testreport
TIER=${TIER:-gate}
[[ $TIER == gate || $TIER == full ]] || die "TIER must be gate or full, not '$TIER'"
# The build tags of the e2e tier (empty in the gate).
TIER_TAGS=
[[ $TIER == gate ]] || TIER_TAGS=full

GATE_PHASES=(setup lint unit e2e-runtime e2e-agent e2e-userns e2e-companion e2e-systemd vm chaos)
FULL_PHASES=(setup lint unit fuzz e2e-runtime e2e-agent e2e-userns e2e-companion e2e-systemd vm chaos)

# Each phase's limit in seconds, for the gate and, after the slash, the
# full tier: what a fresh 2-core machine needs with room for a slow day
# (docs/testing.md has the measured times). A phase is stopped at its limit
# less PHASE_GRACE, which it has to clean up in (stop its stacks) before
# what is left of it is killed, so no phase outlives its limit. The gate's
# add up to 85 minutes, setup on a fresh machine included: CI stops a run
# at 90. A fresh clone on a fresh machine took 36 minutes in all.
declare -A PHASE_LIMITS=(
	[setup]=1080/1080
	[lint]=780/780
	[unit]=600/600
	[fuzz]=0/900
	[e2e-runtime]=780/1500
	[e2e-agent]=240/300
	[e2e-userns]=180/240
	[e2e-companion]=420/480
	[e2e-systemd]=180/240
	[vm]=480/3600
)
# The chaos phase's limit is its run's CHAOS_DURATION and this much more:
# the stack up and down, nodelet built, the pods left to settle, the
# leaks looked for.
CHAOS_OVERHEAD=240
PHASE_GRACE=60

phase_limit() {
	if [[ $1 == chaos ]]; then
		echo $(($(duration_seconds "$CHAOS_DURATION") + CHAOS_OVERHEAD))
		return
	fi
	local limits=${PHASE_LIMITS[$1]}
	if [[ $TIER == gate ]]; then echo "${limits%/*}"; else echo "${limits#*/}"; fi
}

# duration_seconds D prints a Go duration's whole seconds (1h30m, 2m, 90s).
duration_seconds() {
	local rest=$1 total=0 n unit
	while [[ $rest =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} rest=${BASH_REMATCH[3]}
		case $unit in
		h) total=$((total + n * 3600)) ;;
		m) total=$((total + n * 60)) ;;
		s) total=$((total + n)) ;;
		esac
	done
	[[ -z $rest ]] || die "cannot read the duration '$1' (want, say, 2m or 1h30m)"
	echo "$total"
}

# --- go test, logged ---------------------------------------------------------

# At most this many failed top-level tests of one run are run again.
RETRY_MAX=${RETRY_MAX:-3}

# go_timeout prints go test's -timeout: what is left of the phase's time
# but TEST_CLEANUP for taking its stacks down, so that a hung test ends
# in go test's own panic, which names the tests still running, before
# the phase is stopped (PHASE_GRACE before its limit).
TEST_CLEANUP=30
# Outside a phase (a script sourcing this one), no deadline but a day.
PHASE_DEADLINE=${PHASE_DEADLINE:-$((EPOCHSECONDS + 86400))}
go_timeout() {
	local left=$((PHASE_DEADLINE - EPOCHSECONDS - TEST_CLEANUP))
	((left > 10)) || left=10
	echo "-timeout=${left}s"
}

# go_test_json RUN ARGS... runs go test -json ARGS, shown as -v shows it,
# its events appended to RUN's file.
go_test_json() {
	local name=$1
	shift
	mkdir -p "$TEST_OUTPUT_DIR"
	go test -json "$(go_timeout)" "$@" 2>&1 | tee -a "$TEST_OUTPUT_DIR/$name.json" | "$TESTREPORT" follow
}

# go_test_retried RUN ARGS... runs go_test_json RUN ARGS and, when it failed
# in at most RETRY_MAX top-level tests and in no other way, runs those once
# more (ARGS with their -run pattern, per package) into RUN.retry. ARGS
# must end with the packages; a -run among them is overridden (go test's
# flags take the last value given).
go_test_retried() {
	local name=$1
	shift
	go_test_json "$name" "$@" && return 0
	local patterns
	patterns=$("$TESTREPORT" failed -max "$RETRY_MAX" "$TEST_OUTPUT_DIR/$name.json") || return 1
	[[ -n $patterns ]] || return 1
	local flags=() arg pkg pattern rc=0
	for arg in "$@"; do
		# The flags, without the packages (which start with ./ or the
		# module's path) and without a -run of their own.
		[[ $arg == ./* || $arg == github.com/* ]] && break
		flags+=("$arg")
	done
	log "--- running again the failed tests of $name: $(tr '\n' ' ' <<<"$patterns")"
	while read -r pkg pattern; do
		go_test_json "$name.retry" "${flags[@]}" -run "$pattern" "$pkg" || rc=1
	done <<<"$patterns"
	return $rc
}

# --- the phases ---------------------------------------------------------------

phase_setup() {
	"$REPO_ROOT/hack/install-deps.sh" &&
		"$REPO_ROOT/hack/build-tools.sh" &&
		"$REPO_ROOT/hack/build-tools.sh" kubelet &&
		"$REPO_ROOT/hack/build-runtime.sh" &&
		"$REPO_ROOT/hack/build-images.sh" &&
		"$REPO_ROOT/hack/vm.sh" image >/dev/null
}

# check_no_large_files fails on a tracked file over 1 MiB: a built binary
# committed by mistake (`go build .` writes one at the top) makes every later
# change that touches it that size again.
check_no_large_files() {
	local large
	large=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$1 > 1048576 { print "  " $2 " (" $1 " bytes)" }')
	if [[ -n $large ]]; then
		echo "tracked files over 1 MiB (built outputs belong in .gitignore):" >&2
		echo "$large" >&2
		return 1
	fi
}

# check_tiers fails unless the full tier's test files, and only they, are
# named *_full_test.go and built with the full tag: a reader tells a
# test's tier from its file's name.
check_tiers() {
	local file rc=0
	while IFS= read -r file; do
		if [[ $file == *_full_test.go ]]; then
			[[ $(head -n1 "$file") == '//go:build full' ]] || {
				echo "$file: a full-tier test file must start with //go:build full" >&2
				rc=1
			}
		elif grep -q '^//go:build .*\bfull\b' "$file"; then
			echo "$file: only *_full_test.go files are in the full tier" >&2
			rc=1
		fi
	done < <(git ls-files '*.go')
	return $rc
}

# check_docs fails unless `make docs` (hack/docs.sh) leaves docs/ as
# committed: a generated page edited by hand, or not written again after
# what it documents changed (a flag, a benchmark's results), shows as a
# change.
check_docs() {
	local changed
	if ! "$REPO_ROOT/hack/docs.sh"; then
		echo "hack/docs.sh failed: the generated docs pages could not be written" >&2
		return 1
	fi
	changed=$(git -C "$REPO_ROOT" status --porcelain -- docs/)
	if [[ -n $changed ]]; then
		echo "docs/ is not as committed once make docs has run: run make docs and commit docs/ (generated pages are written by their programs, never by hand):" >&2
		echo "$changed" >&2
		return 1
	fi
}

phase_lint() {
	local unformatted rc=0
	unformatted=$(find . -name '*.go' -not -path './.cache/*' -print0 | xargs -0 gofmt -l)
	if [[ -n $unformatted ]]; then
		echo "gofmt would change:" >&2
		echo "$unformatted" >&2
		rc=1
	fi
	# With the e2e build's flags, whose compiled packages it then shares,
	# and the full tier's tag, so that every test file is vetted.
	CGO_ENABLED=0 go vet "$STATIC_GO_FLAGS" -tags full ./... || rc=1
	# And the gate's e2e build, which has none of the full tier's files.
	CGO_ENABLED=0 go vet "$STATIC_GO_FLAGS" ./test/e2e/ || rc=1
	if "$REPO_ROOT/hack/build-tools.sh" golangci-lint; then
		"$BIN_DIR/golangci-lint" run ./... || rc=1
	else
		rc=1
	fi
	# The functions the code calls that have known vulnerabilities,
	# against an offline database; each accepted one listed with why.
	"$REPO_ROOT/hack/govulncheck.sh" || rc=1
	"$REPO_ROOT/hack/check-file-length.sh" || rc=1
	check_no_large_files || rc=1
	check_tiers || rc=1
	check_docs || rc=1
	# The configuration itself: a violation in a pure path is reported.
	go test -count=1 ./hack/lint/ || rc=1
	return $rc
}

# UNIT_PACKAGES narrows the unit phase (`make test-unit PKG=./internal/volume/...`).
UNIT_PACKAGES=${UNIT_PACKAGES:-}

phase_unit() {
	local packages rc=0
	if [[ -n $UNIT_PACKAGES ]]; then
		packages=$UNIT_PACKAGES
	else
		# hack/lint tests the lint configuration: the lint phase runs it.
		packages=$(go list ./... | grep -v -e '/test/e2e$' -e '/test/chaos$' -e '/test/vm$' -e '/hack/lint$') || return 1
	fi
	# The prerequisites the unit tests skip without (root, a loop device,
	# iptables, the CNI plugins) are promised here: missing, they fail.
	# shellcheck disable=SC2086
	NODELET_TEST_REQUIRE_ALL=1 KUBEBUILDER_ASSETS=$BIN_DIR go_test_retried unit -race -count=1 $packages || rc=1
	if [[ -z $UNIT_PACKAGES ]]; then
		# The benchmark harness's own figures and parsing, and the
		# vulnerability database's writer (hack/tools module).
		(cd "$TOOLS_DIR" && go_test_json unit-bench -count=1 ./cmd/bench/ ./cmd/vulndb/) || rc=1
	fi
	return $rc
}

# The full tier fuzzes without keeping what it finds (the tree stays as
# it was); `make fuzz` keeps it, to be committed.
phase_fuzz() {
	FUZZ_KEEP_CORPUS=false FUZZTIME=${FUZZTIME:-20s} "$REPO_ROOT/hack/fuzz.sh"
}

# The stack the e2e phases run on; E2E_PROFILE=e2e-1 (to e2e-9) runs a
# second run beside one already running.
E2E_PROFILE=${E2E_PROFILE:-e2e}
E2E_RUN=${E2E_RUN:-}
E2E_STACK_UP=false
# The flag drops only once the stack is down: a stop cut short by the
# phase's signal is done again by the phase's EXIT trap.
stop_e2e_stack() {
	if $E2E_STACK_UP; then
		"$REPO_ROOT/hack/local-down.sh" "$E2E_PROFILE" && E2E_STACK_UP=false
	fi
}

# The slow lane (full tier): the tests that spend minutes waiting on a
# clock and little else (a projected token is refreshed at 80% of its ten
# minutes) run on a stack of their own, E2E_SLOW_PROFILE, beside the
# runtime mode's run, where they would hold its parallel phase open for
# minutes after every other test is done.
E2E_SLOW_RUN=${E2E_SLOW_RUN-^TestProjectedTokenIsRefreshedBeforeItExpires\$}
E2E_SLOW_PROFILE=${E2E_SLOW_PROFILE:-e2e-8}
SLOW_STACK_UP=false
SLOW_PID=''
# kill_tree PID stops a process and everything it started.
kill_tree() {
	local child
	for child in $(pgrep -P "$1" || true); do
		kill_tree "$child"
	done
	kill "$1" 2>/dev/null || true
}
stop_slow_lane() {
	if [[ -n $SLOW_PID ]]; then
		kill_tree "$SLOW_PID"
		wait "$SLOW_PID" 2>/dev/null || true
		SLOW_PID=''
	fi
	if $SLOW_STACK_UP; then
		"$REPO_ROOT/hack/local-down.sh" "$E2E_SLOW_PROFILE" && SLOW_STACK_UP=false
	fi
}

# Which tests each mode runs. The network cases run twice: with the rest
# of the suite on a stack whose runtime runs CNI, then on a stack in the
# agent network mode (the TestNetworkAgentMode cases are about the agent
# mode alone). The TestPodUserNamespace cases need a runtime that gives
# pods user namespaces, which Debian's containerd 1.6 cannot. The
# TestCompanion cases install the chart on a real kubelet's node, with the
# image built (and kube-proxy, through which pods reach the API server's
# Service). The cgroup cases that read the pods' cgroup files run again
# with the systemd cgroup driver, where those files are the slices systemd
# made, the OOM kill case with them: with the systemd driver a
# container's scope goes the moment its last process dies, before
# containerd reads its OOM event (containerd publishes no TaskOOM for a
# deleted cgroup; its own critest run skips OOMKilled under systemd,
# containerd PR 12714), so only the kernel's log, which nodelet reads,
# tells the OOM kill from another SIGKILL there.
E2E_AGENT_RUN=${E2E_AGENT_RUN:-^TestNetwork}
E2E_USERNS_RUN=^TestPodUserNamespace
E2E_COMPANION_RUN=^TestCompanion
E2E_SYSTEMD_RUN=${E2E_SYSTEMD_RUN:-^(TestPodCgroupsFollowTheQOSClass|TestContainerPastItsMemoryLimitIsOOMKilled|TestQOSTiersAndPodPidsLimit|TestDeletedPodLeavesTheAPIInGraceAndNothingOnTheNode|TestInPlacePodResize)$}
# What the runtime mode's run leaves to the other modes.
E2E_RUNTIME_SKIP="^TestNetworkAgentMode|$E2E_USERNS_RUN|$E2E_COMPANION_RUN"

phase_e2e-runtime() {
	if [[ $TIER == full && -z $E2E_RUN && -n $E2E_SLOW_RUN ]]; then
		e2e_runtime_with_slow_lane
	else
		e2e_on_stack e2e-runtime runtime "$E2E_RUN" "$E2E_RUNTIME_SKIP"
	fi
}

phase_e2e-agent() {
	e2e_on_stack e2e-agent agent "$E2E_AGENT_RUN" ""
}

phase_e2e-userns() {
	RUNTIME=containerd2 e2e_on_stack e2e-userns runtime "$E2E_USERNS_RUN" ""
}

phase_e2e-companion() {
	# No disk of the node's own: the host node's mount namespace would
	# hold a copy of its mount. The gate's API server runs NodeRestriction,
	# the full tier's does not: the chart's fences hold, and nodelet works
	# within them, either way.
	local node_restriction=true
	[[ $TIER == gate ]] || node_restriction=false
	NODE_RESTRICTION=$node_restriction NODE_DISK_SIZE='' E2E_HOST_KUBELET=true e2e_on_stack e2e-companion runtime "$E2E_COMPANION_RUN" ""
}

phase_e2e-systemd() {
	# No disk of the node's own (the node's mount namespace would hold a
	# copy of its mount), no add-ons: the cases need neither.
	NODE_DISK_SIZE='' ADDONS=false CGROUP_DRIVER=systemd e2e_on_stack e2e-systemd runtime "$E2E_SYSTEMD_RUN" ""
}

# e2e_go_test RUN ARGS... runs the e2e suite, built with the tier's tags,
# against the profile's stack (its env file given in NODELET_E2E_ENV).
e2e_go_test() {
	local name=$1
	shift
	CGO_ENABLED=0 go_test_retried "$name" "$STATIC_GO_FLAGS" ${TIER_TAGS:+-tags "$TIER_TAGS"} -count=1 -v "$@" ./test/e2e/
}

# e2e_runtime_with_slow_lane runs the runtime mode's tests but the slow
# lane's, and the slow lane's on its own stack at the same time. nodelet
# and the test binary are built first, once: two builds at once would
# compile everything twice, and one would replace the binary the other
# lane's nodelet is started from.
e2e_runtime_with_slow_lane() {
	local rc=0 slow_rc=0 slow_out=$TEST_OUTPUT_DIR/e2e-slow.out
	log "--- e2e tests matching $E2E_SLOW_RUN on stack $E2E_SLOW_PROFILE, beside the runtime mode's"
	mkdir -p "$TEST_OUTPUT_DIR"
	if [[ -z $NODELET_BIN_GIVEN ]]; then
		log "Building nodelet"
		build_nodelet || return 1
	fi
	CGO_ENABLED=0 go test "$STATIC_GO_FLAGS" -tags "$TIER_TAGS" -c -o "$CACHE_DIR/e2e.test" ./test/e2e/ || return 1
	rm -f "$CACHE_DIR/e2e.test"
	SLOW_STACK_UP=true
	# No add-ons: the slow tests need no DNS, and the stack's CPU is the
	# other lane's.
	ADDONS=false NETWORK_MODE=runtime "$REPO_ROOT/hack/local-up.sh" "$E2E_SLOW_PROFILE" --no-nodelet || rc=$?
	if ((rc == 0)); then
		# Its output goes to a file, printed once it ends, so that it is
		# not woven into the other lane's.
		(
			profile_load "$E2E_SLOW_PROFILE"
			NODELET_E2E_ENV=$ENV_FILE e2e_go_test e2e-slow -run "$E2E_SLOW_RUN"
		) >"$slow_out" 2>&1 &
		SLOW_PID=$!
	fi
	NODELET_BIN_GIVEN=${NODELET_BIN_GIVEN:-true} e2e_on_stack e2e-runtime runtime "" "$E2E_RUNTIME_SKIP|$E2E_SLOW_RUN" || rc=$?
	if [[ -n $SLOW_PID ]]; then
		wait "$SLOW_PID" || slow_rc=$?
		SLOW_PID=''
		log "--- the slow lane's output (stack $E2E_SLOW_PROFILE)"
		cat "$slow_out"
		((slow_rc == 0)) || rc=$slow_rc
	fi
	stop_slow_lane || rc=$?
	return $rc
}

# e2e_on_stack RUN MODE PATTERN SKIP brings the e2e stack up in network
# mode MODE, runs the e2e tests matching PATTERN (all when empty) but not
# SKIP against it as RUN, and stops it.
e2e_on_stack() {
	local name=$1 mode=$2 run=$3 skip=$4 rc=0
	log "--- e2e tests${run:+ matching $run} in the $mode network mode${RUNTIME:+ on $RUNTIME}${CGROUP_DRIVER:+ with the $CGROUP_DRIVER cgroup driver} ($TIER tier)"
	NETWORK_MODE=$mode
	profile_load "$E2E_PROFILE"
	E2E_STACK_UP=true
	NETWORK_MODE=$mode "$REPO_ROOT/hack/local-up.sh" "$E2E_PROFILE" --no-nodelet || rc=$?
	if ((rc == 0)) && [[ -z $NODELET_BIN_GIVEN ]]; then
		log "Building nodelet"
		build_nodelet || rc=$?
	fi
	if ((rc == 0)) && [[ $mode == runtime && -z ${RUNTIME:-} && ${CGROUP_DRIVER:-cgroupfs} == cgroupfs && ${E2E_HOST_KUBELET:-false} == false ]]; then
		# The kustomize and Helm renderings, validated by this API server.
		local started=$SECONDS
		"$REPO_ROOT/hack/check-manifests.sh" "$ADMIN_KUBECONFIG" || rc=$?
		log "manifests checked in $((SECONDS - started))s"
	fi
	local host_env=""
	if ((rc == 0)) && [[ ${E2E_HOST_KUBELET:-false} == true ]]; then
		# The image the chart installs, in the stack's registry, and the
		# host node it is installed on.
		local started=$SECONDS image
		image=$("$REPO_ROOT/hack/build-image.sh" "$E2E_PROFILE") || rc=$?
		log "image built and pushed in $((SECONDS - started))s: $image"
		if ((rc == 0)); then
			host_env=$STATE_DIR/host/env
			"$REPO_ROOT/hack/host-kubelet.sh" "$E2E_PROFILE" up || rc=$?
			printf 'NODELET_IMAGE=%s\n' "${image%@*}" >>"$host_env"
		fi
	fi
	if ((rc == 0)); then
		NODELET_E2E_HOST_ENV=$host_env NODELET_E2E_ENV=$ENV_FILE e2e_go_test "$name" ${run:+-run "$run"} ${skip:+-skip "$skip"} || rc=$?
	fi
	if [[ -n $host_env ]]; then
		"$REPO_ROOT/hack/host-kubelet.sh" "$E2E_PROFILE" down || rc=$?
	fi
	stop_e2e_stack || rc=$?
	return $rc
}

# phase_vm builds the guest image (or finds it cached) and the release
# tarball, brings up profile vm's control plane without a node (the
# guests are the nodes), and runs test/vm against it; in the full tier,
# with nodelet's image in the stack's registry for the chart, and kubeadm,
# crictl, the kubelet and kubeadm's images for TestKubeadm's cluster.
phase_vm() {
	local rc=0 release
	"$REPO_ROOT/hack/vm.sh" image >/dev/null || return 1
	release=$("$REPO_ROOT/hack/release.sh") || return 1
	E2E_PROFILE=vm
	profile_load vm
	E2E_STACK_UP=true
	"$REPO_ROOT/hack/local-up.sh" vm --no-nodelet || rc=$?
	local image=''
	if ((rc == 0)) && [[ $TIER == full ]]; then
		# The image the chart installs on the kubelet's guest.
		image=$("$REPO_ROOT/hack/build-image.sh" vm) || rc=$?
		"$REPO_ROOT/hack/build-tools.sh" kubeadm crictl kubelet kubectl || rc=$?
		"$REPO_ROOT/hack/build-images.sh" --kubeadm vm || rc=$?
	fi
	if ((rc == 0)); then
		CGO_ENABLED=0 NODELET_VM_ENV=$ENV_FILE NODELET_VM_RELEASE=$release NODELET_VM_IMAGE=${image%@*} \
			go_test_retried vm "$STATIC_GO_FLAGS" ${TIER_TAGS:+-tags "$TIER_TAGS"} -count=1 -v ./test/vm/ || rc=$?
	fi
	# A guest a test could not power off (its qemu killed).
	"$REPO_ROOT/hack/vm.sh" down vm || rc=$?
	stop_e2e_stack || rc=$?
	return $rc
}

# The chaos run: how long it churns pods and injects faults, with which
# seed, and more of its flags (`go test ./test/chaos -args -h`). The gate
# plays one fixed scenario; the full tier a longer one that each commit
# draws anew; `make chaos` a 40-minute one.
CHAOS_FULL_DURATION=${CHAOS_FULL_DURATION:-10m}
if [[ $TIER == full ]]; then
	CHAOS_DURATION=${CHAOS_DURATION:-$CHAOS_FULL_DURATION}
	# The commit's first 8 hex digits, as a number.
	CHAOS_SEED=${CHAOS_SEED:-$((16#$(git -C "$REPO_ROOT" rev-parse --short=8 HEAD 2>/dev/null || echo 1)))}
	CHAOS_FLAGS=${CHAOS_FLAGS:--api-stop-max=60s}
fi
CHAOS_DURATION=${CHAOS_DURATION:-2m}
CHAOS_SEED=${CHAOS_SEED:-1}
CHAOS_FLAGS=${CHAOS_FLAGS:-}

phase_chaos() {
	local rc=0
	log "--- chaos run for $CHAOS_DURATION with seed $CHAOS_SEED"
	NETWORK_MODE=runtime
	# The runtime's CNI plugins are links in the profile's own folder,
	# where the run wraps them to make them fail or hang.
	CNI_BIN_LINKS=true
	profile_load "$E2E_PROFILE"
	E2E_STACK_UP=true
	# Without kube-proxy and CoreDNS: the node's two cores go to the run.
	ADDONS=false NETWORK_MODE=runtime CNI_BIN_LINKS=true "$REPO_ROOT/hack/local-up.sh" "$E2E_PROFILE" --no-nodelet || rc=$?
	if ((rc == 0)) && [[ -z $NODELET_BIN_GIVEN ]]; then
		log "Building nodelet"
		build_nodelet || rc=$?
	fi
	if ((rc == 0)); then
		# No retry: a chaos run is one scenario, played once.
		# shellcheck disable=SC2086
		CGO_ENABLED=0 NODELET_E2E_ENV=$ENV_FILE go_test_json chaos "$STATIC_GO_FLAGS" -count=1 -v -run '^TestChaos$' ./test/chaos/ \
			-args -duration="$CHAOS_DURATION" -seed="$CHAOS_SEED" $CHAOS_FLAGS || rc=$?
	fi
	stop_e2e_stack || rc=$?
	return $rc
}

# --- running a phase, and the report ----------------------------------------

# run_one_phase NAME runs phase NAME in this process (hack/test.sh --phase
# NAME, under run_phase's time limit): a SIGTERM stops what runs and
# takes its stacks down before it exits.
run_one_phase() {
	PHASE_DEADLINE=$((EPOCHSECONDS + $(phase_limit "$1") - PHASE_GRACE))
	trap 'stop_slow_lane; stop_e2e_stack' EXIT
	# shellcheck disable=SC2064  # the phase's name, now
	trap "log '=== $1 stopped'; exit 143" TERM INT
	"phase_$1"
}

PHASE_PID=''
REPORT=()
FAILED=0
RUN_STARTED=$SECONDS

# run_phase NAME runs a phase under its limit and records its line.
run_phase() {
	local name=$1 limit started=$SECONDS rc=0 status
	limit=$(phase_limit "$name")
	log "=== $name (limit ${limit}s)"
	# timeout puts the phase in a process group of its own, signals the
	# whole group PHASE_GRACE before the limit, and kills what is left at
	# the limit.
	timeout --kill-after="$PHASE_GRACE" $((limit - PHASE_GRACE)) "$REPO_ROOT/hack/test.sh" --phase "$name" &
	PHASE_PID=$!
	wait "$PHASE_PID" || rc=$?
	PHASE_PID=''
	case $rc in
	0) status=ok ;;
	124 | 137) status=TIMEOUT ;;
	*) status=FAILED ;;
	esac
	if [[ $status == ok ]] && compgen -G "$TEST_OUTPUT_DIR/$name*.retry.json" >/dev/null; then
		status=FLAKY
	fi
	[[ $status == ok || $status == FLAKY ]] || FAILED=1
	REPORT+=("$(printf '  %-14s %-8s %5ds  (limit %ds)' "$name" "$status" $((SECONDS - started)) "$limit")")
	log "=== $name: $status in $((SECONDS - started))s"
	[[ $status != TIMEOUT ]] || log "=== $name ran out of its ${limit}s: its stacks' logs stay under /var/lib/nodelet-local/, its tests' output in $TEST_OUTPUT_DIR"
	[[ $status == ok || $status == FLAKY || $name != setup ]] || return 1
}

# finish prints the report, whatever ended the run.
finish() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $PHASE_PID ]]; then
		# Stopped from outside: stop the phase as its limit would.
		kill -TERM "$PHASE_PID" 2>/dev/null || true
		wait "$PHASE_PID" 2>/dev/null || true
		REPORT+=("$(printf '  %-14s %-8s %5ds  (limit %ds)' "$CURRENT_PHASE" STOPPED $((SECONDS - PHASE_STARTED)) "$(phase_limit "$CURRENT_PHASE")")")
		FAILED=1
	fi
	echo
	if [[ -x $TESTREPORT ]] && compgen -G "$TEST_OUTPUT_DIR/*.json" >/dev/null; then
		"$TESTREPORT" summary -slowest 20 "$TEST_OUTPUT_DIR" || true
		echo
	fi
	echo "phases ($TIER tier):"
	printf '%s\n' "${REPORT[@]}"
	printf '  %-14s %-8s %5ds\n' total "$( ((FAILED == 0)) && echo ok || echo FAILED)" $((SECONDS - RUN_STARTED))
	if [[ -x $TESTREPORT ]] && compgen -G "$TEST_OUTPUT_DIR/*.json" >/dev/null; then
		"$TESTREPORT" counts "$TEST_OUTPUT_DIR" || true
	fi
	((FAILED == 0 && rc == 0)) || exit 1
}

main() {
	if [[ ${1:-} == --phase ]]; then
		run_one_phase "$2"
		return
	fi
	local phases=("$@")
	if ((${#phases[@]} == 0)); then
		phases=("${GATE_PHASES[@]}")
	elif [[ ${phases[*]} == full ]]; then
		# Again from the top, where the tier sets the chaos run's
		# duration and seed.
		TIER=full exec "$REPO_ROOT/hack/test.sh" "${FULL_PHASES[@]}"
	fi
	export TIER
	local phase
	for phase in "${phases[@]}"; do
		declare -F "phase_$phase" >/dev/null || die "unknown phase $phase (want full, or some of: ${FULL_PHASES[*]})"
	done
	rm -rf "$TEST_OUTPUT_DIR"
	mkdir -p "$TEST_OUTPUT_DIR" "$(dirname "$TESTREPORT")"
	go build -o "$TESTREPORT" ./hack/testreport || die "could not build hack/testreport"
	trap finish EXIT
	trap 'exit 130' INT TERM
	for phase in "${phases[@]}"; do
		CURRENT_PHASE=$phase PHASE_STARTED=$SECONDS
		run_phase "$phase" || break
	done
}

main "$@"
