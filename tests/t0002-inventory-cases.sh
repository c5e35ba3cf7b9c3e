#!/bin/sh
# t0002: the inventory, case by case (tests/inventory/, curl's tests/data shape).
#
# Each case is NNN-name.yaml with NNN-name.expected: the first line is
# "exit N", the rest is the exact stderr of
#     cd tests/inventory && provision inventory -i NNN-name.yaml [ARGS]
# (so paths in messages are just the file name).  NNN-name.args, when there,
# holds extra arguments (such as "-o json"); NNN-name.stdout, when there, is
# the exact stdout.  HOME and USER are fixed so that defaults print the same
# everywhere.  To see what a case prints:
#     cd tests/inventory && HOME=/home/tester ../../build/provision inventory -i FILE
#
# Test bodies are single-quoted on purpose: test_case evaluates them later.
# shellcheck disable=SC2016
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

CASES="$TESTS_ROOT/inventory"

# run_case NAME: run one case and compare status, stderr and stdout.
run_case() {
	name=$1
	args=
	[ -f "$CASES/$name.args" ] && args=$(cat "$CASES/$name.args")
	[ -f "$CASES/$name.expected" ] || { echo "missing $name.expected"; return 1; }
	set +e
	# shellcheck disable=SC2086 # $args is a list of words on purpose
	(cd "$CASES" && HOME=/home/tester USER=tester LC_ALL=C \
		"$PROVISION" inventory -i "$name.yaml" $args) >"$TEST_DIR/$name.out" 2>"$TEST_DIR/$name.err"
	status=$?
	set -e
	want=$(sed -n '1s/^exit //p' "$CASES/$name.expected")
	expect_eq "$want" "$status" "exit status"
	sed 1d "$CASES/$name.expected" >"$TEST_DIR/$name.want-err"
	diff -u "$TEST_DIR/$name.want-err" "$TEST_DIR/$name.err"
	if [ -f "$CASES/$name.stdout" ]; then
		diff -u "$CASES/$name.stdout" "$TEST_DIR/$name.out"
	elif [ "$status" != 0 ]; then
		# Invalid input prints nothing on stdout.
		expect_eq "" "$(cat "$TEST_DIR/$name.out")" "stdout"
	fi
	case " $args " in
	*" json "*)
		if command -v jq >/dev/null 2>&1; then
			jq -e . "$TEST_DIR/$name.out" >/dev/null
		fi
		;;
	esac
}

for input in "$CASES"/[0-9][0-9][0-9]-*.yaml; do
	name=$(basename "$input" .yaml)
	test_case "inventory case $name" "run_case '$name'"
done

# Every message of an invalid case has FILE:LINE:COL, except the few that
# are about the whole file (empty, a top-level section missing).
test_case "invalid cases give line and column" '
	whole_file="the inventory is empty|missing required key .(cluster|nodes).$"
	for e in "$CASES"/*.expected; do
		grep -q "^exit 2" "$e" || continue
		sed 1d "$e" | grep -E ": (error|warning): " >lines || true
		test -s lines || { echo "$e: no error lines"; exit 1; }
		grep -vE "^[0-9]{3}-[a-z0-9-]+\.yaml:[0-9]+:[0-9]+: (error|warning): " lines >unplaced || true
		if grep -vE "^[0-9]{3}-[a-z0-9-]+\.yaml: error: ($whole_file)" unplaced; then
			echo "$e: the lines above have no line and column"
			exit 1
		fi
	done
'

test_case "the example inventories validate with no message" '
	for f in lab-a lab-b seed; do
		expect_status 0 "$PROVISION" inventory -i "$SRC_ROOT/inventory/$f.yaml" >out 2>err
		expect_eq "" "$(cat err)" "stderr of $f"
	done
'

test_case "lab-b prints its five nodes with their roles" '
	"$PROVISION" inventory -i "$SRC_ROOT/inventory/lab-b.yaml" >out
	expect_grep "^nodes 5 " out
	expect_grep "^b-0  *192\.168\.10\.47  *22  *admin  *control-plane " out
	expect_grep "^b-1  *192\.168\.10\.51  *22  *admin  *nfs-server " out
	for i in 2 3 4; do
		expect_grep "^b-$i  *192\.168\.10\.5$i  *22  *admin  *worker  *1  *auto  *strict$" out
	done
'

if command -v jq >/dev/null 2>&1; then
	test_case "lab-b as JSON is valid and complete" '
		"$PROVISION" inventory -i "$SRC_ROOT/inventory/lab-b.yaml" -o json >out
		expect_eq 5 "$(jq ".nodes | length" out)" "node count"
		expect_eq "b-0" "$(jq -r ".cluster.control_plane" out)" "control plane"
		expect_eq "worker" "$(jq -r ".nodes[4].roles[0]" out)" "role of b-4"
		expect_eq 1 "$(jq ".nodes[3].gpus" out)" "gpus of b-3"
		expect_eq null "$(jq ".nodes[0].gpus" out)" "gpus of b-0"
		expect_eq b-1 "$(jq -r ".storage.nfs.server" out)" "nfs server"
	'
else
	test_skip "lab-b as JSON is valid and complete" "needs jq"
fi

test_case "a missing file is one line, exit 2" '
	expect_status 2 "$PROVISION" inventory -i no-such.yaml >out 2>err
	expect_eq "no-such.yaml: error: inventory file not found" "$(cat err)"
	expect_eq "" "$(cat out)" stdout
'

test_case "a directory is one line, exit 2" '
	mkdir -p d.yaml
	expect_status 2 "$PROVISION" inventory -i d.yaml 2>err
	expect_eq "d.yaml: error: inventory is a directory, not a file" "$(cat err)"
'

if [ "$(id -u)" = 0 ]; then
	test_skip "an unreadable file is one line, exit 2" "root reads every file"
else
	test_case "an unreadable file is one line, exit 2" '
		cp "$SRC_ROOT/inventory/seed.yaml" locked.yaml
		chmod 000 locked.yaml
		expect_status 2 "$PROVISION" inventory -i locked.yaml 2>err
		expect_eq "locked.yaml: error: inventory file is not readable (permission denied)" \
			"$(cat err)"
	'
fi

# A registry password is read when a run starts, before any node is
# contacted (192.0.2.1 is TEST-NET-1: nothing answers there).
test_case "a registry password_file that cannot be used: its line and column, exit 2, no node contacted" '
	cat >reg.yaml <<-EOF
		cluster:
		  name: reg
		  kubernetes_version: "1.30.4"
		  registries:
		    docker.io:
		      mirrors:
		        - url: https://mirror.lab.example:5000
		          username: lab
		          password_file: missing.txt
		jupyterhub: {enabled: false}
		nodes:
		  - {name: cp, address: 192.0.2.1, roles: [control-plane, worker]}
	EOF
	expect_status 2 "$PROVISION" plan -i reg.yaml --state st --no-tui 2>err >out
	expect_grep "^reg.yaml:9:26: error: cannot read .missing.txt. (password_file of registry docker.io): No such file or directory" err
	expect_no_grep "192.0.2.1" out
	printf "short\n" >missing.txt
	expect_status 2 "$PROVISION" plan -i reg.yaml --state st --no-tui 2>err >out
	expect_grep "^reg.yaml:9:26: error: .*missing.txt. (password_file of registry docker.io) must hold one line, the password, of at least 6 characters" err
'

test_case "-i is required" '
	expect_status 2 "$PROVISION" inventory 2>err
	expect_grep "missing inventory" err
'

test_done
