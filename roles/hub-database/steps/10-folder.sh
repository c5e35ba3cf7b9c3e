# hub-database 10-folder: /var/lib/provision/jupyterhub (0700, uid 1000:
# the chart's hub container runs as 1000) holds the hub's SQLite database
# on this node's own disk (the hub's values mount it as a hostPath).  It
# is a folder provision makes (pv_managed_dir, with the names the hub
# writes there: jupyterhub.sqlite, its journal and the backups
# `jupyterhub --upgrade-db` makes, jupyterhub.sqlite.DATE): provision
# reset removes it with the cluster, as kubeadm reset removes etcd's data,
# and keeps it, failing, when anything else is in it.  The users' files
# are not there (their homes are on the NFS export).
#
# The running hub elsewhere: when the cluster's hub Deployment (namespace
# jhub) is pinned to another node and this node holds no database, the
# step fails (check says so, apply exits 1) and nothing is changed: the
# hub stays where it is with its database.  The node's name read from the
# API is checked to be a Kubernetes node name before it is printed.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
DB=/var/lib/provision/jupyterhub
HUB_UID=1000
ADMIN=/etc/kubernetes/admin.conf
ME=$PROVISION_NODE

db_ok() {
	[ -d "$DB" ] && [ "$(stat -c %a:%u "$DB")" = "700:$HUB_UID" ] &&
		# an older provision noted it as a managed file: apply moves it
		! pv_managed_files | grep -qxF "$DB"
}

# AT: the node the running hub is pinned to ('' when there is no hub
# yet); 1, saying why, when the API does not say.
running_on() {
	AT=
	if ! out=$(kubectl --kubeconfig="$ADMIN" --request-timeout=20s -n jhub get deployment hub \
		--ignore-not-found -o 'jsonpath={.spec.template.spec.nodeSelector.kubernetes\.io/hostname}' 2>&1); then
		echo "cannot ask the cluster where the hub runs: $(printf '%s' "$out" | head -c 300 | tr -c '[:print:]' ' ')"
		pv_hint "on $ME: kubectl --kubeconfig=$ADMIN -n jhub get deployment hub; then provision up"
		return 1
	fi
	# a node name: DNS labels, at most 253 characters; else not shown
	case $out in
	*[!a-z0-9.-]* | -* | .*) bad=1 ;;
	*) [ "${#out}" -le 253 ] && bad=0 || bad=1 ;;
	esac
	if [ "$bad" = 1 ]; then
		echo "the hub's Deployment is pinned to something that is not a node name (not shown)"
		pv_hint "on $ME: kubectl --kubeconfig=$ADMIN -n jhub get deployment hub -o yaml; then provision up"
		return 1
	fi
	AT=$out
}

# 1, saying why, when the hub runs on another node and this one has no
# database (or the API does not say where it runs).
not_left_behind() {
	[ -f "$ADMIN" ] || return 0
	running_on || return 1
	if [ -n "$AT" ] && [ "$AT" != "$ME" ] && [ ! -s "$DB/jupyterhub.sqlite" ]; then
		echo "the hub runs on $AT with its database there ($DB/jupyterhub.sqlite); the inventory puts it on $ME (jupyterhub.node, or its default), which has none: moved, the hub would start with an empty database (its users and sign-ups lost); nothing was changed"
		pv_hint "to keep the hub on $AT, set jupyterhub.node: $AT in the inventory and run provision up; to move it, stop it (kubectl -n jhub scale deployment hub --replicas=0), copy $DB/jupyterhub.sqlite from $AT to $ME (same folder, owner $HUB_UID, mode 0600), then run provision up"
		return 1
	fi
	return 0
}

case ${1:-} in
check)
	rc=0
	not_left_behind || exit 1
	if db_ok; then
		echo "hub database folder $DB"
	else
		echo "no hub database folder $DB (0700, uid $HUB_UID)"
		rc=1
	fi
	exit $rc
	;;
apply)
	not_left_behind || exit 1
	pv_managed_dir "$DB" 0700 "$HUB_UID:$HUB_UID" 'jupyterhub.sqlite*'
	echo "hub database folder $DB"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
