# jupyterhub 30-install: the release jhub (namespace jhub) is deployed from
# the pushed chart (roles/artifacts.yaml: jupyterhub-chart) with exactly
# this run's values.yaml and the node's own secrets.yaml.
#
# pv_helm_state / pv_helm_install (roles/lib.sh): `helm upgrade --install
# --wait` (the hub's readiness probe, /hub/health, answers) with both
# values files, never --set strings; the stamp of the chart and of both
# files tells `check` whether the release is what they say.  After
# add-node the profiles in values.yaml changed: one upgrade, and the hub
# restarts with the new list.  jupyterhub.chart_version, when the
# inventory pins one, must be the pushed chart's version.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
DIR=/etc/provision/jupyterhub
VALUES=$DIR/values.yaml
SECRETS=$DIR/secrets.yaml
CHART=/var/lib/provision/charts/jupyterhub.tgz
RELEASE=jhub
NS=jhub
TIMEOUT=20m

if [ -n "${PROVISION_HUB_CHART_VERSION:-}" ] && [ -f "$CHART" ]; then
	have=$(tar -xzOf "$CHART" jupyterhub/Chart.yaml 2>/dev/null | sed -n 's/^version: *["'\'']*\([^"'\'' ]*\).*/\1/p')
	if [ "$have" != "$PROVISION_HUB_CHART_VERSION" ]; then
		echo "jupyterhub.chart_version is $PROVISION_HUB_CHART_VERSION but the pinned chart is $have"
		pv_hint "pin $have in the inventory, or change jupyterhub-chart in roles/artifacts.yaml (URL and SHA-256) to $PROVISION_HUB_CHART_VERSION"
		exit 2
	fi
fi

case ${1:-} in
check)
	rc=0
	pv_helm_state "$RELEASE" "$NS" "$CHART" "$VALUES" "$SECRETS" || rc=$?
	exit $rc
	;;
apply)
	pv_helm_install "$RELEASE" "$NS" "$CHART" "$VALUES" "$TIMEOUT" "$SECRETS" || {
		# pv_helm_install named what the wait waited for when the pods say
		[ -n "${PV_HELM_WHY:-}" ] || pv_hint "the hub did not become ready: kubectl -n $NS get pods; kubectl -n $NS logs deploy/hub"
		exit 1
	}
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
