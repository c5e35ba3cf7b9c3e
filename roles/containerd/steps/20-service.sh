# containerd 20-service: containerd is enabled, running the config that
# provision rendered just before this step, and that config (with its
# imports, as `containerd config dump` shows it) gives every runtime
# SystemdCgroup = true, has runtimes for the default (runc; nvidia on a GPU
# node once the GPU Operator's toolkit is installed) and, on a GPU node,
# the NVIDIA runtimes (templates/config.toml.tmpl says why).
#
# The running daemon must also have its unit's proxy environment
# (HTTP_PROXY, HTTPS_PROXY, NO_PROXY: the drop-in 15-registries writes from
# cluster.http_proxy): systemd is reloaded when a unit file changed
# (NeedDaemonReload) and containerd restarted when the environment of its
# main process (/proc/PID/environ) is not what `systemctl show -p
# Environment` says; and `containerd config dump` must name the hosts
# directory (config_path = /etc/containerd/certs.d), or no hosts.toml of
# cluster.registries is read by the CRI plugin.
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
#
# The check runs on every node on every run: it asks systemd once for every
# property it reads (props; each `systemctl show` is an exec and a round
# trip to PID 1), and prop answers from those.  apply changes them
# (daemon-reload, restart): there prop asks systemd each time.
props_now=
props_loaded=
props() {
	props_now=$(TZ=UTC LC_ALL=C systemctl show -p ActiveState -p ActiveEnterTimestamp -p InvocationID \
		-p NeedDaemonReload -p MainPID -p Environment containerd) || props_now=
	props_loaded=1
}
prop() {
	if [ -n "$props_loaded" ]; then
		while IFS= read -r _l; do
			case $_l in "$1="*)
				printf '%s\n' "${_l#*=}"
				return 0
				;;
			esac
		done <<EOF
$props_now
EOF
		return 0
	fi
	TZ=UTC LC_ALL=C systemctl show -p "$1" --value containerd
}

started_at() {
	t=$(prop ActiveEnterTimestamp)
	[ -n "$t" ] && [ "$t" != n/a ] && date -d "$t" +%s
}

# proxy_env: the proxy variables, sorted, one a line, from stdin (NAME=VALUE words or lines).
proxy_env() {
	# shellcheck disable=SC2020 # a blank and a NUL, each to a newline
	tr ' \0' '\n\n' | grep -E '^(HTTP_PROXY|HTTPS_PROXY|NO_PROXY|http_proxy|https_proxy|no_proxy)=' | sort || true
}

# True when the running daemon's proxy environment is not its unit's.
env_stale() {
	pid=$(prop MainPID)
	[ -n "$pid" ] && [ "$pid" != 0 ] && [ -r "/proc/$pid/environ" ] || return 1
	[ "$(proxy_env <"/proc/$pid/environ")" != "$(prop Environment | proxy_env)" ]
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

# runtimes_problems WANT < `containerd config dump`: what containerd makes of
# the config and its imports, against what roles/containerd wrote (WANT:
# pv_nvidia_runtime).  Every runtime must have SystemdCgroup = true, the
# default runtime must be one of them (containerd's CRI plugin does not load
# otherwise: "no corresponding runtime configured in containerd.runtimes"),
# runc must be there, and a GPU node has the NVIDIA runtimes (nvidia the
# default once the toolkit's binary is installed).  Prints one line per
# problem, or a summary; exit 1 when there is a problem.  Both schemas:
# [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.NAME] (1.x) and
# [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.NAME] (2.x).
runtimes_problems() {
	awk -v want="$1" '
	function flush() {
		if (rt != "" && sc[rt] != "true") bad = bad "runtime " rt " has no SystemdCgroup = true\n"
	}
	/^[[:space:]]*\[/ {
		line = $0
		gsub(/[[:space:]"\047\[\]]/, "", line)
		if (line ~ /(io\.containerd\.grpc\.v1\.cri|io\.containerd\.cri\.v1\.runtime)\.containerd\.runtimes\.[^.]+$/) {
			flush()
			rt = line
			sub(/.*\.runtimes\./, "", rt)
			names = names " " rt
			cur = rt
		} else if (line ~ /\.containerd\.runtimes\.[^.]+\.options$/) {
			cur = line
			sub(/.*\.runtimes\./, "", cur)
			sub(/\.options$/, "", cur)
		} else {
			cur = ""
		}
		next
	}
	/^[[:space:]]*default_runtime_name[[:space:]]*=/ {
		v = $0
		sub(/^[^=]*=[[:space:]]*/, "", v)
		gsub(/["\047[:space:]]/, "", v)
		def = v
		next
	}
	cur != "" && /^[[:space:]]*SystemdCgroup[[:space:]]*=/ {
		v = $0
		sub(/^[^=]*=[[:space:]]*/, "", v)
		gsub(/[[:space:]]/, "", v)
		sc[cur] = v
	}
	END {
		flush()
		if (def == "") def = "runc"
		if ((" " names " ") !~ (" " def " ")) bad = bad "default runtime " def " is not configured (the CRI plugin cannot load)\n"
		if ((" " names " ") !~ / runc /) bad = bad "runtime runc is not configured\n"
		if (want == "runtime" || want == "default") {
			n = split("nvidia nvidia-cdi nvidia-legacy", need, " ")
			for (i = 1; i <= n; i++)
				if ((" " names " ") !~ (" " need[i] " ")) bad = bad "GPU node without the " need[i] " runtime\n"
		}
		if (want == "default" && def != "nvidia") bad = bad "GPU node whose default runtime is " def ", not nvidia\n"
		if (want == "none" && def != "runc") bad = bad "node without a GPU whose default runtime is " def ", not runc\n"
		if (bad != "") {
			n = split(bad, lines, "\n")
			for (i = 1; i < n; i++)
				print "containerd config dump: " lines[i]
			exit 1
		}
		printf "containerd config dump: runtimes%s, default %s, SystemdCgroup = true for each\n", names, def
	}'
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
	props
	active=$(prop ActiveState) # what systemctl is-active prints
	echo "containerd: $enabled, $active"
	[ "$enabled" = enabled ] || rc=1
	if [ "$active" != active ]; then
		rc=1
	elif stale; then
		echo "$CONFIG changed after containerd started ($(prop ActiveEnterTimestamp)): restart needed"
		rc=1
	fi
	if [ "$(prop NeedDaemonReload)" = yes ]; then
		echo "containerd's unit files changed (the proxy drop-in?): systemctl daemon-reload and a restart needed"
		rc=1
	elif [ "$active" = active ] && env_stale; then
		echo "containerd runs without its unit's proxy environment ($(prop Environment | proxy_env | sed -n 's/^HTTP_PROXY=//p' | grep . || echo none)): restart needed"
		rc=1
	fi
	# What containerd makes of the file and its imports (containerd 1.x
	# replaces a whole plugin section with an imported one).
	if ! dump=$(containerd config dump 2>&1); then
		printf '%s\n' "$dump" | tail -n 5
		pv_hint "containerd cannot read $CONFIG or a file it imports from /etc/containerd/conf.d"
		exit 2
	fi
	if ! problems=$(printf '%s\n' "$dump" | runtimes_problems "$(pv_nvidia_runtime)"); then
		printf '%s\n' "$problems"
		pv_hint "a drop-in in /etc/containerd/conf.d replaces the CRI plugin section of $CONFIG (containerd 1.x merges imports per plugin): move its CRI settings out of conf.d, or remove it, then run provision again"
		exit 2
	fi
	printf '%s\n' "$problems"
	if ! printf '%s\n' "$dump" | grep -Eq "^[[:space:]]*config_path[[:space:]]*=[[:space:]]*[\"']/etc/containerd/certs.d[\"']"; then
		echo "containerd config dump: no registry config_path = /etc/containerd/certs.d: the hosts.toml files of cluster.registries are not read"
		pv_hint "a drop-in in /etc/containerd/conf.d replaces the CRI plugin section of $CONFIG (containerd 1.x merges imports per plugin): move its CRI settings out of conf.d, or remove it, then run provision again"
		exit 2
	fi
	echo "containerd config dump: registry hosts from /etc/containerd/certs.d"
	exit $rc
	;;
apply)
	systemctl enable containerd
	if [ "$(prop NeedDaemonReload)" = yes ]; then
		echo "systemctl daemon-reload"
		systemctl daemon-reload
	fi
	if [ "$(systemctl is-active containerd 2>/dev/null || true)" != active ] || stale || env_stale; then
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
