# reset-verify 10-verify: everything a reset must leave behind it, checked
# on the node; each line says "verified" or "NOT clean".  Besides
# Kubernetes' own: what provision's use of the cluster made (issue 33):
# kubectl's and helm's cache ($KUBECACHEDIR or ~/.kube/cache), the add-ons'
# files in /etc/provision, the folders provision made for what it installed
# (the hub's database) and its records of the cluster in /var/lib/provision.
set -eu
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d : -f 6)}
PORTS="6443 2379 2380 10250 10257 10259 10256"
PROCS="kubelet kube-apiserver kube-controller-manager kube-scheduler etcd kube-proxy flanneld"

listening() { # ports in LISTEN state (/proc/net/tcp, tcp6: state 0A)
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" { split($2, a, ":"); print a[2] }' |
		while read -r hex; do printf '%d\n' "0x$hex"; done | sort -u
}

processes() { # command names and program paths of every process
	for d in /proc/[0-9]*; do
		comm=$(cat "$d/comm" 2>/dev/null) || continue
		# argv[0] and argv[1] (a script run by its interpreter)
		a0=$(tr '\0' '\n' <"$d/cmdline" 2>/dev/null | sed -n 1p) || a0=
		a1=$(tr '\0' '\n' <"$d/cmdline" 2>/dev/null | sed -n 2p) || a1=
		echo "$comm ${a0##*/} ${a1##*/}"
	done
}

verify() {
	bad=0
	busy=$(listening)
	for p in $PORTS; do
		if printf '%s\n' "$busy" | grep -qx "$p"; then
			echo "NOT clean: port $p is listening"
			bad=1
		fi
	done
	[ "$bad" = 1 ] || echo "verified: ports $PORTS free"
	procs=$(processes)
	found=
	for n in $PROCS; do
		if printf '%s\n' "$procs" | grep -qw -e "$n"; then
			found="$found $n"
		fi
	done
	if [ -n "$found" ]; then
		echo "NOT clean: running:$found"
		bad=1
	else
		echo "verified: no $PROCS process"
	fi
	dirty=
	for d in /etc/kubernetes/pki /etc/kubernetes/manifests /var/lib/etcd /var/lib/kubelet /var/lib/cni /run/flannel; do
		if [ -d "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null)" ]; then
			dirty="$dirty $d"
		fi
	done
	for f in /etc/kubernetes/admin.conf /etc/kubernetes/kubelet.conf /etc/cni/net.d/*flannel*; do
		[ ! -e "$f" ] || dirty="$dirty $f"
	done
	if [ -n "$dirty" ]; then
		echo "NOT clean: still there:$dirty"
		bad=1
	else
		echo "verified: kubeadm's and the CNI's files and folders gone or empty"
	fi
	left=
	c=${KUBECACHEDIR:-$HOME/.kube/cache}
	[ ! -e "$c" ] || left="$left $c"
	if [ -d /etc/provision ]; then
		f=$(find /etc/provision -mindepth 1 ! -type d 2>/dev/null | head -n 3 | paste -sd ' ' -)
		[ -z "$f" ] || left="$left $f"
	fi
	for d in $(pv_managed_dirs | cut -f 1) "$PROVISION_STATE_DIR/jupyterhub" "$PROVISION_STATE_DIR/kubeadm-init.gate"; do
		[ ! -e "$d" ] || left="$left $d"
	done
	for d in "$PROVISION_STATE_DIR/helm" "$PROVISION_STATE_DIR/charts"; do
		if [ -d "$d" ] && [ -n "$(ls -A "$d" 2>/dev/null)" ]; then
			left="$left $d"
		fi
	done
	if [ -n "$left" ]; then
		echo "NOT clean: provision's use of the cluster left:$left"
		bad=1
	else
		echo "verified: no kubectl cache, no /etc/provision file, no cluster record of provision's"
	fi
	ifs=
	for i in cni0 flannel.1; do
		! ip link show dev "$i" >/dev/null 2>&1 || ifs="$ifs $i"
	done
	if [ -n "$ifs" ]; then
		echo "NOT clean: interfaces:$ifs"
		bad=1
	else
		echo "verified: no cni0, flannel.1"
	fi
	chains=
	for t in iptables ip6tables; do
		command -v "$t-save" >/dev/null 2>&1 || continue
		c=$("$t-save" 2>/dev/null | sed -n 's/^:\([^ ]*\) .*/\1/p' | grep -E '^(KUBE-|FLANNEL-|CNI-)' | paste -sd ' ' -) || true
		[ -z "$c" ] || chains="$chains $t: $c"
	done
	if [ -n "$chains" ]; then
		echo "NOT clean: iptables chains:$chains"
		bad=1
	else
		echo "verified: no KUBE-*, FLANNEL-*, CNI-* iptables chains"
	fi
	if [ -d /run/systemd/system ]; then
		a=$(systemctl is-active kubelet 2>/dev/null || true)
		e=$(systemctl is-enabled kubelet 2>/dev/null || true)
		case $a in
		active | activating | reloading)
			echo "NOT clean: kubelet.service is $a"
			bad=1
			;;
		*) echo "verified: kubelet.service ${e:-not installed}, ${a:-inactive}" ;;
		esac
	fi
	return $bad
}

case ${1:-} in
check)
	verify
	;;
apply)
	# Nothing to apply: the reset left something; say what (the NOT clean
	# lines last: the failed step shows its last line), and fail.
	out=$(verify) || true
	printf '%s\n' "$out" | grep -v '^NOT clean' || true
	printf '%s\n' "$out" | grep '^NOT clean' || true
	pv_hint "run provision reset again; if the same item stays on $PROVISION_NODE, it is not provision's (another CNI, a process started by hand, a file put there by hand): remove it there"
	exit 1
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
