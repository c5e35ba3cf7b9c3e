# etcd-restore 10-pki: /etc/kubernetes/pki is the backup's.
#
# The archive came from a node (untrusted when it was packed): only
# members under pki/, no '..', regular files and folders; extracted as
# root with the modes they had (kubeadm's: keys 0600, certificates 0644).
# A PKI already there that differs is moved aside.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
R=$PROVISION_STATE_DIR/etcd-restore
TAR=$R/pki.tar

case ${1:-} in
check)
	[ -f "$TAR" ] || [ -f "$R/pki.done" ] || {
		echo "no PKI uploaded to $TAR" >&2
		exit 2
	}
	[ -f "$TAR" ] || exit 0
	[ -d /etc/kubernetes/pki ] && tar -C /etc/kubernetes -df "$TAR" >/dev/null 2>&1 || exit 1
	;;
apply)
	bad=$(tar -tvf "$TAR" | awk '$1 !~ /^[-d]/ || $NF !~ /^pki(\/|$)/ || $NF ~ /(^|\/)\.\.(\/|$)/' | head -n 3)
	if [ -n "$bad" ]; then
		echo "the backup's PKI archive holds what a kubeadm PKI does not: $bad"
		exit 1
	fi
	mkdir -p /etc/kubernetes
	if [ -e /etc/kubernetes/pki ]; then
		old=/etc/kubernetes/pki.before-restore-$(date -u +%Y%m%dT%H%M%SZ)
		mv /etc/kubernetes/pki "$old"
		echo "the PKI that was there: moved to $old"
	fi
	# As root, tar keeps the modes kubeadm gave (keys 0600, certificates 0644).
	tar -C /etc/kubernetes --no-same-owner -xf "$TAR"
	echo "PKI in place: $(find /etc/kubernetes/pki -type f | wc -l) files"
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
