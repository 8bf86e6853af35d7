#!/usr/bin/env bash
# Runs nodelet's test suites, printing each one's wall time, and fails if
# any failed (all of them run regardless, so one report shows everything).
#
#   hack/test.sh                 setup, lint, unit, e2e, chaos (what `make test` runs)
#   hack/test.sh SUITE...        only those: setup lint unit e2e chaos
#
# setup  installs missing packages, builds the tools and images when missing
# lint   gofmt check, go vet, golangci-lint with .golangci.yml (built into
#        .cache/bin at its pinned version if missing), the file-length
#        budget (hack/check-file-length.sh), no tracked file over 1 MiB,
#        and the test proving the configuration's pure-code rules catch a
#        violation (hack/lint)
# unit   go test -race on every package but test/e2e and hack/lint, with envtest's
#        binaries (kube-apiserver, etcd, kubectl) from .cache/bin, and the
#        benchmark harness's unit tests (hack/tools/cmd/bench), then every
#        fuzz target for UNIT_FUZZTIME (3s) each (hack/fuzz.sh)
# e2e    starts the e2e stack without nodelet, checks the kustomize and
#        Helm manifests against it, builds nodelet, runs test/e2e (which
#        starts nodelet itself) and always stops the stack, with the slow
#        lane's tests (E2E_SLOW_RUN: those that wait minutes on a clock)
#        run at the same time on a stack of their own (E2E_SLOW_PROFILE,
#        e2e-8) unless E2E_RUN narrows the run; then the same
#        with the stack in the agent network mode, for the TestNetwork
#        cases only; then on a stack whose runtime is containerd 2
#        (hack/build-runtime.sh), for the TestPodUserNamespace cases only;
#        last, on a stack whose second node is a real kubelet
#        (hack/host-kubelet.sh), with nodelet's image built and pushed, for
#        the TestCompanion cases only; then on a stack with the systemd
#        cgroup driver (its own systemd, containerd's SystemdCgroup,
#        --cgroup-driver=systemd), for the cgroup cases E2E_SYSTEMD_RUN
#        names
# chaos  starts the e2e stack without nodelet or add-ons and runs the chaos
#        run (test/chaos) for CHAOS_DURATION (2m) with CHAOS_SEED (1): it
#        fails on any invariant violated or anything leaked
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit

# Each suite's go test output is kept here too, so that the end of the
# report can name, for every failing test, the first things it said: a
# log cut to its head and tail still shows why.
TEST_OUTPUT_DIR=$CACHE_DIR/test-output

# go_test_logged SUITE ARGS... runs go test ARGS, its output both printed
# and appended to SUITE's file.
go_test_logged() {
	local suite=$1
	shift
	mkdir -p "$TEST_OUTPUT_DIR"
	go test "$@" 2>&1 | tee -a "$TEST_OUTPUT_DIR/$suite.log"
}

# print_failure_digest prints, for each test that failed in the suites'
# outputs, its first three messages (file:line: text), each cut to 300
# characters. It follows the test a line belongs to by go test -v's
# "=== RUN/CONT/NAME" lines, and by "--- FAIL" without -v.
print_failure_digest() {
	local file
	for file in "$TEST_OUTPUT_DIR"/*.log; do
		[[ -e $file ]] || continue
		awk -v file="$file" '
			/^=== (RUN|CONT|NAME|PAUSE) / { current = $3; next }
			/^ *--- FAIL: / {
				name = $3
				if (!(name in failed)) { failed[name] = 1; order[++n] = name }
				current = name
				next
			}
			/^    +[^ ]+\.go:[0-9]+: / {
				if (current != "" && said[current] < 3) {
					line = $0
					sub(/^ +/, "", line)
					said[current]++
					message[current, said[current]] = substr(line, 1, 300)
				}
			}
			END {
				if (n == 0) exit
				printf "failing tests in %s, with their first messages:\n", file
				for (i = 1; i <= n; i++) {
					printf "  %s\n", order[i]
					for (j = 1; j <= said[order[i]]; j++) printf "      %s\n", message[order[i], j]
				}
			}' "$file"
	done
}

suite_setup() {
	"$REPO_ROOT/hack/install-deps.sh" &&
		"$REPO_ROOT/hack/build-tools.sh" &&
		"$REPO_ROOT/hack/build-images.sh"
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

suite_lint() {
	local unformatted rc=0
	unformatted=$(find . -name '*.go' -not -path './.cache/*' -print0 | xargs -0 gofmt -l)
	if [[ -n $unformatted ]]; then
		echo "gofmt would change:" >&2
		echo "$unformatted" >&2
		rc=1
	fi
	# With the e2e build's flags, whose compiled packages it then shares.
	CGO_ENABLED=0 go vet "$STATIC_GO_FLAGS" ./... || rc=1
	if "$REPO_ROOT/hack/build-tools.sh" golangci-lint; then
		"$BIN_DIR/golangci-lint" run ./... || rc=1
	else
		rc=1
	fi
	"$REPO_ROOT/hack/check-file-length.sh" || rc=1
	check_no_large_files || rc=1
	# The configuration itself: a violation in a pure path is reported.
	go test -count=1 ./hack/lint/ || rc=1
	return $rc
}

# How long the unit suite fuzzes each target (hack/fuzz.sh); `make fuzz`
# fuzzes longer.
UNIT_FUZZTIME=${UNIT_FUZZTIME:-3s}

suite_unit() {
	local packages
	# hack/lint tests the lint configuration: the lint suite runs it.
	packages=$(go list ./... | grep -v -e '/test/e2e' -e '/test/chaos$' -e '/hack/lint$') || return 1
	# shellcheck disable=SC2086
	KUBEBUILDER_ASSETS=$BIN_DIR go_test_logged unit -race -count=1 $packages || return 1
	# The benchmark harness's own figures and parsing (hack/tools module).
	(cd "$TOOLS_DIR" && go test -count=1 ./cmd/bench/) || return 1
	# Every fuzz target briefly (the run above only replays their corpora).
	FUZZTIME=$UNIT_FUZZTIME "$REPO_ROOT/hack/fuzz.sh"
}

# The stack the e2e suite runs on; E2E_PROFILE=e2e-1 (to e2e-9) runs a
# second suite beside one already running.
E2E_PROFILE=${E2E_PROFILE:-e2e}
E2E_STACK_UP=false
stop_e2e_stack() {
	if $E2E_STACK_UP; then
		E2E_STACK_UP=false
		"$REPO_ROOT/hack/local-down.sh" "$E2E_PROFILE"
	fi
}

# The slow lane: the tests that spend minutes waiting on a clock and
# little else (a projected token is refreshed at 80% of its ten minutes)
# run on a stack of their own, E2E_SLOW_PROFILE, beside the runtime mode's
# run, where they would hold its parallel phase open for minutes after
# every other test is done. Two suites run at once (E2E_PROFILE=e2e-N)
# give each its own E2E_SLOW_PROFILE.
E2E_SLOW_RUN=${E2E_SLOW_RUN-^TestProjectedTokenIsRefreshedBeforeItExpires\$}
E2E_SLOW_PROFILE=${E2E_SLOW_PROFILE:-e2e-8}
SLOW_STACK_UP=false
SLOW_PID=''
# kill_tree PID stops a process and everything it started (the slow
# lane's go test, its test binary, and the nodelet that one runs).
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
		SLOW_STACK_UP=false
		"$REPO_ROOT/hack/local-down.sh" "$E2E_SLOW_PROFILE"
	fi
}
trap 'stop_slow_lane; stop_e2e_stack' EXIT

# The network cases run twice: with the rest of the suite on a stack whose
# runtime runs CNI, then alone on a stack in the agent network mode.
# The TestNetworkAgentMode cases are about the agent mode alone. The
# TestPodUserNamespace cases need a runtime that gives pods user
# namespaces, which Debian's containerd 1.6 cannot: they run alone on a
# stack with containerd 2 (mode "userns"). The TestCompanion cases install
# the chart on a real kubelet's node, with the image built: mode
# "companion", on its own stack (with kube-proxy, through which pods reach
# the API server's Service).
# The cgroup cases that read the pods' cgroup files run again on a stack
# with the systemd cgroup driver (mode "systemd"), where those files are
# the slices' systemd made, the OOM kill case with them: with the systemd
# driver a container's scope goes the moment its last process dies, before
# containerd reads its OOM event (containerd publishes no TaskOOM for a
# deleted cgroup; its own critest run skips OOMKilled under systemd,
# containerd PR 12714), so only the kernel's log, which nodelet reads,
# tells the OOM kill from another SIGKILL there.
# E2E_RUN narrows the first run to the tests it matches (go test -run), and
# E2E_MODES to the modes named ("runtime", "agent", "userns", "companion",
# "systemd"), to run one test while working on it.
E2E_RUN=${E2E_RUN:-}
E2E_AGENT_RUN=${E2E_AGENT_RUN:-^TestNetwork}
E2E_USERNS_RUN=^TestPodUserNamespace
E2E_MODES=${E2E_MODES:-runtime agent userns companion systemd}
E2E_COMPANION_RUN=^TestCompanion
E2E_SYSTEMD_RUN=${E2E_SYSTEMD_RUN:-^(TestPodCgroupsFollowTheQOSClass|TestContainerPastItsMemoryLimitIsOOMKilled|TestQOSTiersAndPodPidsLimit|TestDeletedPodLeavesTheAPIInGraceAndNothingOnTheNode|TestInPlacePodResize)$}

# What the runtime mode's run leaves to the other modes.
E2E_RUNTIME_SKIP="^TestNetworkAgentMode|$E2E_USERNS_RUN|$E2E_COMPANION_RUN"

suite_e2e() {
	local rc=0
	if [[ " $E2E_MODES " == *" runtime "* ]]; then
		if [[ -z $E2E_RUN && -n $E2E_SLOW_RUN ]]; then
			e2e_runtime_with_slow_lane || rc=$?
		else
			e2e_on_stack runtime "$E2E_RUN" "$E2E_RUNTIME_SKIP" || rc=$?
		fi
	fi
	if [[ " $E2E_MODES " == *" agent "* ]]; then
		e2e_on_stack agent "$E2E_AGENT_RUN" "" || rc=$?
	fi
	if [[ " $E2E_MODES " == *" userns "* ]]; then
		RUNTIME=containerd2 e2e_on_stack runtime "$E2E_USERNS_RUN" "" || rc=$?
	fi
	if [[ " $E2E_MODES " == *" companion "* ]]; then
		# No disk of the node's own: the host node's mount namespace
		# would hold a copy of its mount.
		NODE_DISK_SIZE='' E2E_HOST_KUBELET=true e2e_on_stack runtime "$E2E_COMPANION_RUN" "" || rc=$?
	fi
	if [[ " $E2E_MODES " == *" systemd "* ]]; then
		# No disk of the node's own (the node's mount namespace would hold
		# a copy of its mount), no add-ons: the cases need neither.
		NODE_DISK_SIZE='' ADDONS=false CGROUP_DRIVER=systemd e2e_on_stack runtime "$E2E_SYSTEMD_RUN" "" || rc=$?
	fi
	return $rc
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
	CGO_ENABLED=0 go test "$STATIC_GO_FLAGS" -c -o "$CACHE_DIR/e2e.test" ./test/e2e/ || return 1
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
			CGO_ENABLED=0 NODELET_E2E_ENV=$ENV_FILE go_test_logged e2e-slow "$STATIC_GO_FLAGS" -timeout 40m -count=1 -v -run "$E2E_SLOW_RUN" ./test/e2e/
		) >"$slow_out" 2>&1 &
		SLOW_PID=$!
	fi
	NODELET_BIN_GIVEN=${NODELET_BIN_GIVEN:-true} e2e_on_stack runtime "" "$E2E_RUNTIME_SKIP|$E2E_SLOW_RUN" || rc=$?
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

# e2e_on_stack MODE RUN SKIP brings the e2e stack up in network mode MODE,
# runs the e2e tests matching RUN (all when empty) but not SKIP against it,
# and stops it.
e2e_on_stack() {
	local mode=$1 run=$2 skip=$3 rc=0
	log "--- e2e tests${run:+ matching $run} in the $mode network mode${RUNTIME:+ on $RUNTIME}${CGROUP_DRIVER:+ with the $CGROUP_DRIVER cgroup driver}"
	NETWORK_MODE=$mode
	profile_load "$E2E_PROFILE"
	E2E_STACK_UP=true
	NETWORK_MODE=$mode "$REPO_ROOT/hack/local-up.sh" "$E2E_PROFILE" --no-nodelet || rc=$?
	if ((rc == 0)) && [[ -z $NODELET_BIN_GIVEN ]]; then
		log "Building nodelet"
		build_nodelet || rc=$?
	fi
	if ((rc == 0)) && [[ $mode == runtime && -z ${RUNTIME:-} && ${CGROUP_DRIVER:-cgroupfs} == cgroupfs ]]; then
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
		CGO_ENABLED=0 NODELET_E2E_HOST_ENV=$host_env NODELET_E2E_ENV=$ENV_FILE go_test_logged e2e "$STATIC_GO_FLAGS" -timeout 40m -count=1 -v ${run:+-run "$run"} ${skip:+-skip "$skip"} ./test/e2e/ || rc=$?
	fi
	if [[ -n $host_env ]]; then
		"$REPO_ROOT/hack/host-kubelet.sh" "$E2E_PROFILE" down || rc=$?
	fi
	stop_e2e_stack || rc=$?
	return $rc
}

# The chaos run: how long it churns pods and injects faults, with which
# seed, and more of its flags (`go test ./test/chaos -args -h`).
# `make chaos` runs a long one.
CHAOS_DURATION=${CHAOS_DURATION:-2m}
CHAOS_SEED=${CHAOS_SEED:-1}
CHAOS_FLAGS=${CHAOS_FLAGS:-}

suite_chaos() {
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
		# shellcheck disable=SC2086
		CGO_ENABLED=0 NODELET_E2E_ENV=$ENV_FILE go_test_logged chaos "$STATIC_GO_FLAGS" -timeout 0 -count=1 -v -run '^TestChaos$' ./test/chaos/ \
			-args -duration="$CHAOS_DURATION" -seed="$CHAOS_SEED" $CHAOS_FLAGS || rc=$?
	fi
	stop_e2e_stack || rc=$?
	return $rc
}

main() {
	local suites=("$@") suite started rc failed=0 report=()
	((${#suites[@]} > 0)) || suites=(setup lint unit e2e chaos)
	for suite in "${suites[@]}"; do
		declare -F "suite_$suite" >/dev/null || die "unknown suite $suite (want setup, lint, unit, e2e or chaos)"
	done
	rm -rf "$TEST_OUTPUT_DIR"
	for suite in "${suites[@]}"; do
		log "=== $suite"
		started=$SECONDS
		rc=0
		"suite_$suite" || rc=$?
		if ((rc == 0)); then
			report+=("$(printf '%-6s ok      %4ds' "$suite" $((SECONDS - started)))")
		else
			report+=("$(printf '%-6s FAILED  %4ds' "$suite" $((SECONDS - started)))")
			failed=1
			# Nothing else can run without the tools and packages.
			[[ $suite == setup ]] && break
		fi
		log "=== $suite took $((SECONDS - started))s"
	done
	echo
	((failed == 0)) || print_failure_digest
	printf '%s\n' "${report[@]}"
	return $failed
}

main "$@"
