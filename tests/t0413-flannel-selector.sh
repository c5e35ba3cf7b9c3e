#!/bin/sh
# run.sh: beside others (tests/run.sh: a cluster of its own, mostly waiting)
# run.sh: about 204 s in CI (beside another; tests/run.sh starts the longest first)
# t0413-flannel-selector: a cluster that an older provision built, whose
# DaemonSet kube-flannel-ds selects its pods by app=flannel,k8s-app=flannel
# (issue 20), on two nspawn testbed nodes with the stand-ins of tests/fakes:
#   - Flannel's release manifest cannot be applied over it: the API server
#     refuses the selector change ("field is immutable");
#   - provision plan shows the selector change in the manifest's diff; up
#     deletes the DaemonSet with --cascade=orphan and applies: the selector
#     is the release's (app=flannel), every node has a Flannel pod of the
#     new DaemonSet, Running and Ready, and its network (flannel.1,
#     subnet.env) is still there;
#   - the release's manifest then applies (server dry run), and a second up
#     changes nothing.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/fakes/cluster-testbed.sh
. "$SRC_ROOT/tests/fakes/cluster-testbed.sh"

CASES="old-cluster release-refused plan-diff up-replaces release-applies second-up"
skip_all_cases() {
	for c in $CASES; do test_skip "$c" "$1"; done
	test_done
	exit $?
}
test_need_upstream flannel-v0.25.6/kube-flannel.yml
K8S=1.35.2
# the older Flannel's images (the release manifest it applies) in the testbed's registry too
CLUSTER_MORE_IMAGES="docker.io/flannel/flannel-cni-plugin:v1.5.1-flannel2 docker.io/flannel/flannel:v0.25.6"
cluster_testbed 2 "$K8S" || skip_all_cases "$CLUSTER_SKIP"
LOG=$STATE/logs/node-1.log

# The roles of an older provision: Flannel's DaemonSet with the selector and
# pod labels app=flannel,k8s-app=flannel, on the images it pinned then.
OLD=$TEST_DIR/old-roles
cp -R "$ROLES" "$OLD"
# (whether the template has k8s-app there already or not)
awk '
	/^  selector:$/ { sel = 1 }
	lab && !/^        / { lab = 0; sel = 0 }
	(sel || lab) && /^ *k8s-app: flannel$/ { next }
	{ print }
	sel && /^    matchLabels:$/ { print "      k8s-app: flannel" }
	sel && /^      labels:$/ { print "        k8s-app: flannel"; lab = 1 }
' "$ROLES/flannel/templates/kube-flannel.yml.tmpl" |
	sed 's|ghcr.io/flannel-io/flannel-cni-plugin:v[^ ]*|docker.io/flannel/flannel-cni-plugin:v1.5.1-flannel2|
		s|ghcr.io/flannel-io/flannel:v[^ ]*|docker.io/flannel/flannel:v0.25.6|
		s|command: \[/opt/bin/install-conf\]|command: [cp]|
		s|args: \[/etc/kube-flannel/cni-conf.json|args: [-f, /etc/kube-flannel/cni-conf.json|' \
		>"$OLD/flannel/templates/kube-flannel.yml.tmpl"

tb() { "$TESTBED" exec "$TB" "$@"; }
kc() { tb node-1 kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }
up() { "$PROVISION" up -i "$INV" --state "$STATE" --roles "$1" --no-tui; }

# flannel_pods: "node pod owner-uid phase ready" per Flannel pod.
flannel_pods() {
	kc -n kube-flannel get pods -l app=flannel -o 'jsonpath={range .items[*]}{.spec.nodeName}{" "}{.metadata.name}{" "}{.metadata.ownerReferences[0].uid}{" "}{.status.phase}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}'
}

test_case "an older provision's cluster: kube-flannel-ds selects app=flannel,k8s-app=flannel" "
	grep -A3 '^  selector:' '$OLD/flannel/templates/kube-flannel.yml.tmpl'
	up '$OLD' >old.out 2>&1 || { run_tail old.out; false; }
	expect_eq '{\"matchLabels\":{\"app\":\"flannel\",\"k8s-app\":\"flannel\"}}' \"\$(kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.spec.selector}')\" 'old selector'
	kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.metadata.uid}' >old.uid
	flannel_pods >old.pods
	cat old.pods
	expect_eq 2 \"\$(grep -c ' Running True\$' old.pods)\" 'old pods running'
"

test_case "Flannel's release manifest cannot be applied over it: the selector is immutable" "
	tb node-1 sh -c 'cat >/tmp/release.yml' <'$UPSTREAM/flannel-v0.25.6/kube-flannel.yml'
	expect_status 1 kc apply --dry-run=server -f /tmp/release.yml >rel.out 2>&1
	cat rel.out
	expect_grep '^The DaemonSet \"kube-flannel-ds\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map\\[string\\]string{\"app\":\"flannel\"}, MatchExpressions:\\[\\]v1.LabelSelectorRequirement(nil)}: field is immutable\$' rel.out
"

test_case "plan: the manifest's diff takes k8s-app out of the selector" "
	# (plan uploads nothing: 10-apply's check still reads the old manifest on
	# the node, so the change shows as that file's diff, its lines with -v)
	'$PROVISION' plan -i '$INV' --state '$STATE' --roles '$ROLES' --phases cni --no-tui -v >plan.out 2>&1 || true
	grep -A4 '│ [ -]    matchLabels:' plan.out
	expect_grep '│ -      k8s-app: flannel\$' plan.out
	expect_grep '│ +        image: ghcr.io/flannel-io/flannel:v0.28.9\$' plan.out
"

test_case "up: the DaemonSet replaced with the release's selector; a Flannel pod of it on every node, the network kept" "
	up '$ROLES' >up.out 2>&1 || { run_tail up.out; false; }
	expect_grep '\\[node-1\\] flannel › 10-apply … changed' up.out
	expect_grep 'replacing it, its pods left running' '$LOG'
	expect_grep 'daemonset.apps \"kube-flannel-ds\" deleted' '$LOG'
	expect_eq '{\"matchLabels\":{\"app\":\"flannel\"}}' \"\$(kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.spec.selector}')\" 'new selector'
	expect_eq '{\"app\":\"flannel\",\"tier\":\"node\"}' \"\$(kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.spec.template.metadata.labels}')\" 'pod labels'
	uid=\$(kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.metadata.uid}')
	echo \"\$uid\" >new.uid
	[ \"\$uid\" != \"\$(cat old.uid)\" ]
	# (20-running passes on any Running Flannel pod of a node: the adopted
	# old ones are replaced by the controller a moment later)
	i=0
	while flannel_pods >new.pods; [ \"\$(grep -c \" \$uid Running True\\\$\" new.pods)\" != 2 ] && [ \$i -lt 30 ]; do
		i=\$((i + 1))
		sleep 2
	done
	cat new.pods
	for n in node-1 node-2; do
		expect_eq 1 \"\$(grep -c \"^\$n .* \$uid Running True\\\$\" new.pods)\" \"\$n: one Flannel pod of the new DaemonSet\"
		tb \$n ip link show dev flannel.1 >/dev/null
		tb \$n grep -q '^FLANNEL_SUBNET=' /run/flannel/subnet.env
	done
	kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.spec.template.spec.containers[0].image}' >img
	expect_grep '^ghcr.io/flannel-io/flannel:v0.28.9\$' img
"

test_case "the release's manifest now applies over provision's (server dry run)" "
	kc apply --dry-run=server -f /tmp/release.yml >rel2.out 2>&1 || { cat rel2.out; false; }
	expect_grep 'daemonset.apps/kube-flannel-ds configured (server dry run)' rel2.out
"

test_case "a second up: Flannel as desired, nothing replaced" "
	up '$ROLES' >up2.out 2>&1 || { run_tail up2.out; false; }
	expect_no_grep '\\[node-1\\] flannel › 10-apply … changed' up2.out
	expect_eq \"\$(cat new.uid)\" \"\$(kc -n kube-flannel get ds kube-flannel-ds -o 'jsonpath={.metadata.uid}')\" 'the same DaemonSet'
"

test_done
