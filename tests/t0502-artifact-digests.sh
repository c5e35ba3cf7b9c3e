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
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3
test_need_upstream indexes/helm-archives.json indexes/jupyterhub.json \
	indexes/gpu-operator.json indexes/nfs-subdir-external-provisioner.json
python3 -c 'import yaml' 2>/dev/null || test_skip_all "needs python3-yaml"

test_case "roles/artifacts.yaml: no pending hash, each the digest its project publishes" "
	python3 - '$SRC_ROOT/roles/artifacts.yaml' '$UPSTREAM/indexes' <<-'PY'
		import json, os, re, sys, yaml
		manifest, idx = sys.argv[1], sys.argv[2]
		m = yaml.safe_load(open(manifest))
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
		assert m, 'empty manifest'
		for name, a in m.items():
		    h = str(a['sha256'])
		    assert re.fullmatch('[0-9a-f]{64}', h), '%s: sha256 %s' % (name, h)
		    assert a['url'] in published, '%s: no published digest for %s' % (name, a['url'])
		    want, source = published[a['url']]
		    assert h == want, '%s: %s, published %s' % (name, h, want)
		    block = text[text.index('\\n' + name + ':\\n'):]
		    block = block[:block.index('\\n  sha256:')]
		    sha = re.search('[0-9a-f]{40}', source).group(0)
		    assert sha in block, '%s: its comment does not name %s' % (name, sha)
		    print('%s: %s... = %s' % (name, h[:16], source.split(':')[0] if ':' in source else source))
	PY
"

test_done
