# nfs-provisioner 30-trial-claim: after each install or upgrade of the
# release, a claim without a StorageClass (so: the default, nfs) reached
# Bound, and was deleted again.  /var/lib/provision/helm/nfs-trial records
# the release stamp it was made for and what happened; `check` compares
# stamps and never makes a claim.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
KC="kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s"
STAMP=$PROVISION_STATE_DIR/helm/nfs-provisioner.nfs-subdir-external-provisioner
TRIAL=$PROVISION_STATE_DIR/helm/nfs-trial
NS=nfs-provisioner
CLAIM=provision-trial-claim
TIMEOUT=120

case ${1:-} in
check)
	if [ ! -f "$STAMP" ]; then
		echo "the release is not installed yet"
		exit 1
	fi
	if [ "$(head -n 1 "$TRIAL" 2>/dev/null)" = "$(cat "$STAMP")" ]; then
		sed -n 2p "$TRIAL"
		exit 0
	fi
	echo "no trial claim since the release was last installed"
	exit 1
	;;
apply)
	$KC -n "$NS" delete pvc "$CLAIM" --ignore-not-found --wait=false >/dev/null
	$KC -n "$NS" create -f - <<-EOT
		apiVersion: v1
		kind: PersistentVolumeClaim
		metadata:
		  name: $CLAIM
		  labels:
		    app.kubernetes.io/managed-by: provision
		spec:
		  accessModes: [ReadWriteMany]
		  resources:
		    requests:
		      storage: 1Mi
	EOT
	start=$(date +%s)
	while :; do
		phase=$($KC -n "$NS" get pvc "$CLAIM" -o 'jsonpath={.status.phase}')
		[ "$phase" = Bound ] && break
		if [ $(($(date +%s) - start)) -ge "$TIMEOUT" ]; then
			$KC -n "$NS" delete pvc "$CLAIM" --ignore-not-found --wait=false >/dev/null || true
			echo "the trial claim is still ${phase:-unknown} after ${TIMEOUT}s"
			pv_hint "kubectl -n $NS logs deploy/nfs-subdir-external-provisioner on $PROVISION_NODE; the export must be writable by root from the nodes (no_root_squash)"
			exit 1
		fi
		sleep 2
	done
	took=$(($(date +%s) - start))
	class=$($KC -n "$NS" get pvc "$CLAIM" -o 'jsonpath={.spec.storageClassName}')
	vol=$($KC -n "$NS" get pvc "$CLAIM" -o 'jsonpath={.spec.volumeName}')
	$KC -n "$NS" delete pvc "$CLAIM"
	line="trial claim bound in ${took}s to $vol (StorageClass ${class:-none}), then deleted"
	echo "$line"
	printf '%s\n%s\n' "$(cat "$STAMP")" "$line" | pv_write "$TRIAL" 0644
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
