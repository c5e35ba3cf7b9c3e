#!/bin/sh
# run.sh: beside others (tests/run.sh: no testbed; reads the roles and the flag tables)
# run.sh: about 2 s in CI (beside another; tests/run.sh starts the longest first)
# t0402-roles-flags: every flag the roles pass to helm, kubeadm and kubectl
# (roles/lib.sh, roles/*/steps/*.sh, templates that are shell scripts) is
# one the real tool accepts for that command: the tables of
# ../shared/upstream/cli (helm v3.15.4's sources: the pinned v3.18.4 only
# added upgrade flags the roles do not pass, tests/fakes/README.md; kubectl
# v1.32.4's help; kubeadm's sources).  Read, not run (tests/tools/roles-flags.py): no nodes,
# a second or two.  Prints the counts of invocations and flags checked.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
test_need_cmd python3
test_need_upstream cli/helm-flags.json cli/kubeadm-flags.json cli/kubectl-flags.json

FLAGS="python3 $SRC_ROOT/tests/tools/roles-flags.py"
CLI=$UPSTREAM/cli

test_case "every flag the roles pass to helm, kubeadm and kubectl is in the real tool's table for its command" "
	$FLAGS '$SRC_ROOT/roles' '$CLI' -v >flags.out 2>&1 || { cat flags.out; false; }
	tail -n 1 flags.out | sed 's/^/# /' >&3
	# the reader finds the forms the roles use: a variable holding the
	# command (\$KC, \$PV_HELM), a function wrapping it with \"\$@\" (kc),
	# \"\$@\" rebuilt with set -- (pv_helm_install), \$(...) inside double
	# quotes, a program path in a variable (\"\$BIN\" version)
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: --kubeconfig --install --namespace --create-namespace --values --wait --timeout\$' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm list: --kubeconfig -n -a -o --filter\$' flags.out
	expect_grep '^roles/kubeadm-init/steps/30-init.sh:[0-9]*: kubectl get: --kubeconfig --request-timeout --raw\$' flags.out
	expect_grep '^roles/upgrade-uncordon/steps/10-uncordon.sh:[0-9]*: kubectl get: --kubeconfig -o\$' flags.out
	expect_grep '^roles/remove-node/steps/20-drain.sh:[0-9]*: kubectl drain: --kubeconfig --ignore-daemonsets --delete-emptydir-data --timeout\$' flags.out
	expect_grep '^roles/join-tokens/steps/20-tokens.sh:[0-9]*: kubeadm token create: --kubeconfig --ttl --description --print-join-command\$' flags.out
	expect_grep '^roles/helm/steps/10-install.sh:[0-9]*: helm version: --short\$' flags.out
	expect_grep '^roles/node-labels/steps/10-labels.sh:[0-9]*: kubectl label: .*\\[opaque: \\\$c\\]' flags.out
	n=\$(sed -n 's/.*; invocations \\([0-9]*\\) .*/\\1/p' flags.out)
	f=\$(sed -n 's/.*; flags checked \\([0-9]*\\) .*/\\1/p' flags.out)
	[ \"\$n\" -ge 70 ] && [ \"\$f\" -ge 200 ] || { echo \"too few found: \$n invocations, \$f flags\"; false; }
" 3>&1

test_case "a flag the real tool does not take for that command fails it, however the roles spell the command" "
	cp -R '$SRC_ROOT/roles' roles
	# \$KC drain (a variable holding the command, in an if !)
	sed -i 's/\\\$KC drain \"\\\$n\" --ignore-daemonsets/& --all-namespaces/' roles/remove-node/steps/20-drain.sh
	# pv_helm_install: the values files come through set -- \"\$@\" --values
	sed -i 's/set -- \"\\\$@\" --values \"\\\$_v\"/set -- \"\$@\" --filter \"\$_v\"/' roles/lib.sh
	# \$PV_HELM list inside \$(...)
	sed -i 's/\\\$PV_HELM list -n \"\\\$2\" -a/& --install/' roles/lib.sh
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
	expect_status 1 $FLAGS roles '$CLI' >flags.out 2>&1
	cat flags.out
	expect_grep '^roles/remove-node/steps/20-drain.sh:[0-9]*: kubectl drain: --all-namespaces is not a flag of the real kubectl drain' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm upgrade: --filter is not a flag of the real helm upgrade' flags.out
	expect_grep '^roles/lib.sh:[0-9]*: helm list: --install is not a flag of the real helm list' flags.out
	expect_grep '^roles/join-tokens/steps/20-tokens.sh:[0-9]*: kubeadm token list: --ttl is not a flag of the real kubeadm token list' flags.out
	expect_grep '^roles/kubeadm-init/steps/30-init.sh:[0-9]*: kubectl get: --all is not a flag of the real kubectl get' flags.out
	expect_grep '^roles/planted/steps/10-planted.sh:3: kubectl get: --recursive-bogus is not' flags.out
	expect_grep '^roles/planted/steps/10-planted.sh:5: kubectl taint: -A is not' flags.out
	expect_grep '^roles/planted/steps/10-planted.sh:6: helm list: --values is not' flags.out
	expect_grep '; not in the real tables 8\$' flags.out
"

test_done
