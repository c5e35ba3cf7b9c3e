#!/bin/sh
# tests/roles/steps.sh: run roles' steps on a testbed node the way
# provision sends them, without provision: for the role tests, and for
# trying a step by hand.
#
#   steps.sh step TESTBED NODE ROLE STEP check|apply
#       one call: the PROVISION_* variables of this environment exported,
#       roles/lib.sh, then the step, on the node's standard input
#       (`sh -s -- check`), exactly like provision's call_step().
#   steps.sh role TESTBED NODE ROLE [ROLE...]
#       a role's whole pipeline like `provision up` runs it: before each
#       step the templates meant for it are rendered (tests/tools/render.c,
#       the real template engine) and uploaded if they differ (pv_prepare,
#       then an atomic rename); then check, apply when check says 1, check
#       again.  One result line per step and file:
#         ROLE STEP unchanged|changed|skipped: REASON|failed: WHY
#       ::set values are handed to later steps (PROVISION_SET_NAME, set.NAME),
#       ::secret values as provision hands them: files of a private folder
#       on the node that the step reads with pv_secret NAME (roles/README.md,
#       "Secrets on the node"), never its environment.
#       Exit status 1 when a step failed.
#
# Environment: PROVISION_* as provision would set them (PROVISION_NODE is
# set to NODE when empty); RENDER: the render binary (built on demand into
# $TMPDIR); FACTS: a facts file for the templates (default: none).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
TESTBED=$SRC/tests/testbed/testbed.sh
ROLES=${ROLES:-$SRC/roles}
WORK=${TMPDIR:-/tmp}/provision-role-steps.$$
trap 'rm -rf "$WORK"' EXIT INT TERM
mkdir -p "$WORK"

build_render() {
	# Built by `make tests` (tests/tools/render.c) with the tree's flags.
	RENDER=${RENDER:-$SRC/build/tests/tools/render}
	[ -x "$RENDER" ] || { echo "steps.sh: $RENDER is missing: run make tests" >&2; exit 1; }
}

# sh_quote WORD: WORD as one single-quoted shell word.
sh_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# The script provision would send: environment, the secrets written to
# the step's folder (provision/plan_env.c), lib.sh and the step (in a
# subshell when there are secrets).
script() { # ROLE STEP
	echo 'cd / || exit 125'
	# shellcheck disable=SC2016 # expanded by the node's shell
	printf '%s\n' 'for _pv_d in /run/provision/secrets/*.*; do' \
		'	[ -d "$_pv_d" ] || continue' '	_pv_p=${_pv_d##*/}' \
		'	[ -d "/proc/${_pv_p%%.*}" ] || rm -rf "$_pv_d"' 'done'
	env | grep '^PROVISION_' | grep -v '^PROVISION_SECRETS=' | sort | while IFS= read -r kv; do
		echo "export ${kv%%=*}=$(sh_quote "${kv#*=}")"
	done
	secrets=$(ls "$WORK/secrets" 2>/dev/null || true)
	if [ -n "$secrets" ]; then
		# shellcheck disable=SC2016 # expanded by the node's shell
		printf '%s\n' 'PROVISION_SECRETS=' \
			'trap '"'"'[ -z "$PROVISION_SECRETS" ] || rm -rf "$PROVISION_SECRETS"'"'"' EXIT' \
			"trap 'exit 129' HUP" "trap 'exit 130' INT" "trap 'exit 143' TERM" \
			'read -r _pv_p _pv_d </proc/self/stat || exit 125' \
			'[ -d /run/provision/secrets ] || mkdir -p -m 0700 /run/provision/secrets || exit 125' \
			'PROVISION_SECRETS=$(mktemp -d "/run/provision/secrets/$_pv_p.XXXXXXXX") || exit 125' \
			'export PROVISION_SECRETS' '(' 'umask 077'
		for name in $secrets; do
			echo "printf '%s' $(sh_quote "$(cat "$WORK/secrets/$name")") >\"\$PROVISION_SECRETS/$name\" || exit 125"
		done
		printf ') || exit 125\n(\n'
	fi
	cat "$ROLES/lib.sh"
	echo
	cat "$ROLES/$1/steps/$2.sh"
	[ -z "$secrets" ] || printf '\n)\nexit\n'
}

call() { # TESTBED NODE ROLE STEP ACTION
	script "$3" "$4" | "$TESTBED" exec "$1" "$2" sh -s -- "$5"
}

# deploy TESTBED NODE ROLE STEP: upload the templates meant for STEP.
deploy() {
	r=$RENDER
	"$r" list "$ROLES" >"$WORK/templates" || return 1
	while read -r role src dest mode owner before; do
		if [ "$role" != "$3" ] || [ "$before" != "$4" ]; then
			continue
		fi
		sets=$(env | sed -n 's/^PROVISION_SET_\([A-Za-z0-9_]*=.*\)/\1/p')
		# shellcheck disable=SC2086 # one NAME=VALUE a word
		"$r" template "$ROLES" "$role" "$src" "$1/inventory.yaml" "$2" "${FACTS:--}" $sets >"$WORK/file" || {
			echo "$role $dest failed: cannot render"
			return 1
		}
		sha=$(sha256sum "$WORK/file" | cut -d ' ' -f 1)
		mode=${mode#0}
		st=0
		{ cat "$ROLES/lib.sh"; echo 'pv_prepare "$@"'; } >"$WORK/prep"
		"$TESTBED" exec "$1" "$2" sh -c "$(cat "$WORK/prep")" sh "$dest" "$sha" "$mode" "$owner" </dev/null || st=$?
		case $st in
		0) echo "$role $dest unchanged" ;;
		1)
			# The upload: a temporary file beside the destination, then rename.
			# shellcheck disable=SC2016 # expanded by the node's shell
			"$TESTBED" exec "$1" "$2" sh -c 'set -e; t="$1.provision-upload"; cat >"$t"; chmod "$2" "$t"; chown "$3" "$t"; mv -f "$t" "$1"' \
				sh "$dest" "$mode" "$owner" <"$WORK/file"
			echo "$role $dest changed"
			;;
		*)
			echo "$role $dest failed: cannot inspect the file"
			return 1
			;;
		esac
	done <"$WORK/templates"
}

# run_call TESTBED NODE ROLE STEP ACTION: call, keep the output in $WORK/out,
# pick the protocol lines out; sets st, skip, hint and exports ::set values.
run_call() {
	st=0
	call "$@" >"$WORK/out" 2>&1 || st=$?
	sed 's/^/    | /' "$WORK/out" | grep -v '^    | ::' >&2 || true
	skip=$(sed -n 's/^::skip //p' "$WORK/out" | tail -n 1)
	hint=$(sed -n 's/^::hint //p' "$WORK/out" | tail -n 1)
	sed -n 's/^::set \([A-Za-z_][A-Za-z0-9_]*\)=\(.*\)/\1 \2/p' "$WORK/out" >"$WORK/sets"
	while read -r name value; do
		export "PROVISION_SET_$name=$value"
	done <"$WORK/sets"
	sed -n 's/^::secret \([A-Za-z_][A-Za-z0-9_]*\)=\(.*\)/\1 \2/p' "$WORK/out" >"$WORK/sets"
	[ -d "$WORK/secrets" ] || mkdir -m 0700 "$WORK/secrets"
	while read -r name value; do
		(umask 077 && printf '%s' "$value" >"$WORK/secrets/$name")
	done <"$WORK/sets"
}

run_role() { # TESTBED NODE ROLE
	failed=0
	for f in "$ROLES/$3"/steps/*.sh; do
		step=$(basename "$f" .sh)
		deploy "$1" "$2" "$3" "$step" || return 1
		run_call "$1" "$2" "$3" "$step" check
		if [ -n "$skip" ]; then
			echo "$3 $step skipped: $skip"
			continue
		fi
		case $st in
		0)
			echo "$3 $step unchanged"
			continue
			;;
		1) ;;
		*)
			echo "$3 $step failed: check exit $st${hint:+ (hint: $hint)}"
			return 1
			;;
		esac
		run_call "$1" "$2" "$3" "$step" apply
		if [ "$st" != 0 ]; then
			echo "$3 $step failed: apply exit $st: $(grep -v '^::' "$WORK/out" | tail -n 1)${hint:+ (hint: $hint)}"
			return 1
		fi
		run_call "$1" "$2" "$3" "$step" check
		if [ "$st" = 0 ] && [ -z "$skip" ]; then
			echo "$3 $step changed"
		else
			echo "$3 $step failed: still not as desired after apply (check exit $st)${hint:+ (hint: $hint)}"
			return 1
		fi
	done
	return $failed
}

[ $# -ge 3 ] || {
	sed -n '2,25s/^# \{0,1\}//p' "$0" >&2
	exit 2
}
cmd=$1
shift
: "${PROVISION_NODE:=$2}"
export PROVISION_NODE
: "${PROVISION_BACKUP_DIR:=/var/lib/provision/backup}"
export PROVISION_BACKUP_DIR
case $cmd in
step)
	[ $# -eq 5 ] || exit 2
	call "$@"
	;;
role)
	build_render
	tb=$1 node=$2
	shift 2
	rc=0
	for role in "$@"; do
		run_role "$tb" "$node" "$role" || rc=1
	done
	exit $rc
	;;
*)
	echo "steps.sh: unknown command '$cmd'" >&2
	exit 2
	;;
esac
