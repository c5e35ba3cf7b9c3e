#!/bin/sh
# t0502-artifact-digests: every artifact of the stack provision ships
# (roles/artifacts.yaml) is pinned on day one -- no `pending` -- to the
# SHA-256 its project publishes, read here from the copies in
# ../shared/upstream/indexes (the charts' index.yaml digests, Helm's archive
# checksums as kubespray ships them; README.md there names each commit):
# the chart's digest for that exact URL (a chart of the same version at
# another URL is another file), Helm's for that version and architecture.
# Each entry's comment must name the source it was taken from.  A fetch
# that does not match the pin is refused: t0500.
#
# containerd's and runc's archives (roles/containerd-release), and Helm's
# archives ../shared/upstream's copy lacks (3.18.4 arm64), have their digests
# from kubespray's checksums.yml, of which ../shared/upstream has no copy: they are compared with it when a clone of kubernetes-sigs/kubespray
# is at hand (PROVISION_TEST_KUBESPRAY=GIT_DIR, or the tool library's
# mirror beside the checkout), at the commit their comment names; without
# one the test says so and checks only that the comment names that commit
# and that provision/preflight.c's CONTAINERD_RELEASE is the pinned version.
#
# Helm 4's archives (no kubespray row yet) have theirs from Argo CD's
# copies of Helm's own .sha256sum files (hack/installers/checksums/), read
# at the commit their comment names from a clone of argoproj/argo-cd
# (PROVISION_TEST_ARGOCD=GIT_DIR, or the tool library's mirror beside the
# checkout); without one the test says so and checks only that the comment
# names that commit.
#
# Helm's older archives (4.1.4, 4.0.5, 3.18.4, 3.17.4, 3.16.4: the Helms of
# the older minors, roles/helm's `kube:` ranges) have theirs from Helm's own
# release notes, as stored copies of the release pages, recorded in
# tests/releases/release-notes.txt (one source: the project's own), each
# copy named in the entry's comment; where another source has the same
# archive (kubespray's 3.18.4) they must agree.
#
# An artifact none of those publish (Helm 4.3.0, containerd 2.4.1 and runc
# 1.5.2: their projects' checksum files are release assets, the snapshots
# of kubespray and Argo CD stop before them) needs two or more independent
# public pins that agree, recorded in tests/releases/public-pins.txt, each
# named in its comment.
#
# The one exception: a chart a role offers beside its default (role.yaml
# artifacts with chart_version and no `default: true`) may be `pending`
# while no published digest can be read here: the inventory that picks it
# must `provision fetch --record` first (roles/artifacts.yaml says what that
# trusts).  The default is always pinned.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3
test_need_upstream indexes/helm-archives.json indexes/jupyterhub.json \
	indexes/gpu-operator.json indexes/nfs-subdir-external-provisioner.json
python3 -c 'import yaml' 2>/dev/null || test_skip_all "needs python3-yaml"

KUBESPRAY=${PROVISION_TEST_KUBESPRAY:-$SRC_ROOT/../.mirror/kubernetes-sigs+kubespray/repo}
KS_COMMIT=46dbdd3994b32640bcd806b0097f50e8fdf1d514
KS_FILE=$TEST_DIR/kubespray-checksums.yml
if git --git-dir="$KUBESPRAY" show "$KS_COMMIT:roles/kubespray_defaults/vars/main/checksums.yml" >"$KS_FILE" 2>/dev/null; then
	echo "# containerd/runc digests compared with kubespray $KS_COMMIT ($KUBESPRAY)"
else
	: >"$KS_FILE"
	echo "# no kubespray clone at $KUBESPRAY: containerd/runc digests checked for their named source only"
fi

ARGOCD=${PROVISION_TEST_ARGOCD:-$SRC_ROOT/../.mirror/argoproj+argo-cd/repo}
ARGO_COMMIT=37ee0097cf851bc2dd7665fc081bbce61a7e836e
ARGO_DIR=$TEST_DIR/argocd-checksums
mkdir -p "$ARGO_DIR"
if git --git-dir="$ARGOCD" cat-file -e "$ARGO_COMMIT^{commit}" 2>/dev/null; then
	for f in $(git --git-dir="$ARGOCD" ls-tree --name-only "$ARGO_COMMIT" hack/installers/checksums/ | grep '/helm-v4.*-linux-'); do
		git --git-dir="$ARGOCD" show "$ARGO_COMMIT:$f" >"$ARGO_DIR/$(basename "$f")"
	done
	echo "# Helm 4 digests compared with argoproj/argo-cd $ARGO_COMMIT ($ARGOCD)"
else
	echo "# no argo-cd clone at $ARGOCD: Helm 4 digests checked for their named source only"
fi

test_case "roles/artifacts.yaml: no pending hash but an offered chart's beside the default, each the digest its project publishes" "
	python3 - '$SRC_ROOT/roles/artifacts.yaml' '$UPSTREAM/indexes' '$KS_FILE' '$KS_COMMIT' '$SRC_ROOT/provision/preflight.c' '$ARGO_DIR' '$ARGO_COMMIT' '$SRC_ROOT/tests/releases/public-pins.txt' '$SRC_ROOT/roles' '$SRC_ROOT/tests/releases/release-notes.txt' <<-'PY'
		import json, os, re, sys, yaml
		manifest, idx, ks_file, ks_commit, preflight, argo_dir, argo_commit, pins_file, roles, notes_file = sys.argv[1:11]
		pins = {}
		for ln in open(pins_file):
		    if ln.strip() and not ln.startswith('#'):
		        url, h, src = ln.split()
		        pins.setdefault(url, []).append((h, src))
		m = yaml.safe_load(open(manifest))
		offered = set()  # charts a role offers beside its default
		for r in os.listdir(roles):
		    f = os.path.join(roles, r, 'role.yaml')
		    if os.path.exists(f):
		        for a in (yaml.safe_load(open(f)) or {}).get('artifacts') or []:
		            if a.get('chart_version') and not a.get('default'):
		                offered.add(a['name'])
		text = open(manifest).read()
		published = {}
		for f in os.listdir(idx):
		    d = json.load(open(os.path.join(idx, f)))
		    if f == 'helm-archives.json':
		        for ver, e in d.items():
		            if ver.startswith('v'):
		                for arch, h in e.items():
		                    if arch.startswith('linux-'):
		                        url = 'https://get.helm.sh/helm-%s-%s.tar.gz' % (ver, arch)
		                        published[url] = (h, e['commit'])
		        continue
		    for e in d['entries']:
		        for url in e['urls']:
		            published[url] = (e['digest'], d['_source'])
		# public pins: two or more independent sources that agree, each named in the entry's comment
		for name, a in m.items():
		    if a['url'] in published or a['url'] not in pins:
		        continue
		    srcs = pins[a['url']]
		    assert len(set(s for _, s in srcs)) >= 2, '%s: fewer than two public pins' % name
		    assert len(set(h for h, _ in srcs)) == 1, '%s: the public pins disagree: %s' % (name, srcs)
		    block = text[text.index('\\n' + name + ':\\n'):]
		    block = block[:block.index('\\n  sha256:')]
		    for _, src in srcs:
		        assert src.split(':')[-1] in block, '%s: its comment does not name %s' % (name, src)
		    published[a['url']] = (srcs[0][0], '%d public pins (tests/releases/public-pins.txt) %s' % (len(srcs), ' '.join(s for _, s in srcs)))
		# the project's own release notes (a stored copy of the page): one source, named in the comment
		notes = {}
		for ln in open(notes_file):
		    if ln.strip() and not ln.startswith('#'):
		        url, h, src, rel = ln.split()
		        notes[url] = (h, src, rel)
		for name, a in m.items():
		    if a['url'] not in notes:
		        continue
		    h, src, rel = notes[a['url']]
		    block = text[text.index('\\n' + name + ':\\n'):]
		    block = block[:block.index('\\n  sha256:')]
		    assert src.split(':')[-1] in block, '%s: its comment does not name %s' % (name, src)
		    if a['url'] in published:
		        assert published[a['url']][0] == h, '%s: the release notes %s and %s disagree' % (name, rel, published[a['url']][1])
		        continue
		    published[a['url']] = (h, 'release notes (tests/releases/release-notes.txt) %s %s' % (src, rel))
		ks = yaml.safe_load(open(ks_file)) if os.path.getsize(ks_file) else None
		release = re.search(r'#define CONTAINERD_RELEASE \"([0-9.]+)\"', open(preflight).read()).group(1)
		pat = {'containerd_archive_checksums': r'https://github.com/containerd/containerd/releases/download/v([0-9.]+)/containerd-\\1-linux-(amd64|arm64).tar.gz',
		       'runc_checksums': r'https://github.com/opencontainers/runc/releases/download/v([0-9.]+)/runc.(amd64|arm64)',
		       'helm_archive_checksums': r'https://get.helm.sh/helm-v(3[0-9.]+)-linux-(amd64|arm64).tar.gz'}
		for key, rx in pat.items():
		    for name, a in m.items():
		        mm = re.fullmatch(rx, a['url'])
		        if mm and key.startswith('containerd'):
		            assert mm.group(1) == release, '%s: %s, CONTAINERD_RELEASE %s' % (name, mm.group(1), release)
		        if not mm or a['url'] in published:
		            continue
		        if ks:
		            want = ks[key][mm.group(2)][mm.group(1)]
		            published[a['url']] = (want.split(':')[-1], 'kubespray ' + ks_commit)
		        else:
		            published[a['url']] = (str(a['sha256']), 'kubespray ' + ks_commit + ' (not compared: no clone)')
		# Helm 4: Argo CD's copy of Helm's own checksum file (FILE.sha256: \"DIGEST  FILE\")
		for name, a in m.items():
		    mm = re.fullmatch(r'https://get.helm.sh/(helm-v4[0-9.]+-linux-(amd64|arm64).tar.gz)', a['url'])
		    if not mm or a['url'] in published:
		        continue
		    f = os.path.join(argo_dir, mm.group(1) + '.sha256')
		    if os.path.exists(f):
		        published[a['url']] = (open(f).read().split()[0], 'argoproj/argo-cd ' + argo_commit)
		    else:
		        assert not os.listdir(argo_dir), '%s: Argo CD %s has no %s' % (name, argo_commit, os.path.basename(f))
		        published[a['url']] = (str(a['sha256']), 'argoproj/argo-cd ' + argo_commit + ' (not compared: no clone)')
		assert m, 'empty manifest'
		for name, a in m.items():
		    h = str(a['sha256'])
		    if h == 'pending':
		        assert name in offered, '%s: pending, and no role offers it beside a pinned default' % name
		        print('%s: pending (offered, not the default: provision fetch --record)' % name)
		        continue
		    assert re.fullmatch('[0-9a-f]{64}', h), '%s: sha256 %s' % (name, h)
		    assert a['url'] in published, '%s: no published digest for %s' % (name, a['url'])
		    want, source = published[a['url']]
		    assert h == want, '%s: %s, published %s' % (name, h, want)
		    block = text[text.index('\\n' + name + ':\\n'):]
		    block = block[:block.index('\\n  sha256:')]
		    if 'public pins' not in source and 'release notes' not in source:
		        sha = re.search('[0-9a-f]{40}', source).group(0)
		        assert sha in block, '%s: its comment does not name %s' % (name, sha)
		    print('%s: %s... = %s' % (name, h[:16], source.split(':')[0] if ':' in source else source))
	PY
"

test_done
