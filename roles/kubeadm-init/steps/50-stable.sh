# kubeadm-init 50-stable: the new control plane stays up -- the stability
# gate.
#
# kubeadm init reports a healthy API server as soon as /healthz answers
# once; with a cgroup driver mismatch between the kubelet and containerd
# (or another crash loop of etcd or kube-apiserver) it answers for a few
# seconds, then the containers are killed and restarted with a growing
# back-off, and everything after init fails at random.  So after each init
# (30-init leaves /var/lib/provision/kubeadm-init.gate) `apply` asks
# /readyz CHECKS times in a row, INTERVAL seconds apart, and passes only if
# every answer is "ok":
#   CHECKS=10, INTERVAL=2 s  -> 10 answers over 18 s.  Kubelet restarts of a
#       crash-looping container start 10 s after the crash, so a loop shows
#       within two periods; a healthy API answers in milliseconds.
#   a failed answer after an "ok" is a drop; the count starts again.
#   MAX_DROPS=3 drops, or DEADLINE=120 s without a full streak: failure,
#       with the likely cause (the cgroup drivers are compared) and where to
#       look.
# `check` (also `provision plan`) asks /readyz once and needs the gate
# passed since the last init.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
GATE=$PROVISION_STATE_DIR/kubeadm-init.gate
CHECKS=10
INTERVAL=2
MAX_DROPS=3
DEADLINE=120

readyz() { # -> "ok" or the error, one line
	kubectl --kubeconfig="$ADMIN" --request-timeout=5s get --raw /readyz 2>&1 | head -n 1
}

# The cgroup driver of the kubelet and of containerd's runc, "kubelet runtime".
drivers() {
	k=$(sed -n 's/^cgroupDriver:[[:space:]]*//p' /var/lib/kubelet/config.yaml 2>/dev/null | tr -d '"')
	r=cgroupfs
	if containerd config dump 2>/dev/null | grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true'; then
		r=systemd
	fi
	echo "${k:-cgroupfs} $r"
}

explain() { # WHAT
	# shellcheck disable=SC2046 # two words
	set -- "$1" $(drivers)
	if [ "$2" != "$3" ]; then
		pv_hint "give containerd SystemdCgroup = true (provision up --phases prep, the containerd role) and the kubelet cgroupDriver: systemd, then restart both; 'journalctl -u kubelet' on $PROVISION_NODE shows 'Pod sandbox changed, it will be killed and re-created'"
		echo "the control plane is not stable: $1; likely cause: a cgroup driver mismatch -- the kubelet uses $2, containerd's runc uses $3, so the control plane's containers are killed and re-created"
	else
		crictl ps -a 2>/dev/null | grep -E 'CONTAINER|kube-apiserver|etcd' | head -n 5 || true
		pv_hint "look at 'crictl ps -a' (restarts in the ATTEMPT column), 'crictl logs' of kube-apiserver and etcd, and 'journalctl -u kubelet' on $PROVISION_NODE"
		echo "the control plane is not stable: $1; likely cause: a crash loop of kube-apiserver or etcd (the cgroup drivers agree: $2)"
	fi
}

case ${1:-} in
check)
	r=$(readyz)
	if [ "$r" != ok ]; then
		echo "/readyz: $r"
		exit 1
	fi
	if [ -f "$GATE" ]; then
		echo "/readyz ok, but the control plane has not passed the stability gate since kubeadm init"
		exit 1
	fi
	echo "/readyz ok; stability gate passed"
	;;
apply)
	start=$(date +%s)
	streak=0
	drops=0
	first=
	last=
	while :; do
		r=$(readyz)
		t=$(($(date +%s) - start))
		if [ "$r" = ok ]; then
			[ -n "$first" ] || {
				first=$t
				echo "/readyz ok after ${t}s"
			}
			streak=$((streak + 1))
			if [ "$streak" -ge "$CHECKS" ]; then
				echo "/readyz answered ok $CHECKS times in a row over $(((CHECKS - 1) * INTERVAL))s"
				rm -f "$GATE"
				exit 0
			fi
		else
			last=$r
			if [ "$streak" -gt 0 ]; then
				drops=$((drops + 1))
				echo "/readyz failed at ${t}s after $streak ok answers: $r"
			fi
			streak=0
			if [ "$drops" -ge "$MAX_DROPS" ]; then
				explain "/readyz went from ok to failing $drops times in ${t}s (last: $last)"
				exit 1
			fi
		fi
		if [ "$t" -ge "$DEADLINE" ]; then
			if [ -z "$first" ]; then
				explain "/readyz never answered ok in ${DEADLINE}s (last: $last)"
			else
				explain "/readyz did not answer ok $CHECKS times in a row within ${DEADLINE}s ($drops drops; last failure: $last)"
			fi
			exit 1
		fi
		sleep "$INTERVAL"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
