# etcd-restore 10-pki: /etc/kubernetes/pki is the backup's.
#
# The archive came from a node (untrusted when it was packed): only
# members under pki/, no '..', regular files and folders; extracted as
# root with the modes they had (kubeadm's: keys 0600, certificates 0644).
# A PKI already there that differs is moved aside.
#
# Several control planes (PROVISION_CONTROL_PLANES names more than one):
# only what they share -- the CAs, the front proxy's CA and the
# service-account keys, the files kubeadm's kubeadm-certs Secret carries
# -- since the backup may come from another control plane, whose own
# certificates name its name and address; kubeadm init makes this node's
# from the CAs.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
R=$PROVISION_STATE_DIR/etcd-restore
TAR=$R/pki.tar
SHARED="pki/ca.crt pki/ca.key pki/front-proxy-ca.crt pki/front-proxy-ca.key pki/sa.key pki/sa.pub pki/etcd/ca.crt pki/etcd/ca.key"

# The members to put in place: every one, or (several control planes) the
# shared ones the archive holds.
members() {
	# shellcheck disable=SC2086 # one NAME=ADDRESS a word
	set -- ${PROVISION_CONTROL_PLANES:-}
	[ $# -gt 1 ] || return 0
	tar -tf "$TAR" | while read -r m; do
		case " $SHARED " in *" $m "*) echo "$m" ;; esac
	done
}

case ${1:-} in
check)
	[ -f "$TAR" ] || [ -f "$R/pki.done" ] || {
		echo "no PKI uploaded to $TAR" >&2
		exit 2
	}
	[ -f "$TAR" ] || exit 0
	# shellcheck disable=SC2046 # one member a word
	[ -d /etc/kubernetes/pki ] && tar -C /etc/kubernetes -df "$TAR" $(members) >/dev/null 2>&1 || exit 1
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
	m=$(members)
	if [ -n "$m" ]; then
		mkdir -m 0755 /etc/kubernetes/pki
		# shellcheck disable=SC2086 # one member a word
		tar -C /etc/kubernetes --no-same-owner -xf "$TAR" $m
		echo "PKI in place: $(find /etc/kubernetes/pki -type f | wc -l) files, the control planes' shared part (CAs, service-account keys); kubeadm init makes $PROVISION_NODE's own"
	else
		tar -C /etc/kubernetes --no-same-owner -xf "$TAR"
		echo "PKI in place: $(find /etc/kubernetes/pki -type f | wc -l) files"
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
