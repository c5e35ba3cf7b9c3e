# tests/vm/lib-vm.sh: QEMU VMs for a test script (the VM tier, tests/t09NN-vm-*.sh).
# Source after tests/lib.sh.
#
#   vm_require           skip the whole script (TAP "1..0 # skip REASON") when
#                        this machine cannot run the VM tier; then wait for
#                        the machine's VM tier lock, so that test scripts of
#                        concurrent suites never run their VMs at once (TCG:
#                        2 VMs a core at most)
#   vm_up ARGS...        boot VMs in $VM (tests/vm/vm.sh up), always torn down
#                        at exit; VM_INV is their inventory
#   on NODE CMD          CMD (a shell string) as root on NODE over ssh, with
#                        strict host keys; standard input is /dev/null
#   vm ARGS...           tests/vm/vm.sh ARGS...
#   vm_time LABEL START  print "# time: LABEL N s" (START from `date +%s`)
#   pv ARGS...           provision ARGS... -i $VM_INV --roles roles --no-tui
#   pv_json OUT ARGS...  provision -o json ARGS... into OUT (its standard error
#                        into OUT.err); exit status kept
#   note LABEL FILE      FILE's lines as TAP comments "# LABEL: ...", shown
#                        in the log even when the case passes (evidence)
#
# Knobs: PROVISION_TEST_VM=0 skips the tier; PROVISION_VM_CACHE (image
# cache, default /var/cache/provision-vm), PROVISION_VM_ACCEL (auto, tcg,
# kvm), PROVISION_VM_BOOT_TIMEOUT (s, default 240).
# shellcheck shell=sh
VMSH=$SRC_ROOT/tests/vm/vm.sh

# Why this machine cannot run the VM tier; nothing when it can.
vm_skip_reason() {
	if [ "${PROVISION_TEST_VM:-1}" = 0 ]; then
		echo "PROVISION_TEST_VM=0"
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "needs root (a bridge, tap devices, debootstrap)"
		return
	fi
	for c in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 mkswap sfdisk ssh ssh-keygen ip jq flock; do
		if ! command -v "$c" >/dev/null 2>&1; then
			echo "needs $c (make deps installs it)"
			return
		fi
	done
	if [ ! -c /dev/net/tun ]; then
		echo "needs /dev/net/tun (tap devices)"
		return
	fi
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	if [ "${avail:-0}" -lt 4096 ]; then
		echo "needs 4 GiB of free memory for 2 VMs (${avail:-?} MiB available)"
		return
	fi
}

vm_require() {
	why=$(vm_skip_reason)
	[ -z "$why" ] || test_skip_all "$why"
	# Held on fd 7 until this script exits; vm.sh and ssh close it, so
	# that no QEMU or shared ssh connection outlives the script holding it.
	exec 7>/run/provision-vm.lock
	if ! flock -n 7; then
		echo "# waiting for another VM tier script (/run/provision-vm.lock)"
		flock -w "${PROVISION_VM_LOCK_TIMEOUT:-1800}" 7 ||
			test_skip_all "another VM tier run held /run/provision-vm.lock for ${PROVISION_VM_LOCK_TIMEOUT:-1800} s"
	fi
}

vm_up() {
	VM=$TEST_DIR/vm
	test_at_exit "bash '$VMSH' down '$VM'"
	vm_t0=$(date +%s)
	if ! bash "$VMSH" up "$VM" "$@" >"$TEST_DIR/vm-up.log" 2>&1 7>&-; then
		echo "# vm.sh up failed:"
		sed 's/^/#   /' "$TEST_DIR/vm-up.log"
		exit 1
	fi
	sed -n 's/^vm: /# vm: /p' "$TEST_DIR/vm-up.log"
	vm_time "vm up" "$vm_t0"
	VM_INV=$VM/inventory.yaml
	# shellcheck source=/dev/null
	. "$VM/vm.env"
}

vm() {
	bash "$VMSH" "$@" 7>&-
}

on() {
	ssh -F "$VM/ssh_config" "$1" "$2" </dev/null 3>&- 7>&-
}

vm_time() {
	echo "# time: $1 $(($(date +%s) - $2)) s"
}

pv() {
	pv_cmd=$1
	shift
	"$PROVISION" "$pv_cmd" -i "$VM_INV" --roles "$SRC_ROOT/roles" --no-tui "$@"
}

pv_json() {
	pv_out=$1
	shift
	pv_cmd=$1
	shift
	"$PROVISION" "$pv_cmd" -i "$VM_INV" --roles "$SRC_ROOT/roles" --no-tui -o json "$@" >"$pv_out" 2>"$pv_out.err"
}

# The TAP stream, for note() inside test bodies (lib.sh sends their output
# to a file and shows it only on failure).
exec 3>&1
note() {
	sed "s|^|# $1: |" "$2" >&3
}
