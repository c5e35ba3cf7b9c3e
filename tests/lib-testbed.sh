# shellcheck shell=sh
# tests/lib-testbed.sh: start a testbed for a test script and always stop it.
# Source after tests/lib.sh.  tb_up ARGS... starts one in $TB (under the
# script's $TEST_DIR) with tests/testbed/testbed.sh and registers its teardown;
# the whole script is skipped when the machine cannot run one (not root, no
# network namespaces).  TB_INV is its root inventory.
TESTBED="$SRC_ROOT/tests/testbed/testbed.sh"

tb_up() {
	test_need_root
	test_need_cmd ip unshare nsenter ssh-keygen
	TB=$TEST_DIR/tb
	test_at_exit "'$TESTBED' down '$TB'"
	if ! "$TESTBED" up "$TB" "$@" >"$TEST_DIR/testbed-up.log" 2>&1; then
		echo "# testbed up failed:"
		sed 's/^/#   /' "$TEST_DIR/testbed-up.log"
		exit 1
	fi
	# shellcheck disable=SC2034 # used by the scripts that source this file
	TB_INV=$TB/inventory.yaml
}

tb() {
	"$TESTBED" "$@"
}

# tb_logins NODE: how many logins the node's sshd accepted so far.
tb_logins() {
	grep -c "Accepted publickey" "$TB/nodes/$1/sshd.log" 2>/dev/null || true
}
