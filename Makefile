# nodelet's Makefile: `make` lists the targets. Everything that needs root
# (the local stack, the e2e tests) says so.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

# Every go command shares the build cache with the hack/ scripts: outside
# the clone (hack/lib.sh BUILD_CACHE_DIR), so a new clone starts warm.
NODELET_BUILD_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nodelet
export GOCACHE := $(NODELET_BUILD_CACHE)/go-build

BIN_DIR := $(CURDIR)/.cache/bin
# The stack `up`, `down` and `run` act on: up (for people) or e2e (the one
# `make test` starts and stops).
PROFILE ?= up
# Extra flags, e.g. `make up UP_FLAGS=--no-nodelet`, `make down DOWN_FLAGS=--purge`,
# `make bench BENCH_FLAGS="-single-runs 5"` (`.cache/bin/bench agents -h`).
UP_FLAGS ?=
DOWN_FLAGS ?=
BENCH_FLAGS ?=
# `make bench-scale BENCH_SCALE_FLAGS="-idle 1m"` (`.cache/bin/bench scale -h`).
BENCH_SCALE_FLAGS ?=
# `make chaos`: how long it churns pods and injects faults, its seed, more
# flags (`go test ./test/chaos -args -h`). `make test` runs a 2m one, with
# the API server stopped for up to 20 s; the long one stops it for up to a
# minute, and churns for 40 minutes, in which about 500 pods go by.
CHAOS_DURATION ?= 40m
CHAOS_SEED ?= 1
CHAOS_FLAGS ?= -api-stop-max=60s
# How long `make fuzz` runs each fuzz target (go test -fuzztime).
FUZZTIME ?= 10s
# `make test-unit PKG=./internal/volume/...`: one package's unit tests.
PKG ?=
# `make e2e RUN=TestDNS`: the e2e tests go test -run matches.
RUN ?=
CONTROLLER_TOOLS_VERSION ?= v0.21.0
# The commit stamped into nodelet (main.commit): the Node's
# nodeInfo.kubeletVersion is the Kubernetes version with
# nodelet.<baseVersion (version.go)>.COMMIT as build metadata.
COMMIT ?= $(shell git describe --always --dirty --exclude '*' 2>/dev/null)
# The ClusterRoles' names before kustomize's `nodelet-` prefix; the bindings
# refer to them.
RBAC_ROLE_NAME := agent
APPROVER_ROLE_NAME := approver

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this list of targets.
	@awk 'BEGIN { FS = ":.*## " } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) } \
		/^[a-zA-Z0-9_-]+:.*## / { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build nodelet into .cache/bin/nodelet.
	go build -ldflags "-X main.commit=$(COMMIT)" -o $(BIN_DIR)/nodelet .

.PHONY: release
release: ## The host install's tarball, .cache/release/nodelet-<version>-linux-<arch>.tar.gz, its binaries' SBOMs, the chart and config/ pinned to the image's digest (build it first: make image), and SHA256SUMS (deploy/host/INSTALL.md; GOARCH=arm64 for another).
	hack/release.sh
	hack/release-manifests.sh

.PHONY: image
image: ## Build nodelet's image as an OCI layout in .cache/images/nodelet, and its SBOMs (hack/build-image.sh; root).
	hack/build-image.sh

.PHONY: lint
lint: ## gofmt, go vet, golangci-lint (.golangci.yml), govulncheck (hack/govulncheck.sh), the file-length budget, and the generated docs up to date.
	hack/test.sh lint

.PHONY: docs
docs: ## Write the generated docs pages: docs/configuration.md from the code, docs/benchmarks.md from bench/results (hack/docs.sh).
	hack/docs.sh

.PHONY: manifests
manifests: ## Generate config/rbac/role.yaml and config/approver/role.yaml from the +kubebuilder:rbac markers.
	go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) \
		rbac:roleName=$(RBAC_ROLE_NAME) paths=./controllers/... output:rbac:artifacts:config=config/rbac
	go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION) \
		rbac:roleName=$(APPROVER_ROLE_NAME) paths=./internal/node/approver/... output:rbac:artifacts:config=config/approver

.PHONY: run
run: ## Run nodelet in the foreground against the up stack (root; starts the stack if needed).
	hack/run-nodelet.sh $(PROFILE)

##@ Test

.PHONY: test
test: ## The CI gate (.ci/run runs it): setup, lint, unit, every e2e mode, a 2m chaos run; each phase under a time limit, then the report (root).
	hack/test.sh

.PHONY: test-full
test-full: ## Every tier: the gate, plus fuzzing, the full-tier e2e tests and the slow lane, a 10m chaos run seeded by the commit (root).
	hack/test.sh full

.PHONY: test-unit
test-unit: ## Unit and envtest tests with -race; one package's with PKG=./internal/volume/... (builds envtest's binaries if missing).
	hack/build-tools.sh etcd kube-apiserver kubectl
	UNIT_PACKAGES="$(PKG)" hack/test.sh unit

.PHONY: e2e
e2e: ## The e2e tests RUN matches (all when empty) against an e2e stack left up, started if needed (root; RUN=TestDNS; make down PROFILE=e2e).
	hack/e2e.sh "$(RUN)"

.PHONY: test-e2e
test-e2e: ## Every e2e mode's gate tests, each on a fresh stack stopped afterwards (root; TIER=full for all).
	hack/test.sh setup e2e-runtime e2e-agent e2e-userns e2e-companion e2e-systemd

.PHONY: test-vm
test-vm: ## The VM tests: nodelet installed by INSTALL.md in a systemd + cgroup v2 guest under qemu (root; the gate's smoke test, TIER=full for all).
	hack/test.sh setup vm

.PHONY: fuzz
fuzz: ## Every fuzz target for FUZZTIME each (default 10s; `make fuzz FUZZTIME=5m`), keeping new inputs in testdata/fuzz to commit.
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: chaos
chaos: ## The chaos run: pods churned while faults are injected, then invariants and leaks checked (root; CHAOS_DURATION=40m CHAOS_SEED=1 CHAOS_FLAGS=-api-stop-max=60s).
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_SEED=$(CHAOS_SEED) CHAOS_FLAGS="$(CHAOS_FLAGS)" hack/test.sh setup chaos

.PHONY: clean-cache
clean-cache: ## Delete the build cache outside the clone (~/.cache/nodelet, or NODELET_BUILD_CACHE) and .cache: the next run builds everything again.
	rm -rf "$(NODELET_BUILD_CACHE)" .cache

##@ Benchmarks

.PHONY: bench
bench: ## nodelet against the kubelet side by side, then sandbox creation in each network mode (root; 40 to 50 minutes; BENCH_FLAGS=...).
	hack/bench.sh $(BENCH_FLAGS)

.PHONY: bench-scale
bench-scale: ## N hollow nodelets, then N hollow kubelets (kubemark), on one control plane: what each node costs it (root; BENCH_SCALE_NODES=100; under 20 minutes).
	hack/bench-scale.sh $(BENCH_SCALE_FLAGS)

.PHONY: bench-network
bench-network: ## Only the last part of bench: sandbox creation with networking, median and p99 of 50, in each network mode (root).
	hack/bench-network.sh

##@ Local stack

.PHONY: vm
vm: ## Build the systemd + cgroup v2 guest image if not cached, boot guest `vm` under qemu and print its boot time (root; hack/vm.sh ssh vm, make vm-down).
	hack/vm.sh up vm

.PHONY: vm-down
vm-down: ## Power guest `vm` off.
	hack/vm.sh down vm

.PHONY: up
up: ## Start the local stack with nodelet (root; PROFILE=up|e2e, UP_FLAGS=--no-nodelet).
	hack/local-up.sh $(PROFILE) $(UP_FLAGS)

.PHONY: down
down: ## Stop the local stack and remove all it made (root; DOWN_FLAGS=--purge drops its state).
	hack/local-down.sh $(PROFILE) $(DOWN_FLAGS)

.PHONY: tools
tools: ## Build etcd, the control plane, kubectl and the helpers into .cache/bin.
	hack/build-tools.sh

.PHONY: images
images: ## Build the busybox and pause images into .cache/images.
	hack/build-images.sh

.PHONY: deps
deps: ## Install the Debian packages the stack and the tests need (root).
	hack/install-deps.sh
