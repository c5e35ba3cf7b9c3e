# shellcheck shell=sh
# tests/lib-hub.sh: the jupyterhub role's values for a seed lab, as `provision
# up` renders them (tests/tools/render), with the lab's Nodes handed as the
# role's 20-capacity hands them (tests/roles/hub/LAB-NODE.json).  Source
# after tests/lib.sh.
#
#   hub_values LAB CONTROL-PLANE OUT [INVENTORY]
#       inventory/LAB.yaml's values (or INVENTORY's, with LAB's Nodes) into OUT
hub_values() {
	set -- "$1" "$2" "$3" "${4:-$SRC_ROOT/inventory/$1.yaml}"
	_k=0
	_args=
	for _f in "$SRC_ROOT/tests/roles/hub/$1"-*.json; do
		_k=$((_k + 1))
		_args="$_args hub_node_$_k=@$_f"
	done
	# shellcheck disable=SC2086 # one NAME=@FILE a word
	"$BUILD/tests/tools/render" template "$SRC_ROOT/roles" jupyterhub values.yaml.tmpl \
		"$4" "$2" - hub_nodes=$_k $_args >"$3"
}

# hub_inventory LAB OUT SED-SCRIPT...: inventory/LAB.yaml with its jupyterhub
# section changed by sed (e.g. a chart_version line added after jupyterhub:).
hub_inventory() {
	_lab=$1
	_out=$2
	shift 2
	sed "$@" "$SRC_ROOT/inventory/$_lab.yaml" >"$_out"
}
