# containerd 15-registries: the node's registry access is as the inventory
# says -- the files that templates/registry-files.tmpl lists (the proxy
# drop-in of containerd's service, a hosts.toml per registry of
# cluster.registries with its CA files) are there with that content and
# mode, credentials filled in, and the files this step wrote on an earlier
# run that are no longer listed are gone (a registry or the proxy taken
# out of the inventory).  Files it never wrote are never touched; one it
# replaced is restored from its backup when it leaves the list (pv_restore).
#
# Credentials: the list holds @@PROVISION_SET_NAME@@ where a credential
# goes; NAME is a value provision hands every node (registry_auth_R_M:
# "Basic " and base64 of user:password, from the inventory's
# password_file on the admin's machine, registered as a secret so that no
# output line can show it).  awk reads it from the step's secret file
# ($PROVISION_SECRETS/NAME, see pv_secret in roles/lib.sh: never the
# environment, never a command line), and a file that holds one is 0600
# (the list says so) and written through a 0600 temporary file (pv_write).
#
# containerd reads hosts.toml at every pull: nothing restarts here.  The
# proxy drop-in needs systemd to reload and containerd to restart: this
# step reloads systemd when it wrote or removed a unit file, and step
# 20-service restarts containerd when the running daemon's environment is
# not the unit's.  (systemd 252, Debian 12's, does not count a drop-in
# added in a new containerd.service.d as a change (NeedDaemonReload stays
# no), so until the reload `systemctl show` kept the old environment and a
# proxy added to a running cluster never reached containerd: t0470.)
set -eu
LIST=/etc/provision/containerd/registry-files
WROTE=$PROVISION_STATE_DIR/containerd-registry-files

# The wanted files, "PATH MODE" one a line.
wanted() {
	sed -n 's/^%% file \([^ ]*\) \([0-7]*\)$/\1 \2/p' "$LIST"
}

# content PATH: the file's wanted content, credentials filled in; exit 3
# when a credential provision should have handed is missing.
content() {
	awk -v want="$1" '
	/^%% file / { inside = ($3 == want); next }
	!inside { next }
	{
		line = $0
		while (match(line, /@@PROVISION_SET_registry_auth_[0-9]+_[0-9]+@@/)) {
			name = substr(line, RSTART + 16, RLENGTH - 18)
			value = ""
			if (ENVIRON["PROVISION_SECRETS"] != "") {
				file = ENVIRON["PROVISION_SECRETS"] "/" name
				if ((getline value < file) < 0)
					value = ""
				close(file)
			}
			if (value == "") { missing = name; exit 3 }
			line = substr(line, 1, RSTART - 1) value substr(line, RSTART + RLENGTH)
		}
		print line
	}
	END { if (missing != "") { print "no value " missing " was handed to this node" > "/dev/stderr"; exit 3 } }' "$LIST"
}

# same PATH MODE: the file is there with that content, mode and owner root.
same() {
	[ -f "$1" ] && [ "$(stat -c '%a %U' "$1")" = "${2#0} root" ] &&
		content "$1" | cmp -s - "$1"
}

# The files written earlier that are no longer wanted (none when it wrote
# none: the check of a node without registries or proxy stops here).
stale() {
	[ -s "$WROTE" ] || return 0
	wanted | cut -d ' ' -f 1 | sort -u >"$tmpd/want"
	sort -u "$WROTE" | comm -23 - "$tmpd/want"
}

if [ ! -f "$LIST" ]; then
	# provision uploads it before this step; `plan` uploads nothing
	echo "$LIST is not there yet: no registry file written"
	[ "${1:-}" = check ] && exit 1
	exit 2
fi
# The scratch folder stale() and apply use, made only when one needs it.
tmpd=
trap '[ -z "$tmpd" ] || rm -rf "$tmpd"' EXIT

case ${1:-} in
check)
	rc=0
	list=$(wanted)
	[ ! -s "$WROTE" ] || tmpd=$(mktemp -d)
	while read -r path mode; do
		[ -n "$path" ] || continue
		if [ ! -f "$path" ]; then
			echo "$path: missing"
			rc=1
		elif ! same "$path" "$mode"; then
			echo "$path: not as the inventory says (content, mode $mode or owner root)"
			rc=1
		fi
	done <<-EOF
		$list
	EOF
	for path in $(stale); do
		echo "$path: written by provision for a registry or proxy no longer in the inventory"
		rc=1
	done
	if [ "$rc" = 0 ]; then
		n=0
		while IFS= read -r _l; do
			[ -z "$_l" ] || n=$((n + 1))
		done <<-EOF
			$list
		EOF
		echo "registry access: $n file(s) as the inventory says"
	fi
	exit $rc
	;;
apply)
	tmpd=$(mktemp -d)
	wanted >"$tmpd/list"
	while read -r path mode; do
		[ -n "$path" ] || continue
		same "$path" "$mode" && continue
		content "$path" >"$tmpd/content"
		pv_mkdir "$(dirname "$path")"
		pv_write "$path" "$mode" <"$tmpd/content"
		echo "wrote $path"
		case $path in /etc/systemd/*) touch "$tmpd/units" ;; esac
	done <"$tmpd/list"
	rm -f "$tmpd/content"
	for path in $(stale); do
		pv_restore "$path"
		echo "removed $path (no longer in the inventory)"
		case $path in /etc/systemd/*) touch "$tmpd/units" ;; esac
	done
	if [ -f "$tmpd/units" ] && [ -d /run/systemd/system ]; then
		echo "systemctl daemon-reload (containerd's unit changed; 20-service restarts containerd with it)"
		systemctl daemon-reload
	fi
	mkdir -p "$PROVISION_STATE_DIR"
	cut -d ' ' -f 1 "$tmpd/list" | sed '/^$/d' >"$WROTE.new"
	mv -f "$WROTE.new" "$WROTE"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
