#!/bin/sh
# t0232-chart-values-schema: the values provision renders for the charts it
# pins (roles/artifacts.yaml: the version in each chart's URL), for seed labs
# A and B (inventory/lab-a.yaml, lab-b.yaml), checked against the real
# charts of those versions in ../shared/upstream (skipped, saying so, when a
# chart's folder is absent):
#   - jupyterhub: the chart's own values.schema.json (JSON Schema; Helm
#     refuses values that fail it), over the chart's defaults as Helm
#     coalesces them, every error listed;
#   - gpu-operator and nfs-subdir-external-provisioner, which ship no
#     schema: every key the values set exists in the chart's values.yaml
#     (Helm ignores an unknown key without a word: a misspelt setting does
#     nothing).
# Each check is shown to fail on values with one wrong key.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

RENDER=$BUILD/tests/tools/render
test_need_cmd python3
python3 -c 'import yaml, jsonschema' 2>/dev/null || test_skip_all "needs python3 with yaml and jsonschema"

# pinned NAME: the chart version roles/artifacts.yaml pins for artifact NAME
pinned() {
	sed -n "/^$1:/,/^\$/s|^  url: .*/[a-z-]*-\(v*[0-9][0-9.]*\)\.tgz\$|\1|p" "$SRC_ROOT/roles/artifacts.yaml"
}
Z2JH=$(pinned jupyterhub-chart)
Z2JH4=$(pinned jupyterhub-chart-4)
GPUOP=$(pinned gpu-operator-chart)
NFS=$(pinned nfs-subdir-external-provisioner-chart)

# shellcheck source=tests/lib-hub.sh
. "$SRC_ROOT/tests/lib-hub.sh"

# schema VALUES CHART-DIR: every JSON Schema error of VALUES over the chart's
# defaults (CHART-DIR/values.yaml, coalesced as Helm does: maps merged, a
# null removes the key, anything else replaces), against
# CHART-DIR/values.schema.json, one a line; exit 1 when any.
schema() {
	python3 - "$1" "$2" <<-'PY'
		import json, sys, yaml, jsonschema
		def coalesce(base, over):
		    out = dict(base)
		    for k, v in over.items():
		        if v is None:
		            out.pop(k, None)
		        elif isinstance(v, dict) and isinstance(out.get(k), dict):
		            out[k] = coalesce(out[k], v)
		        else:
		            out[k] = v
		    return out
		v = coalesce(yaml.safe_load(open(sys.argv[2] + "/values.yaml")) or {}, yaml.safe_load(open(sys.argv[1])) or {})
		try:
		    s = json.load(open(sys.argv[2] + "/values.schema.json"))
		except FileNotFoundError:  # the same schema as the chart's source writes it
		    s = yaml.safe_load(open(sys.argv[2] + "/values.schema.yaml"))
		errs = sorted(jsonschema.validators.validator_for(s)(s).iter_errors(v), key=lambda e: list(e.absolute_path))
		for e in errs:
		    print("/".join(str(p) for p in e.absolute_path) + ": " + e.message)
		sys.exit(1 if errs else 0)
	PY
}

# keys VALUES CHART-VALUES: every key path VALUES sets that CHART-VALUES does not
# have (below a key whose default is an empty map or null, anything goes:
# nodeSelector, annotations); exit 1 when any.
keys() {
	python3 - "$1" "$2" <<-'PY'
		import sys, yaml
		mine = yaml.safe_load(open(sys.argv[1])) or {}
		theirs = yaml.safe_load(open(sys.argv[2])) or {}
		bad = []
		def walk(m, t, path):
		    for k, v in m.items():
		        p = path + [str(k)]
		        if not isinstance(t, dict) or k not in t:
		            bad.append(".".join(p))
		        elif isinstance(v, dict) and isinstance(t[k], dict) and t[k]:
		            walk(v, t[k], p)
		walk(mine, theirs, [])
		for b in bad:
		    print("unknown key: " + b)
		sys.exit(1 if bad else 0)
	PY
}

if test_have_upstream "z2jh-$Z2JH/values.schema.json" "z2jh-$Z2JH/values.yaml"; then
	test_case "jupyterhub $Z2JH: lab A's and lab B's hub values are valid against the chart's values.schema.json" "
		hub_values lab-a a-01 a.yaml
		hub_values lab-b b-0 b.yaml
		for v in a.yaml b.yaml; do
			schema \$v '$UPSTREAM/z2jh-$Z2JH' >\$v.errors || { cat \$v.errors; false; }
		done
		# the check fails on a wrong key (the schema forbids unknown ones under hub)
		sed 's/^hub:\$/hub:\n  konfig: {}/' b.yaml >bad.yaml
		grep -q '^  konfig:' bad.yaml
		expect_status 1 schema bad.yaml '$UPSTREAM/z2jh-$Z2JH' >bad.errors
		cat bad.errors
		expect_grep \"^hub: Additional properties are not allowed ('konfig' was unexpected)\" bad.errors
	"
else
	test_skip "jupyterhub $Z2JH values against its schema" "$UPSTREAM_MISSING"
fi

if test_have_upstream "z2jh-$Z2JH4/values.schema.yaml" "z2jh-$Z2JH4/values.yaml" "z2jh-$Z2JH/values.schema.json"; then
	test_case "jupyterhub $Z2JH4 (chart_version: $Z2JH4): the values of labs A and B and of GitHub and LDAP sign-in are valid against that chart's schema; a hub.config key that is no class name fails it, as it did not fail $Z2JH's" "
		four='s/^jupyterhub:\$/&\n  chart_version: $Z2JH4/'
		hub_inventory lab-a a4.inv -e \"\$four\"
		hub_inventory lab-b b4.inv -e \"\$four\"
		hub_inventory lab-b gh4.inv -e \"\$four\" \\
			-e 's/^    type: native .*/    type: github\n    github:\n      client_id: Iv1.0123456789abcdef\n      client_secret_file: \/nonexistent/'
		hub_inventory lab-b ld4.inv -e \"\$four\" \\
			-e 's/^    type: native .*/    type: ldap\n    ldap:\n      server: ldaps:\/\/ldap.example.ac.jp:636\n      bind_dn_template: uid={username},ou=people,dc=example,dc=ac,dc=jp/'
		hub_values lab-a a-01 a4.yaml a4.inv
		for l in b4 gh4 ld4; do hub_values lab-b b-0 \$l.yaml \$l.inv; done
		for v in a4.yaml b4.yaml gh4.yaml ld4.yaml; do
			grep -q '^      slug_scheme: escape\$' \$v
			schema \$v '$UPSTREAM/z2jh-$Z2JH4' >\$v.errors || { cat \$v.errors; false; }
		done
		# z2jh 4.3.0 made hub.config's top-level keys class names (a capital
		# first, a mapping): a trait written one level too high is refused
		sed 's/^  config:\$/&\n    allow_all: true/' b4.yaml >bad4.yaml
		grep -q '^    allow_all: true\$' bad4.yaml
		expect_status 1 schema bad4.yaml '$UPSTREAM/z2jh-$Z2JH4' >bad4.errors
		cat bad4.errors
		expect_grep \"^hub/config: 'allow_all' does not match any of the regexes: \" bad4.errors
		schema bad4.yaml '$UPSTREAM/z2jh-$Z2JH' >bad3.errors || { cat bad3.errors; false; }
	"
else
	test_skip "jupyterhub $Z2JH4 values against its schema" "$UPSTREAM_MISSING"
fi

if test_have_upstream "gpu-operator-$GPUOP/values.yaml"; then
	test_case "gpu-operator $GPUOP: the values for lab B's GPU nodes (host drivers) and for a node without a driver set only keys the chart has" "
		'$RENDER' template '$SRC_ROOT/roles' gpu-operator values.yaml.tmpl '$SRC_ROOT/inventory/lab-b.yaml' b-2 '$SRC_ROOT/tests/facts/gtx1080ti-ubuntu2204.facts' >g1.yaml
		'$RENDER' template '$SRC_ROOT/roles' gpu-operator values.yaml.tmpl '$SRC_ROOT/inventory/lab-b.yaml' b-2 '$SRC_ROOT/tests/facts/gpu-nodriver-nouveau.facts' >g2.yaml
		for v in g1.yaml g2.yaml; do
			keys \$v '$UPSTREAM/gpu-operator-$GPUOP/values.yaml' >\$v.errors || { cat \$v.errors; false; }
		done
		# with a node's GPUs shared (gpu_sharing: 4): the device plugin's
		# time-slicing configuration, devicePlugin.config, whose data (an
		# empty map in the chart) holds the configurations by name
		'$RENDER' template '$SRC_ROOT/roles' gpu-operator values.yaml.tmpl '$SRC_ROOT/tests/inventory/111-gpu-sharing.yaml' b-4 '$SRC_ROOT/tests/facts/rtx3070-ubuntu2404-joined.facts' >g3.yaml
		keys g3.yaml '$UPSTREAM/gpu-operator-$GPUOP/values.yaml' >g3.yaml.errors || { cat g3.yaml.errors; false; }
		expect_grep '^    name: provision-device-plugin\$' g3.yaml
		expect_grep '^                replicas: 4\$' g3.yaml
		# every configuration is one the device plugin (v0.20.0, its
		# api/config/v1) takes: version v1, and a time-slicing resource is
		# nvidia.com/gpu with 2 or more replicas
		python3 - g3.yaml <<-'PY'
			import sys, yaml
			dp = yaml.safe_load(open(sys.argv[1]))['devicePlugin']['config']
			assert dp['create'] is True and dp['default'] in dp['data'], dp
			for name, text in dp['data'].items():
			    c = yaml.safe_load(text)
			    assert c['version'] == 'v1', (name, c)
			    for r in ((c.get('sharing') or {}).get('timeSlicing') or {}).get('resources', []):
			        assert r['name'] == 'nvidia.com/gpu' and r['replicas'] >= 2, (name, r)
		PY
		sed 's/^  config:\$/  config:\n    craete: true/' g3.yaml >bad3.yaml
		expect_status 1 keys bad3.yaml '$UPSTREAM/gpu-operator-$GPUOP/values.yaml' >bad3.errors
		expect_eq 'unknown key: devicePlugin.config.craete' \"\$(cat bad3.errors)\" 'a misspelt key under devicePlugin.config'
		grep -q '^driver:' g1.yaml
		sed 's/^driver:\$/driver:\n  enabeld: true/' g1.yaml >bad.yaml
		expect_status 1 keys bad.yaml '$UPSTREAM/gpu-operator-$GPUOP/values.yaml' >bad.errors
		expect_eq 'unknown key: driver.enabeld' \"\$(cat bad.errors)\" 'a misspelt key'
		# and on a key an older chart had: v24.6.1's operator.defaultRuntime
		# is gone from v26 (the operator reads the runtime from the node)
		sed 's/^operator:\$/operator:\n  defaultRuntime: containerd/' g1.yaml >old.yaml
		grep -q '^  defaultRuntime: containerd\$' old.yaml
		expect_status 1 keys old.yaml '$UPSTREAM/gpu-operator-$GPUOP/values.yaml' >old.errors
		expect_eq 'unknown key: operator.defaultRuntime' \"\$(cat old.errors)\" 'a key of the old chart'
	"
else
	test_skip "gpu-operator $GPUOP values against its chart" "$UPSTREAM_MISSING"
fi

if test_have_upstream "nfs-subdir-external-provisioner-$NFS/values.yaml"; then
	test_case "nfs-subdir-external-provisioner $NFS: lab A's and lab B's values set only keys the chart has" "
		'$RENDER' template '$SRC_ROOT/roles' nfs-provisioner values.yaml.tmpl '$SRC_ROOT/inventory/lab-a.yaml' a-01 - >na.yaml
		'$RENDER' template '$SRC_ROOT/roles' nfs-provisioner values.yaml.tmpl '$SRC_ROOT/inventory/lab-b.yaml' b-0 - >nb.yaml
		for v in na.yaml nb.yaml; do
			keys \$v '$UPSTREAM/nfs-subdir-external-provisioner-$NFS/values.yaml' >\$v.errors || { cat \$v.errors; false; }
		done
		grep -q '^storageClass:' nb.yaml
		sed 's/^storageClass:\$/storageClass:\n  defualtClass: true/' nb.yaml >bad.yaml
		expect_status 1 keys bad.yaml '$UPSTREAM/nfs-subdir-external-provisioner-$NFS/values.yaml' >bad.errors
		expect_eq 'unknown key: storageClass.defualtClass' \"\$(cat bad.errors)\" 'a misspelt key'
	"
else
	test_skip "nfs-subdir-external-provisioner $NFS values against its chart" "$UPSTREAM_MISSING"
fi

test_done
