# containerd 20-service: containerd is enabled, running the config that
# provision rendered just before this step, and that config (with its
# imports) gives runc SystemdCgroup = true.
#
# A restart is needed only when the config file is newer than the running
# daemon: its mtime against the service's ActiveEnterTimestamp.  A run
# killed between the upload and the restart thus still restarts next time.
# Both are whole seconds; for an upload in the same second as the last
# start, the daemon's InvocationID and the config's SHA-256 recorded after
# our own restart decide.
set -eu
CONFIG=/etc/containerd/config.toml
RECORD=$PROVISION_STATE_DIR/containerd-config.loaded

# Timestamps come out in UTC, which date -d reads whatever the node's zone
# (GNU date does not know every zone abbreviation, JST for one).
prop() {
	TZ=UTC LC_ALL=C systemctl show -p "$1" --value containerd
}

started_at() {
	t=$(prop ActiveEnterTimestamp)
	[ -n "$t" ] && [ "$t" != n/a ] && date -d "$t" +%s
}

# True when the running daemon has not read the current config file.
stale() {
	now_sha=$(sha256sum "$CONFIG" | cut -d ' ' -f 1)
	if [ -f "$RECORD" ] && [ "$(cat "$RECORD")" = "$(prop InvocationID) $now_sha" ]; then
		return 1
	fi
	start=$(started_at) || return 0
	[ "$(stat -c %Y "$CONFIG")" -ge "$start" ]
}

systemd_cgroup_in() {
	grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true' "$1"
}

case ${1:-} in
check)
	if [ ! -d /run/systemd/system ]; then
		pv_skip "systemd is not running on this node (PID 1 is $(cat /proc/1/comm)): the containerd service cannot be managed here"
		exit 0
	fi
	if [ ! -f "$CONFIG" ] || ! systemd_cgroup_in "$CONFIG"; then
		echo "$CONFIG is not provision's yet"
		exit 1
	fi
	rc=0
	enabled=$(systemctl is-enabled containerd 2>/dev/null || true)
	active=$(systemctl is-active containerd 2>/dev/null || true)
	echo "containerd: $enabled, $active"
	[ "$enabled" = enabled ] || rc=1
	if [ "$active" != active ]; then
		rc=1
	elif stale; then
		echo "$CONFIG changed after containerd started ($(prop ActiveEnterTimestamp)): restart needed"
		rc=1
	fi
	# What containerd makes of the file and its imports (containerd 1.x
	# replaces a whole plugin section with an imported one).
	if ! dump=$(containerd config dump 2>&1); then
		printf '%s\n' "$dump" | tail -n 5
		pv_hint "containerd cannot read $CONFIG or a file it imports from /etc/containerd/conf.d"
		exit 2
	fi
	if ! printf '%s\n' "$dump" | grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true'; then
		echo "containerd config dump: runc does not get SystemdCgroup = true"
		pv_hint "a drop-in in /etc/containerd/conf.d replaces the CRI plugin section without SystemdCgroup = true (containerd 1.x merges imports per plugin): add it to that drop-in"
		exit 2
	fi
	echo "containerd config dump: SystemdCgroup = true"
	exit $rc
	;;
apply)
	systemctl enable containerd
	if [ "$(systemctl is-active containerd 2>/dev/null || true)" != active ] || stale; then
		echo "systemctl restart containerd"
		systemctl restart containerd
	fi
	i=0
	until [ "$(systemctl is-active containerd 2>/dev/null || true)" = active ] &&
		ctr version >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 30 ]; then
			systemctl status --no-pager containerd 2>&1 | tail -n 15 || true
			pv_hint "see journalctl -u containerd on the node; a syntax error in a /etc/containerd/conf.d drop-in stops containerd too"
			exit 1
		fi
		sleep 1
	done
	mkdir -p "$PROVISION_STATE_DIR"
	printf '%s %s\n' "$(prop InvocationID)" "$(sha256sum "$CONFIG" | cut -d ' ' -f 1)" >"$RECORD"
	echo "containerd active since $(prop ActiveEnterTimestamp)"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
