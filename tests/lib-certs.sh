# shellcheck shell=sh
# tests/lib-certs.sh: certificates of the cluster testbed's control planes
# with chosen lifetimes (t0462, t0467).  Sourced after
# tests/fakes/cluster-testbed.sh ($TESTBED, $TB).
#
# certs_resign NODE START END: every leaf certificate kubeadm manages on NODE
# (the PKI files and the client certificates embedded in the kubeconfigs
# there; super-admin.conf only where kubeadm init wrote it) signed again by
# its CA with the same key, subject and extensions, valid from START to END
# (openssl ca dates, YYYYMMDDHHMMSSZ): real X.509 files with chosen
# lifetimes.
certs_resign() {
	"$TESTBED" exec "$TB" "$1" sh -eu -c '
		S=$1 E=$2
		cd /etc/kubernetes/pki
		w=$(mktemp -d)
		trap "rm -rf $w" EXIT
		printf "%s\n" "[ca]" "default_ca=d" "[d]" "database=$w/index" "new_certs_dir=$w" \
			"serial=$w/serial" "default_md=sha256" "policy=p" "copy_extensions=copyall" \
			"unique_subject=no" "[p]" "commonName=supplied" "organizationName=optional" >$w/cnf
		one() { # CERT KEY CA-BASE OUT
			: >$w/index
			echo 01 >$w/serial
			openssl x509 -x509toreq -in "$1" -signkey "$2" -copy_extensions copyall -out $w/csr 2>/dev/null
			openssl ca -config $w/cnf -batch -notext -preserveDN -in $w/csr -cert "$3.crt" -keyfile "$3.key" \
				-startdate "$S" -enddate "$E" -out "$4" 2>/dev/null
		}
		for c in apiserver apiserver-kubelet-client; do one $c.crt $c.key ca $c.crt ; done
		one front-proxy-client.crt front-proxy-client.key front-proxy-ca front-proxy-client.crt
		one apiserver-etcd-client.crt apiserver-etcd-client.key etcd/ca apiserver-etcd-client.crt
		for c in server peer healthcheck-client; do one etcd/$c.crt etcd/$c.key etcd/ca etcd/$c.crt ; done
		for k in admin super-admin controller-manager scheduler; do
			f=/etc/kubernetes/$k.conf
			[ -f $f ] || continue
			sed -n "s/^ *client-certificate-data: *//p" $f | base64 -d >$w/c
			sed -n "s/^ *client-key-data: *//p" $f | base64 -d >$w/k
			one $w/c $w/k ca $w/n
			n=$(base64 -w0 <$w/n)
			sed -i "s|^\( *client-certificate-data: *\).*|\1$n|" $f
		done
		# the copies up made of admin.conf (time passing changes them alike)
		for h in /root /home/*; do
			[ -f $h/.kube/config ] && cp -p /etc/kubernetes/admin.conf $h/.kube/config.new &&
				chown --reference=$h/.kube/config $h/.kube/config.new && mv $h/.kube/config.new $h/.kube/config || :
		done
	' certs_resign "$2" "$3"
}
