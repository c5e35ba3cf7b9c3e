#!/bin/sh
# t0503-version-policy: the pins of roles/ against the version policies they
# live under, from the project's own files only (no ../shared):
#   - the default Kubernetes version (roles/kubernetes.yaml `default`) is not
#     past its minor's end of life by the table's own dates (today:
#     PROVISION_TEST_TODAY, else the date);
#   - every row's helm column is what Helm's n-3 skew policy gives
#     (Kubernetes 1.X: Helm 3.(X-15)..3.(X-12), 4.(X-34)..4.(X-31));
#   - every minor of the table has one Helm of each major its helm column
#     lists pinned in roles/helm (artifacts with `kube:`, their versions in
#     roles/artifacts.yaml), per arch, and that Helm supports the minor
#     (preflight refuses a Helm outside the minor's skew);
#   - the hub's user-scheduler (z2jh's kube-scheduler, pinned by the chart:
#     3.3.8 v1.26.15, 4.4.0 v1.30.14, values.yaml scheduling.userScheduler
#     .image.tag) is turned off in roles/jupyterhub's values, or within the
#     Kubernetes skew policy of the default minor (kube-scheduler: the API
#     server's minor or one older, kubernetes.io/releases/version-skew-policy).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3
python3 -c 'import yaml' 2>/dev/null || test_skip_all "needs python3-yaml"
TODAY=${PROVISION_TEST_TODAY:-$(date -u +%F)}

test_case "the default minor, its Helm and the hub's kube-scheduler within their policies ($TODAY)" "
	python3 - '$SRC_ROOT/roles' '$TODAY' <<-'PY'
		import re, sys, yaml
		roles, today = sys.argv[1:3]
		t = yaml.safe_load(open(roles + '/kubernetes.yaml'))
		default = t['default']
		minor = '.'.join(default.split('.')[:2])
		row = t['minors'][minor]
		bad = []
		if row['end_of_life'] < today:
		    bad.append('default %s: Kubernetes %s ended %s' % (default, minor, row['end_of_life']))
		for m, r in t['minors'].items():
		    x = int(m.split('.')[1])
		    want = ['3.%d-3.%d' % (x - 15, x - 12)]
		    if x - 31 >= 0:
		        lo = max(0, x - 34)
		        want.append('4.%d' % lo if lo == x - 31 else '4.%d-4.%d' % (lo, x - 31))
		    if r['helm'] != ', '.join(want):
		        bad.append('%s: helm %s, the skew policy gives %s' % (m, r['helm'], ', '.join(want)))
		arts = yaml.safe_load(open(roles + '/artifacts.yaml'))
		helm_role = yaml.safe_load(open(roles + '/helm/role.yaml'))
		def supported(ranges, v):
		    hm, hn = (int(p) for p in v.split('.')[:2])
		    for rg in ranges.split(', '):
		        a, _, b = rg.partition('-')
		        am, an = (int(p) for p in a.split('.'))
		        bm, bn = (int(p) for p in (b or a).split('.'))
		        if hm == am == bm and an <= hn <= bn:
		            return True
		    return False
		def minors_of(kube):
		    a, _, b = str(kube).partition('-')
		    return range(int(a.split('.')[1]), int((b or a).split('.')[1]) + 1)
		# per minor and major: the Helm archives of roles/helm serving it (amd64 and arm64 alike)
		serve = {}
		helms = set()
		for a in helm_role['artifacts']:
		    v = re.search(r'/helm-v([0-9.]+)-linux', arts[a['name']]['url'])
		    assert v and a.get('helm') in (3, 4) and a.get('kube'), '%s: a Helm archive needs helm: and kube:' % a['name']
		    helms.add(v.group(1))
		    for x in minors_of(a['kube']):
		        serve.setdefault(('1.%d' % x, a['helm'], a.get('arch', 'amd64')), []).append(v.group(1))
		for m, r in t['minors'].items():
		    majors = set(int(rg.split('.')[0]) for rg in r['helm'].split(', '))
		    for major in (3, 4):
		        for arch in ('amd64', 'arm64'):
		            got = serve.get((m, major, arch), [])
		            if len(got) > 1:
		                bad.append('%s: roles/helm pins %d Helm %d archives for %s (%s): one' % (m, len(got), major, arch, ', '.join(got)))
		            elif got and not supported(r['helm'], got[0]):
		                bad.append('%s: roles/helm installs Helm %s (%s), the minor needs %s' % (m, got[0], arch, r['helm']))
		            elif not got and major in majors:
		                bad.append('%s: no Helm %d pinned for %s, the minor has Helms %s' % (m, major, arch, r['helm']))
		values = open(roles + '/jupyterhub/templates/values.yaml.tmpl').read()
		off = re.search(r'^scheduling:\n(?:  .*\n)*?  userScheduler:\n(?:    .*\n)*?    enabled: false', values, re.M)
		if not off:
		    art = arts['jupyterhub-chart']['url']
		    chart = re.search(r'jupyterhub-([0-9.]+)\.tgz', art).group(1)
		    sched = {'3.3.8': '1.26', '4.4.0': '1.30'}[chart]
		    d = int(minor.split('.')[1]) - int(sched.split('.')[1])
		    if not 0 <= d <= 1:
		        bad.append('the hub chart %s runs kube-scheduler %s (user-scheduler on): %d minors from the default %s (skew policy: 0 or 1 older)' % (chart, sched, d, minor))
		for b in bad:
		    print(b)
		assert not bad, '%d outside the policies' % len(bad)
		print('default %s: end of life %s; every minor has its Helms pinned (%s)' % (default, row['end_of_life'], ', '.join(sorted(helms, key=lambda v: [int(p) for p in v.split('.')]))))
	PY
"

test_case "helm: 4 on a minor no Helm 4 supports (1.30): file:line:col, exit 2, before any node (plan, up, fetch)" "
	cat >h4.inv <<-EOF
		cluster:
		  name: h4
		  kubernetes_version: \"1.30.4\"
		  helm: 4
		ssh:
		  user: admin
		jupyterhub:
		  enabled: false
		nodes:
		  - name: only
		    address: 198.18.250.1
		    roles: [control-plane, worker]
	EOF
	for cmd in 'plan --state st' 'up --state st --no-tui' 'fetch --cache cache'; do
		expect_status 2 '$PROVISION' \$cmd -i h4.inv --roles '$SRC_ROOT/roles' >out 2>err
		cat err
		expect_grep '^h4.inv:4:9: error: cluster.helm 4: no Helm 4 is pinned for Kubernetes 1.30.4 (roles/helm: Helm 4.3.0 for 1.34-1.37, Helm 4.2.4 for 1.33, ' err
		expect_grep 'hint: remove the key' err
		expect_eq '' \"\$(cat out)\" 'output'
	done
	test ! -e st/logs
	test ! -e cache
	sed -i '/^  helm: 4\$/d' h4.inv
	# without the key: Helm 3.18.4, no error before the nodes (this one is unreachable: exit 1)
	expect_status 1 '$PROVISION' plan -i h4.inv --roles '$SRC_ROOT/roles' --state st >out 2>err
	expect_grep '^only: unreachable: ' out
	! grep -q 'error:' err
"

if [ -z "${T0503_INNER:-}" ]; then
	test_case "the check fails past the end of life (the table's own date)" "
		! T0503_INNER=1 PROVISION_TEST_TODAY=2099-01-01 sh '$SRC_ROOT/tests/t0503-version-policy.sh' >late.out 2>&1
		expect_grep 'ended 20' late.out
	"
fi

test_done
