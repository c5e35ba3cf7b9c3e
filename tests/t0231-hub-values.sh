#!/bin/sh
# t0231-hub-values: the jupyterhub role's values.yaml for seed labs A and B
# (inventory/lab-a.yaml, lab-b.yaml), rendered by the code `provision up`
# uses (tests/tools/render: plan_values + plan_add_profiles + the template)
# from the Nodes as 20-capacity hands them (tests/roles/hub/LAB-NODE.json:
# `kubectl get node -o json` of each lab machine after provision: the
# kubelet's systemReserved 500m / 1Gi and 100Mi eviction taken off, GPU
# feature discovery's labels, the device plugin's nvidia.com/gpu).
# Checked: the file parses as YAML, one profile per GPU model (a node with
# two models gets its own), CPU-only first and default, nodeSelectors on
# nvidia.com/gpu.product, GPU profiles with runtimeClassName nvidia (KubeSpawner's
# extra_pod_config), the CPU-only one with NVIDIA_VISIBLE_DEVICES=void (its
# environment), limits at most 1.5x guarantees and within every
# node a profile can land on, the inventory's hub settings, no
# user-scheduler (issue 33: the chart's pinned kube-scheduler is minors
# behind the cluster, outside the skew policy); and handed
# text that is not what kubectl prints is an error naming it.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

RENDER=$BUILD/tests/tools/render
DATA=$SRC_ROOT/tests/roles/hub
test_need_cmd python3
python3 -c 'import yaml' 2>/dev/null || test_skip_all "needs python3-yaml"

# shellcheck source=tests/lib-hub.sh
. "$SRC_ROOT/tests/lib-hub.sh"

# check VALUES NODE-JSON...: parses; 1.5x; every profile fits every node it selects.
check() {
	python3 - "$@" <<-'EOF'
		import json, sys, yaml
		v = yaml.safe_load(open(sys.argv[1]))
		nodes = [json.load(open(f)) for f in sys.argv[2:]]
		def cpu(q):
		    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)
		def mib(q):
		    return float(q[:-2]) / 1024 if q.endswith("Ki") else float(q[:-1])
		profiles = v["singleuser"]["profileList"]
		assert profiles[0]["slug"] == "cpu" and profiles[0]["default"] is True, profiles[0]
		for p in profiles:
		    o = p["kubespawner_override"]
		    assert 0 < o["cpu_guarantee"] <= o["cpu_limit"] <= 1.5 * o["cpu_guarantee"] + 1e-9, p
		    assert 0 < mib(o["mem_guarantee"]) <= mib(o["mem_limit"]) <= 1.5 * mib(o["mem_guarantee"]), p
		    sel = o.get("node_selector") or {}
		    on = [n for n in nodes if not n["spec"].get("taints")
		          and all(n["metadata"]["labels"].get(k) == x for k, x in sel.items())]
		    assert on, p["slug"]
		    for n in on:
		        a = n["status"]["allocatable"]
		        assert o["cpu_limit"] <= cpu(a["cpu"]) and mib(o["mem_limit"]) <= mib(a["memory"]), (p["slug"], a)
		        assert int((o.get("extra_resource_limits") or {}).get("nvidia.com/gpu", "0")) <= int(a.get("nvidia.com/gpu", "0"))
		    # a GPU notebook runs under the NVIDIA runtime; a CPU one under the node's default
		    gpus = int((o.get("extra_resource_limits") or {}).get("nvidia.com/gpu", "0"))
		    assert (o.get("extra_pod_config") or {}).get("runtimeClassName") == ("nvidia" if gpus else None), p
		    # and a CPU one on a GPU node (nvidia its default runtime) does not take
		    # every GPU its CUDA image asks for with NVIDIA_VISIBLE_DEVICES=all
		    assert (o.get("environment") or {}).get("NVIDIA_VISIBLE_DEVICES") == (None if gpus else "void"), p
		    print("%s|%s|%s|%s" % (p["slug"], p["display_name"], (o.get("extra_resource_limits") or {}).get("nvidia.com/gpu", "0"),
		                           ",".join("%s=%s" % kv for kv in sorted(sel.items()))))
	EOF
}

test_case "lab B: CPU-only, GTX 1080 Ti, RTX 2080 Ti, RTX 3070, each on its GPU product label" "
	hub_values lab-b b-0 b.yaml
	check b.yaml '$DATA'/lab-b-*.json >b.profiles
	cat b.profiles
	expect_eq 4 \"\$(wc -l <b.profiles | tr -d ' ')\" 'profiles'
	expect_grep '^cpu|CPU only|0|\$' b.profiles
	expect_grep '^gpu-geforce-gtx-1080-ti-x1|1× GeForce GTX 1080 Ti (11 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-GTX-1080-Ti\$' b.profiles
	expect_grep '^gpu-geforce-rtx-2080-ti-x1|1× GeForce RTX 2080 Ti (11 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-RTX-2080-Ti\$' b.profiles
	expect_grep '^gpu-geforce-rtx-3070-x1|1× GeForce RTX 3070 (8 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-RTX-3070\$' b.profiles
	python3 - b.yaml <<-'EOF'
		import sys, yaml
		v = yaml.safe_load(open(sys.argv[1]))
		assert v['proxy']['service'] == {'type': 'NodePort', 'nodePorts': {'http': 30080}}
		assert v['hub']['config']['JupyterHub']['authenticator_class'] == 'nativeauthenticator.NativeAuthenticator'
		assert v['hub']['config']['Authenticator']['admin_users'] == ['lab-admin']
		assert 'allowed_users' not in v['hub']['config']['Authenticator']
		assert v['singleuser']['storage']['capacity'] == '10Gi'
		assert v['singleuser']['storage']['extraVolumes'][0]['emptyDir'] == {'medium': 'Memory', 'sizeLimit': '1Gi'}
		assert v['singleuser']['startTimeout'] == 900
		# no user-scheduler (issue 33): z2jh's pinned kube-scheduler (v1.26.15 in
		# 3.3.8) is minors behind the cluster; notebooks go to the cluster's own
		assert v['scheduling']['userScheduler']['enabled'] is False, v.get('scheduling')
		assert 'schedulerName' not in v['singleuser'], v['singleuser']
	EOF
"

test_case "lab A: a-2's RTX 4080 + A2 by hostname (1 and 2 GPUs), GTX 1080 Ti by label, allowed users, 2Gi /dev/shm" "
	hub_values lab-a a-01 a.yaml
	check a.yaml '$DATA'/lab-a-*.json >a.profiles
	cat a.profiles
	expect_eq 4 \"\$(wc -l <a.profiles | tr -d ' ')\" 'profiles'
	expect_grep '^gpu-a-2-x1|1× GeForce RTX 4080 or A2 (15 GiB) on a-2|1|kubernetes.io/hostname=a-2\$' a.profiles
	expect_grep '^gpu-a-2-x2|2× GeForce RTX 4080 or A2 (15 GiB) on a-2|2|kubernetes.io/hostname=a-2\$' a.profiles
	expect_grep '^gpu-geforce-gtx-1080-ti-x1|1× GeForce GTX 1080 Ti (11 GiB)|1|nvidia.com/gpu.product=NVIDIA-GeForce-GTX-1080-Ti\$' a.profiles
	python3 - a.yaml <<-'EOF'
		import sys, yaml
		v = yaml.safe_load(open(sys.argv[1]))
		assert v['hub']['config']['Authenticator']['allowed_users'] == ['sensei', 'student1', 'student2']
		assert v['singleuser']['storage']['extraVolumes'][0]['emptyDir']['sizeLimit'] == '2Gi'
		assert v['hub']['nodeSelector'] == {'kubernetes.io/hostname': 'a-01'}
		assert v['scheduling'] == {'userScheduler': {'enabled': False}}, v.get('scheduling')
	EOF
"

# hub4 OUT: the jupyterhub section of a values file, as "key=value" lines
# (allowed, allow_all, slug_scheme, authenticator), for the checks below.
hub4() {
	python3 - "$1" <<-'EOF'
		import sys, yaml
		c = yaml.safe_load(open(sys.argv[1]))['hub']['config']
		a = c['Authenticator']
		print('authenticator=%s' % c['JupyterHub']['authenticator_class'])
		print('admins=%s' % ','.join(a.get('admin_users') or []))
		print('allowed=%s' % ','.join(a.get('allowed_users') or []))
		print('allow_all=%s' % a.get('allow_all'))
		print('slug_scheme=%s' % (c.get('KubeSpawner') or {}).get('slug_scheme'))
		print('config_keys=%s' % ','.join(sorted(c)))
	EOF
}

test_case "z2jh 4.4.0 (chart_version: 4.4.0), labs A and B: the allowed users as the inventory says, allow_all only where the authenticator is the gate, slug_scheme escape; 3.3.8's values have neither" "
	hub_inventory lab-b b4.inv -e 's/^jupyterhub:\$/&\n  chart_version: 4.4.0/'
	hub_values lab-b b-0 b4.yaml b4.inv
	hub4 b4.yaml >b4.hub
	cat b4.hub
	expect_grep '^authenticator=nativeauthenticator.NativeAuthenticator\$' b4.hub
	expect_grep '^allowed=\$' b4.hub
	expect_grep '^allow_all=True\$' b4.hub
	expect_grep '^slug_scheme=escape\$' b4.hub
	expect_grep '^config_keys=Authenticator,JupyterHub,KubeSpawner,NativeAuthenticator\$' b4.hub
	hub_inventory lab-a a4.inv -e 's/^jupyterhub:\$/&\n  chart_version: 4.4.0/'
	hub_values lab-a a-01 a4.yaml a4.inv
	hub4 a4.yaml >a4.hub
	cat a4.hub
	expect_grep '^allowed=sensei,student1,student2\$' a4.hub
	expect_grep '^allow_all=None\$' a4.hub
	expect_grep '^slug_scheme=escape\$' a4.hub
	# the rest of the values is the same as 3.3.8's (profiles, storage, hub)
	hub_values lab-a a-01 a3.yaml
	python3 - a3.yaml a4.yaml <<-'EOF'
		import sys, yaml
		a3, a4 = (yaml.safe_load(open(f)) for f in sys.argv[1:])
		assert 'KubeSpawner' not in a3['hub']['config'] and 'allow_all' not in a3['hub']['config']['Authenticator'], a3['hub']['config']
		for v in (a3, a4):
		    v['hub'].pop('config')
		assert a3 == a4, 'the 4.4.0 values differ from 3.3.8 outside hub.config'
	EOF
"

test_case "z2jh 4.4.0 with GitHub: never allow_all (any GitHub account), the admins or allowed users only; with LDAP: allow_all without allowed users, not with them" "
	hub_inventory lab-b gh4.inv -e 's/^jupyterhub:\$/&\n  chart_version: 4.4.0/' \
		-e 's/^    type: native .*/    type: github\n    github:\n      client_id: Iv1.0123456789abcdef\n      client_secret_file: \/nonexistent/'
	hub_values lab-b b-0 gh4.yaml gh4.inv
	hub4 gh4.yaml >gh4.hub
	cat gh4.hub
	expect_grep '^authenticator=github\$' gh4.hub
	expect_grep '^admins=lab-admin\$' gh4.hub
	expect_grep '^allow_all=None\$' gh4.hub
	sed 's/^  admin_users: .*/  allowed_users: [octocat]/' gh4.inv >gh4u.inv
	hub_values lab-b b-0 gh4u.yaml gh4u.inv
	hub4 gh4u.yaml >gh4u.hub
	expect_grep '^allowed=octocat\$' gh4u.hub
	expect_grep '^allow_all=None\$' gh4u.hub
	hub_inventory lab-b ld4.inv -e 's/^jupyterhub:\$/&\n  chart_version: 4.4.0/' \
		-e 's/^    type: native .*/    type: ldap\n    ldap:\n      server: ldaps:\/\/ldap.example.ac.jp:636\n      bind_dn_template: uid={username},ou=people,dc=example,dc=ac,dc=jp/'
	hub_values lab-b b-0 ld4.yaml ld4.inv
	hub4 ld4.yaml >ld4.hub
	cat ld4.hub
	expect_grep '^authenticator=ldapauthenticator.LDAPAuthenticator\$' ld4.hub
	expect_grep '^allow_all=True\$' ld4.hub
	sed 's/^  admin_users: .*/&\n  allowed_users: [alice]/' ld4.inv >ld4u.inv
	hub_values lab-b b-0 ld4u.yaml ld4u.inv
	hub4 ld4u.yaml >ld4u.hub
	expect_grep '^allowed=alice\$' ld4u.hub
	expect_grep '^allow_all=None\$' ld4u.hub
"

test_case "a chart_version no role offers: file:line:col, exit 2, before any node (plan, up, fetch)" "
	hub_inventory lab-b b43.inv -e 's/^jupyterhub:\$/&\n  chart_version: 4.3.0/'
	line=\$(grep -n '^  chart_version: 4.3.0\$' b43.inv | cut -d : -f 1)
	for cmd in 'plan --state st' 'up --state st --no-tui' 'fetch --cache cache'; do
		expect_status 2 '$PROVISION' \$cmd -i b43.inv --roles '$SRC_ROOT/roles' >out 2>err
		cat err
		expect_grep \"^b43.inv:\$line:18: error: jupyterhub.chart_version 4.3.0: no chart of that version is offered (offered: 3.3.8 (the default), 4.4.0)\\\$\" err
		expect_eq '' \"\$(cat out)\" 'output'
	done
	test ! -e st/logs
	test ! -e cache
"

test_case "handed nodes that are not kubectl's: an error naming what is wrong, no output" "
	expect_status 1 '$RENDER' template '$SRC_ROOT/roles' jupyterhub values.yaml.tmpl '$SRC_ROOT/inventory/lab-b.yaml' b-0 - hub_nodes=2 hub_node_1=@'$DATA/lab-b-b-2.json' >out 2>err
	expect_grep 'hub_nodes says 2 nodes but hub_node_2 was not handed' err
	expect_status 1 '$RENDER' template '$SRC_ROOT/roles' jupyterhub values.yaml.tmpl '$SRC_ROOT/inventory/lab-b.yaml' b-0 - hub_nodes=1 'hub_node_1={\"kind\": ' >out 2>err
	expect_grep 'not JSON' err
	expect_eq '' \"\$(cat out)\" 'output'
	'$RENDER' template '$SRC_ROOT/roles' jupyterhub values.yaml.tmpl '$SRC_ROOT/inventory/lab-b.yaml' b-0 - >out
	expect_grep '^    # none yet: the cluster has not reported its nodes' out
"

test_case "GitHub auth: an unreadable or short client secret file stops plan and up before any node (exit 2)" "
	sed 's|client_secret_file: .*|client_secret_file: $TEST_DIR/gh-secret|' '$SRC_ROOT/tests/inventory/010-hub-github.yaml' >gh.yaml
	expect_status 2 '$PROVISION' plan -i gh.yaml --roles '$SRC_ROOT/roles' --state st >out 2>err
	expect_grep \"cannot read '$TEST_DIR/gh-secret' (jupyterhub.auth.github.client_secret_file)\" err
	printf 'abc\\n' >gh-secret
	expect_status 2 '$PROVISION' up -i gh.yaml --roles '$SRC_ROOT/roles' --state st --no-tui >out 2>err
	expect_grep 'must hold one line, the client secret, of at least' err
	expect_eq '' \"\$(cat out)\" 'output'
	test ! -e st/logs
"

test_done
