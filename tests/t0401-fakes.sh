#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 99 s in CI (beside another; tests/run.sh starts the longest first)
# t0401-fakes: the Kubernetes stand-ins of tests/fakes on their own, without
# nodes (no root): the packages build and every fake compiles and answers its
# version like the real tool; the parts every fake shares behave as the
# formats they copy demand (the YAML of manifests and kubeconfigs, kubectl's
# JSONPath, label selectors, bootstrap-token JWS, the CA pin that kubeadm
# prints equals the one the join-tokens role computes with openssl); helm,
# kubeadm and kubectl reject, with the real tools' messages and exit status,
# the flags the real tools' tables (tests/fakes/cli) do not give their
# command; the API server refuses a change of a DaemonSet's selector
# and kubectl prints it as the real ones do, delete --cascade=orphan keeps
# the pods.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3 openssl
# The stand-ins carry the project's flag tables (tests/fakes/cli); only the
# comparison of kubeadm's v1beta3 fields with ../shared/upstream needs it
# (skipped, saying so, without it).


# fake TOOL ARGS...: run the fake TOOL of Kubernetes 1.30.4 as build.sh packs it
# (helm: Helm FAKE_HELM_VERSION, default the first of build.sh's HELMS, 4.3.0).
fake() {
	t=$1
	shift
	_f=$TEST_DIR/$t${FAKE_HELM_VERSION:+-$FAKE_HELM_VERSION}
	[ -f "$_f" ] || "$SRC_ROOT/tests/fakes/kube-debs/build.sh" --program "$t" 1.30.4 "$_f"
	python3 "$_f" "$@"
}
# helm3 ARGS...: the helm stand-in of Helm 3.22.0
helm3() {
	FAKE_HELM_VERSION=3.22.0 fake helm "$@"
}

# pyfake TOOL [VERSION]: python code on stdin, with the functions of the fake
# TOOL of Kubernetes VERSION (default 1.30.4) loaded (helm: as for fake),
# and tests/lib-TOOL.py's where there is one.
pyfake() {
	_v=${2:-1.30.4}
	_s=$TEST_DIR/$1-$_v${FAKE_HELM_VERSION:+-$FAKE_HELM_VERSION}
	[ -f "$_s.src" ] || "$SRC_ROOT/tests/fakes/kube-debs/build.sh" --source "$1" "$_v" "$_s.src"
	{
		sed 's/^if __name__ == "__main__":$/if False:/' "$_s.src"
		[ ! -f "$SRC_ROOT/tests/lib-$1.py" ] || cat "$SRC_ROOT/tests/lib-$1.py"
		cat
	} >"$_s.py"
	python3 "$_s.py"
}

if command -v dpkg-deb >/dev/null 2>&1 && command -v apt-ftparchive >/dev/null 2>&1 && command -v gpg >/dev/null 2>&1; then
	test_case "the packages build: kubeadm, kubelet, kubectl, cri-tools, kubernetes-cni as on pkgs.k8s.io; helm's archive and the charts" "
		'$SRC_ROOT/tests/fakes/kube-debs/build.sh' kd 1.30.4 >build.out 2>&1 || { cat build.out; false; }
		r='kd/repo/core:/stable:/v1.30/deb'
		for p in kubeadm_1.30.4-1.1 kubelet_1.30.4-1.1 kubectl_1.30.4-1.1 cri-tools_1.30.1-1.1 kubernetes-cni_1.4.0-1.1; do
			test -f \"\$r/\${p}_\$(dpkg --print-architecture).deb\"
		done
		dpkg-deb -c \"\$r/kubeadm_1.30.4-1.1_\$(dpkg --print-architecture).deb\" >kubeadm.list
		expect_grep ' ./usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf\$' kubeadm.list
		dpkg-deb -f \"\$r/kubeadm_1.30.4-1.1_\$(dpkg --print-architecture).deb\" Depends >deps
		expect_grep '^cri-tools (>= 1.30.0), ' deps
		dpkg-deb -c \"\$r/kubelet_1.30.4-1.1_\$(dpkg --print-architecture).deb\" >kubelet.list
		expect_grep ' ./usr/lib/systemd/system/kubelet.service\$' kubelet.list
		expect_grep ' ./etc/default/kubelet\$' kubelet.list
		expect_grep ' ./usr/lib/fake-kubernetes/images/kube-apiserver\$' kubelet.list
		gpg --batch --homedir kd/gnupg --verify \"\$r/Release.gpg\" \"\$r/Release\" 2>gpg.out || { cat gpg.out; false; }
		gpgconf --homedir kd/gnupg --kill gpg-agent 2>/dev/null || true
		grep -q 'BEGIN PGP SIGNED MESSAGE' \"\$r/InRelease\"
		for h in 4.3.0+gbec5b06 3.22.0+g144ca65; do
			tar -tzf kd/repo/artifacts/helm-v\${h%+*}-linux-amd64.tar.gz >helm.list
			expect_grep '^linux-amd64/helm\$' helm.list
			tar -xzOf kd/repo/artifacts/helm-v\${h%+*}-linux-amd64.tar.gz linux-amd64/helm >helm.bin
			expect_eq \"v\$h\" \"\$(python3 helm.bin version --short)\" 'helm version --short'
		done
		for c in gpu-operator-v26.7.0 nfs-subdir-external-provisioner-4.0.18; do
			tar -tzf kd/repo/artifacts/\$c.tgz >c.list
			expect_grep '/Chart.yaml\$' c.list
		done
	"
else
	test_skip "the packages build" "needs dpkg-deb, apt-ftparchive and gpg"
fi

test_case "versions in the real tools' shapes" "
	expect_eq v1.30.4 \"\$(fake kubeadm version -o short)\" 'kubeadm version -o short'
	fake kubeadm version >v
	expect_grep '^kubeadm version: &version.Info{Major:\"1\", Minor:\"30\", GitVersion:\"v1.30.4\", ' v
	expect_eq 'Client Version: v1.30.4
Kustomize Version: v5.0.4-0.20230601165947-6ce0bf390ce3' \"\$(fake kubectl version --client)\" 'kubectl version --client'
	expect_eq 'Kubernetes v1.30.4' \"\$(fake kubelet --version)\" 'kubelet --version'
	helm3 version >hv
	expect_grep '^version.BuildInfo{Version:\"v3.22.0\", GitCommit:\"144ca65f8501953fa8b41cd1d37c7223051c85b7\", GitTreeState:\"clean\", GoVersion:\"go1.26.8\"}\$' hv
	# helm 4 adds the client-go it was built with, as a Kubernetes minor
	fake helm version >hv
	expect_grep '^version.BuildInfo{Version:\"v4.3.0\", GitCommit:\"bec5b06ed841fe5269972d864d5177944fd5970f\", GitTreeState:\"clean\", GoVersion:\"go1.27.1\", KubeClientVersion:\"v1.37\"}\$' hv
	# the Helm before (4.2.4) builds alike (its own commit and client-go)
	FAKE_HELM_VERSION=4.2.4 fake helm version >hv42
	expect_grep '^version.BuildInfo{Version:\"v4.2.4\", GitCommit:\"3900f434fd3ef2b84065dc04508df48f288dba00\", GitTreeState:\"clean\", GoVersion:\"go1.26\", KubeClientVersion:\"v1.36\"}\$' hv42
	expect_eq v4.3.0 \"\$(fake helm version --template '{{.Version}}')\" 'helm 4 version --template'
	expect_eq v3.22.0 \"\$(helm3 version --template '{{.Version}}')\" 'helm 3 version --template'
	expect_eq \"\$(helm3 version)\" \"\$(helm3 version --client)\" 'helm 3 version --client (hidden, the same)' 
	fake kubeadm token generate >tok
	expect_grep '^[a-z0-9]\\{6\\}\\.[a-z0-9]\\{16\\}\$' tok
"

test_case "kubectl without a kubeconfig: the localhost:8080 message and exit 1" "
	export HOME=\$PWD KUBECONFIG=
	expect_status 1 fake kubectl get nodes >o 2>&1
	expect_eq 'The connection to the server localhost:8080 was refused - did you specify the right host or port?' \"\$(cat o)\" 'message'
"

test_case "the YAML subset: manifests, block scalars, flow collections, quoting round-trip" "
	pyfake kubectl <<-'EOF'
		docs = yaml_load_all('''
		# c
		apiVersion: v1
		kind: ConfigMap
		data:
		  a.json: |
		    {
		      \"x\": 1
		    }
		  b: |-
		    no newline
		  c: >
		    folded
		    text
		list: [a, \"b c\", 'it''s', {k: v}]
		n: 3
		t: true
		s: \"true\"
		e:
		---
		- x: 1
		  y: [2]
		- - nested
		''')
		assert docs[0]['data']['a.json'] == '{\\n  \"x\": 1\\n}\\n', repr(docs[0]['data']['a.json'])
		assert docs[0]['data']['b'] == 'no newline'
		assert docs[0]['data']['c'] == 'folded text\\n'
		assert docs[0]['list'] == ['a', 'b c', \"it's\", {'k': 'v'}]
		assert docs[0]['n'] == 3 and docs[0]['t'] is True and docs[0]['s'] == 'true' and docs[0]['e'] is None
		assert docs[1] == [{'x': 1, 'y': [2]}, ['nested']], docs[1]
		for d in docs:
		    assert yaml_load(yaml_dump(d)) == d, yaml_dump(d)
		assert yaml_dump({'a': '--iface=\$(NODE_IP)', 'b': 'yes', 'c': '1.5', 'd': ''}) == \"a: --iface=\$(NODE_IP)\\nb: \\\"yes\\\"\\nc: '1.5'\\nd: ''\\n\", yaml_dump({'a': '--iface=\$(NODE_IP)', 'b': 'yes', 'c': '1.5', 'd': ''})
	EOF
"

test_case "kubectl JSONPath: fields, escaped dots, [*], filters, range, literals; maps print as JSON" "
	pyfake kubectl <<-'EOF'
		o = {'items': [{'metadata': {'name': 'n1', 'labels': {'kubernetes.io/hostname': 'n1', 'a': ''}},
		                'status': {'conditions': [{'type': 'Ready', 'status': 'True'}, {'type': 'X', 'status': 'False'}]}},
		               {'metadata': {'name': 'n2', 'labels': {}}, 'status': {}}]}
		assert jsonpath('{.items[*].metadata.name}', o) == 'n1 n2'
		assert jsonpath('{.items[0].metadata.labels.kubernetes\\\\.io/hostname}', o) == 'n1'
		assert jsonpath('{.items[0].metadata.labels}', o) == '{\"a\":\"\",\"kubernetes.io/hostname\":\"n1\"}'
		assert jsonpath('{.items[0].status.conditions[?(@.type==\"Ready\")].status}', o) == 'True'
		assert jsonpath('{range .items[*]}{.metadata.name}{\"|\"}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\\\n\"}{end}', o) == 'n1|True\\nn2|\\n'
		assert jsonpath('{.missing.field}', o) == ''
	EOF
"

test_case "label selectors; bootstrap-token JWS; the CA pin equals the openssl pipeline of roles/join-tokens" "
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -subj /CN=kubernetes -days 1 2>/dev/null
	want=\$(openssl x509 -pubkey -noout -in ca.crt | openssl pkey -pubin -outform der | sha256sum | cut -d ' ' -f 1)
	echo \"\$want\" >want
	pyfake kubeadm <<-'EOF'
		s = parse_selector('app=flannel,tier!=x,k8s-app in (kube-dns,y),present,!absent')
		assert selector_matches(s, {'app': 'flannel', 'k8s-app': 'kube-dns', 'present': ''})
		assert not selector_matches(s, {'app': 'flannel', 'k8s-app': 'kube-dns', 'present': '', 'absent': '1'})
		jws = jws_detached('kubeconfig text', 'abcdef', '0123456789abcdef')
		assert jws.count('.') == 2 and jws.split('.')[1] == '', jws
		assert jws_valid(jws, 'kubeconfig text', 'abcdef', '0123456789abcdef')
		assert not jws_valid(jws, 'kubeconfig text', 'abcdef', '0123456789abcdeX')
		assert spki_sha256(open('ca.crt').read()) == open('want').read().strip()
		assert parse_duration('15m') == 900 and format_duration(900) == '15m0s' and parse_duration('1h30m') == 5400
	EOF
"

tool() {
	if [ "$1" = helm3 ]; then
		shift
		helm3 "$@"
	else
		fake "$@"
	fi
}

# rejects TOOL "ARGS" EXPECTED: the fake TOOL exits 1 with EXPECTED on
# standard error (nothing on standard output), before any cluster contact.
# (TOOL helm3: the helm stand-in of Helm 3.22.0; helm: of Helm 4.3.0)
rejects() {
	# shellcheck disable=SC2086 # ARGS: words
	expect_status 1 tool "$1" $2 >r.out 2>r.err
	expect_eq "" "$(cat r.out)" "$1 $2: standard output"
	expect_eq "$3" "$(cat r.err)" "$1 $2: standard error"
	echo "$1 $2: exit 1, $(head -n 1 r.err)"
}

test_case "flags per command, from the real tools' tables: what they reject, with their messages and exit status 1" "
	export HOME=\$PWD KUBECONFIG=
	rejects helm 'list --install' 'Error: unknown flag: --install'
	rejects helm 'list --values v.yaml' 'Error: unknown flag: --values'
	rejects helm 'list --wait' 'Error: unknown flag: --wait'
	rejects helm 'upgrade --filter x' 'Error: unknown flag: --filter'
	rejects helm 'upgrade r c --all' 'Error: unknown flag: --all'
	rejects helm '--kubeconfig /x upgrade r c -a' \"Error: unknown shorthand flag: 'a' in -a\"
	rejects helm 'upgrade r c --timeout 15' 'Error: invalid argument \"15\" for \"--timeout\" flag: time: missing unit in duration \"15\"'
	# helm 4 removed these, helm 3 has them (the stand-in does not act on
	# the last two); the messages of the real helm 4.1.4
	rejects helm 'list -a' \"Error: unknown shorthand flag: 'a' in -a\"
	rejects helm 'status r --show-desc' 'Error: unknown flag: --show-desc'
	rejects helm 'upgrade r c --recreate-pods' 'Error: unknown flag: --recreate-pods'
	rejects helm 'version --client' 'Error: unknown flag: --client'
	rejects helm 'upgrade r c --wait=true2' 'Error: invalid argument \"true2\" for \"--wait\" flag: invalid wait input \"true2\". Valid inputs are watcher, hookOnly, and legacy'
	rejects helm 'uninstall r --wait=x' 'Error: invalid argument \"x\" for \"--wait\" flag: invalid wait input \"x\". Valid inputs are watcher, hookOnly, and legacy'
	rejects helm3 'uninstall r --wait=legacy' 'Error: invalid argument \"legacy\" for \"--wait\" flag: strconv.ParseBool: parsing \"legacy\": invalid syntax'
	rejects helm3 'upgrade r c --wait=legacy' 'Error: invalid argument \"legacy\" for \"--wait\" flag: strconv.ParseBool: parsing \"legacy\": invalid syntax'
	rejects helm3 'status r --show-desc' 'helm stand-in (tests/fakes/kube/helm.py): --show-desc is a real flag here that the stand-in does not act on'
	# deprecated flags: pflag's line, each time given, then the stand-in's
	# limit (it acts on none of them); the lines of the real helm 4.1.4
	# and 3.17.3 (helm 3 knows no --atomic deprecation)
	rejects helm 'upgrade r c --atomic' 'Flag --atomic has been deprecated, use --rollback-on-failure instead
helm stand-in (tests/fakes/kube/helm.py): --atomic is a real flag here that the stand-in does not act on'
	rejects helm 'upgrade r c --force' 'Flag --force has been deprecated, use --force-replace instead
helm stand-in (tests/fakes/kube/helm.py): --force is a real flag here that the stand-in does not act on'
	rejects helm3 'upgrade r c --atomic' 'helm stand-in (tests/fakes/kube/helm.py): --atomic is a real flag here that the stand-in does not act on'
	rejects helm3 'upgrade r c --recreate-pods' 'Flag --recreate-pods has been deprecated, functionality will no longer be updated. Consult the documentation for other methods to recreate pods
helm stand-in (tests/fakes/kube/helm.py): --recreate-pods is a real flag here that the stand-in does not act on'
	rejects kubeadm 'token list --ttl 1h' 'unknown flag: --ttl
To see the stack trace of this error execute with --v=5 or higher'
	rejects kubeadm 'token delete --description x abcdef' 'unknown flag: --description
To see the stack trace of this error execute with --v=5 or higher'
	rejects kubeadm 'token list --print-join-command' 'unknown flag: --print-join-command
To see the stack trace of this error execute with --v=5 or higher'
	rejects kubectl 'drain --all-namespaces x' \"Error: unknown flag: --all-namespaces
See 'kubectl drain --help' for usage.\"
	rejects kubectl 'taint nodes x k:NoSchedule- -A' \"Error: unknown shorthand flag: 'A' in -A
See 'kubectl taint --help' for usage.\"
	rejects kubectl '--all-namespaces get pods' 'Error: flags cannot be placed before plugin name: --all-namespaces'
	rejects kubectl 'drain x --timeout=300' \"Error: invalid argument \\\"300\\\" for \\\"--timeout\\\" flag: time: missing unit in duration \\\"300\\\"
See 'kubectl drain --help' for usage.\"
"


test_case "kubeadm HA (issue 36): certs certificate-key, init/join/phase flags and refusals with kubeadm's messages and exit status, before any cluster contact" "
	export HOME=\$PWD KUBECONFIG=
	fake kubeadm certs certificate-key >key
	expect_grep '^[0-9a-f]\\{64\\}\$' key
	expect_eq 1 \"\$(wc -l <key)\" 'one line'
	rejects kubeadm 'certs certificate-key --config x' 'unknown flag: --config
To see the stack trace of this error execute with --v=5 or higher'
	rejects kubeadm 'init phase upload-certs --token abcdef.0123456789abcdef' 'unknown flag: --token
To see the stack trace of this error execute with --v=5 or higher'
	rejects kubeadm 'init phase upload-certs --upload-certs --dry-run' 'kubeadm stand-in (tests/fakes/kube/kubeadm.py): --dry-run is a real flag here that the stand-in does not act on'
	rejects kubeadm 'join --control-plane-endpoint x:6443' 'unknown flag: --control-plane-endpoint
To see the stack trace of this error execute with --v=5 or higher'
	expect_eq '[upload-certs] Skipping phase. Please see --upload-certs' \"\$(fake kubeadm init phase upload-certs)\" 'upload-certs phase without --upload-certs'
	printf '%s\n' 'apiVersion: kubeadm.k8s.io/v1beta3' 'kind: ClusterConfiguration' 'controlPlaneEndpoint: 198.18.0.10:6443' >c.yaml
	rejects kubeadm \"init --config c.yaml --upload-certs --certificate-key \$(cat key)\" \"can not mix '--config' with arguments [certificate-key]
To see the stack trace of this error execute with --v=5 or higher\"
	printf '%s\n' 'apiVersion: kubeadm.k8s.io/v1beta3' 'kind: JoinConfiguration' 'discovery:' '  bootstrapToken: {token: abcdef.0123456789abcdef, apiServerEndpoint: \"198.18.0.10:6443\", unsafeSkipCAVerification: true}' >j.yaml
	rejects kubeadm 'join --config j.yaml --control-plane' \"can not mix '--config' with arguments [control-plane]
To see the stack trace of this error execute with --v=5 or higher\"
	# ValidateCertificateKey: field errors, exit 3 (validation)
	expect_status 3 fake kubeadm init --upload-certs --certificate-key zz >o 2>e
	expect_eq 'certificateKey: Invalid value: \"zz\": certificate key decoding error: encoding/hex: invalid byte: U+007A '\"'z'\"'
To see the stack trace of this error execute with --v=5 or higher' \"\$(cat e)\" 'init --certificate-key zz'
	expect_status 3 fake kubeadm join 198.18.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-unsafe-skip-ca-verification --control-plane --certificate-key abc >o 2>e
	expect_eq 'controlPlane.certificateKey: Invalid value: \"abc\": certificate key decoding error: encoding/hex: odd length hex string
To see the stack trace of this error execute with --v=5 or higher' \"\$(cat e)\" 'join --certificate-key abc'
	printf '%s\n' 'apiVersion: kubeadm.k8s.io/v1beta3' 'kind: JoinConfiguration' 'controlPlane:' '  certificateKey: \"0123456789abcdef0123456789abcdef\"' 'discovery:' '  bootstrapToken: {token: abcdef.0123456789abcdef, apiServerEndpoint: \"198.18.0.10:6443\", unsafeSkipCAVerification: true}' >j16.yaml
	expect_status 3 fake kubeadm join --config j16.yaml >o 2>e
	expect_eq 'controlPlane.certificateKey: Invalid value: \"0123456789abcdef0123456789abcdef\": invalid certificate key size 16, the key must be an AES key of size 32
To see the stack trace of this error execute with --v=5 or higher' \"\$(cat e)\" 'JoinConfiguration controlPlane.certificateKey of 16 bytes'
"

test_case "kubeadm HA (issue 36): the kubeadm-certs Secret round trip (AES-256-GCM: GCM spec vectors; nonce in front, as kubeadm's cryptoutil), wrong key, expired Secret, the control-plane join command and refusals, etcd's flags per minor" "
	pyfake kubeadm <<-'EOF'
		# McGrew and Viega's GCM test cases 13 and 14 (AES-256, zero key and nonce)
		assert _gcm(bytes(32), bytes(12), b'') == (b'', bytes.fromhex('530f8afbc74536b9a963b4f1c4cb738b'))
		ct, tag = _gcm(bytes(32), bytes(12), bytes(16))
		assert (ct.hex(), tag.hex()) == ('cea7403d4d606b6e074ec5d3baf39d18', 'd0d1c8a799996bf0265b98b5d48ab919')
		assert decrypt_bytes(bytes(12) + ct + tag, bytes(32)) == bytes(16)
		import tempfile, io, contextlib
		src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()
		cfg = ClusterCfg({}, 'cp-1', '198.18.0.10', 6443)
		cfg.cert_dir = src
		with contextlib.redirect_stdout(io.StringIO()):
		    write_pki(cfg)
		key = new_certificate_key()
		api = MemAPI()
		buf = io.StringIO()
		with contextlib.redirect_stdout(buf):
		    upload_certs(api, src, key)
		assert buf.getvalue() == '[upload-certs] Storing the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace\n', buf.getvalue()
		sec = api.objs['/api/v1/namespaces/kube-system/secrets/kubeadm-certs']
		assert sorted(sec['data']) == ['ca.crt', 'ca.key', 'etcd-ca.crt', 'etcd-ca.key', 'front-proxy-ca.crt', 'front-proxy-ca.key', 'sa.key', 'sa.pub'], sorted(sec['data'])
		owner = sec['metadata']['ownerReferences'][0]
		tok = api.objs['/api/v1/namespaces/kube-system/secrets/' + owner['name']]
		d = {k: unb64(v) for k, v in tok['data'].items()}
		assert d['description'] == 'Proxy for managing TTL for the kubeadm-certs secret', d
		assert not [k for k in d if k.startswith('usage-')] and 'auth-extra-groups' not in d, d
		left = parse_rfc3339(d['expiration']) - now()
		assert 7190 < left <= 7200, left
		assert owner['kind'] == 'Secret' and owner['controller'] and owner['uid'] == tok['metadata']['uid'], owner
		# nothing readable without the key: no PEM in the Secret
		assert all(b'-----BEGIN' not in base64.b64decode(v) for v in sec['data'].values())
		role = api.objs['/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/kubeadm:kubeadm-certs']
		assert role['rules'][0]['resourceNames'] == ['kubeadm-certs'], role
		rb = api.objs['/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/kubeadm:kubeadm-certs']
		assert rb['subjects'][0]['name'] == 'system:bootstrappers:kubeadm:default-node-token', rb
		with contextlib.redirect_stdout(io.StringIO()):
		    download_certs(api, dst, key)
		for path, _ in SHARED_CERTS:
		    a, b = os.path.join(src, path), os.path.join(dst, path)
		    assert open(a, 'rb').read() == open(b, 'rb').read(), path
		    assert oct(os.stat(b).st_mode & 0o777) == ('0o600' if path.endswith('.key') else '0o644'), (path, oct(os.stat(b).st_mode))
		assert not os.path.exists(os.path.join(dst, 'apiserver.crt'))
		# control-plane-prepare on the joining node: its own certificates signed by the downloaded CAs, its
		# kubeconfigs (no super-admin.conf, no kubelet.conf) and the control-plane manifests without etcd's
		K8S = tempfile.mkdtemp()
		MANIFESTS = K8S + '/manifests'
		j = ClusterCfg({'controlPlaneEndpoint': 'vip.lab:6443', 'certificatesDir': dst}, 'cp-2', '198.18.0.11', 6443)
		buf = io.StringIO()
		with contextlib.redirect_stdout(buf):
		    write_pki(j)
		    write_kubeconfigs(j, only=('admin.conf', 'controller-manager.conf', 'scheduler.conf'))
		    write_manifests(j, etcd=False)
		assert '[certs] Using existing ca certificate authority' in buf.getvalue() and '[certs] Using the existing \"sa\" key' in buf.getvalue(), buf.getvalue()
		for leaf, ca_ in (('apiserver', 'ca'), ('etcd/server', 'etcd/ca'), ('front-proxy-client', 'front-proxy-ca')):
		    openssl('verify', '-CAfile', src + '/' + ca_ + '.crt', dst + '/' + leaf + '.crt')
		dns, ips = _sans(open(dst + '/apiserver.crt').read())
		assert 'cp-2' in dns and 'vip.lab' in dns and '198.18.0.11' in ips, (dns, ips)
		assert sorted(os.listdir(K8S)) == ['admin.conf', 'controller-manager.conf', 'manifests', 'scheduler.conf'], os.listdir(K8S)
		assert sorted(os.listdir(MANIFESTS)) == ['kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml']
		assert load_kubeconfig(K8S + '/admin.conf')['server'] == 'https://vip.lab:6443'
		assert load_kubeconfig(K8S + '/scheduler.conf')['server'] == 'https://198.18.0.11:6443'
		assert '--advertise-address=198.18.0.11' in open(MANIFESTS + '/kube-apiserver.yaml').read()
		def refusal(fn):
		    try:
		        with contextlib.redirect_stdout(io.StringIO()):
		            fn()
		    except Fail as e:
		        return str(e)
		    raise AssertionError('no refusal')
		m = refusal(lambda: download_certs(api, dst, new_certificate_key()))
		assert m == 'error execution phase control-plane-prepare/download-certs: error downloading certs: error decoding secret data with provided key: cipher: message authentication failed', m
		del api.objs['/api/v1/namespaces/kube-system/secrets/kubeadm-certs']
		m = refusal(lambda: download_certs(api, dst, key))
		assert m == 'error execution phase control-plane-prepare/download-certs: error downloading certs: error downloading the secret: Secret \"kubeadm-certs\" was not found in the \"kube-system\" Namespace. This Secret might have expired. Please, run \`kubeadm init phase upload-certs --upload-certs\` on a control plane to generate a new one', m
		m = refusal(lambda: check_ready_for_control_plane({}, key))
		assert m == '''error execution phase preflight: 
		One or more conditions for hosting a new control plane instance is not satisfied.
		
		unable to add a new control plane instance a cluster that doesn't have a stable controlPlaneEndpoint address
		
		Please ensure that:
		* The cluster has a stable controlPlaneEndpoint address.
		* The certificates that must be shared among control plane instances are provided.
		'''.replace('\t', ''), m
		empty = tempfile.mkdtemp()
		m = refusal(lambda: check_ready_for_control_plane({'controlPlaneEndpoint': 'x:6443', 'certificatesDir': empty}, ''))
		assert '\n\ncouldn\'t load ca certificate: open %s/ca.crt: no such file or directory\n\n' % empty in m, m
		check_ready_for_control_plane({'controlPlaneEndpoint': 'x:6443', 'certificatesDir': src}, '')
		ca = open(src + '/ca.crt').read()
		h = spki_sha256(ca)
		assert join_control_plane_command('vip:6443', 'abcdef.0123456789abcdef', ca, key) == 'kubeadm join vip:6443 --token abcdef.0123456789abcdef \\\\\n\t--discovery-token-ca-cert-hash sha256:%s \\\\\n\t--control-plane --certificate-key %s' % (h, key)
		assert join_control_plane_command('vip:6443', '<value withheld>', ca, '').endswith('\t--control-plane ')
		# init's closing text (showjoincommand.go): with --upload-certs, with copied certificates, without an endpoint
		def closing(endpoint, upload, key, token):
		    c = ClusterCfg({'controlPlaneEndpoint': endpoint}, 'cp-1', '198.18.0.10', 6443)
		    c.upload_certs, c.certificate_key, c.skip_certificate_key_print = upload, key, False
		    buf = io.StringIO()
		    with contextlib.redirect_stdout(buf):
		        print_join_commands(c, token, ca)
		    return buf.getvalue().split('\n')
		lines = closing('vip.lab:6443', True, key, 'abcdef.0123456789abcdef')
		assert lines[:5] == ['You can now join any number of the control-plane node running the following command on each as root:', '',
		                     '  kubeadm join vip.lab:6443 --token abcdef.0123456789abcdef \\\\', '\t--discovery-token-ca-cert-hash sha256:%s \\\\' % h,
		                     '\t--control-plane --certificate-key %s' % key], lines
		assert lines[5:] == ['', 'Please note that the certificate-key gives access to cluster sensitive data, keep it secret!',
		                     'As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use',
		                     '\"kubeadm init phase upload-certs --upload-certs\" to reload certs afterward.', '',
		                     'Then you can join any number of worker nodes by running the following on each as root:', '',
		                     'kubeadm join vip.lab:6443 --token abcdef.0123456789abcdef \\\\', '\t--discovery-token-ca-cert-hash sha256:%s ' % h, ''], lines
		lines = closing('vip.lab:6443', False, '', '<value withheld>')
		assert lines[:7] == ['You can now join any number of control-plane nodes by copying certificate authorities',
		                     'and service account keys on each node and then running the following as root:', '',
		                     '  kubeadm join vip.lab:6443 --token <value withheld> \\\\', '\t--discovery-token-ca-cert-hash sha256:%s \\\\' % h,
		                     '\t--control-plane ', ''], lines
		assert lines[7] == 'Then you can join any number of worker nodes by running the following on each as root:', lines
		lines = closing('', False, '', 'abcdef.0123456789abcdef')
		assert lines[0] == 'Then you can join any number of worker nodes by running the following on each as root:' and len(lines) == 5, lines
		# etcd's flags: a joining member lists the cluster and says existing
		cmd = etcd_command('cp-2', '198.18.0.11', '/etc/kubernetes/pki', initial_cluster=[('cp-1', 'https://198.18.0.10:2380'), ('cp-2', 'https://198.18.0.11:2380')])
		names = [a.split('=')[0] for a in cmd[1:]]
		assert names == sorted(names), cmd
		assert '--initial-cluster=cp-1=https://198.18.0.10:2380,cp-2=https://198.18.0.11:2380' in cmd and '--initial-cluster-state=existing' in cmd, cmd
		assert '--listen-metrics-urls=http://127.0.0.1:2381' in cmd and '--experimental-initial-corrupt-check=true' in cmd and '--experimental-watch-progress-notify-interval=5s' in cmd, cmd
		cmd = etcd_command('cp-1', '198.18.0.10', '/etc/kubernetes/pki')
		assert '--initial-cluster=cp-1=https://198.18.0.10:2380' in cmd and not [a for a in cmd if a.startswith('--initial-cluster-state')], cmd
		print('ok')
	EOF
	# kubeadm 1.34 and 1.35: etcd 3.6's names when its etcd is 3.6 (PR 132838); 1.36: always (PR 135701)
	# ControlPlaneKubeletLocalMode from 1.33: a control plane's kubelet.conf names its own API server
	for v in 1.30.4 1.34.2 1.36.4; do
		pyfake kubeadm \$v <<-'EOF'
			import tempfile, io, contextlib
			K8S = tempfile.mkdtemp()
			cfg = ClusterCfg({'controlPlaneEndpoint': 'vip.lab:6443'}, 'cp-1', '198.18.0.10', 6443)
			cfg.cert_dir = K8S + '/pki'
			make_ca(cfg.cert_dir + '/ca.key', cfg.cert_dir + '/ca.crt', 'kubernetes')
			with contextlib.redirect_stdout(io.StringIO()):
			    write_kubeconfigs(cfg, only=('admin.conf', 'kubelet.conf'))
			assert load_kubeconfig(K8S + '/admin.conf')['server'] == 'https://vip.lab:6443'
			want = 'https://198.18.0.10:6443' if FAKE_MINOR >= 33 else 'https://vip.lab:6443'
			assert load_kubeconfig(K8S + '/kubelet.conf')['server'] == want, load_kubeconfig(K8S + '/kubelet.conf')['server']
			cmd = etcd_command('cp-1', '198.18.0.10', '/etc/kubernetes/pki')
			if FAKE_MINOR >= 34:
			    assert '--feature-gates=InitialCorruptCheck=true' in cmd and '--watch-progress-notify-interval=5s' in cmd, cmd
			    assert not [a for a in cmd if a.startswith('--experimental-')], cmd
			    assert etcd_new_flags('registry.k8s.io/etcd:3.5.24-0') == (FAKE_MINOR >= 36)
			else:
			    assert '--experimental-initial-corrupt-check=true' in cmd and not [a for a in cmd if a.startswith('--feature-gates')], cmd
		EOF
	done
"

test_case "kubeadm-certs expires with its token (issue 36): the controller manager's tokencleaner deletes the expired token, the garbage collector the Secrets it owns; others stay" "
	pyfake kube-controller-manager <<-'EOF'
		class Stub:
		    writes = 0
		    def __init__(self, objs):
		        self.objs = objs
		        self.deleted = []
		    def get(self, path, query=None):
		        if path.endswith('/configmaps/cluster-info'):
		            raise APIError(404, 'not found')
		        items = [o for o in self.objs if not query or o.get('type') == query['fieldSelector'].split('=', 1)[1]]
		        return {'items': items}
		    def delete(self, path):
		        self.deleted.append(path.rsplit('/', 1)[1])
		        self.objs[:] = [o for o in self.objs if o['metadata']['name'] != path.rsplit('/', 1)[1]]
		        self.writes += 1
		def token(tid, ttl, uid):
		    return {'type': 'bootstrap.kubernetes.io/token', 'metadata': {'name': 'bootstrap-token-' + tid, 'uid': uid},
		            'data': {'token-id': b64(tid), 'token-secret': b64('0123456789abcdef'), 'expiration': b64(rfc3339(now() + ttl))}}
		objs = [token('aaaaaa', -1, 'u1'), token('bbbbbb', 3600, 'u2'),
		        {'type': 'Opaque', 'metadata': {'name': 'kubeadm-certs', 'ownerReferences': [{'kind': 'Secret', 'uid': 'u1', 'controller': True}]}},
		        {'type': 'Opaque', 'metadata': {'name': 'other', 'ownerReferences': [{'kind': 'Secret', 'uid': 'u2'}]}},
		        {'type': 'Opaque', 'metadata': {'name': 'free'}}]
		cm = CM.__new__(CM)
		cm.c, cm.lists, cm.expiry = Stub(objs), {}, None
		cm.tokens()
		assert cm.c.deleted == ['bootstrap-token-aaaaaa', 'kubeadm-certs'], cm.c.deleted
		assert sorted(o['metadata']['name'] for o in objs) == ['bootstrap-token-bbbbbb', 'free', 'other']
	EOF
"

test_case "short flags per command: helm list -f is --filter, helm upgrade -f is --values, kubectl -f is --filename" "
	export HOME=\$PWD KUBECONFIG=
	FAKE_HELM_VERSION=3.22.0 pyfake helm <<-'EOF'
		flags, pos = parse('list', ['-f', '^a\$', '-a', '-o', 'json', '-n', 'ns'])
		assert flags == {'filter': '^a\$', 'all': True, 'output': 'json', 'namespace': 'ns'}, flags
	EOF
	pyfake helm <<-'EOF'
		flags, pos = parse('list', ['-f', '^a\$', '--deployed', '-o', 'json', '-n', 'ns'])
		assert flags == {'filter': '^a\$', 'deployed': True, 'output': 'json', 'namespace': 'ns'}, flags
		flags, pos = parse('upgrade', ['--install', 'r', 'c.tgz', '-f', 'a.yaml', '--values=b.yaml,c.yaml', '--wait', '--timeout', '15m', '--create-namespace', '--namespace', 'ns'])
		assert flags['values'] == ['a.yaml', 'b.yaml', 'c.yaml'] and flags['timeout'] == '15m' and flags['install'], flags
		assert pos == ['r', 'c.tgz'], pos
	EOF
	pyfake kubectl <<-'EOF'
		COMMAND[0] = 'apply'
		flags, pos = parse(['-f', '-', '--kubeconfig=/k', '--request-timeout=30s', '--dry-run=client'], {'filename': 'list', 'dry-run': 'str'})
		assert flags == {'filename': ['-'], 'kubeconfig': '/k', 'request-timeout': '30s', 'dry-run': 'client'}, flags
		COMMAND[0] = 'label'
		flags, pos = parse(['node', 'n1', 'a=b', '--overwrite', '-lx=y'], {'overwrite': 'bool', 'selector': 'str'})
		assert flags == {'overwrite': True, 'selector': 'x=y'} and pos == ['node', 'n1', 'a=b'], (flags, pos)
		COMMAND[0] = 'delete'
		flags, pos = parse(['pvc', 'c', '--ignore-not-found', '--wait=false', '--grace-period=0'], {'ignore-not-found': 'bool', 'wait': 'bool', 'grace-period': 'int'})
		assert flags == {'ignore-not-found': True, 'wait': False, 'grace-period': 0}, flags
	EOF
"

test_case "helm 3 and helm 4 stand-ins: list's states, --wait's strategies, the apply method a release keeps (Helm 3's taken over client-side)" "
	export HOME=\$PWD KUBECONFIG=
	for v in 3.22.0 4.2.4 4.3.0; do
		CHART='$SRC_ROOT/tests/fakes/charts/nfs-subdir-external-provisioner' FAKE_HELM_VERSION=\$v pyfake helm <<-'EOF'
			import io, contextlib
			REL = []
			def rel(name, version, status, method=None):
			    r = {'name': name, 'namespace': 'ns', 'version': version, 'config': {}, 'manifest': '',
			         'chart': {'metadata': {'name': 'c', 'version': '1.0'}, 'values': {}},
			         'info': {'status': status, 'first_deployed': 0, 'last_deployed': version, 'description': ''}}
			    if method:
			        r['apply_method'] = method
			    return r
			releases = lambda c, ns: [dict(r) for r in REL]
			client = lambda flags: None
			def listed(*args):
			    out = io.StringIO()
			    with contextlib.redirect_stdout(out):
			        cmd_list(*parse('list', list(args) + ['-o', 'json']))
			    return sorted((x['name'], x['revision'], x['status']) for x in json.loads(out.getvalue()))
			REL[:] = [rel('a', 1, 'superseded'), rel('a', 2, 'deployed'), rel('b', 1, 'deployed'), rel('b', 2, 'pending-upgrade'),
			          rel('c', 1, 'failed'), rel('d', 1, 'uninstalled')]
			every = [('a', '2', 'deployed'), ('b', '2', 'pending-upgrade'), ('c', '1', 'failed'), ('d', '1', 'uninstalled')]
			# the roles' line: every state, the newest revision of each, in both majors
			assert listed('--deployed', '--failed', '--pending', '--superseded', '--uninstalled', '--uninstalling') == every
			# no state flag: helm 3 deployed and failed only (b's newest is pending: none), helm 4 every state
			assert listed() == (every if HELM_MAJOR == 4 else [('a', '2', 'deployed'), ('c', '1', 'failed')]), listed()
			assert listed('--superseded') == [('a', '1', 'superseded')], listed('--superseded')
			# --wait: helm 3 a boolean, helm 4 a strategy
			w = lambda *a: wait_strategy(parse('upgrade', ['r', 'c'] + list(a))[0])
			if HELM_MAJOR == 3:
			    assert (w(), w('--wait')) == ('hookOnly', 'legacy')
			else:
			    assert (w(), w('--wait'), w('--wait=legacy'), w('--wait=hookOnly')) == ('hookOnly', 'watcher', 'legacy', 'hookOnly')
			# the apply method: a first install by helm 4 server-side; a Helm 3
			# release (none recorded) upgraded client-side; an ssa one stays ssa
			STORED = []
			store = lambda c, r: STORED.append(dict(r, info=dict(r['info'])))
			apply_manifest = lambda c, ns, text: []
			class C:
			    server = 'https://198.18.0.2:6443'
			    def get(self, path, *a):
			        return {}
			    def raw(self, method, path, *a):
			        return 200, (b'{\"versions\": [\"v1\"]}' if path == '/api' else b'{\"groups\": []}')
			client = lambda flags: C()
			def upgrade(prev):
			    REL[:] = prev
			    del STORED[:]
			    with contextlib.redirect_stdout(io.StringIO()):
			        cmd_upgrade(*parse('upgrade', ['--install', 'n', os.environ['CHART'], '-n', 'ns']))
			    last = STORED[-1]
			    assert last['info']['status'] == 'deployed' and last['version'] == len(prev) + 1, last
			    return last.get('apply_method')
			assert upgrade([]) == ('ssa' if HELM_MAJOR == 4 else None)
			assert upgrade([rel('n', 1, 'deployed')]) == ('csa' if HELM_MAJOR == 4 else None)
			assert upgrade([rel('n', 1, 'deployed', 'ssa')]) == ('ssa' if HELM_MAJOR == 4 else None)
			print('helm %s: list, --wait and the apply method as the real one' % HELM_VERSION)
		EOF
	done
"

test_case "GPU Operator stand-in: devicePlugin.config as the chart renders it and the device plugin v0.20.0 reads it (time-slicing replicas, names, errors)" "
	export HOME=\$PWD KUBECONFIG=
	CHART='$SRC_ROOT/tests/fakes/charts/gpu-operator' pyfake helm <<-'EOF'
		import os
		d = os.environ['CHART']
		vals = yaml_load(open(d + '/values.yaml').read())
		t = open(d + '/templates/plugin_config.yaml').read()
		ctx = {'Values': vals, 'Release': {'Namespace': 'gpu-operator', 'Name': 'gpu-operator'}, 'Chart': {}}
		# the chart's defaults (create false, data {}): no ConfigMap
		assert not yaml_load_all(render(t, ctx, 'plugin_config.yaml')), 'ConfigMap without create'
		vals['devicePlugin']['config'] = {'create': True, 'name': 'provision-device-plugin', 'default': 'default',
		                                  'data': {'default': 'version: v1\\n', 'shared-4': 'version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n      - name: nvidia.com/gpu\\n        replicas: 4\\n'}}
		docs = yaml_load_all(render(t, ctx, 'plugin_config.yaml'))
		assert len(docs) == 1 and docs[0]['kind'] == 'ConfigMap' and docs[0]['metadata']['name'] == 'provision-device-plugin', docs
		assert docs[0]['data'] == vals['devicePlugin']['config']['data'], docs[0]['data']
		# create with empty data: none (the real template's 'not (empty data)')
		vals['devicePlugin']['config']['data'] = {}
		assert not yaml_load_all(render(t, ctx, 'plugin_config.yaml'))
	EOF
	pyfake kubelet <<-'EOF'
		ts = 'version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n      - name: nvidia.com/gpu\\n        replicas: %s\\n'
		assert _replicas_of('version: v1\\n') == 1
		assert _replicas_of(ts % 4) == 4
		for text, msg in ((ts % 1, 'number of replicas must be >= 2'), (ts % 0, 'number of replicas must be >= 2'),
		                  ('version: v2\\n', 'unknown version: v2'),
		                  ('version: v1\\nsharing:\\n  timeSlicing: {}\\n', 'no resources specified'),
		                  ('version: v1\\nsharing:\\n  timeSlicing:\\n    resources:\\n      - name: nvidia.com/gpu\\n', 'no replicas specified')):
		    try:
		        _replicas_of(text)
		        raise AssertionError('accepted: ' + text)
		    except ConfigError as e:
		        assert msg in str(e), (msg, str(e))
		class K:
		    client = None
		    node_name = 'n'
		files = {'default': 'version: v1\\n', 'shared-4': ts % 4}
		mounts = {'/available-configs': ('configMap', files)}
		env = {'CONFIG_FILE_SRCDIR': '/available-configs', 'DEFAULT_CONFIG': 'default'}
		# no label (no API here): the default, not shared; no devicePlugin.config at all: not shared
		assert _plugin_config(K, env, mounts) == ('default', 1)
		assert _plugin_config(K, {}, {}) == (None, 1)
		# a default that is not in the ConfigMap is the config-manager's error
		try:
		    _plugin_config(K, dict(env, DEFAULT_CONFIG='shared-8'), mounts)
		    raise AssertionError('a missing default accepted')
		except ConfigError as e:
		    assert 'specified config shared-8 does not exist' in str(e), e
	EOF
"

# kubeadm_reads VERSION FILE KIND: what the fake kubeadm of VERSION makes of a
# config file, as `kubeadm init|join --config FILE` reads it: "ok KINDS" or
# "error: MESSAGE" on stdout, its warnings on stderr.
kubeadm_reads() {
	CONF=$2 WANT=$3 pyfake kubeadm "$1" <<-'EOF'
		import os
		try:
		    print("ok", " ".join(sorted(load_config(os.environ["CONF"], os.environ["WANT"]))))
		except Fail as e:
		    print("error:", e)
	EOF
}

test_case "kubeadm's config API per minor: the roles' config read without a warning by 1.30, 1.31, 1.35, 1.36 and 1.37; v1beta3 deprecated from 1.31 and gone in 1.37; v1beta4 fields and shapes" "
	for v in 1.30.4 1.31.14 1.35.8 1.36.4 1.37.1; do
		cat >inv-\$v.yaml <<-EOF
			cluster: {name: t, kubernetes_version: \"\$v\"}
			ssh: {user: admin}
			jupyterhub: {enabled: false}
			nodes:
			  - {name: cp, address: 198.18.0.10, roles: [control-plane]}
		EOF
		'$BUILD/tests/tools/render' template '$SRC_ROOT/roles' kubeadm-init kubeadm-config.yaml.tmpl inv-\$v.yaml cp - >init-\$v.yaml
		kubeadm_reads \$v init-\$v.yaml init >r 2>w
		expect_eq 'ok ClusterConfiguration InitConfiguration KubeletConfiguration' \"\$(cat r)\" \"kubeadm \$v reads the rendered config\"
		expect_eq '' \"\$(cat w)\" \"kubeadm \$v warnings\"
		case \$v in
		1.30.*) expect_grep '^apiVersion: kubeadm.k8s.io/v1beta3\$' init-\$v.yaml ;;
		*) expect_grep '^apiVersion: kubeadm.k8s.io/v1beta4\$' init-\$v.yaml
		   expect_grep '^  - name: node-ip\$' init-\$v.yaml ;;
		esac
	done
	sed 's/v1beta4/v1beta3/' init-1.31.14.yaml >v3-shape4.yaml
	cp init-1.30.4.yaml v3.yaml
	kubeadm_reads 1.31.14 v3.yaml init >r 2>w
	expect_eq 'ok ClusterConfiguration InitConfiguration KubeletConfiguration' \"\$(cat r)\" 'kubeadm 1.31 reads v1beta3'
	expect_grep 'your configuration file uses a deprecated API spec: \"kubeadm.k8s.io/v1beta3\" (kind: \"InitConfiguration\")' w
	kubeadm_reads 1.36.4 v3.yaml init >r 2>w
	expect_eq 'ok ClusterConfiguration InitConfiguration KubeletConfiguration' \"\$(cat r)\" 'kubeadm 1.36 still reads v1beta3'
	expect_grep 'your configuration file uses a deprecated API spec: \"kubeadm.k8s.io/v1beta3\"' w
	kubeadm_reads 1.37.1 v3.yaml init >r 2>w
	expect_eq 'error: your configuration file uses an old API spec: \"kubeadm.k8s.io/v1beta3\" (kind: \"InitConfiguration\"). Please use kubeadm v1.35 instead and run '\"'\"'kubeadm config migrate --old-config old.yaml --new-config new.yaml'\"'\"', which will write the new, similar spec using a newer API version.' \"\$(cat r)\" 'kubeadm 1.37 and v1beta3'
	kubeadm_reads 1.30.4 init-1.31.14.yaml init >r 2>w
	expect_eq 'error: no kind \"InitConfiguration\" is registered for version \"kubeadm.k8s.io/v1beta4\" in scheme \"k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31\"' \"\$(cat r)\" 'kubeadm 1.30 and v1beta4'
	kubeadm_reads 1.31.14 v3-shape4.yaml init >r 2>w
	expect_eq 'error: json: cannot unmarshal array into Go struct field InitConfiguration.nodeRegistration.kubeletExtraArgs of type map[string]string' \"\$(cat r)\" 'a v1beta4 list in v1beta3'
	sed 's/v1beta3/v1beta4/' init-1.30.4.yaml >v4-shape3.yaml
	kubeadm_reads 1.35.8 v4-shape3.yaml init >r 2>w
	expect_eq 'error: json: cannot unmarshal object into Go struct field InitConfiguration.nodeRegistration.kubeletExtraArgs of type []v1beta4.Arg' \"\$(cat r)\" 'a v1beta3 map in v1beta4'
	printf '%s\n' 'apiVersion: kubeadm.k8s.io/v1beta4' 'kind: JoinConfiguration' 'discovery:' '  timeout: 1m0s' '  bootstrapToken: {token: abcdef.0123456789abcdef, apiServerEndpoint: \"198.18.0.10:6443\"}' >join4.yaml
	kubeadm_reads 1.35.8 join4.yaml join >r 2>w
	expect_eq 'ok JoinConfiguration' \"\$(cat r)\" 'v1beta4 join'
	expect_grep 'strict decoding error: unknown field \"discovery.timeout\"' w
"

if test_have_upstream kubeadm/v1beta3-fields.json; then
	test_case "kubeadm's v1beta3 field table is the real one (../shared/upstream/kubeadm/v1beta3-fields.json, the json tags of types.go)" "
	# the fake's v1beta3 field table is the real one (json tags of types.go)
	UP='$UPSTREAM' pyfake kubeadm 1.31.14 <<-'EOF' >cmp 2>&1 || { cat cmp; false; }
		import json, os
		up = json.load(open(os.environ['UP'] + '/kubeadm/v1beta3-fields.json'))
		mine = KUBEADM_SCHEMA[V1BETA3]
		bad = []
		for typ, fields in up.items():
		    if typ.startswith('_') or typ == 'ImageMeta':
		        continue
		    want = {k for k in fields if k not in ('apiVersion', 'kind')}
		    if set(mine.get(typ, {})) != want:
		        bad.append('%s: fake %s, real %s' % (typ, sorted(mine.get(typ, {})), sorted(want)))
		    for k, ty in fields.items():
		        if ty == 'map' and mine.get(typ, {}).get(k) != 'map':
		            bad.append('%s.%s: a map in the real API' % (typ, k))
		assert not bad, bad
		print('v1beta3: %d types compared' % sum(1 for t in up if not t.startswith('_')))
	EOF
	cat cmp
"
else
	test_skip "kubeadm's v1beta3 field table is the real one" "$UPSTREAM_MISSING"
fi

test_case "the kubelet of 1.35 refuses a cgroup v1 host unless failCgroupV1 is false; 1.34's runs there" "
	if [ \"\$(stat -fc %T /sys/fs/cgroup)\" = cgroup2fs ]; then want_v1=no; else want_v1=yes; fi
	for v in 1.34.11 1.35.8; do
		pyfake kubelet \$v <<-'EOF' >out-\$v 2>&1
			import types
			for cfg in ({}, {'failCgroupV1': False}):
			    try:
			        Kubelet.check_cgroup_v1(types.SimpleNamespace(cfg=cfg))
			        print('runs', cfg)
			    except SystemExit as e:
			        print('exit', e.code, cfg)
		EOF
	done
	cat out-1.35.8
	expect_eq \"runs {}
runs {'failCgroupV1': False}\" \"\$(cat out-1.34.11)\" 'kubelet 1.34'
	if [ \$want_v1 = yes ]; then
		expect_grep '^exit 1 {}\$' out-1.35.8
		expect_grep 'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported' out-1.35.8
		expect_grep \"^runs {'failCgroupV1': False}\\\$\" out-1.35.8
	else
		expect_grep '^runs {}\$' out-1.35.8
	fi
"

test_case "the API server refuses a DaemonSet's changed selector (field is immutable), kubectl prints it as the real one; delete --cascade=orphan leaves the pods without an owner" "
	pyfake kube-apiserver <<-'EOF' >api.out 2>&1 || { cat api.out; false; }
		STATE = os.path.abspath('state.json')
		api = API({})
		ds, pods, ns = resource_by_name('daemonsets'), resource_by_name('pods'), resource_by_name('namespaces')
		api.create(ns, None, {'metadata': {'name': 'kube-flannel'}})
		old = {'matchLabels': {'app': 'flannel', 'k8s-app': 'flannel'}}
		d = api.create(ds, 'kube-flannel', {'metadata': {'name': 'kube-flannel-ds'}, 'spec': {'selector': old,
		               'template': {'metadata': {'labels': {'app': 'flannel', 'k8s-app': 'flannel'}}}}})
		for dry in (True, False):
		    try:
		        api.replace(ds, 'kube-flannel', 'kube-flannel-ds', None, patch={'spec': {'selector': {'matchLabels': {'k8s-app': None}}}}, dry=dry)
		        raise AssertionError('the changed selector was accepted (dry run %s)' % dry)
		    except HTTPFail as e:
		        assert e.code == 422 and e.body['reason'] == 'Invalid', e.body
		        print(e.body['message'])
		        print(json.dumps(e.body['details'], sort_keys=True))
		api.replace(ds, 'kube-flannel', 'kube-flannel-ds', None, patch={'spec': {'selector': {'matchExpressions': []}}})
		p = api.create(pods, 'kube-flannel', {'metadata': {'name': 'p1', 'labels': {'app': 'flannel'}, 'ownerReferences': [
		               {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'name': 'kube-flannel-ds', 'uid': d['metadata']['uid'], 'controller': True}]},
		               'spec': {'containers': [{'name': 'c', 'image': 'x'}]}})
		api.delete(ds, 'kube-flannel', 'kube-flannel-ds', 'Orphan')
		assert api.store.get(ds, 'kube-flannel', 'kube-flannel-ds') is None
		left = api.store.get(pods, 'kube-flannel', 'p1')
		assert left and not left['metadata'].get('ownerReferences'), left
		print('orphaned: p1 kept, no owner')
	EOF
	cat api.out
	expect_eq 'DaemonSet.apps \"kube-flannel-ds\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"flannel\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable' \"\$(sed -n 1p api.out)\" 'the Status message'
	expect_eq \"\$(sed -n 1,2p api.out)\" \"\$(sed -n 3,4p api.out)\" 'a dry run refused alike'
	sed -n 2p api.out >details
	pyfake kubectl <<-'EOF' >kc.out
		st = {'reason': 'Invalid', 'message': 'x', 'details': json.load(open('details'))}
		print(api_error(APIError(422, st)))
	EOF
	expect_eq 'The DaemonSet \"kube-flannel-ds\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"flannel\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable' \"\$(cat kc.out)\" 'kubectl'
	expect_grep '^orphaned: p1 kept, no owner\$' api.out
	export HOME=\$PWD KUBECONFIG=
	rejects kubectl 'delete ds x --cascade=sideways' 'error: invalid cascade value (sideways). Must be \"background\", \"foreground\", or \"orphan\"'
"

test_case "the API server's store: each change appended to its file, read back whole after a kill (a line cut short ignored), written whole again once the changes outgrow it; a deletion is a revision" "
	pyfake kube-apiserver <<-'EOF' >store.out 2>&1 || { cat store.out; false; }
		STATE = os.path.abspath('etcd/state.json')
		api = API({})
		ns, cm = resource_by_name('namespaces'), resource_by_name('configmaps')
		api.create(ns, None, {'metadata': {'name': 'a'}})
		for i in range(3):
		    api.create(cm, 'a', {'metadata': {'name': 'c%d' % i}, 'data': {'k': 'v' * 100}})
		api.replace(cm, 'a', 'c1', None, patch={'data': {'k': 'w'}})
		rv = api.store.rv
		api.delete(cm, 'a', 'c2')
		assert api.store.rv == rv + 1, 'a deletion is not a revision'
		lines = open(STATE).read().splitlines()
		assert len(lines) == 7, '%d lines: not the snapshot and one line per change' % len(lines)
		# a new API server (the old one killed: nothing more written) reads it all
		again = Store(STATE)
		assert (again.rv, again.data) == (api.store.rv, api.store.data), 'not read back'
		# a change cut short by the kill was never answered: not replayed
		shutil.copy(STATE, 'cut.json')
		with open('cut.json', 'a') as f:
		    f.write('{\"seq\": 99, \"rv\": 99, \"k\": \"configmaps\", \"id\": \"a/c0\", \"o\": nu')
		cut = Store(os.path.abspath('cut.json'))
		assert (cut.rv, cut.data) == (api.store.rv, api.store.data), 'a cut line was replayed'
		# once the lines outgrow the snapshot, the file is written whole again,
		# and a line of before (a kill between the two writes) is not replayed
		old = lines[1]
		api.store.COMPACT = 0
		while len(open(STATE).read().splitlines()) > 1:
		    api.replace(cm, 'a', 'c0', None, patch={'data': {'k': secrets.token_hex(400)}})
		with open(STATE, 'a') as f:
		    f.write(old + '\n')
		whole = Store(STATE)
		assert (whole.rv, whole.data) == (api.store.rv, api.store.data), 'an old line was replayed'
		print('store ok')
	EOF
	expect_grep '^store ok\$' store.out
"

test_case "the daemons' client keeps its connection (the CLIs' close theirs): many requests on one, an unanswered POST's body read, a new one after the API server's restart" "
	pyfake kube-apiserver <<-'EOF' >keep.out 2>&1 || { cat keep.out; false; }
		import signal
		STATE = os.path.abspath('etcd/state.json')
		os.makedirs('pki', exist_ok=True)
		os.chdir('pki')
		make_ca('./ca.key', './ca.crt', 'kubernetes')
		make_leaf('./ca.crt', './ca.key', './srv.key', './srv.crt', 'kube-apiserver', ips=['127.0.0.1'], usage='server')
		admin = make_leaf('./ca.crt', './ca.key', './adm.key', './adm.crt', 'kubernetes-admin', ['system:masters'])
		nobody = make_leaf('./ca.crt', './ca.key', './nob.key', './nob.crt', 'nobody')
		probe = socket.socket()
		probe.bind(('127.0.0.1', 0))
		port = probe.getsockname()[1]
		probe.close()

		def serve():
		    # the API server in a child process; each accepted connection a line in conns
		    if os.path.exists('ready'):
		        os.unlink('ready')
		    pid = os.fork()
		    if pid:
		        for _ in range(100):
		            if os.path.exists('ready'):
		                return pid
		            time.sleep(0.1)
		        raise SystemExit('the API server did not start')
		    try:
		        class Counted(TLSServer):
		            def get_request(self):
		                r = super().get_request()
		                with open('conns', 'a') as f:
		                    f.write('conn\n')
		                return r
		        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
		        ctx.load_cert_chain('srv.crt', 'srv.key')
		        ctx.load_verify_locations('ca.crt')
		        ctx.verify_mode = ssl.CERT_OPTIONAL
		        Handler.api = API({})
		        srv = Counted(('127.0.0.1', port), Handler, ctx)
		        write_file('ready', '')
		        srv.serve_forever()
		    finally:
		        os._exit(1)

		def conns():
		    return len(read_file('conns', '').splitlines())

		ca = read_file('ca.crt')
		pid = serve()
		base = conns()
		c = Client('https://127.0.0.1:%d' % port, ca, admin, read_file('adm.key'), keepalive=True)
		for i in range(20):
		    c.get('/api/v1/namespaces')
		# a copy (the kubelet's client acting as a pod's service account) shares it
		cp = copy.copy(c)
		cp.headers = ['Impersonate-User: system:serviceaccount:default:default']
		assert cp.get('/version')['gitVersion'] == 'v' + FAKE_VERSION
		assert conns() == base + 1, 'keep-alive: %d connections for 21 requests' % (conns() - base)
		# a refused POST: its body is read all the same, the next request is understood
		n = Client('https://127.0.0.1:%d' % port, ca, nobody, read_file('nob.key'), keepalive=True)
		try:
		    n.post('/api/v1/namespaces/default/configmaps', {'metadata': {'name': 'x'}, 'data': {'k': 'v' * 5000}})
		    raise AssertionError('nobody may create')
		except APIError as e:
		    assert e.code == 403, e
		try:
		    n.get('/api/v1/namespaces/default/configmaps/x')
		    raise AssertionError('nobody may read')
		except APIError as e:
		    assert e.code == 403 and 'cannot get resource' in str(e), e
		assert conns() == base + 2, '%d connections' % (conns() - base)
		# a CLI's client: one connection per request, as before
		once = Client('https://127.0.0.1:%d' % port, ca, admin, read_file('adm.key'))
		once.get('/version')
		once.get('/version')
		assert conns() == base + 4, '%d connections' % (conns() - base)
		# the API server killed and started again: refused, then a new connection
		os.kill(pid, signal.SIGKILL)
		os.waitpid(pid, 0)
		try:
		    c.get('/api/v1/namespaces')
		    raise AssertionError('answered by a dead server')
		except ConnError as e:
		    assert e.kind == 'refused', e
		pid = serve()
		base = conns()
		c.post('/api/v1/namespaces/default/configmaps', {'metadata': {'name': 'y'}})
		assert c.get('/api/v1/namespaces/default/configmaps/y')['metadata']['name'] == 'y'
		assert conns() == base + 1, '%d connections after the restart' % (conns() - base)
		os.kill(pid, signal.SIGKILL)
		os.waitpid(pid, 0)
		print('keepalive ok')
	EOF
	expect_grep '^keepalive ok\$' keep.out
"

if command -v kubectl >/dev/null 2>&1 && kubectl version --client 2>/dev/null | grep -q '^Client Version: v1\.32\.4'; then
	test_case "the real kubectl v1.32.4 of this machine rejects the same flags with the same text" "
		export HOME=\$PWD KUBECONFIG=\$PWD/none
		for args in 'drain --all-namespaces x' 'taint nodes x k:NoSchedule- -A' '--all-namespaces get pods' 'drain x --timeout=300' 'get nodes -Aq' 'cordon x --force=maybe'; do
			# shellcheck disable=SC2086 # words
			expect_status 1 kubectl \$args >real.out 2>&1
			# shellcheck disable=SC2086
			expect_status 1 fake kubectl \$args >fake.out 2>&1
			expect_eq \"\$(cat real.out)\" \"\$(cat fake.out)\" \"kubectl \$args\"
		done
	"
else
	test_skip "the real kubectl v1.32.4 rejects the same flags with the same text" "no kubectl v1.32.4 on this machine"
fi

# The hub stand-in's KubeSpawner and JupyterHub 5 (jupyterhub_fake_hub.py),
# in Debian 12's JupyterHub 3.0 of the testbed image (the cache of
# tests/testbed; skipped, saying so, without it).
JHUB_PY=$(for d in /var/cache/provision-testbed/rootfs-*/usr/lib/python3/dist-packages; do
	for e in "$d"/jupyterhub-3.*-info; do
		[ -d "$d/jupyterhub" ] && [ -e "$e" ] && echo "$d"
	done
done | head -n 1)
if [ -n "$JHUB_PY" ]; then
	test_case "hub stand-in: KubeSpawner 7's safe slugs are kubespawner 7.0.0's (its tests' names), 6's escaped ones; pod and claim names per hub image and slug_scheme, the legacy claim of a KubeSpawner 6 state; JupyterHub 5's allow rules" "
		cp '$SRC_ROOT/tests/fakes/kube/jupyterhub_fake_hub.py' .
		cat >spawner.json <<-'EOF'
			{\"namespace\": \"jhub\", \"kubespawner\": 7, \"slug_scheme\": null, \"pod_name_template\": \"jupyter-{user_server}\",
			 \"pvc_name_template\": \"claim-{user_server}\", \"volume_name_template\": \"volume-{user_server}\", \"home\": \"/home/jovyan\"}
		EOF
		PYTHONPATH='$JHUB_PY':. python3 - <<-'EOF'
			import json
			from traitlets.config import Config
			import jupyterhub_fake_hub as f
			# kubespawner 7.0.0 tests/test_slugs.py test_safe_slug, test_safe_slug_max_length
			for name, want in [('jupyter-alex', 'jupyter-alex'), ('jupyter-Alex', 'jupyter-alex---3a1c285c'),
			                   ('jupyter-üni', 'jupyter-ni---a5aaf5dd'), ('endswith-', 'endswith---165f1166'),
			                   ('user@email.com', 'user-email-com---0925f997'), ('has.dot', 'has-dot---03e27fdf'),
			                   ('9z9', 'x-9z9---224de202'), ('-start', 'start---f587e2dc'),
			                   ('username--servername', 'username-servername---d957f1de'),
			                   ('x' * 63, 'x' * 63), ('x' * 64, 'xxxxxxxxxxxxxxxxxxxxx---7ce10097'), ('', 'x---e3b0c442')]:
			    assert f.safe(name) == want, (name, f.safe(name), want)
			assert f.safe('x' * 17, 16) == 'xxxxx---d04fd59f' and f.safe('x' * 16, 12) == 'x---9c572959'
			assert (f.escaped('student_1'), f.escaped('ada.l'), f.escaped('Ann')) == ('student-5f1', 'ada-2el', '-41nn')
			class User:
			    name, id = 'student_1', 3
			def spawner(kubespawner, scheme=None, pvc='claim-{user_server}', pod='jupyter-{user_server}'):
			    json.dump({'namespace': 'jhub', 'kubespawner': kubespawner, 'slug_scheme': scheme, 'pod_name_template': pod,
			               'pvc_name_template': pvc, 'volume_name_template': 'v', 'home': '/home/jovyan'}, open('spawner.json', 'w'))
			    return f.FakeKubeSpawner(user=User(), config=Config())
			s = spawner(6, pvc='claim-{username}{servername}', pod='jupyter-{username}--{servername}')
			assert (s.pod_name, s.pvc_name) == ('jupyter-student-5f1', 'claim-student-5f1'), (s.pod_name, s.pvc_name)
			state = s.get_state()
			assert 'kubespawner_version' not in state and 'pvc_name' not in state, state
			s = spawner(7)
			assert (s.pod_name, s.pvc_name) == ('jupyter-student-1---820c9004', 'claim-student-1---820c9004'), (s.pod_name, s.pvc_name)
			s.load_state(state)
			assert s._state_version == 'unknown' and s.pod_name == 'jupyter-student-5f1'
			assert s.expand('claim-{user_server}', 'escape') == 'claim-student-5f1'
			s = spawner(7, 'escape')
			assert (s.pod_name, s.pvc_name) == ('jupyter-student-5f1', 'claim-student-5f1'), (s.pod_name, s.pvc_name)
			s._pvc_exists = True
			assert s.get_state()['pvc_name'] == 'claim-student-5f1' and s.get_state()['kubespawner_version'] == '7.0.0'
			# JupyterHub 5: nobody without allow settings; 3.x (4.x too): everybody
			c = Config()
			assert not f.authenticator('native', True)(config=c).check_allowed('student_1')
			assert f.authenticator('native', False)(config=c).check_allowed('student_1')
			c.Authenticator.allow_all = True
			assert f.authenticator('native', True)(config=c).check_allowed('student_1')
			c = Config()
			c.Authenticator.allowed_users = {'ada.l'}
			a = f.authenticator('pam', True)(config=c)
			assert a.check_allowed('ada.l') and not a.check_allowed('student_1')
			print('ok')
		EOF
	"
else
	test_skip "hub stand-in's KubeSpawner and JupyterHub 5" "no testbed image with Debian 12's jupyterhub in /var/cache/provision-testbed (tests/testbed makes it)"
fi

test_done
