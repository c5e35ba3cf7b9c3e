# nvidia 10-driver: the driver is loaded, nvidia-smi answers, the driver is
# at least the minimum for the CUDA major version the cluster's images use,
# and it sees every NVIDIA GPU on the PCI bus (and as many as the inventory
# declares, when provision passes PROVISION_GPUS_DECLARED).
#
# Nothing here can be fixed by this role (it does not install drivers), so a
# problem is a failed check (exit 2) with a hint, and apply is never needed.
#
# Minimum driver per CUDA major version, from NVIDIA's CUDA Toolkit Release
# Notes, table "CUDA Toolkit and Minimum Required Driver Version for CUDA
# Minor Version Compatibility" (Linux x86_64): CUDA 12.x >= 525.60.13,
# CUDA 11.x >= 450.80.02.  A CUDA 12.N image may need the driver of its own
# release for new features (12.4 GA shipped 550.54.14), but runs on 525.60.13
# under minor version compatibility.  The GPU Operator's platform-support
# page lists the data-center driver branches it ships as containers; with
# driver.enabled=false it runs on the host driver, so the CUDA minimum of
# the images is the limit that applies here.
# The cluster's images (the CUDA notebook images of JupyterHub, the GPU
# Operator's validators) are CUDA 12 builds.
set -eu
CUDA_MAJOR=12

min_driver() {
	case $1 in
	11) echo 450.80.02 ;;
	12) echo 525.60.13 ;;
	*) return 1 ;;
	esac
}

# NVIDIA display controllers (class 0x03xxxx: VGA and 3D) on the PCI bus.
pci_gpus() {
	n=0
	for d in /sys/bus/pci/devices/*; do
		[ -r "$d/vendor" ] || continue
		[ "$(cat "$d/vendor")" = 0x10de ] || continue
		case $(cat "$d/class") in 0x03*) n=$((n + 1)) ;; esac
	done
	echo "$n"
}

# at_least HAVE WANT: version HAVE >= WANT (dotted numbers).
at_least() {
	[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$2" ]
}

# Why nvidia-smi does not answer, as far as the node tells.
diagnose() {
	if [ -d /sys/module/nouveau ]; then
		pv_hint "the nouveau driver is loaded instead: blacklist it (/etc/modprobe.d/blacklist-nouveau.conf: blacklist nouveau, options nouveau modeset=0), update-initramfs -u, reboot"
	elif [ ! -d /sys/module/nvidia ]; then
		if command -v mokutil >/dev/null 2>&1 && mokutil --sb-state 2>/dev/null | grep -q enabled; then
			pv_hint "Secure Boot is on and the nvidia module is not loaded: enrol the driver's MOK key (mokutil --import, then confirm at the next boot) or sign the module; dmesg shows 'Key was rejected by service' when this is the cause"
		else
			pv_hint "the nvidia kernel module is not loaded: after a kernel update DKMS must rebuild it (dkms status; apt-get install --reinstall the driver's nvidia-dkms package), then modprobe nvidia or reboot"
		fi
	elif printf '%s' "$1" | grep -qi 'version mismatch'; then
		pv_hint "the driver libraries were upgraded under the loaded module: reboot the node (the 20-hold step of this role prevents it next time)"
	else
		pv_hint "see dmesg | grep -i nvrm on the node"
	fi
}

case ${1:-} in
check)
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		echo "nvidia-smi not found: no NVIDIA driver installed"
		pv_hint "install the NVIDIA driver on this node (Ubuntu: ubuntu-drivers install, or apt-get install nvidia-driver-NNN; Debian: nvidia-driver from non-free), reboot, then run provision again"
		exit 2
	fi
	if ! out=$(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1); then
		printf '%s\n' "$out"
		diagnose "$out"
		exit 2
	fi
	printf '%s\n' "$out"
	driver=$(printf '%s\n' "$out" | head -n 1 | awk -F', *' '{ print $3 }')
	found=$(printf '%s\n' "$out" | grep -c .)
	want=$(min_driver "$CUDA_MAJOR") || {
		echo "no minimum driver known for CUDA $CUDA_MAJOR"
		exit 2
	}
	if ! at_least "$driver" "$want"; then
		echo "driver $driver is older than $want, the minimum for CUDA $CUDA_MAJOR.x"
		pv_hint "install a driver of version $want or later (the minimum for CUDA $CUDA_MAJOR.x), reboot, then run provision again"
		exit 2
	fi
	echo "driver $driver >= $want (CUDA $CUDA_MAJOR.x)"
	pci=$(pci_gpus)
	if [ "$found" != "$pci" ]; then
		echo "nvidia-smi lists $found GPU(s), the PCI bus has $pci NVIDIA GPU(s)"
		pv_hint "a GPU the driver does not handle: see nvidia-smi -q and dmesg | grep -i nvrm (an unsupported GPU for this driver branch, or a GPU that fell off the bus)"
		exit 2
	fi
	declared=${PROVISION_GPUS_DECLARED:-}
	if [ -n "$declared" ] && [ "$declared" != "$found" ]; then
		echo "the inventory declares gpus: $declared, the node has $found"
		pv_hint "correct gpus: for $PROVISION_NODE in the inventory, or find the missing GPU"
		exit 2
	fi
	echo "$found GPU(s)${declared:+, as the inventory declares}"
	exit 0
	;;
apply)
	echo "this step only checks; the driver is the admin's to install"
	exit 1
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
