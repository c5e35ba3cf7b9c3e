# remove-node 05-quorum: with several control planes, removing the named
# control planes leaves etcd a safe majority; otherwise the removal is
# refused before anything is done (provision remove-node exits 2).
#
# etcd writes need a majority of its members, and removing a member is
# itself a write.  Refused when fewer than 2 members would be left (from 2,
# removing one needs both and leaves a single member: no loss survivable),
# or when the members left that answer their health check would not be a
# majority of the members left (the cluster would stop at once).  The
# members and their health are etcd's own (`etcdctl member list`,
# `endpoint health` of each member's client URL), not the inventory's.
# Nothing to do when no named node is a control plane (or the cluster has
# one control plane: PROVISION_CONTROL_PLANES is given with an api_endpoint).
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

removing=
for n in $PROVISION_REMOVE_NODES; do
	case " ${PROVISION_CONTROL_PLANES:-} " in *" $n="*) removing="${removing:+$removing }$n" ;; esac
done

# verdict: prints why; 0 keeps quorum, 1 refused, 2 etcd not readable
verdict() {
	if [ -z "$removing" ]; then
		echo "no control plane among $PROVISION_REMOVE_NODES: etcd's members stay"
		return 0
	fi
	if ! command -v etcdctl >/dev/null 2>&1; then
		pv_hint "install etcdctl on $PROVISION_NODE (Debian: apt-get install etcd-client; or etcdctl from etcd's release archive of the cluster's etcd version)"
		echo "etcdctl is not on $PROVISION_NODE: etcd's members are read with it"
		return 2
	fi
	if ! members=$(pv_etcd_members 2>&1) || [ -z "$members" ]; then
		pv_hint "is etcd running on $PROVISION_NODE? 'crictl ps -a --name etcd' and its logs there; port 2379"
		echo "etcd on $PROVISION_NODE does not list its members: $(printf '%s\n' "$members" | head -n 2 | tr '\n' ' ')"
		return 2
	fi
	total=0 left=0 healthy=0 names='' down=''
	while read -r _ name client status _; do
		total=$((total + 1))
		names="${names:+$names, }$name"
		case " $removing " in *" $name "*) continue ;; esac
		left=$((left + 1))
		if [ "$status" = started ] && [ "$client" != - ] &&
			pv_etcdctl "${client%%,*}" endpoint health >/dev/null 2>&1; then
			healthy=$((healthy + 1))
		else
			down="${down:+$down, }$name"
		fi
	done <<MEMBERS
$(printf '%s\n' "$members" | sort -k 2)
MEMBERS
	if [ "$left" -lt 2 ]; then
		echo "etcd has $total member(s) ($names): removing $removing would leave $left of $total, a single member that survives no loss (and removing a member of 2 needs both)"
		pv_hint "add a control plane first (provision add-node NAME), then remove; or take the whole cluster down with provision reset"
		return 1
	fi
	if [ $((healthy * 2)) -le "$left" ]; then
		echo "etcd has $total members ($names): of the $left left after removing $removing only $healthy answer ($down do not): not a majority, etcd would stop"
		pv_hint "bring $down back first (provision check names what is wrong), then remove"
		return 1
	fi
	echo "etcd keeps a majority: $healthy of the $left members left after removing $removing answer ($total now: $names)"
}

case ${1:-} in
check)
	verdict
	;;
apply)
	verdict || true
	exit 1
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
