#!/bin/sh
# t0201: a broken role or template is reported with its file:line:col before
# any node is touched: exit 2, and no test node's sshd sees a login.
. "$(dirname "$0")/lib.sh"
. "$SRC_ROOT/tests/lib-testbed.sh"

tb_up --chroot 2

# broken_roles NAME: a copy of the real roles to break.
broken_roles() {
	rm -rf "$1"
	cp -R "$SRC_ROOT/roles" "$1"
}

# no_new_logins BEFORE1 BEFORE2: neither node saw a new login.
no_new_logins() {
	if [ "$(tb_logins node-1)" != "$1" ] || [ "$(tb_logins node-2)" != "$2" ]; then
		echo "a node was contacted"
		return 1
	fi
}

test_case "an unknown key in role.yaml: file:line:col, did-you-mean, exit 2, no login" '
	b1=$(tb_logins node-1) b2=$(tb_logins node-2)
	broken_roles r
	printf "dependz_on: [kernel]\n" >>r/containerd/role.yaml
	line=$(wc -l <r/containerd/role.yaml)
	expect_status 2 "$PROVISION" up -i "$TB_INV" --roles r 2>err
	expect_grep "^r/containerd/role.yaml:$line:1: error: unknown key .dependz_on." err
	expect_grep "did you mean .depends_on." err
	expect_grep "nothing was changed" err
	no_new_logins "$b1" "$b2"
'

test_case "a template syntax error: template file:line:col, exit 2, no login" '
	b1=$(tb_logins node-1) b2=$(tb_logins node-2)
	broken_roles r
	printf "x = 1\n{%% if node.name %%}\ny = 2\n" >r/kernel/templates/sysctl.conf.tmpl
	expect_status 2 "$PROVISION" plan -i "$TB_INV" --roles r 2>err
	expect_grep "r/kernel/templates/sysctl.conf.tmpl:2:1: .if. is never closed" err
	no_new_logins "$b1" "$b2"
'

test_case "a template value the role does not declare: exit 2, no login" '
	b1=$(tb_logins node-1) b2=$(tb_logins node-2)
	broken_roles r
	printf "x = {{ hub.image }}\n" >>r/kernel/templates/sysctl.conf.tmpl
	expect_status 2 "$PROVISION" up -i "$TB_INV" --roles r 2>err
	expect_grep "template uses .hub.image., which role .kernel. does not declare" err
	no_new_logins "$b1" "$b2"
'

test_case "a missing step file, a dependency cycle and an unknown phase are all reported at once" '
	b1=$(tb_logins node-1) b2=$(tb_logins node-2)
	broken_roles r
	rm -r r/nvidia/steps
	printf "depends_on: [containerd]\n" >>r/kernel/role.yaml
	sed -i "s/^phase: prep/phase: prepare/" r/swap-off/role.yaml
	expect_status 2 "$PROVISION" up -i "$TB_INV" --roles r 2>err
	expect_grep "role .nvidia. has no steps/ folder" err
	expect_grep "dependency cycle" err
	expect_grep "r/swap-off/role.yaml:[0-9]*:8: error: unknown phase .prepare." err
	expect_grep "errors in the roles" err
	no_new_logins "$b1" "$b2"
'

test_case "a roles folder without kubernetes.yaml, or a kube column it lacks: the declaration named, exit 2, no login" '
	b1=$(tb_logins node-1) b2=$(tb_logins node-2)
	broken_roles r
	rm r/kubernetes.yaml
	expect_status 2 "$PROVISION" plan -i "$TB_INV" --roles r 2>err
	line=$(grep -n "^vars:.*kube.pause_image" r/containerd/role.yaml | cut -d : -f 1)
	expect_grep "^r/containerd/role.yaml:$line:[0-9]*: error: .kube.pause_image. comes from r/kubernetes.yaml, which is missing or has no minors" err
	expect_grep "nothing was changed" err
	broken_roles r
	sed -i "s/kube.pause_image\]/kube.sandbox_image]/" r/containerd/role.yaml
	expect_status 2 "$PROVISION" plan -i "$TB_INV" --roles r 2>err
	expect_grep "^r/containerd/role.yaml:$line:[0-9]*: error: .kube.sandbox_image.: r/kubernetes.yaml has no column .sandbox_image." err
	no_new_logins "$b1" "$b2"
'

test_case "a Kubernetes version whose minor is not in roles/kubernetes.yaml: the inventory line named, exit 2, no login" '
	b1=$(tb_logins node-1) b2=$(tb_logins node-2)
	sed "s/^  kubernetes_version: .*/  kubernetes_version: \"1.27.3\"/" "$TB_INV" >inv127.yaml
	line=$(grep -n "^  kubernetes_version: \"1.27.3\"" inv127.yaml | cut -d : -f 1)
	[ -n "$line" ]
	expect_status 2 "$PROVISION" up -i inv127.yaml 2>err
	expect_grep "^inv127.yaml:$line:23: error: cluster.kubernetes_version 1.27.3: its minor is not in .*/kubernetes.yaml (minors: 1.28, " err
	expect_grep "hint: use a Kubernetes version of one of those minors" err
	expect_grep "nothing was changed" err
	no_new_logins "$b1" "$b2"
'

test_case "the real roles load, and a good run does log in (the check above can fail)" '
	b1=$(tb_logins node-1)
	"$PROVISION" plan -i "$TB_INV" --phases prep >out 2>err
	[ "$(tb_logins node-1)" -gt "$b1" ]
'

test_done
