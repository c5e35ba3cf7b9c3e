# containerd-release 20-service: systemd runs containerd from
# /usr/local/bin (the unit of templates/containerd.service.tmpl) and the
# running daemon is the installed binary, not a distribution's
# /usr/bin/containerd nor a binary replaced since it started.  Restarting
# containerd leaves running containers alone (KillMode=process: the shims
# stay); roles/containerd then writes the version 3 configuration and
# restarts it once more if the configuration changed.
set -eu

running_binary() {
	pid=$(systemctl show -p MainPID --value containerd 2>/dev/null) || pid=0
	[ "${pid:-0}" != 0 ] && readlink "/proc/$pid/exe"
}

case ${1:-} in
check)
	if [ "$(systemctl show -p FragmentPath --value containerd)" != /etc/systemd/system/containerd.service ] ||
		[ "$(systemctl show -p NeedDaemonReload --value containerd)" = yes ]; then
		echo "systemd has not read provision's containerd.service yet"
		exit 1
	fi
	if ! systemctl is-enabled --quiet containerd; then
		echo "containerd is not enabled"
		exit 1
	fi
	exe=$(running_binary) || {
		echo "containerd is not running"
		exit 1
	}
	if [ "$exe" != /usr/local/bin/containerd ]; then
		echo "the running containerd is $exe, not /usr/local/bin/containerd"
		exit 1
	fi
	echo "containerd runs /usr/local/bin/containerd"
	exit 0
	;;
apply)
	systemctl daemon-reload
	systemctl enable containerd 2>&1
	if ! systemctl restart containerd; then
		pv_hint "see 'journalctl -u containerd' on the node"
		echo "containerd from the release archive did not start"
		exit 1
	fi
	echo "containerd restarted: $(/usr/local/bin/containerd --version)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
