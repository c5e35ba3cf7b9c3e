#!/bin/sh
# run.sh: beside others (tests/run.sh: no testbed; reads the roles and the flag tables)
# run.sh: about 2 s in CI (beside another; tests/run.sh starts the longest first)
# t0402-roles-flags: every flag the roles pass to helm, kubeadm and kubectl
# (roles/lib.sh, roles/*/steps/*.sh, templates that are shell scripts) is
# one the real tool accepts for that command: the project's tables of
# tests/fakes/cli (tests/fakes/README.md, "Flags"): the ones build.sh embeds
# in the helm stand-ins for the pinned Helms (3 and 4: a command line in a
# branch of `case "$PV_HELM_MAJOR"` against its major's table only, every
# other against both), kubeadm's, and every kubectl minor's (the roles
# drive all of them).  Read, not run
# (tests/tools/roles-flags.py): no nodes, a second or two.  Prints the
# counts of invocations and flags checked.  The tables themselves: each
# reads; and where ../shared/upstream/cli (the team's reference data, not
# part of a bare clone; skipped, saying so, without it) has a table of the
# same tool and version, the two agree flag for flag (names, shorthands,
# the kinds of value, deprecated and hidden flags).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3

CLI=$SRC_ROOT/tests/fakes/cli
HELMS=$(sed -n 's/^HELMS="\(.*\)"$/\1/p' "$SRC_ROOT/tests/fakes/kube-debs/build.sh")
HELM_TABLES=$(for h in $HELMS; do python3 "$SRC_ROOT/tests/tools/cli-flags.py" pick helm "$h" "$CLI"; done | awk '!seen[$0]++' | paste -sd ' ' -)
TABLES="$HELM_TABLES $CLI/kubeadm.flags $(echo "$CLI"/kubectl-*.flags)"
FLAGS="python3 $SRC_ROOT/tests/tools/roles-flags.py"

test_case "every flag the roles pass to helm, kubeadm and kubectl is in the real tool's table for its command" "
	$FLAGS '$SRC_ROOT/roles' $TABLES -v >flags.out 2>&1 || { cat flags.out; false; }
	tail -n 1 flags.out | sed 's/^/# /' >&3
	# the reader finds the forms the roles use: a variable holding the
	# command (\$KC, \$PV_HELM), a function wrapping it with \"\$@\" (kc),
	# \"\$@\" rebuilt with set -- (pv_helm_install), \$(...) inside double
	# quotes, a program path in a variable (\"\$BIN\" version)
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: --kubeconfig --install --namespace --create-namespace --values --wait --timeout \\[helm 3 only\\]\$' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: --kubeconfig --install --namespace --create-namespace --values --wait --timeout \\[helm 4 only\\]\$' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm list: --kubeconfig -n --deployed --failed --pending --superseded --uninstalled --uninstalling -o --filter\$' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm version: --template\$' flags.out
	expect_grep '^roles/kubeadm-init/steps/30-init.sh:[0-9]*: kubectl get: --kubeconfig --request-timeout --raw\$' flags.out
	expect_grep '^roles/upgrade-uncordon/steps/10-uncordon.sh:[0-9]*: kubectl get: --kubeconfig -o\$' flags.out
	expect_grep '^roles/remove-node/steps/20-drain.sh:[0-9]*: kubectl drain: --kubeconfig --ignore-daemonsets --delete-emptydir-data --timeout\$' flags.out
	expect_grep '^roles/join-tokens/steps/20-tokens.sh:[0-9]*: kubeadm token create: --kubeconfig --ttl --description --print-join-command\$' flags.out
	expect_grep '^roles/helm/steps/10-install.sh:[0-9]*: helm version: --short\$' flags.out
	expect_grep '^roles/renew-certs/steps/10-renew.sh:[0-9]*: kubeadm certs renew all: ' flags.out
	# words in a variable are opaque to the reader (\$@ here), unless they
	# follow -- (node-labels' label changes, issue 31: kubectl reads no
	# flag there)
	expect_grep '^roles/kubeadm-init/steps/30-init.sh:[0-9]*: kubeadm init: .*\\[opaque: \\\$@\\]' flags.out
	expect_grep '^roles/node-labels/steps/10-labels.sh:[0-9]*: kubectl label: --kubeconfig --request-timeout --overwrite\$' flags.out
	n=\$(sed -n 's/.*; invocations \\([0-9]*\\) .*/\\1/p' flags.out)
	f=\$(sed -n 's/.*; flags checked \\([0-9]*\\);.*/\\1/p' flags.out)
	[ \"\$n\" -ge 70 ] && [ \"\$f\" -ge 200 ] || { echo \"too few found: \$n invocations, \$f flags\"; false; }
" 3>&1

test_case "a flag the real tool does not take for that command fails it, however the roles spell the command" "
	cp -R '$SRC_ROOT/roles' roles
	# \$KC drain (a variable holding the command, in an if !)
	sed -i 's/\\\$KC drain \"\\\$n\" --ignore-daemonsets/& --all-namespaces/' roles/remove-node/steps/20-drain.sh
	# pv_helm_install: the values files come through set -- \"\$@\" --values
	sed -i 's/set -- \"\\\$@\" --values \"\\\$_v\"/set -- \"\$@\" --filter \"\$_v\"/' roles/lib.sh
	# \$PV_HELM list inside \$(...)
	sed -i 's/\\\$PV_HELM list -n \"\\\$2\" --deployed/& --install/' roles/lib.sh
	# a flag of one major only: helm 4's in the branch for helm 3; helm 3's
	# -a (helm 4 removed it) in a line both majors run
	sed -i 's/\"\\\$@\" --wait --timeout \"\\\$_timeout\"/& --rollback-on-failure/' roles/lib.sh
	sed -i 's/\\\$PV_HELM list -n \"\\\$2\" /& -a /' roles/lib.sh
	# kubeadm token list piped into awk
	sed -i 's/kubeadm token list --kubeconfig=\"\\\$ADMIN\"/& --ttl 1h/' roles/join-tokens/steps/20-tokens.sh
	# the kc() wrapper of kubectl
	sed -i 's|kc get --raw /readyz|& --all|' roles/kubeadm-init/steps/30-init.sh
	# a line continuation, \$(...) inside double quotes, a shorthand
	mkdir -p roles/planted/steps
	cat >roles/planted/steps/10-planted.sh <<-'EOF'
		#!/bin/sh
		KC=\"kubectl --kubeconfig=/etc/kubernetes/admin.conf\"
		echo \"nodes: \$(\$KC get nodes \\
		    -o name --recursive-bogus)\"
		kubectl -n kube-system taint nodes x k:NoSchedule- -A
		helm --kubeconfig /etc/kubernetes/admin.conf list -f '^a\$' --values v.yaml
	EOF
	expect_status 1 $FLAGS roles $TABLES >flags.out 2>&1
	cat flags.out
	expect_grep '^roles/remove-node/steps/20-drain.sh:[0-9]*: kubectl drain: --all-namespaces is not a flag of the real kubectl drain' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: --filter is not a flag of the real helm upgrade' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm list: --install is not a flag of the real helm list' flags.out
	expect_grep '^roles/join-tokens/steps/20-tokens.sh:[0-9]*: kubeadm token list: --ttl is not a flag of the real kubeadm token list' flags.out
	expect_grep '^roles/kubeadm-init/steps/30-init.sh:[0-9]*: kubectl get: --all is not a flag of the real kubectl get' flags.out
	expect_grep '^roles/planted/steps/10-planted.sh:3: kubectl get: --recursive-bogus is not' flags.out
	expect_grep '^roles/planted/steps/10-planted.sh:5: kubectl taint: -A is not' flags.out
	expect_grep '^roles/planted/steps/10-planted.sh:6: helm list: --values is not' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: --rollback-on-failure is not a flag of the real helm upgrade (tests/fakes/cli/helm-3.17.3.flags), nor a global one' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm list: -a is not a flag of the real helm list (tests/fakes/cli/helm-4.1.4.flags), nor a global one' flags.out
	expect_eq 1 \"\$(grep -c rollback-on-failure flags.out)\" 'lines naming --rollback-on-failure (helm 4 has it)'
	expect_grep '; not in the real tables 11\$' flags.out
"

CF="python3 $SRC_ROOT/tests/tools/cli-flags.py"
test_case "the project's flag tables read (tests/fakes/cli/*.flags); a malformed line is named FILE:LINE" "
	$CF check '$CLI'/*.flags >check.out 2>&1 || { cat check.out; false; }
	expect_grep '^.*/kubeadm.flags: [0-9]* commands' check.out
	printf '%s\\n' '[(global)]' '--v Level' '[init]' '--config string' '--dry-run' >bad.flags
	expect_status 1 $CF check bad.flags >bad.out 2>&1
	expect_grep '^bad.flags:5: not a flag line' bad.out
"

if test_have_upstream cli/helm-3.17.1-flags.json cli/helm-4.1.4-flags.json cli/kubectl-1.35.2-flags.json cli/kubectl-flags.json cli/kubeadm-flags.json; then
	test_case "the tables agree with ../shared/upstream/cli where it has the same tool and version (kubectl 1.32: patch 1.32.3 here, 1.32.4 there); kubeadm's lists only some flags" "
		U='$UPSTREAM/cli'
		for pair in 'helm-3.17.1 helm-3.17.1-flags' 'helm-4.1.4 helm-4.1.4-flags' 'kubectl-1.35.2 kubectl-1.35.2-flags' 'kubectl-1.32.3 kubectl-flags'; do
			set -- \$pair
			$CF compare '$CLI'/\$1.flags \$U/\$2.json >cmp.out 2>&1 || { cat cmp.out; false; }
			tail -n 1 cmp.out | sed 's/^/# /' >&3
		done
		# kubeadm: every flag the reference lists is here, but one: modern
		# kubeadm keeps only klog's --v and --vmodule (cmd/kubeadm/app/kubeadm.go,
		# KEP-2845), no --log-file
		expect_status 1 $CF compare '$CLI'/kubeadm.flags \$U/kubeadm-flags.json --subset >cmp.out 2>&1
		tail -n 1 cmp.out | sed 's/^/# /' >&3
		expect_grep '^kubeadm.flags vs kubeadm-flags.json: \[(global)\] --log-file: in the reference table, not in ours\$' cmp.out
		expect_grep ', 1 differences\$' cmp.out
		# a difference fails the comparison: a flag gone, a shorthand and a deprecation changed
		sed -e '/^--take-ownership /d' -e 's/^-i --install bool/--install bool/' -e 's/^--recreate-pods bool deprecated: .*/--recreate-pods bool/' '$CLI'/helm-3.17.1.flags >h.flags
		expect_status 1 $CF compare h.flags \$U/helm-3.17.1-flags.json >cmp.out 2>&1
		cat cmp.out
		expect_grep '\[upgrade\] --take-ownership: in the reference table, not in ours' cmp.out
		expect_grep '\[upgrade\] -i --install: the reference table.s shorthand, not ours' cmp.out
		expect_grep '\[upgrade\] --recreate-pods: deprecated (functionality will' cmp.out
	" 3>&1
else
	test_skip "the tables agree with ../shared/upstream/cli where it has the same tool and version" "$UPSTREAM_MISSING"
fi

# Issue 33: a Node's Ready condition as kubectl names it (the raw
# "False|KubeletNotReady|..." of the jsonpath reached the admin).
test_case "pv_ready_text: NotReady, Unknown, Ready with the kubelet's reason and message; kubectl's error as it is" "
	t() { sh -c '. \"\$1\"; pv_ready_text \"\$2\"' sh '$SRC_ROOT/roles/lib.sh' \"\$1\"; }
	expect_eq 'NotReady: KubeletNotReady: container runtime network not ready: NetworkReady=false' \\
		\"\$(t 'False|KubeletNotReady|container runtime network not ready: NetworkReady=false')\"
	expect_eq 'Unknown: NodeStatusUnknown: Kubelet stopped posting node status.' \\
		\"\$(t 'Unknown|NodeStatusUnknown|Kubelet stopped posting node status.')\"
	expect_eq 'Ready: KubeletReady: kubelet is posting ready status' \"\$(t 'True|KubeletReady|kubelet is posting ready status')\"
	expect_eq 'Unknown' \"\$(t '||')\"
	expect_eq 'Error from server (NotFound): nodes \\\"b-9\\\" not found' \"\$(t 'Error from server (NotFound): nodes \\\"b-9\\\" not found')\"
"

# Issue 33: the hub's database folder is a folder provision made
# (pv_managed_dir), removed by reset only with the files the hub writes
# there; a person's file in it keeps it, and everything in it.
test_case "pv_managed_dir / pv_restore_dir: a folder provision made goes with its own files; one that holds anything else is kept whole, naming it" "
	mkdir -p st home
	r() { (PROVISION_STATE_DIR=\$PWD/st PROVISION_BACKUP_DIR=\$PWD/st/backup; . '$SRC_ROOT/roles/lib.sh'; \"\$@\"); }
	r pv_managed_dir \$PWD/st/db 0700 \"\$(id -u):\$(id -g)\" 'jupyterhub.sqlite*'
	expect_eq \"\$PWD/st/db	jupyterhub.sqlite*\" \"\$(cat st/managed-dirs)\" 'managed-dirs'
	expect_eq 700 \"\$(stat -c %a st/db)\" 'mode'
	touch st/db/jupyterhub.sqlite st/db/jupyterhub.sqlite-journal st/db/notes.txt st/db/.hidden
	expect_status 1 r pv_restore_dir \$PWD/st/db 'jupyterhub.sqlite*' >kept.out
	expect_grep \"^kept \$PWD/st/db: it holds what provision did not make there: .*notes.txt\" kept.out
	expect_grep '.hidden' kept.out
	expect_eq '.hidden jupyterhub.sqlite jupyterhub.sqlite-journal notes.txt' \"\$(ls -A st/db | paste -sd ' ' -)\" 'nothing removed'
	rm st/db/notes.txt st/db/.hidden
	r pv_restore_dir \$PWD/st/db 'jupyterhub.sqlite*' >gone.out
	expect_grep \"^removed \$PWD/st/db (made by provision; its 2 file(s)\" gone.out
	test ! -e st/db
	expect_eq '' \"\$(cat st/managed-dirs)\" 'managed-dirs after'
	# a folder that was there before provision is not noted
	mkdir mine
	r pv_managed_dir \$PWD/mine 0700 \"\$(id -u):\$(id -g)\" 'x*'
	expect_no_grep mine st/managed-dirs
"

# Issue 33: a file provision created, then wrote again (the hub's values
# after add-node), got provision's first version kept as "the original", and
# reset put that back: /etc/provision/jupyterhub/values.yaml stayed.
test_case "pv_write twice: a file provision created goes at reset, however often it was rewritten; a file that was there keeps its original" "
	r() { (PROVISION_STATE_DIR=\$PWD/st PROVISION_BACKUP_DIR=\$PWD/st/backup; . '$SRC_ROOT/roles/lib.sh'; \"\$@\"); }
	echo v1 | r pv_write \$PWD/made.conf 0644
	echo v2 | r pv_write \$PWD/made.conf 0644
	test ! -e st/backup\$PWD/made.conf
	r pv_restore \$PWD/made.conf >made.out
	expect_grep 'removed .*made.conf (written by provision)' made.out
	test ! -e made.conf
	echo mine >had.conf
	echo v1 | r pv_write \$PWD/had.conf 0644
	echo v2 | r pv_write \$PWD/had.conf 0644
	r pv_restore \$PWD/had.conf >had.out
	expect_eq mine \"\$(cat had.conf)\" 'the original back'
"

# Issue 33: plain `up` shows a failed step's last line and its hint, not the
# lines above them (those are in `provision logs`): a hint that points
# "above" points at nothing.  Every non-comment line of the roles' shell
# (steps and lib.sh: hints are built there) is read for the word.
test_case "no hint in the roles points at lines above it: each names the node, the object and the command" "
	for f in '$SRC_ROOT'/roles/lib.sh '$SRC_ROOT'/roles/*/steps/*.sh; do
		awk -v f=\"\${f#'$SRC_ROOT'/}\" '/^[ \\t]*#/ { next } /(^|[^a-z])above([^a-z]|\$)/ { print f \":\" NR \": \" \$0 }' \"\$f\"
	done >above.out
	if [ -s above.out ]; then echo 'hints or messages that point above:'; cat above.out; false; fi
	# and the check itself finds one
	printf '%s\\n' 'pv_hint \"see the error above\"' >planted.sh
	awk '/^[ \\t]*#/ { next } /(^|[^a-z])above([^a-z]|\$)/ { n++ } END { exit !n }' planted.sh
"

test_done
