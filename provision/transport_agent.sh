# shellcheck shell=sh
# provision transport agent: serves the commands of one run on one node.
#
# transport_ssh.c starts it once per node on one SSH channel, through a
# one-line bootstrap that reads this text from stdin and evals it (see
# "Agent protocol" in provision/transport.h).  It must stay POSIX sh: the
# node's /bin/sh may be dash, bash or busybox ash.
#
#   provision-agent serve             answer requests on stdin until EOF
#   provision-agent kill PID TOKEN    stop the command of agent PID (0: none)
#                                     whose environment has PROVISION_CMD=TOKEN
#
# Request: "TOKEN NLINES NBYTES[ sh]", then NLINES lines of command (or
# "TOKEN cLEN ...": LEN bytes of command, read in one go), then NBYTES bytes
# for its stdin.  The command runs in a subshell of this shell
# (a fork, no exec: `sh -c` cost a second exec per command, the dearest part
# of a step's overhead), with no positional parameters, or with "sh" as
# `/bin/sh -c COMMAND` ($$ its own); its stdout and stderr go straight to
# ours (no per-line shell loop), then
# "\nTOKEN STATUS\n" is written on both streams.  Output cannot end a frame
# early unless it prints the token, which is random per command.  The
# subshell sees this script's variables and functions (all named _pa_*) and
# none of its traps; $$ in it is the agent's pid.

_pa_serve() {
	_pa_nl='
'
	_pa_dir=$(mktemp -d "${TMPDIR:-/tmp}/provision-agent.XXXXXXXX") || {
		echo "provision-agent: cannot create a temporary directory" >&2
		exit 70
	}
	trap 'rm -rf "$_pa_dir"' EXIT
	trap 'exit 129' HUP
	trap 'exit 141' PIPE
	trap 'exit 143' TERM
	# GNU head -c never reads past the count from a pipe; busybox head
	# reads ahead, so elsewhere dd reads the input one byte at a time.
	case $(head --version 2>/dev/null) in
	*GNU*) _pa_head=1 ;;
	*) _pa_head=0 ;;
	esac
	printf 'provision-agent 1 %s %s %s\n' "$(id -u)" "$$" "$_pa_dir"
	while IFS=' ' read -r _pa_tok _pa_n _pa_len _pa_how; do
		case $_pa_tok in '' | *[!0-9a-f]*) _pa_bad ;; esac
		case $_pa_how in '' | sh) ;; *) _pa_bad ;; esac
		case $_pa_n in '' | c | *[!0-9c]* | ?*c*) _pa_bad ;; esac
		case $_pa_len in '' | *[!0-9]*) _pa_bad ;; esac
		_pa_cmd=
		case $_pa_n in
		c*)
			# `read` takes a byte per read(2): a long command in one go.
			_pa_n=${_pa_n#c}
			if [ "$_pa_n" -gt 0 ]; then
				if [ "$_pa_head" = 1 ]; then
					_pa_cmd=$(head -c "$_pa_n")
				else
					_pa_cmd=$(dd bs=1 count="$_pa_n" 2>/dev/null)
				fi
				_pa_cmd=$_pa_cmd$_pa_nl # $(...) took the last newline
			fi
			;;
		*)
			while [ "$_pa_n" -gt 0 ]; do
				IFS= read -r _pa_l || exit 0
				_pa_cmd=$_pa_cmd$_pa_l$_pa_nl
				_pa_n=$((_pa_n - 1))
			done
			;;
		esac
		_pa_in=/dev/null
		if [ "$_pa_len" -gt 0 ]; then
			_pa_in=$_pa_dir/in
			if [ "$_pa_head" = 1 ]; then
				head -c "$_pa_len" >"$_pa_in"
			else
				dd bs=1 count="$_pa_len" of="$_pa_in" 2>/dev/null
			fi
		fi
		# The command never sees our stdin: that is the request stream.
		if [ -n "$_pa_how" ]; then
			PROVISION_CMD=$_pa_tok /bin/sh -c "$_pa_cmd" <"$_pa_in"
		else
			(
				PROVISION_CMD=$_pa_tok
				export PROVISION_CMD
				set --
				eval "$_pa_cmd"
			) <"$_pa_in"
		fi
		_pa_st=$?
		# the input may hold a step's handed secrets: kept no longer than the command
		[ "$_pa_in" = /dev/null ] || : >"$_pa_in"
		printf '\n%s %s\n' "$_pa_tok" "$_pa_st" >&2
		printf '\n%s %s\n' "$_pa_tok" "$_pa_st"
	done
}

_pa_bad() {
	echo "provision-agent: malformed request header" >&2
	exit 65
}

# The pids to stop: the descendants of agent $1 and every process whose
# environment carries PROVISION_CMD=$2 (children that left the tree).
_pa_victims() {
	{
		if [ "$1" != 0 ]; then
			ps -e -o pid= -o ppid= 2>/dev/null | awk -v root="$1" '
				{ kids[$2] = kids[$2] " " $1 }
				END {
					n = split(kids[root], q, " ")
					for (i = 1; i <= n; i++) {
						print q[i]
						m = split(kids[q[i]], c, " ")
						for (j = 1; j <= m; j++)
							q[++n] = c[j]
					}
				}'
		fi
		grep -l -a -F "PROVISION_CMD=$2" /proc/[0-9]*/environ 2>/dev/null |
			sed -n 's,^/proc/\([0-9][0-9]*\)/environ$,\1,p'
	} | sort -u
}

_pa_signal() { # SIGNAL PID...
	_pa_s=$1
	shift
	for _pa_p in "$@"; do
		# A command that made its own process group takes it along.
		kill -s "$_pa_s" -- "-$_pa_p" 2>/dev/null
		kill -s "$_pa_s" "$_pa_p" 2>/dev/null
	done
	return 0
}

_pa_kill() {
	_pa_v=$(_pa_victims "$1" "$2")
	[ -n "$_pa_v" ] || return 0
	# shellcheck disable=SC2086 # one pid per word
	_pa_signal TERM $_pa_v
	_pa_i=0
	while [ "$_pa_i" -lt 20 ]; do
		sleep 0.1 2>/dev/null || sleep 1
		_pa_v=$(_pa_victims "$1" "$2")
		[ -n "$_pa_v" ] || return 0
		_pa_i=$((_pa_i + 1))
	done
	# shellcheck disable=SC2086 # one pid per word
	_pa_signal KILL $_pa_v
}

case ${1-serve} in
serve) _pa_serve ;;
kill) _pa_kill "${2:-0}" "${3:?token}" ;;
*)
	echo "provision-agent: unknown mode '$1'" >&2
	exit 64
	;;
esac
