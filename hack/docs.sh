#!/usr/bin/env bash
# Writes the documentation pages that are generated, each from what it
# documents, so that they cannot drift from it:
#
#   hack/docs.sh            (make docs)
#
#   docs/configuration.md   every flag and configuration file field, from
#                           the code that defines them (hack/docgen/config)
#   docs/benchmarks.md      the tables of the committed benchmark results,
#                           bench/results (hack/docgen/bench)
#
# The other pages are written by hand. A generator that fails leaves its
# page as it was, and the script fails. `make lint` (hack/test.sh lint)
# runs it and fails when docs/ is then not as committed.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT" || exit

# generate PAGE PACKAGE runs the generator PACKAGE and, when it succeeds,
# writes its output over PAGE (in place, so the page keeps its mode).
generate() {
	local page=$1 package=$2 tmp
	mkdir -p "$CACHE_DIR"
	tmp=$(mktemp "$CACHE_DIR/docs.XXXXXX")
	if ! go run "$package" >"$tmp"; then
		rm -f "$tmp"
		log "$package failed: $page left as it was"
		return 1
	fi
	cat "$tmp" >"$page"
	rm -f "$tmp"
}

rc=0
generate docs/configuration.md ./hack/docgen/config || rc=1
generate docs/benchmarks.md ./hack/docgen/bench || rc=1
exit $rc
