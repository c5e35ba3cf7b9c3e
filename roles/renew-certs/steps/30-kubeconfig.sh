# renew-certs 30-kubeconfig: the renewed admin.conf is again root's and the
# login user's ~/.kube/config, mode 0600 (this machine's copy in the state
# folder, private/admin.conf, is not fetched: see role.yaml): the same
# step as roles/kubeadm-init 40-kubeconfig (a copy: roles share no steps).
# The login user is the one provision's sudo came from (SUDO_USER).  A
# kubeconfig that was there before is kept in the backup folder first
# (pv_write); its other contexts are not merged.
set -eu
ADMIN=/etc/kubernetes/admin.conf

homes() { # "user group home" for root and the login user
	for u in root ${SUDO_USER:-}; do
		line=$(getent passwd "$u") || continue
		home=$(printf '%s' "$line" | cut -d : -f 6)
		group=$(id -gn "$u")
		echo "$u $group $home"
	done | sort -u
}

case ${1:-} in
check)
	if [ ! -f "$ADMIN" ]; then
		echo "$ADMIN is missing: no cluster here (provision up)"
		exit 1
	fi
	rc=0
	for entry in $(homes | tr ' ' ':'); do
		u=${entry%%:*}
		rest=${entry#*:}
		g=${rest%%:*}
		home=${rest#*:}
		f=$home/.kube/config
		if [ -f "$f" ] && cmp -s "$ADMIN" "$f" && [ "$(stat -c %U:%G:%a "$f")" = "$u:$g:600" ]; then
			echo "$f: the cluster's admin.conf ($u)"
		else
			echo "$f: not the cluster's admin.conf yet ($u)"
			rc=1
		fi
	done
	exit $rc
	;;
apply)
	for entry in $(homes | tr ' ' ':'); do
		u=${entry%%:*}
		rest=${entry#*:}
		g=${rest%%:*}
		home=${rest#*:}
		if [ "$u" = root ]; then
			install -d -m 0700 "$home/.kube"
			pv_write "$home/.kube/config" 0600 <"$ADMIN"
		else
			# Written by the user, not by root: root following a symlink
			# the user planted in their home (~/.kube -> /etc) would
			# chown or overwrite what it points to.  The old file goes to
			# the backup folder first (pv_write's rule), read as the user.
			if [ -f "$home/.kube/config" ] && [ ! -L "$home/.kube/config" ]; then
				pv_backup "$home/.kube/config" 2>/dev/null || :
			fi
			# shellcheck disable=SC2016 # expanded by the user's shell
			runuser -u "$u" -- sh -c 'umask 077 && mkdir -p "$1/.kube" && chmod 0700 "$1/.kube" &&
				cat >"$1/.kube/config.provision" && mv -f "$1/.kube/config.provision" "$1/.kube/config"' \
				sh "$home" <"$ADMIN"
			pv_managed "$home/.kube/config"
		fi
		echo "$home/.kube/config: admin.conf for $u ($g)"
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
