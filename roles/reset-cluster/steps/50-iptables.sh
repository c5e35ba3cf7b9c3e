# reset-cluster 50-iptables: no iptables chain of Kubernetes is left:
# chains named KUBE-* (kube-proxy, the kubelet), FLANNEL-* (Flannel) and
# CNI-* (the portmap and bridge plugins), in every table, for IPv4 and
# IPv6.  Only those chains and the rules elsewhere that jump to them are
# removed: no table is flushed, no other rule is touched, so the node's own
# firewall (and the SSH access it allows) stays as it was.
set -eu
RE='^(KUBE-|FLANNEL-|CNI-)'

tools() {
	for t in iptables ip6tables; do
		command -v "$t-save" >/dev/null 2>&1 && echo "$t"
	done
	return 0
}

# chains TOOL TABLE-DUMP: our chain names in a dump of iptables-save
ours() {
	sed -n 's/^:\([^ ]*\) .*/\1/p' | grep -E "$RE" || true
}

left() {
	for t in $(tools); do
		"$t-save" 2>/dev/null | awk '/^\*/ { table = substr($1, 2) } /^:/ { print table, substr($1, 2) }' |
			while read -r table chain; do
				if printf '%s\n' "$chain" | grep -qE "$RE"; then
					echo "$t $table $chain"
				fi
			done
	done
}

case ${1:-} in
check)
	if [ -z "$(tools)" ]; then
		echo "iptables is not installed: no chains"
		exit 0
	fi
	l=$(left)
	if [ -z "$l" ]; then
		echo "no KUBE-*, FLANNEL-* or CNI-* chains"
		exit 0
	fi
	echo "chains: $(printf '%s\n' "$l" | awk '{ print $1 "/" $2 "/" $3 }' | paste -sd ' ' -)"
	exit 1
	;;
apply)
	for t in $(tools); do
		for table in $(left | awk -v t="$t" '$1 == t { print $2 }' | sort -u); do
			dump=$("$t-save" -t "$table")
			# Rules of other chains that jump (-j) or go (-g) to ours.
			printf '%s\n' "$dump" | awk -v re="$RE" '
				$1 == "-A" && $2 !~ re {
					for (i = 3; i < NF; i++)
						if (($i == "-j" || $i == "-g") && $(i + 1) ~ re) { print; break }
				}' | while IFS= read -r rule; do
				spec=${rule#-A }
				echo "$t -t $table -D $spec"
				eval "set -- $spec"
				"$t" -w 5 -t "$table" -D "$@"
			done
			chains=$(printf '%s\n' "$dump" | ours)
			for c in $chains; do
				"$t" -w 5 -t "$table" -F "$c"
			done
			for c in $chains; do
				"$t" -w 5 -t "$table" -X "$c"
				echo "$t -t $table -X $c"
			done
		done
	done
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
