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
#       look; a drop while the kubelet's and containerd's cgroup drivers
#       disagree fails at once (that mismatch kills the containers again and
#       again: more drops would tell nothing new).
# Then the control plane's other static pods (etcd, kube-controller-manager,
# kube-scheduler; the controller manager signs the join tokens) must be
# Ready, waited for at most COMPONENTS_DEADLINE=250 s with a progress line
# every 10 s.  Why 250 s: kubeadm's static pods have a startup probe with
# initialDelaySeconds 10, periodSeconds 10 and failureThreshold 24, so the
# kubelet gives a component 10 + 24 x 10 = 250 s to start before it kills
# it; a slow lab PC (etcd replaying its log, a busy disk) needs tens of
# seconds, and the kubelet posts their mirror pods seconds after they run.
# Past 250 s waiting cannot help: the component crash-loops.
# `check` (also `provision plan`) asks /readyz once, needs the components
# Ready and the gate passed since the last init.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ADMIN=/etc/kubernetes/admin.conf
GATE=$PROVISION_STATE_DIR/kubeadm-init.gate
CHECKS=10
INTERVAL=2
MAX_DROPS=3
DEADLINE=120
COMPONENTS_DEADLINE=250

readyz() { # -> "ok" or the error, one line
	kubectl --kubeconfig="$ADMIN" --request-timeout=5s get --raw /readyz 2>&1 | head -n 1
}

# The control-plane static pods of this node, besides the API server (which
# /readyz covers), that are not Ready (with their pod's phase), or "".
components_down() {
	kubectl --kubeconfig="$ADMIN" --request-timeout=5s -n kube-system get pods -l tier=control-plane \
		-o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null |
		awk -F '|' -v n="-$PROVISION_NODE" '
			{ ok[$1] = ($2 == "True"); seen[$1] = 1 }
			END {
				split("etcd kube-controller-manager kube-scheduler", c, " ")
				for (i = 1; i <= 3; i++)
					if (!ok[c[i] n]) { printf "%s%s%s", sep, c[i], seen[c[i] n] ? "" : " (no mirror pod yet)"; sep = ", " }
			}'
}

# Wait until every component is Ready; exit 1 with where to look if not.
wait_components() {
	t0=$(date +%s)
	next=10
	while :; do
		down=$(components_down)
		t=$(($(date +%s) - t0))
		if [ -z "$down" ]; then
			echo "etcd, kube-controller-manager and kube-scheduler Ready after ${t}s"
			return 0
		fi
		if [ "$t" -ge "$COMPONENTS_DEADLINE" ]; then
			crictl ps -a 2>/dev/null | grep -E 'CONTAINER|etcd|kube-controller-manager|kube-scheduler' | head -n 6 || true
			pv_hint "the kubelet kills a component whose startup probe has not passed in 250 s: 'crictl ps -a' (restarts in the ATTEMPT column), 'crictl logs' of it and 'journalctl -u kubelet' on $PROVISION_NODE"
			echo "not Ready after ${COMPONENTS_DEADLINE}s: $down"
			exit 1
		fi
		if [ "$t" -ge "$next" ]; then
			echo "waiting for the control plane's components (${t}s of at most ${COMPONENTS_DEADLINE}s): not Ready yet: $down"
			next=$((next + 10))
		fi
		sleep 2
	done
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

same() { [ "$1" = "$2" ]; }

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
	down=$(components_down)
	if [ -n "$down" ]; then
		echo "/readyz ok; not Ready: $down"
		exit 1
	fi
	echo "/readyz ok; stability gate passed; etcd, kube-controller-manager and kube-scheduler Ready"
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
				wait_components
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
			# A drop with the cgroup drivers disagreeing is that mismatch:
			# waiting for more drops would only repeat it.
			# shellcheck disable=SC2046 # two words
			if [ "$drops" -ge "$MAX_DROPS" ] || { [ "$drops" -gt 0 ] && ! same $(drivers); }; then
				n="$drops times"
				[ "$drops" != 1 ] || n=once
				explain "/readyz went from ok to failing $n in ${t}s (last: $last)"
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
