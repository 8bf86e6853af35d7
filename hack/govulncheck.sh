#!/usr/bin/env bash
# Checks nodelet's code for known vulnerabilities with govulncheck (run by
# `make lint`): the vulnerable functions its code reaches, in the modules
# go.mod pins and in the standard library of the Go that builds it.
#
#   hack/govulncheck.sh
#
# govulncheck (golang.org/x/vuln, pinned in hack/build-tools.sh) reads an
# offline database: vuln.go.dev is not reached. It is made from the OSV
# reports of the golang.org/x/vulndb module at VULNDB_VERSION (fetched
# through the Go module proxy) by hack/tools/cmd/vulndb, once, into the
# build cache; it knows what was reported up to that version's date, so
# move VULNDB_VERSION on (`go list -m golang.org/x/vulndb@master`) to learn
# of newer reports.
#
# Each finding must be listed in hack/govulncheck-accepted.txt, with the
# reason it is accepted for now; any other fails, as does a listed one no
# longer found (the list only holds what is true).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018
ACCEPTED=$REPO_ROOT/hack/govulncheck-accepted.txt

# vulndb prints the database's folder, making it if the cache has none
# for this version and this converter.
vulndb() {
	local key dir module out
	key=$({
		echo "$VULNDB_VERSION"
		cat "$TOOLS_DIR/cmd/vulndb"/*.go
	} | sha256sum | cut -c1-16)
	dir=$(build_dir vulndb "$key")
	if [[ ! -f $dir/index/db.json ]]; then
		log "Making the vulnerability database from golang.org/x/vulndb@$VULNDB_VERSION"
		# Outside any module, so that neither go.mod takes part.
		module=$(cd / && GOFLAGS='' go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || return 1
		[[ -d $module/data/osv ]] || { log "no data/osv in golang.org/x/vulndb@$VULNDB_VERSION"; return 1; }
		mkdir -p "$BUILD_CACHE_DIR/builds"
		out=$(mktemp -d "$BUILD_CACHE_DIR/builds/.vulndb.XXXXXX")
		rmdir "$out"
		(cd "$TOOLS_DIR" && go run ./cmd/vulndb -from "$module/data/osv" -to "$out" -version "$VULNDB_VERSION") || {
			rm -rf "$out"
			return 1
		}
		keep_build vulndb "$key" "$out" || return 1
	fi
	echo "$dir"
}

# check_findings JSON fails on each finding of govulncheck's JSON stream
# not in ACCEPTED, and on each accepted one not found. Only findings at
# the function level count: a vulnerable function the code calls.
check_findings() {
	python3 - "$1" "$ACCEPTED" <<'PY'
import json, sys

stream, accepted_path = sys.argv[1:3]
accepted = {}
with open(accepted_path) as f:
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        vuln, _, reason = line.partition(" ")
        if not reason.strip():
            sys.exit(f"{accepted_path}:{n}: {vuln} has no reason")
        accepted[vuln] = reason.strip()

decoder, text, found = json.JSONDecoder(), open(stream).read(), {}
summaries, pos = {}, 0
while True:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos == len(text):
        break
    message, pos = decoder.raw_decode(text, pos)
    if "osv" in message:
        summaries[message["osv"]["id"]] = message["osv"].get("summary", "")
    finding = message.get("finding")
    if finding and finding.get("trace") and finding["trace"][0].get("function"):
        top = finding["trace"][0]
        where = f'{top.get("module", "?")}@{top.get("version", "?")}'
        found.setdefault(finding["osv"], set()).add(f'{where} (fixed in {finding.get("fixed_version") or "no release"})')

failed = False
for vuln in sorted(found):
    status = "accepted" if vuln in accepted else "NOT ACCEPTED"
    print(f"{status}: {vuln} {summaries.get(vuln, '')}: {', '.join(sorted(found[vuln]))}", file=sys.stderr)
    if vuln not in accepted:
        failed = True
for vuln in sorted(set(accepted) - set(found)):
    print(f"{vuln} is listed in {accepted_path} but no longer found: remove it", file=sys.stderr)
    failed = True
if failed:
    sys.exit(f"govulncheck: see above; fix (upgrade the module or Go), or list the finding in {accepted_path} with the reason")
print(f"govulncheck: {len(found)} findings, all accepted", file=sys.stderr)
PY
}

work=""
main() {
	local started=$SECONDS db
	"$REPO_ROOT/hack/build-tools.sh" govulncheck || die "could not build govulncheck"
	db=$(vulndb) || die "could not make the vulnerability database"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	(cd "$REPO_ROOT" && "$BIN_DIR/govulncheck" -db "file://$db" -format json ./...) >"$work/findings.json" ||
		die "govulncheck failed"
	check_findings "$work/findings.json" || return 1
	log "govulncheck: database golang.org/x/vulndb@$VULNDB_VERSION, in $((SECONDS - started))s"
}

main "$@"
