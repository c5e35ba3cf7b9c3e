#!/bin/sh
# tests/fuzz/run.sh DIR SECONDS [HARNESS...]: run libFuzzer harnesses built in
# DIR (make fuzz does both) for SECONDS each, with seed corpora from the
# test data, and print one line per harness: executions, corpus size, result.
# FUZZ_RUNS=N instead stops each harness after N executions (SECONDS is then
# ignored), e.g. FUZZ_RUNS=10000000 for the long runs reported in notes.
# Exits non-zero when a harness crashes, leaks or trips a sanitizer.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$1
seconds=$2
shift 2
harnesses=${*:-inventory kubeconfig template protocol facts kubectl profiles scrub exchange certs bench}
status=0

seed() { # seed NAME FILES...: copy seed files into the harness's seed folder
	name=$1
	shift
	mkdir -p "$dir/seeds/$name"
	for f in "$@"; do
		[ -f "$f" ] && cp "$f" "$dir/seeds/$name/$(echo "$f" | tr / _)"
	done
}

cd "$top" || exit 2
seed inventory tests/inventory/*.yaml inventory/*.yaml
seed kubeconfig tests/fuzz/kubeconfig-seed.yaml
seed template roles/*/templates/* tests/unit/data/roles/*/templates/*
seed facts tests/facts/*
seed kubectl tests/validate/*.json
seed profiles tests/validate/*.json
seed exchange tests/fuzz/exchange-seed.txt
seed certs tests/validate/kubeadm-check-expiration.txt
seed bench tests/fuzz/bench-seed.txt
seed scrub tests/fuzz/scrub-seed.txt tests/validate/*.json tests/inventory/06*.yaml
mkdir -p "$dir/seeds/protocol"
n=0
while IFS= read -r line; do
	n=$((n + 1))
	printf '%s' "$line" >"$dir/seeds/protocol/line$n"
done <tests/fuzz/protocol-seeds.txt

for h in $harnesses; do
	bin=$dir/fuzz/fuzz_$h
	corpus=$dir/corpus/$h
	mkdir -p "$corpus" "$dir/artifacts/$h"
	log=$dir/fuzz_$h.log
	if [ -n "${FUZZ_RUNS:-}" ]; then
		limit="-runs=$FUZZ_RUNS"
	else
		limit="-max_total_time=$seconds"
	fi
	start=$(date +%s)
	"$bin" "$limit" -print_final_stats=1 -rss_limit_mb=2048 \
		-artifact_prefix="$dir/artifacts/$h/" "$corpus" "$dir/seeds/$h" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	files=$(find "$corpus" -type f | wc -l)
	if [ "$rc" = 0 ]; then
		result=clean
	else
		result="FAILED (exit $rc, see $log and $dir/artifacts/$h)"
		status=1
		grep -m 5 -E "ERROR|SUMMARY|runtime error" "$log"
	fi
	printf '%-10s %12s execs %8s/s %6ss %6s corpus files  %s\n' "$h" "${execs:-0}" "${rate:-0}" \
		"$(($(date +%s) - start))" "$files" "$result"
done
exit $status
