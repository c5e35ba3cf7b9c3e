# jupyterhub 30-install: the release jhub (namespace jhub) is deployed from
# the pinned chart with exactly this run's values.yaml and secrets.yaml.
#
# `helm upgrade --install --wait` (the chart's hub and proxy Deployments
# ready) with the rendered values and the node's own secrets file, never
# --set strings.  What was last installed is remembered in STAMP: the
# SHA-256 of the chart archive, values.yaml and secrets.yaml, and the
# release revision it made.  `check` passes when the release is deployed at
# that revision with those files (nobody upgraded it by hand since);
# otherwise `apply` upgrades it -- after add-node, the profiles in
# values.yaml changed and the hub restarts with the new list.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export KUBECONFIG=/etc/kubernetes/admin.conf
DIR=/etc/provision/jupyterhub
VALUES=$DIR/values.yaml
SECRETS=$DIR/secrets.yaml
CHART=${PROVISION_CHART_JUPYTERHUB:-/var/lib/provision/artifacts/jupyterhub-3.3.8.tgz}
VERSION=${PROVISION_CHART_JUPYTERHUB_VERSION:-3.3.8}
STAMP=/var/lib/provision/jupyterhub.installed
RELEASE=jhub
NS=jhub
TIMEOUT=20m

want() {
	cat "$CHART" "$VALUES" "$SECRETS" | sha256sum | cut -d ' ' -f 1
}

# "STATUS REVISION" of the release, nothing when it does not exist; exit 2
# when helm cannot answer.  (`helm list`, not `helm status -o json`: the
# latter prints the release's values, secrets included.)
release() {
	l=$(helm list -n "$NS" -o json) || return 2
	printf '%s\n' "$l" | tr '{' '\n' |
		sed -n "s/.*\"name\":\"$RELEASE\".*\"revision\":\"\([0-9]*\)\".*\"status\":\"\([a-z-]*\)\".*/\2 \1/p"
}

for f in "$CHART" "$VALUES" "$SECRETS"; do
	if [ ! -f "$f" ]; then
		echo "$f is missing"
		pv_hint "the jupyterhub role's earlier steps and templates make it: run provision up again"
		exit 2
	fi
done

case ${1:-} in
check)
	if ! r=$(release); then
		pv_hint "helm cannot reach the cluster on $PROVISION_NODE: kubectl get nodes"
		exit 2
	fi
	if [ -z "$r" ]; then
		echo "release $RELEASE is not installed"
		exit 1
	fi
	if [ "${r% *}" != deployed ]; then
		echo "release $RELEASE is ${r% *} (revision ${r#* }), not deployed"
		exit 1
	fi
	if [ "$(cat "$STAMP" 2>/dev/null)" != "$(want) ${r#* }" ]; then
		echo "release $RELEASE (revision ${r#* }) was not installed with this chart and these values"
		exit 1
	fi
	echo "release $RELEASE deployed (revision ${r#* }) with this chart and these values"
	;;
apply)
	if ! helm upgrade --install "$RELEASE" "$CHART" --version "$VERSION" -n "$NS" --create-namespace \
		-f "$VALUES" -f "$SECRETS" --wait --timeout "$TIMEOUT"; then
		pv_hint "see why the hub did not become ready: kubectl -n $NS get pods; kubectl -n $NS logs deploy/hub"
		exit 1
	fi
	r=$(release)
	printf '%s %s\n' "$(want)" "${r#* }" | pv_write "$STAMP" 0644
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
