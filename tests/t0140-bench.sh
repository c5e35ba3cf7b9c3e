#!/bin/sh
# t0140-bench: `provision bench` on the fast testbed (chroot nodes, real
# sshd): the command's flow, its JSON and table, the run record and `diff`
# between two bench runs, bad input (exit 2, no node contacted), and nodes
# that go wrong alone: one without containerd (host figures, then its
# failure), one whose container runtime prints terminal escapes (cleaned
# before any output or record), one that never answers (unreachable, the
# others report).  node-3 has Debian's ctr but no containerd running (as
# the testbed's image leaves it).  No container runtime works in a chroot
# node: on node-1 and node-2 ctr is the
# stand-in of tests/fakes/containerd, which runs the workload as a plain
# process and limits nothing, so its "limited" figures are the host's and
# no ratio is asserted here (the VM tier runs the real containerd and
# judges the figures).
# Test bodies are single-quoted: lib.sh evaluates them.
# shellcheck disable=SC2016,SC2034
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$SRC_ROOT/tests/lib-testbed.sh"

test_need_cmd jq git
tb_up --chroot 4

# The TAP stream, for note() inside test bodies (lib.sh keeps their output
# for failures only): evidence that a passing run shows.
exec 3>&1
note() {
	sed "s|^|# $1: |" "$2" >&3
}

INV=$TEST_DIR/lab.yaml
STATE=$TEST_DIR/lab.state
sed 's/^  sudo: auto$/  sudo: auto\n  connect_timeout: 5\n  command_timeout: 120/' "$TB/inventory-admin.yaml" >"$INV"
grep -q '^  connect_timeout: 5$' "$INV" || { echo "# could not set the timeouts in $INV"; exit 1; }
CTR=$SRC_ROOT/tests/fakes/containerd/ctr
FAKELOG=/var/log/provision-fake-ctr.log

for n in node-1 node-2 node-3 node-4; do echo "$n $(tb_logins $n)"; done >"$TEST_DIR/logins0"
test_case "bad input: exit 2 with the reason, no node contacted, nothing recorded" '
	expect_status 2 "$PROVISION" bench -i "$INV" --cpu-limit 0.01 >out 2>err
	expect_grep "cpu-limit .0.01. is not a CPU amount" err
	expect_status 2 "$PROVISION" bench -i "$INV" -l node-9 >out 2>err
	expect_grep "no node named .node-9." err
	expect_status 2 "$PROVISION" bench -i "$INV" --repeat 10 >out 2>err
	test ! -e "$STATE"
	for n in node-1 node-2 node-3 node-4; do echo "$n $(tb_logins $n)"; done >logins
	diff -u "$TEST_DIR/logins0" logins
'

for n in node-1 node-2; do
	tb exec "$TB" $n sh -c "cat >/usr/local/bin/ctr && chmod 755 /usr/local/bin/ctr" <"$CTR"
done
tb exec "$TB" node-2 sh -c "echo escapes >/etc/provision-fake-ctr"
# node-1 is a GPU node: one RTX 3070 as the nvidia-smi stand-in shows it
sh "$SRC_ROOT/tests/fakes/nvidia/gpu-node.sh" "$TB" node-1 rtx3070 >"$TEST_DIR/gpu-node.log" 2>&1 ||
	{ sed 's/^/# /' "$TEST_DIR/gpu-node.log"; exit 1; }
tb hang "$TB" node-4
test_at_exit "'$TESTBED' resume '$TB' node-4"

t0=$(date +%s)
test_case "bench -o json: each node reports alone; the unreachable one fails only itself (exit 1)" '
	expect_status 1 "$PROVISION" bench -i "$INV" --no-tui -o json --repeat 1 >run1.json 2>run1.err
	jq -c "select(.event == \"bench\")" run1.json >bench1
	note bench bench1
	expect_eq 4 "$(wc -l <bench1 | tr -d " ")" "bench objects"
	b() { jq -r "select(.node == \"$1\") | $2" bench1; }
	# bj NODE EXPR: EXPR holds for the node'"'"'s object (jq -e judges its one input)
	bj() { jq -c "select(.node == \"$1\")" bench1 | jq -e "$2" >/dev/null; }
	# node-1: every variant ran through the stand-in ctr
	for v in host container capped host_1; do
		bj node-1 ".cpu_mops.$v > 0 and .mem_mbs.$v > 0"
	done
	bj node-1 ".ratios.cpu_container > 0 and .threads >= 1 and .workload == 1 and .repeat == 1 and .ms == 1000"
	expect_eq "1.6.20~ds1" "$(b node-1 .ctr)" "node-1: ctr version"
	# node-1 has a GPU: the stand-in nvidia-smi timed (not a CUDA kernel)
	expect_eq "nvidia-smi 1" "$(b node-1 "\"\\(.gpu.kind) \\(.gpu.gpus)\"")" "node-1: gpu"
	bj node-1 ".gpu.host_ms > 0"
	echo "# node-1 gpu (STAND-IN nvidia-smi, tests/fakes/nvidia): $(b node-1 .gpu.host_ms) ms" >&3
	expect_eq node-1 "$(jq -r "select(.gpu != null) | .node" bench1)" "nodes with a GPU figure"
	# node-3: no containerd running: host figures, then its failure in ctr'"'"'s words
	expect_eq fail "$(b node-3 .status)" "node-3: status"
	b node-3 .failures.container >reason3
	expect_grep "^containerd does not answer: ctr: failed to dial .*containerd.sock" reason3
	expect_eq "no container" "$(b node-3 .failures.capped)" "node-3: limited"
	bj node-3 ".cpu_mops.host > 0 and .cpu_mops.container == null"
	# node-2: its runtime printed escapes: the reason is kept, cleaned
	expect_eq fail "$(b node-2 .status)" "node-2: status"
	b node-2 .failures.container >reason2
	expect_grep "ctr: failed to create shim task" reason2
	# (the node'"'"'s raw lines are JSON-escaped "line" events, as in every command)
	jq -c "select(.event == \"step_end\" and .phase == \"validate\")" run1.json >vals1
	expect_no_grep "u001b\|u0007" bench1
	expect_no_grep "u001b\|u0007" vals1
	# node-4: never answered
	expect_eq unreachable "$(b node-4 .status)" "node-4: status"
	# the checks are validation events, as check -o json shows them
	jq -r "select(.event == \"step_end\" and .phase == \"validate\") | \"\(.node) \(.step) \(.result)\"" run1.json >checks1
	note checks checks1
	expect_grep "^node-1 bench-cpu " checks1
	expect_grep "^node-1 bench-memory " checks1
	expect_grep "^node-3 bench-cpu failed$" checks1
	expect_grep "^node-2 bench-cpu failed$" checks1
	expect_no_grep "^node-4 bench" checks1
	expect_grep "^node-1 bench-gpu ok$" checks1
	jq -r "select(.event == \"step_end\" and .node == \"node-1\" and .step == \"bench-gpu\") | .text" run1.json >gpuobs
	expect_grep "no CUDA kernel was run" gpuobs
'
echo "# bench -o json on 4 nodes (one unreachable): $(($(date +%s) - t0)) s"

test_case "what provision asked of ctr: namespace, --rm, the workload alone as rootfs, the limit as a CFS quota" '
	tb exec "$TB" node-1 cat $FAKELOG >fake1
	note ctr fake1
	limit=$(jq -r "select(.event == \"bench\" and .node == \"node-1\") | .limit_cpus" run1.json)
	quota=$(awk -v l="$limit" "BEGIN { printf \"%d\", l * 100000 + 0.5 }")
	expect_grep "^run ns=provision-bench id=provision-bench-container-1 rm=1 systemd=0 cgroup= cpu-quota=-1 cpu-period=0 mount=type=cgroup,src=cgroup,dst=/sys/fs/cgroup,options=nosuid:noexec:nodev:relatime:ro rootfs=/var/lib/provision/bench/rootfs cmd=/provision-bench\$" fake1
	expect_grep "^run ns=provision-bench id=provision-bench-capped-1 rm=1 systemd=0 cgroup= cpu-quota=$quota cpu-period=100000 mount=type=cgroup,src=cgroup,dst=/sys/fs/cgroup,options=nosuid:noexec:nodev:relatime:ro rootfs=/var/lib/provision/bench/rootfs cmd=/provision-bench\$" fake1
	expect_eq "provision-bench" "$(tb exec "$TB" node-1 ls /var/lib/provision/bench/rootfs | grep -v "^dev\$\|^proc\$\|^sys\$\|^tmp\$")" "rootfs: the workload alone"
'

test_case "the run is recorded: nodes/NODE/bench with the figures, cleaned" '
	"$PROVISION" history -i "$INV" >hist
	expect_grep "bench" hist
	git -C "$STATE" show HEAD:nodes/node-1/bench >rec1
	note record rec1
	expect_grep "^workload v1 threads=[0-9]* ms=1000 repeat=1\$" rec1
	expect_grep "^cpu_mops.host [0-9][0-9.]*\$" rec1
	expect_grep "^mem_mbs.capped [0-9][0-9.]*\$" rec1
	git -C "$STATE" show HEAD:nodes/node-2/bench >rec2
	expect_grep "^fail.container .*ctr: failed to create shim task" rec2
	expect_no_grep "$(printf "\033")" rec2
	git -C "$STATE" show HEAD:validation >val
	expect_grep "^bench-cpu	node-3	fail	" val
'

test_case "bench as a table; provision diff between two bench runs shows each figure that moved" '
	expect_status 1 "$PROVISION" bench -i "$INV" -l node-1,node-3 --repeat 1 --no-tui >table 2>terr
	note table table
	expect_grep "^NODE  *KERNEL  *CPUS  *HOST  *CONTAINER  *RATIO  *LIMITED  *RATIO  *PREDICTED UNIT\$" table
	expect_grep "^node-1  *cpu  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]* Mop/s\$" table
	expect_grep "^node-1  *memory .* MB/s\$" table
	expect_grep "^node-3  *cpu  *[0-9.]*  *[0-9.]*  *failed" table
	expect_grep "containerd does not answer" table
	"$PROVISION" diff -i "$INV" >diff
	note diff diff
	expect_grep "^node-1\$" diff
	expect_grep "^  \(! \)\{0,1\}bench cpu_mops.host: [0-9.]* -> [0-9.]* ([-+][0-9.]* %)\$" diff
'

test_case "check --bench: the bench checks beside the check's own, the figures in JSON, JUnit and the record" '
	expect_status 1 "$PROVISION" check -i "$INV" -l node-1 --bench --no-tui -o json --junit junit.xml >check.json 2>check.err
	jq -r "select(.event == \"step_end\" and .phase == \"validate\") | .step" check.json | sort -u >steps
	expect_grep "^reachable\$" steps
	expect_grep "^bench-cpu\$" steps
	expect_grep "^bench-memory\$" steps
	expect_eq 1 "$(jq -c "select(.event == \"bench\")" check.json | wc -l | tr -d " ")" "bench objects"
	expect_grep "classname=\"node-1\" name=\"bench-cpu\"" junit.xml
	git -C "$STATE" show HEAD:summary >summary
	expect_grep "^command: check\$" summary
	git -C "$STATE" show HEAD:nodes/node-1/bench >rec3
	expect_grep "^cpu_mops.host " rec3
'

test_done
