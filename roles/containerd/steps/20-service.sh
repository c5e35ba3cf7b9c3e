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
#
# `containerd config dump` starts containerd's 50 MB binary (~35 ms of CPU,
# the dearest program of a no-change run on a node).  Its answer depends
# only on the binary, the config and the files it imports, and the runtimes
# this node must have (pv_nvidia_runtime): apply, once containerd runs the
# config, dumps it and, when the dump passes, records all of these in
# DUMPED (the binary's path, device, inode, size, mtime and ctime; the
# SHA-256 of config.toml and of each conf.d/*.toml; the runtimes wanted)
# with the lines the dump gave.  A check that finds them all the same shows
# those lines and skips the dump; any change (a drop-in added, edited or
# removed, another binary, the GPU toolkit installed) dumps again.  Nothing
# is recorded while a drop-in has imports of its own (their files would not
# be in the record).  check itself never writes the record.
set -eu
CONFIG=/etc/containerd/config.toml
CONFD=/etc/containerd/conf.d
RECORD=$PROVISION_STATE_DIR/containerd-config.loaded
DUMPED=$PROVISION_STATE_DIR/containerd-config.dumped
nl='
'

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

# proxy_env: the proxy variables of stdin (NAME=VALUE lines), one a line,
# by name (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, then the lower-case ones),
# read by the shell: the check runs on every node on every run.
proxy_env() {
	_pe=
	while IFS= read -r _l || [ -n "$_l" ]; do
		case $_l in
		HTTP_PROXY=* | HTTPS_PROXY=* | NO_PROXY=* | http_proxy=* | https_proxy=* | no_proxy=*) _pe=$_pe$_l$nl ;;
		esac
	done
	for _n in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
		while IFS= read -r _l; do
			case $_l in "$_n="*) printf '%s\n' "$_l" ;; esac
		done <<EOF
$_pe
EOF
	done
}

# blanks_to_lines: stdin with each blank (a space) a newline, as `tr ' ' '\n'`.
blanks_to_lines() {
	while IFS= read -r _l || [ -n "$_l" ]; do
		while :; do
			case $_l in
			*' '*)
				printf '%s\n' "${_l%%' '*}"
				_l=${_l#*' '}
				;;
			*) break ;;
			esac
		done
		printf '%s\n' "$_l"
	done
}

# True when the running daemon's proxy environment is not its unit's (its
# environ's NUL- and blank-separated words against the unit's Environment).
env_stale() {
	pid=$(prop MainPID)
	[ -n "$pid" ] && [ "$pid" != 0 ] && [ -r "/proc/$pid/environ" ] || return 1
	# shellcheck disable=SC2020 # a blank and a NUL, each to a newline
	[ "$(tr ' \0' '\n\n' <"/proc/$pid/environ" | proxy_env)" != "$(prop Environment | blanks_to_lines | proxy_env)" ]
}

# config_sha: the SHA-256 of $CONFIG (sums: from config_state when it ran).
config_sha() {
	if [ -n "${sums:-}" ]; then
		printf '%s\n' "${sums%%' '*}"
	else
		# shellcheck disable=SC2046 # the hash is the first word
		set -- $(sha256sum "$CONFIG")
		printf '%s\n' "$1"
	fi
}

# True when the running daemon has not read the current config file.
stale() {
	now_sha=$(config_sha)
	rec=
	[ ! -f "$RECORD" ] || { IFS= read -r rec <"$RECORD" || :; }
	if [ -f "$RECORD" ] && [ "$rec" = "$(prop InvocationID) $now_sha" ]; then
		return 1
	fi
	start=$(started_at) || return 0
	[ "$(stat -c %Y "$CONFIG")" -ge "$start" ]
}

# config_state: key=what `containerd config dump` depends on (see the top),
# sums=the SHA-256 lines of config.toml and the drop-ins (config.toml's
# first).
config_state() {
	ctr=$(command -v containerd) || ctr=
	set -- "$CONFIG"
	for f in "$CONFD"/*.toml; do
		[ -f "$f" ] && set -- "$@" "$f"
	done
	sums=$(sha256sum "$@") || sums=
	key="want $(pv_nvidia_runtime)
binary $ctr $([ -z "$ctr" ] || stat -L -c '%d %i %s %Y %Z' "$ctr" || :)
$sums"
}

# True when a drop-in has imports of its own (apply only: a record is never
# written then, and any later change to a drop-in changes the key).
nested_imports() {
	for f in "$CONFD"/*.toml; do
		[ -f "$f" ] && grep -Eq '^[[:space:]]*imports' "$f" && return 0
	done
	return 1
}

# dumped: true (printing the dump's lines) when DUMPED records this very
# key: the dump would say what it said then.
dumped() {
	[ -f "$DUMPED" ] || return 1
	_k='' _rest='' _in_key=1
	while IFS= read -r _l; do
		if [ -n "$_in_key" ]; then
			if [ "$_l" = -- ]; then
				_in_key=
			else
				_k=$_k$_l$nl
			fi
		else
			_rest=$_rest$_l$nl
		fi
	done <"$DUMPED"
	[ -z "$_in_key" ] && [ "$_k" = "$key$nl" ] || return 1
	printf '%s' "$_rest"
}

# dump_check: `containerd config dump` against what the node must have;
# prints what it found (the hint too), exit 2 on a problem.
dump_check() {
	# What containerd makes of the file and its imports (containerd 1.x
	# replaces a whole plugin section with an imported one).
	if ! dump=$(containerd config dump 2>&1); then
		printf '%s\n' "$dump" | tail -n 5
		pv_hint "containerd cannot read $CONFIG or a file it imports from /etc/containerd/conf.d"
		return 2
	fi
	if ! problems=$(printf '%s\n' "$dump" | runtimes_problems "$(pv_nvidia_runtime)"); then
		printf '%s\n' "$problems"
		pv_hint "a drop-in in /etc/containerd/conf.d replaces the CRI plugin section of $CONFIG (containerd 1.x merges imports per plugin): move its CRI settings out of conf.d, or remove it, then run provision again"
		return 2
	fi
	printf '%s\n' "$problems"
	if ! printf '%s\n' "$dump" | grep -Eq "^[[:space:]]*config_path[[:space:]]*=[[:space:]]*[\"']/etc/containerd/certs.d[\"']"; then
		echo "containerd config dump: no registry config_path = /etc/containerd/certs.d: the hosts.toml files of cluster.registries are not read"
		pv_hint "a drop-in in /etc/containerd/conf.d replaces the CRI plugin section of $CONFIG (containerd 1.x merges imports per plugin): move its CRI settings out of conf.d, or remove it, then run provision again"
		return 2
	fi
	echo "containerd config dump: registry hosts from /etc/containerd/certs.d"
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

# True when a line of file $1 sets SystemdCgroup = true (read by the shell).
systemd_cgroup_in() {
	while IFS= read -r _l || [ -n "$_l" ]; do
		_l=${_l#"${_l%%[![:space:]]*}"}
		case $_l in SystemdCgroup*) ;; *) continue ;; esac
		_l=${_l#SystemdCgroup}
		_l=${_l#"${_l%%[![:space:]]*}"}
		case $_l in =*) ;; *) continue ;; esac
		_l=${_l#=}
		_l=${_l#"${_l%%[![:space:]]*}"}
		case $_l in true*) return 0 ;; esac
	done <"$1"
	return 1
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
	config_state
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
		echo "containerd runs without its unit's proxy environment ($(prop Environment | blanks_to_lines | proxy_env | sed -n 's/^HTTP_PROXY=//p' | grep . || echo none)): restart needed"
		rc=1
	fi
	if dumped; then
		exit $rc
	fi
	dump_check || exit 2
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
	printf '%s %s\n' "$(prop InvocationID)" "$(config_sha)" >"$RECORD"
	echo "containerd active since $(prop ActiveEnterTimestamp)"
	# The record of the dump the checks that follow may skip (see the top).
	rm -f "$DUMPED"
	config_state
	if ! nested_imports && out=$(dump_check 2>&1); then
		printf '%s\n--\n%s\n' "$key" "$out" >"$DUMPED.new"
		mv -f "$DUMPED.new" "$DUMPED"
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
