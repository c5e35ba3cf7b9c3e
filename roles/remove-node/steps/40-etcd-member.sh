# remove-node 40-etcd-member: the removed control planes are no etcd
# members any more, as etcd's own list on this control plane says.  Done
# here (`etcdctl member remove ID`, kubeadm's documented way for a member
# left behind) before the node itself is reset, so a node that is dead
# (--force) or whose `kubeadm reset` cannot reach etcd leaves no member
# that would count against the majority; the node's `kubeadm reset` then
# finds no member of its own to remove and deletes its etcd data.
# 05-quorum checked first that the majority stays.  Nothing to do when no
# named node is a control plane.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

removing=
for n in $PROVISION_REMOVE_NODES; do
	case " ${PROVISION_CONTROL_PLANES:-} " in *" $n="*) removing="${removing:+$removing }$n" ;; esac
done
[ -n "$removing" ] || {
	echo "no control plane among $PROVISION_REMOVE_NODES: no etcd member to remove"
	exit 0
}

# m: "ID NAME CLIENT STATUS LEARNER" per member, read again by load
load() {
	if ! m=$(pv_etcd_members 2>&1); then
		pv_hint "is etcd running on $PROVISION_NODE? 'crictl ps -a --name etcd' and its logs there; port 2379"
		echo "etcd on $PROVISION_NODE does not list its members: $(printf '%s\n' "$m" | head -n 2 | tr '\n' ' ')"
		exit 1
	fi
	# "ID NAME" of the removed nodes' members
	s=$(printf '%s\n' "$m" | awk -v r=" $removing " 'index(r, " " $2 " ") { print $1, $2 }')
	names=$(printf '%s\n' "$m" | awk '{ print $2 }' | sort | paste -sd ' ' -)
}

case ${1:-} in
check)
	load
	if [ -n "$s" ]; then
		echo "etcd members still: $(printf '%s\n' "$s" | awk '{ print $2 " (" $1 ")" }' | paste -sd ' ' -)"
		exit 1
	fi
	echo "not etcd members: $removing; members: $names"
	;;
apply)
	load
	printf '%s\n' "$s" | while read -r id name; do
		[ -n "$id" ] || continue
		echo "etcdctl member remove $id ($name)"
		pv_etcdctl member remove "$id" >/dev/null
	done
	load
	if [ -n "$s" ]; then
		echo "still etcd members after member remove: $s"
		exit 1
	fi
	echo "members left: $names"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
