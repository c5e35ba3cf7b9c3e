# shellcheck shell=sh
# tests/lib-hub.sh: the jupyterhub role's values for a seed lab, as `provision
# up` renders them (tests/tools/render), with the lab's Nodes handed as the
# role's 20-capacity hands them (tests/roles/hub/LAB-NODE.json).  Source
# after tests/lib.sh.
#
#   hub_values LAB CONTROL-PLANE OUT    inventory/LAB.yaml's values into OUT
hub_values() {
	set -- "$1" "$2" "$3"
	_k=0
	_args=
	for _f in "$SRC_ROOT/tests/roles/hub/$1"-*.json; do
		_k=$((_k + 1))
		_args="$_args hub_node_$_k=@$_f"
	done
	# shellcheck disable=SC2086 # one NAME=@FILE a word
	"$BUILD/tests/tools/render" template "$SRC_ROOT/roles" jupyterhub values.yaml.tmpl \
		"$SRC_ROOT/inventory/$1.yaml" "$2" - hub_nodes=$_k $_args >"$3"
}
