#!/bin/sh
# run.sh: beside others (tests/run.sh: no testbed; runs the real helm and kubectl of the cache)
# run.sh: about 60 s in CI (beside another; tests/run.sh starts the longest first)
# t0403-real-clients: the real helm and kubectl, not the stand-ins, on what
# the roles hand them (issue 33, "Real clients in the tests").  The
# binaries are the pinned ones `make real-clients` (part of `make deps`)
# puts in /var/cache/provision-real-clients/bin ($PROVISION_REAL_CLIENTS;
# tests/tools/cli-flags.sh --fetch): helm 3.17.3 and 4.1.4, kubectl
# 1.30.0, 1.31.9, 1.32.3, 1.33.9, 1.34.5, 1.35.2, 1.36.4.  Skipped, saying
# so, without them.
#
#   - every helm and kubectl command line of the roles (roles/lib.sh, every
#     step; tests/tools/roles-flags.py --run) run by both helms (a line in
#     a branch of `case "$PV_HELM_MAJOR"` by its major's only) and by the
#     kubectl of every supported minor, against an API server that does
#     not answer (https://127.0.0.1:1): each must get past flag parsing
#     (an unknown flag or bad usage fails; "connection refused" passes);
#     shown failing on helm 3's `list -a` (main's line) under helm 4 and on
#     helm 4's --wait=legacy under helm 3;
#   - the values every add-on role renders (tests/tools/render, as `up`)
#     for labs A and B and the GitHub, LDAP, GPU-sharing and no-driver
#     variants, through `helm lint --strict` and `helm template` of the
#     real charts (../shared/upstream/charts: z2jh 3.3.8 and 4.4.0, GPU
#     Operator v26.7.0, nfs-subdir-external-provisioner 4.0.18; skipped,
#     saying so, without ../shared) with helm 3 and helm 4, at the
#     inventory's Kubernetes version: both helms render the same objects,
#     and what matters is in them: the profiles in the hub's values
#     (Secret hub, values.yaml: what KubeSpawner reads), the authenticator,
#     the NodePort, the GPU profiles' runtime class the one the
#     ClusterPolicy makes, their nvidia.com/gpu limits, the ClusterPolicy's
#     toolkit env, driver and CDI settings and the device plugin's
#     time-slicing ConfigMap, the NFS StorageClass the default, bound to
#     the provisioner of the inventory's export; every Kubernetes component
#     image (kube-scheduler, ...) within the version skew policy of the
#     cluster's minor (at most one minor older, never newer).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3
python3 -c 'import yaml' 2>/dev/null || test_skip_all "needs python3-yaml"

REAL=${PROVISION_REAL_CLIENTS:-/var/cache/provision-real-clients}/bin
# binaries GLOB: the binaries of the cache matching GLOB, oldest first
binaries() {
	for _b in "$REAL"/$1; do
		case $_b in *.source) ;; *) [ -x "$_b" ] && echo "$_b" ;; esac
	done | sort -V
}
HELM3=$(binaries 'helm-3.17.*' | tail -n 1)
HELM4=$(binaries 'helm-4.*' | tail -n 1)
KUBECTLS=$(binaries 'kubectl-1.*' | paste -sd ' ' -)
if [ -z "$HELM3" ] || [ -z "$HELM4" ] || [ -z "$KUBECTLS" ]; then
	test_skip_all "no real helm 3.17, helm 4 and kubectl in $REAL: make real-clients (make deps runs it)"
fi
CLI=$SRC_ROOT/tests/fakes/cli
RENDER=$BUILD/tests/tools/render
FLAGS="python3 $SRC_ROOT/tests/tools/roles-flags.py"
# the tables roles-flags.py reads the command lines with: both helm
# majors', every kubectl minor's
TABLES="$CLI/helm-3.17.3.flags $CLI/helm-4.1.4.flags $(echo "$CLI"/kubectl-*.flags)"
export HOME="$TEST_DIR"
unset KUBECONFIG

test_case "every helm and kubectl command line of the roles gets past the real clients' flag parsing (helm 3.17 and 4.1, kubectl 1.30-1.36)" "
	$FLAGS '$SRC_ROOT/roles' $TABLES --run $HELM3 $HELM4 $KUBECTLS >run.out 2>&1 || { cat run.out; false; }
	tail -n 1 run.out | sed 's/^/# /' >&3
	expect_grep ' refused 0; other errors 0\$' run.out
	n=\$(sed -n 's/^ran \\([0-9]*\\) command lines.*/\\1/p' run.out)
	[ \"\$n\" -ge 400 ] || { echo \"only \$n command lines ran\"; false; }
	# it fails on a line the real client refuses: main's 'helm list -a'
	# under helm 4, helm 4's --wait=legacy in the branch helm 3 runs
	cp -R '$SRC_ROOT/roles' roles
	sed -i 's/\\\$PV_HELM list -n \"\\\$2\" --deployed --failed --pending --superseded --uninstalled --uninstalling/\$PV_HELM list -n \"\$2\" -a/' roles/lib.sh
	sed -i '0,/\"\\\$@\" --wait --timeout/s//\"\$@\" --wait=legacy --timeout/' roles/lib.sh
	grep -q 'list -n \"\$2\" -a' roles/lib.sh && grep -q 'wait=legacy' roles/lib.sh
	expect_status 1 $FLAGS roles $TABLES --run $HELM3 $HELM4 >bad.out 2>&1
	cat bad.out
	expect_grep \"^roles/lib.sh:[0-9]*: helm list: helm-4.1.4 refused the command line: .* -a .*unknown shorthand flag: 'a' in -a\" bad.out
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: helm-3.17.3 refused the command line: .*--wait=legacy.*invalid argument \"legacy\" for \"--wait\" flag' bad.out
	expect_grep ' refused 2; other errors 0\$' bad.out
" 3>&1

# The values `up` renders, per role and variant (tests/tools/render, the
# templates of roles/; the hub's from the lab's Nodes as 20-capacity hands
# them, tests/lib-hub.sh), and the hub's secrets.yaml as 10-secrets writes it.
# shellcheck source=tests/lib-hub.sh
. "$SRC_ROOT/tests/lib-hub.sh"
# secrets FILE [GITHUB-SECRET]
secrets() {
	{
		echo "hub:"
		printf '  cookieSecret: "%s"\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
		if [ -n "${2:-}" ]; then
			printf '  config:\n    GitHubOAuthenticator:\n      client_secret: "%s"\n' "$2"
		fi
		echo "proxy:"
		printf '  secretToken: "%s"\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
	} >"$1"
}
# kube_version INVENTORY: its cluster.kubernetes_version
kube_version() {
	sed -n 's/^  kubernetes_version: *"\{0,1\}\([0-9.]*\)"\{0,1\}.*/\1/p' "$1" | head -n 1
}

# chart HELM CHART RELEASE NS KUBE OUT VALUES...: `helm lint --strict` and
# `helm template` of CHART with VALUES at Kubernetes KUBE, the manifests in
# OUT; one line on fd 3.  lint's warnings fail it but for the one a chart
# ships itself (Chart.yaml's version, helm 4: not the values' doing),
# which is printed.
chart() {
	_h=$1 _c=$2 _r=$3 _n=$4 _k=$5 _o=$6
	shift 6
	_f=
	for _v in "$@"; do _f="$_f -f $_v"; done
	# shellcheck disable=SC2086 # the -f words
	"$_h" lint --strict "$_c" --namespace "$_n" --kube-version "$_k" $_f >"$_o.lint" 2>&1 || {
		if grep -q '^\[ERROR\]' "$_o.lint" || grep '^\[WARNING\]' "$_o.lint" | grep -qv "Chart.yaml: version 'v[0-9.]*' is not a valid SemVerV2"; then
			cat "$_o.lint"
			return 1
		fi
	}
	# shellcheck disable=SC2086 # the -f words
	"$_h" template "$_r" "$_c" --namespace "$_n" --kube-version "$_k" $_f >"$_o" 2>"$_o.err" || {
		cat "$_o.err"
		return 1
	}
	echo "# $(basename "$_h") $(basename "$_c" .tgz) $(basename "$1" .yaml): lint --strict ok$(grep '^\[WARNING\]' "$_o.lint" | sed 's/^\[WARNING\] / (chart'\''s own warning: /; s/$/)/' | head -n 1); template $(grep -c '^kind: ' "$_o") objects" >&3
}

# check WHAT MANIFESTS KUBE VALUES... : what matters, in the manifests (python below)
check() {
	python3 - "$@" <<-'PY'
		import base64, re, sys, yaml
		what, manifests, kube = sys.argv[1:4]
		vals = {}
		def merge(a, b):
		    for k, v in b.items():
		        a[k] = merge(a.get(k) or {}, v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
		    return a
		for f in sys.argv[4:]:
		    merge(vals, yaml.safe_load(open(f)) or {})
		docs = [d for d in yaml.safe_load_all(open(manifests)) if d]
		def obj(kind, name=None):
		    got = [d for d in docs if d['kind'] == kind and (name is None or d['metadata']['name'] == name)]
		    assert len(got) == 1, '%s: %d objects %s %s' % (what, len(got), kind, name or '')
		    return got[0]
		said = []
		# every Kubernetes component image within the skew policy of the
		# cluster's minor: kube-scheduler, kube-controller-manager,
		# kube-apiserver, kube-proxy at most one minor older, never newer;
		# kubectl one minor either way
		minor = int(kube.split('.')[1])
		def images(o):
		    if isinstance(o, dict):
		        for k, v in o.items():
		            if k == 'image' and isinstance(v, str):
		                yield v
		            else:
		                yield from images(v)
		    elif isinstance(o, list):
		        for v in o:
		            yield from images(v)
		for d in docs:
		    for c in images(d):
		        m = re.search(r'/(kube-scheduler|kube-controller-manager|kube-apiserver|kube-proxy|kubectl):v1\.([0-9]+)\.', c)
		        if m:
		            lo = minor - 1
		            hi = minor + (1 if m.group(1) == 'kubectl' else 0)
		            assert lo <= int(m.group(2)) <= hi, ('%s: %s %s runs image %s against Kubernetes %s: the skew policy allows 1.%d to 1.%d'
		                                                 % (what, d['kind'], d['metadata']['name'], c, kube, lo, hi))
		if what.startswith('jupyterhub'):
		    hub = yaml.safe_load(base64.b64decode(obj('Secret', 'hub')['data']['values.yaml']))
		    # the profiles KubeSpawner reads: exactly the rendered ones
		    assert hub['singleuser'].get('profileList') == vals['singleuser'].get('profileList'), what + ': profileList'
		    for p in hub['singleuser'].get('profileList') or []:
		        o = p['kubespawner_override']
		        gpus = int((o.get('extra_resource_limits') or {}).get('nvidia.com/gpu', '0'))
		        assert (o.get('extra_pod_config') or {}).get('runtimeClassName') == ('nvidia' if gpus else None), p['slug']
		    n = len(hub['singleuser'].get('profileList') or [])
		    gpu = sum(1 for p in hub['singleuser'].get('profileList') or [] if (p['kubespawner_override'].get('extra_resource_limits') or {}).get('nvidia.com/gpu'))
		    said.append('%d profiles in the hub values%s' % (n, ' (%d with nvidia.com/gpu limits, runtimeClassName nvidia)' % gpu if gpu else ''))
		    auth = hub['hub']['config']['JupyterHub']['authenticator_class']
		    assert auth == vals['hub']['config']['JupyterHub']['authenticator_class'], auth
		    said.append('authenticator ' + auth)
		    # who may log in: the inventory's users, JupyterHub 5's allow_all
		    # (z2jh 4) only where the authenticator is the gate, never GitHub
		    a, want = hub['hub']['config']['Authenticator'], vals['hub']['config']['Authenticator']
		    assert a.get('admin_users') == want.get('admin_users') and a.get('allowed_users') == want.get('allowed_users'), a
		    z4 = what.startswith('jupyterhub-4')
		    assert a.get('allow_all') == (True if z4 and not a.get('allowed_users') and auth != 'github' else None), a
		    said.append('admins %s, allowed %s%s' % (','.join(a.get('admin_users') or []) or '-', ','.join(a.get('allowed_users') or []) or '-',
		                                           ', allow_all' if a.get('allow_all') else ''))
		    # the homes: a claim per user from the NFS StorageClass, the whole
		    # claim (no subPath), named as KubeSpawner 6 named it (z2jh 4:
		    # slug_scheme escape; 3: KubeSpawner 6 itself)
		    st = hub['singleuser']['storage']
		    assert st['type'] == 'dynamic' and st['dynamic']['storageClass'] == 'nfs' and st['capacity'] == vals['singleuser']['storage']['capacity'], st
		    assert not st['dynamic'].get('subPath'), st['dynamic']
		    ks = hub['hub']['config'].get('KubeSpawner') or {}
		    if z4:
		        assert ks.get('slug_scheme') == 'escape' and st['dynamic'].get('pvcNameTemplate') is None, (ks, st['dynamic'])
		        said.append('homes: claim-{user_server} of StorageClass nfs, slug_scheme escape')
		    else:
		        assert 'slug_scheme' not in ks and st['dynamic']['pvcNameTemplate'] == 'claim-{username}{servername}', (ks, st['dynamic'])
		        said.append('homes: claim-{username}{servername} of StorageClass nfs')
		    if 'GitHubOAuthenticator' in vals['hub']['config']:
		        assert hub['hub']['config']['GitHubOAuthenticator']['client_secret'] == vals['hub']['config']['GitHubOAuthenticator']['client_secret']
		        said.append('the GitHub client secret in the hub config')
		    svc = obj('Service', 'proxy-public')
		    want = vals.get('proxy', {}).get('service', {})
		    if want.get('type') == 'NodePort':
		        assert svc['spec']['type'] == 'NodePort' and svc['spec']['ports'][0]['nodePort'] == want['nodePorts']['http'], svc['spec']
		        said.append('NodePort %d' % want['nodePorts']['http'])
		    sel = obj('Deployment', 'hub')['spec']['template']['spec'].get('nodeSelector')
		    assert sel == (vals['hub'].get('nodeSelector') or None), sel
		    assert obj('Secret', 'hub')['data'].get('hub.config.JupyterHub.cookie_secret'), 'the cookie secret'
		elif what.startswith('gpu-operator'):
		    cp = obj('ClusterPolicy')['spec']
		    assert cp['operator']['runtimeClass'] == vals['operator']['runtimeClass'] == 'nvidia', cp['operator']
		    assert cp['toolkit']['env'] == vals['toolkit']['env'], cp['toolkit']['env']
		    assert cp['toolkit']['installDir'] == vals['toolkit']['installDir'] and cp['toolkit']['enabled'] is True
		    assert cp['driver']['enabled'] is vals['driver']['enabled'], cp['driver']['enabled']
		    assert cp['cdi']['enabled'] is False, cp['cdi']
		    said.append('ClusterPolicy: runtimeClass nvidia, toolkit env %s, driver.enabled %s, cdi off'
		                % (','.join(e['name'] for e in cp['toolkit']['env']), cp['driver']['enabled']))
		    dp = vals.get('devicePlugin', {}).get('config')
		    if dp:
		        assert cp['devicePlugin']['config']['name'] == dp['name'] and cp['devicePlugin']['config']['default'] == dp['default'], cp['devicePlugin']
		        cm = obj('ConfigMap', dp['name'])
		        assert cm['data'] == dp['data'], cm['data']
		        reps = [r['replicas'] for t in cm['data'].values() for r in ((yaml.safe_load(t).get('sharing') or {}).get('timeSlicing') or {}).get('resources', [])]
		        said.append('device plugin ConfigMap %s (time-slicing replicas %s)' % (dp['name'], ','.join(map(str, reps))))
		elif what.startswith('nfs'):
		    sc = obj('StorageClass', vals['storageClass']['name'])
		    assert sc['metadata']['annotations']['storageclass.kubernetes.io/is-default-class'] == 'true', sc['metadata']
		    env = {e['name']: e['value'] for e in obj('Deployment')['spec']['template']['spec']['containers'][0]['env']}
		    assert sc['provisioner'] == env['PROVISIONER_NAME'], (sc['provisioner'], env)
		    assert (env['NFS_SERVER'], env['NFS_PATH']) == (vals['nfs']['server'], vals['nfs']['path']), env
		    assert sc['parameters']['archiveOnDelete'] == str(vals['storageClass']['archiveOnDelete']).lower()
		    said.append('StorageClass %s the default, provisioner %s of %s:%s' % (sc['metadata']['name'], sc['provisioner'], env['NFS_SERVER'], env['NFS_PATH']))
		print('# %s: %s' % (what, '; '.join(said)))
	PY
}

# both HELM-OUT-3 HELM-OUT-4: helm 3 and helm 4 rendered the same objects,
# but for what the chart makes at random on each render (z2jh's
# CryptKeeper keys, and the checksum of the Secret holding them); the
# objects that differ are named, never shown (they hold secrets).
both() {
	python3 - "$1" "$2" <<-'PY'
		import sys, yaml
		def objs(path):
		    out = {}
		    for d in yaml.safe_load_all(open(path)):
		        if not d:
		            continue
		        if d['kind'] == 'Secret':
		            (d.get('data') or {}).pop('hub.config.CryptKeeper.keys', None)
		        ann = ((d.get('spec') or {}).get('template') or {}).get('metadata', {}).get('annotations') or {}
		        ann.pop('checksum/secret', None)
		        out['%s/%s' % (d['kind'], d['metadata']['name'])] = d
		    return out
		a, b = objs(sys.argv[1]), objs(sys.argv[2])
		bad = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
		if bad:
		    sys.exit('helm 3 and helm 4 render these differently: ' + ', '.join(bad))
	PY
}

I=$SRC_ROOT/inventory
T=$SRC_ROOT/tests/inventory
F=$SRC_ROOT/tests/facts
for z in 3.3.8 4.4.0; do
	if test_have_upstream "charts/jupyterhub-$z.tgz"; then
		test_case "z2jh $z (chart_version: $z) with helm 3 and 4: lab A, lab B, GitHub and LDAP hub values lint and render; profiles, GPU limits, authenticator, allowed users, home claims (storage class, slug scheme), NodePort, skew" "
			# the values provision renders for that chart (jupyterhub.chart_version)
			for f in '$I/lab-a.yaml' '$I/lab-b.yaml' '$T/010-hub-github.yaml' '$T/011-hub-ldap.yaml'; do
				sed 's/^jupyterhub:\$/&\n  chart_version: $z/' \"\$f\" >\"\$(basename \"\$f\" .yaml).$z.inv\"
			done
			hub_values lab-a a-01 lab-a.yaml lab-a.$z.inv
			hub_values lab-b b-0 lab-b.yaml lab-b.$z.inv
			'$RENDER' template '$SRC_ROOT/roles' jupyterhub values.yaml.tmpl 010-hub-github.$z.inv cp - >github.yaml
			'$RENDER' template '$SRC_ROOT/roles' jupyterhub values.yaml.tmpl 011-hub-ldap.$z.inv cp - >ldap.yaml
			secrets s.yaml
			secrets s-gh.yaml 0123456789abcdef0123456789abcdef01234567
			for v in lab-a:'$I/lab-a.yaml':s.yaml lab-b:'$I/lab-b.yaml':s.yaml github:'$T/010-hub-github.yaml':s-gh.yaml ldap:'$T/011-hub-ldap.yaml':s.yaml; do
				name=\${v%%:*} inv=\${v#*:} sec=\${v##*:}
				inv=\${inv%:*}
				k=\$(kube_version \"\$inv\")
				for h in $HELM3 $HELM4; do
					chart \"\$h\" '$UPSTREAM/charts/jupyterhub-$z.tgz' jhub jhub \"\$k\" \"\$name-\${h##*/}.out\" \$name.yaml \$sec
					check \"jupyterhub-$z \$name (\${h##*/})\" \"\$name-\${h##*/}.out\" \"\$k\" \$name.yaml \$sec >&3
				done
				both \"\$name-\${HELM3##*/}.out\" \"\$name-\${HELM4##*/}.out\"
			done
		" 3>&1
	else
		test_skip "z2jh $z through the real helm 3 and 4" "$UPSTREAM_MISSING"
	fi
done

if test_have_upstream charts/gpu-operator-v26.7.0.tgz; then
	test_case "GPU Operator v26.7.0 with helm 3 and 4: host drivers, no driver, GPU sharing; the ClusterPolicy's runtime class, toolkit env, driver, CDI, time-slicing" "
		'$RENDER' template '$SRC_ROOT/roles' gpu-operator values.yaml.tmpl '$I/lab-b.yaml' b-2 '$F/gtx1080ti-ubuntu2204.facts' >host-driver.yaml
		'$RENDER' template '$SRC_ROOT/roles' gpu-operator values.yaml.tmpl '$I/lab-b.yaml' b-2 '$F/gpu-nodriver-nouveau.facts' >no-driver.yaml
		'$RENDER' template '$SRC_ROOT/roles' gpu-operator values.yaml.tmpl '$T/111-gpu-sharing.yaml' b-4 '$F/rtx3070-ubuntu2404-joined.facts' >sharing.yaml
		grep -q '^  enabled: true' no-driver.yaml
		for v in host-driver:'$I/lab-b.yaml' no-driver:'$I/lab-b.yaml' sharing:'$T/111-gpu-sharing.yaml'; do
			name=\${v%%:*} k=\$(kube_version \"\${v#*:}\")
			for h in $HELM3 $HELM4; do
				chart \"\$h\" '$UPSTREAM/charts/gpu-operator-v26.7.0.tgz' gpu-operator gpu-operator \"\$k\" \"\$name-\${h##*/}.out\" \$name.yaml
				check \"gpu-operator \$name (\${h##*/})\" \"\$name-\${h##*/}.out\" \"\$k\" \$name.yaml >&3
			done
			both \"\$name-\${HELM3##*/}.out\" \"\$name-\${HELM4##*/}.out\"
		done
		# helm 4's lint --strict fails the published chart on its own
		# Chart.yaml (version v26.7.0 is not SemVer 2), helm 3's does not
		expect_grep \"^\\[WARNING\\] Chart.yaml: version 'v26.7.0' is not a valid SemVerV2\" \"host-driver-\${HELM4##*/}.out.lint\"
		expect_no_grep '^\\[WARNING\\]' \"host-driver-\${HELM3##*/}.out.lint\"
	" 3>&1
else
	test_skip "the GPU Operator chart through the real helm 3 and 4" "$UPSTREAM_MISSING"
fi

if test_have_upstream charts/nfs-subdir-external-provisioner-4.0.18.tgz; then
	test_case "nfs-subdir-external-provisioner 4.0.18 with helm 3 and 4: labs A and B; StorageClass nfs the default, the inventory's export" "
		'$RENDER' template '$SRC_ROOT/roles' nfs-provisioner values.yaml.tmpl '$I/lab-a.yaml' a-01 - >lab-a.yaml
		'$RENDER' template '$SRC_ROOT/roles' nfs-provisioner values.yaml.tmpl '$I/lab-b.yaml' b-0 - >lab-b.yaml
		for name in lab-a lab-b; do
			k=\$(kube_version '$I/'\$name.yaml)
			for h in $HELM3 $HELM4; do
				chart \"\$h\" '$UPSTREAM/charts/nfs-subdir-external-provisioner-4.0.18.tgz' nfs-subdir-external-provisioner nfs-provisioner \"\$k\" \"\$name-\${h##*/}.out\" \$name.yaml
				check \"nfs-subdir-external-provisioner \$name (\${h##*/})\" \"\$name-\${h##*/}.out\" \"\$k\" \$name.yaml >&3
			done
			both \"\$name-\${HELM3##*/}.out\" \"\$name-\${HELM4##*/}.out\"
		done
	" 3>&1
else
	test_skip "the NFS provisioner chart through the real helm 3 and 4" "$UPSTREAM_MISSING"
fi

if test_have_upstream charts/jupyterhub-4.4.0.tgz charts/jupyterhub-3.3.8.tgz; then
	test_case "z2jh 4.4.0 refuses, with helm 3 and 4, a hub.config key that is no class name (4.3.0's schema), which 3.3.8 took" "
		sed 's/^jupyterhub:\$/&\n  chart_version: 4.4.0/' '$I/lab-b.yaml' >b4.inv
		hub_values lab-b b-0 b4.yaml b4.inv
		sed 's/^  config:\$/&\n    allow_all: true/' b4.yaml >bad.yaml
		grep -q '^    allow_all: true\$' bad.yaml
		secrets s.yaml
		for h in $HELM3 $HELM4; do
			expect_status 1 \"\$h\" template jhub '$UPSTREAM/charts/jupyterhub-4.4.0.tgz' -n jhub -f bad.yaml -f s.yaml >out 2>err
			cat err
			expect_grep 'allow_all' err
			expect_grep 'schema' err
			\"\$h\" template jhub '$UPSTREAM/charts/jupyterhub-3.3.8.tgz' -n jhub -f bad.yaml -f s.yaml >out3 2>err3 || { cat err3; false; }
		done
	"
else
	test_skip "z2jh 4.4.0's hub.config schema through the real helm" "$UPSTREAM_MISSING"
fi

test_case "the checks fail on what they look for: a kube-scheduler two minors older than the cluster, a StorageClass not the default" "
	'$RENDER' template '$SRC_ROOT/roles' nfs-provisioner values.yaml.tmpl '$I/lab-b.yaml' b-0 - >nb.yaml
	cat >m.yaml <<-'EOF'
		apiVersion: storage.k8s.io/v1
		kind: StorageClass
		metadata: {name: nfs, annotations: {storageclass.kubernetes.io/is-default-class: 'false'}}
		provisioner: cluster.local/nfs-subdir-external-provisioner
		parameters: {archiveOnDelete: 'true'}
		---
		apiVersion: apps/v1
		kind: Deployment
		metadata: {name: x}
		spec: {template: {spec: {containers: [{name: s, image: registry.k8s.io/kube-scheduler:v1.34.2, env: [{name: PROVISIONER_NAME, value: cluster.local/nfs-subdir-external-provisioner}, {name: NFS_SERVER, value: 192.168.10.51}, {name: NFS_PATH, value: /nfs}]}]}}}
	EOF
	expect_status 1 check nfs m.yaml 1.36.4 nb.yaml >o 2>&1
	expect_grep 'kube-scheduler:v1.34.2 against Kubernetes 1.36.4: the skew policy allows 1.35 to 1.36' o
	sed -i 's/kube-scheduler:v1.34.2/kube-scheduler:v1.35.9/' m.yaml
	expect_status 1 check nfs m.yaml 1.36.4 nb.yaml >o 2>&1
	expect_grep \"AssertionError: .*'storageclass.kubernetes.io/is-default-class': 'false'\" o
"

test_done
