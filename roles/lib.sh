# roles/lib.sh: helpers put in front of every step provision sends to a node.
# POSIX sh (dash).  Documented in roles/README.md; keep them in step.
# shellcheck shell=sh

PROVISION_BACKUP_DIR=${PROVISION_BACKUP_DIR:-/var/lib/provision/backup}
PROVISION_STATE_DIR=${PROVISION_STATE_DIR:-/var/lib/provision}

pv_say_set() {
	printf '::set %s=%s\n' "$1" "$2"
}

pv_say_secret() {
	printf '::secret %s=%s\n' "$1" "$2"
}

# pv_secret NAME: the secret NAME handed to this step (::secret, or given
# by provision), printed without a newline; nothing when none was handed.
# Secrets never reach a step's environment: provision writes each to
# $PROVISION_SECRETS/NAME (0600, in a 0700 folder under /run removed when
# the step ends).  Keep the value in a shell variable (not exported) or a
# 0600 file; never put it on a command line.
pv_secret() {
	case $1 in
	'' | *[!A-Za-z0-9_]*)
		echo "pv_secret: '$1' is not a name" >&2
		return 2
		;;
	esac
	[ -n "${PROVISION_SECRETS:-}" ] && [ -f "$PROVISION_SECRETS/$1" ] || return 0
	cat "$PROVISION_SECRETS/$1"
}

# pv_say_note TEXT: ::note TEXT, shown with the result of a step that
# changed (what the admin should know of how it changed).
pv_say_note() {
	printf '::note %s\n' "$*"
}

pv_skip() {
	printf '::skip %s\n' "$*"
}

pv_hint() {
	printf '::hint %s\n' "$*"
}

# /run/systemd/container, which a container's systemd writes at boot, is
# what systemd-detect-virt --container reads when nothing before it
# answered: when it names a container, the answer is yes, without starting
# systemd-detect-virt (~5 ms of CPU; steps ask on every run).
pv_in_container() {
	_pv_c=
	[ ! -r /run/systemd/container ] || { IFS= read -r _pv_c </run/systemd/container || :; } 2>/dev/null
	case $_pv_c in '' | none) ;; *) return 0 ;; esac
	if command -v systemd-detect-virt >/dev/null 2>&1; then
		systemd-detect-virt --container --quiet && return 0
	fi
	[ -f /run/.containerenv ] || [ -f /.dockerenv ] || [ -n "${container:-}" ]
}

# pv_managed FILE: remember that provision wrote FILE (for provision reset).
pv_managed() {
	mkdir -p "$PROVISION_STATE_DIR"
	touch "$PROVISION_STATE_DIR/managed"
	grep -qxF "$1" "$PROVISION_STATE_DIR/managed" || printf '%s\n' "$1" >>"$PROVISION_STATE_DIR/managed"
}

# pv_backup FILE: keep the original of FILE, the first time only.  A file
# provision created (managed, and no original kept) has no original: its
# next version must not keep provision's first one as "the original", which
# provision reset would put back (issue 33: the hub's values.yaml, rewritten
# by add-node, came back after a reset).
pv_backup() {
	[ -e "$1" ] || return 0
	b=$PROVISION_BACKUP_DIR$1
	# A copy left by a run cut off before its rename (reset, power cut,
	# kill -9): never the backup itself, so it goes.
	rm -f "$b".tmp.*
	[ -e "$b" ] && return 0
	if [ -f "$PROVISION_STATE_DIR/managed" ] && grep -qxF "$1" "$PROVISION_STATE_DIR/managed"; then
		return 0
	fi
	mkdir -p "${b%/*}"
	# Flushed before the rename: a backup is never rewritten, so one left
	# empty by a power cut would lose the original for good.
	cp -p "$1" "$b.tmp.$$" && { sync "$b.tmp.$$" 2>/dev/null || sync; } && mv "$b.tmp.$$" "$b"
}

# pv_gpu_list: this node's GPUs as "MODEL:MIB,MODEL:MIB" (nvidia-smi's
# names and memory), the value of the provision.dev/gpus annotation; empty
# without GPUs (PROVISION_GPUS) or without a driver that answers.
pv_gpu_list() {
	[ "${PROVISION_GPUS:-0}" -gt 0 ] && command -v nvidia-smi >/dev/null 2>&1 || return 0
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits 2>/dev/null |
		sed -n 's/^\(.*[^ ]\), *\([0-9][0-9]*\)$/\1:\2/p' | paste -sd , - || :
}

# pv_registry_env: the proxy environment containerd's service has
# (roles/containerd's drop-in from cluster.http_proxy, NO_PROXY
# PROVISION_CONTAINERD_NO_PROXY), exported into this shell (upper and lower
# case; unset without a proxy), and PV_HOSTS_DIR, the hosts directory of
# cluster.registries.  For a pull by `ctr`, which in containerd 1.x pulls
# in its own process, not the daemon's:
#   ( pv_registry_env; ctr -n k8s.io images pull --hosts-dir "$PV_HOSTS_DIR" REF )
pv_registry_env() {
	# shellcheck disable=SC2034 # for the caller
	PV_HOSTS_DIR=/etc/containerd/certs.d
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		HTTP_PROXY=$PROVISION_HTTP_PROXY HTTPS_PROXY=$PROVISION_HTTP_PROXY
		NO_PROXY=${PROVISION_CONTAINERD_NO_PROXY:-}
		http_proxy=$HTTP_PROXY https_proxy=$HTTPS_PROXY no_proxy=$NO_PROXY
		export HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy
	else
		unset HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy
	fi
}

# pv_containerd_package: what provides the containerd on PATH: "release"
# when it is the one roles/containerd-release installed from containerd's
# release archive, else the installed package, the distribution's
# `containerd` or Docker's `containerd.io`; exit 1 when there is none.
pv_containerd_package() {
	if [ "$(command -v containerd)" = /usr/local/bin/containerd ] &&
		[ -f "$PROVISION_STATE_DIR/containerd-release.sha256" ]; then
		echo release
		return 0
	fi
	for _p in containerd containerd.io; do
		case $(dpkg-query -W -f='${db:Status-Abbrev}' "$_p" 2>/dev/null || true) in
		?i*)
			echo "$_p"
			return 0
			;;
		esac
	done
	return 1
}

# pv_containerd_version PACKAGE: the version the containerd binary reports,
# from its package when the package's binary is the one on PATH (starting the
# 50 MB binary costs more than a whole check): the upstream version without
# epoch and Debian revision ("1.6.20~ds1-1+deb12u3" -> "1.6.20~ds1",
# containerd.io "1.7.22-1" -> "1.7.22"); otherwise from `containerd --version`
# ("containerd github.com/containerd/containerd 1.6.20~ds1 ..." -> 1.6.20~ds1).
pv_containerd_version() {
	if [ "$(command -v containerd)" = /usr/bin/containerd ]; then
		_v=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || _v=
		_v=${_v#*:}
		if [ -n "$_v" ]; then
			echo "${_v%-*}"
			return 0
		fi
	fi
	containerd --version 2>/dev/null | awk '{ print $3 }' | sed 's/^v//'
}

# pv_containerd_info: pv_containerd_package and pv_containerd_version in
# one go, with one dpkg-query for both packages and their versions (a
# check's dearest call after the programs it is about): sets
# PV_CONTAINERD_PACKAGE and PV_CONTAINERD_VERSION in this shell, exit 1
# (both empty) when neither package is installed.
pv_containerd_info() {
	PV_CONTAINERD_PACKAGE='' PV_CONTAINERD_VERSION='' _pv_pv=''
	_pv_bin=$(command -v containerd) || _pv_bin=
	if [ "$_pv_bin" = /usr/local/bin/containerd ] &&
		[ -f "$PROVISION_STATE_DIR/containerd-release.sha256" ]; then
		PV_CONTAINERD_PACKAGE=release
	else
		_pv_q=$(dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n' containerd containerd.io 2>/dev/null) || :
		for _p in containerd containerd.io; do
			while IFS='|' read -r _pv_s _pv_n _pv_v; do
				[ "$_pv_n" = "$_p" ] || continue
				case $_pv_s in ?i*) PV_CONTAINERD_PACKAGE=$_p _pv_pv=$_pv_v ;; esac
				break
			done <<EOF
$_pv_q
EOF
			[ -z "$PV_CONTAINERD_PACKAGE" ] || break
		done
		[ -n "$PV_CONTAINERD_PACKAGE" ] || return 1
		if [ "$_pv_bin" = /usr/bin/containerd ]; then
			_pv_pv=${_pv_pv#*:}
			[ -z "$_pv_pv" ] || PV_CONTAINERD_VERSION=${_pv_pv%-*}
		fi
	fi
	[ -n "$PV_CONTAINERD_VERSION" ] ||
		PV_CONTAINERD_VERSION=$(containerd --version 2>/dev/null | awk '{ print $3 }' | sed 's/^v//')
}

# pv_nvidia_runtime: what this node's containerd config carries of the
# NVIDIA runtimes (roles/containerd, roles/gpu-runtime): "none" on a node
# without an NVIDIA GPU (PROVISION_GPU_NODES), "runtime" on a GPU node where
# the GPU Operator's toolkit has not installed its runtime yet (the nvidia
# runtimes are configured, runc stays the default: the toolkit's own pod must
# start under runc to install it), "default" once
# /usr/local/nvidia/toolkit/nvidia-container-runtime is there (nvidia is the
# node's default runtime: every pod of the node, a user's own GPU pod too,
# gets its GPUs through it).
PV_NVIDIA_RUNTIME=/usr/local/nvidia/toolkit/nvidia-container-runtime
pv_nvidia_runtime() {
	case " ${PROVISION_GPU_NODES:-} " in
	*" $PROVISION_NODE "*) ;;
	*)
		echo none
		return 0
		;;
	esac
	if [ -x "$PV_NVIDIA_RUNTIME" ]; then echo default; else echo runtime; fi
}

# pv_drop_stale FILE: remove the temporary copies of FILE (.NAME.provision-*
# beside it, from pv_write or provision's upload) that a run cut off before
# its rename (reset, power cut, kill -9) left behind.  Only the step or
# upload about to write FILE calls it, so none of them is in use.
pv_drop_stale() {
	rm -f "$(dirname "$1")/.${1##*/}".provision-*
}

# pv_write FILE MODE: replace FILE atomically with standard input (a temporary
# file beside it, flushed, then renamed over it), keeping the original first.
pv_write() {
	pv_backup "$1" || return 1
	pv_drop_stale "$1"
	tmp=$(mktemp "$(dirname "$1")/.${1##*/}.provision-XXXXXX") || return 1
	if cat >"$tmp" && chmod "$2" "$tmp"; then
		sync "$tmp" 2>/dev/null || true
		if mv -f "$tmp" "$1"; then
			pv_managed "$1"
			return 0
		fi
	fi
	rm -f "$tmp"
	return 1
}

# pv_same FILE SHA256 MODE OWNER: FILE already has this content (SHA-256),
# mode (octal, as stat %a prints it) and owner (user:group).  Two forks: it
# runs for every template on every node on every run.
pv_same() {
	[ -f "$1" ] || return 1
	set -- "$2" "$3 $4" "$(sha256sum <"$1")" "$(stat -c '%a %U:%G' "$1")"
	[ "${3%% *}" = "$1" ] && [ "$4" = "$2" ]
}

# pv_prepare FILE SHA256 MODE OWNER: exit 0 when pv_same; otherwise make its
# folder, keep the original, record FILE as managed and exit 1: provision
# then uploads the new content atomically.
pv_prepare() {
	pv_same "$@" && return 0
	pv_mkdir "$(dirname "$1")" && pv_backup "$1" && pv_managed "$1" && pv_drop_stale "$1"
	return 1
}

# pv_mkdir DIR: mkdir -p DIR, noting every folder it creates in
# $PROVISION_STATE_DIR/dirs: provision reset removes them once empty.
pv_mkdir() {
	[ -d "$1" ] && return 0
	pv_mkdir "$(dirname "$1")" || return 1
	mkdir "$1" && pv_note dirs "$1"
}

# pv_diff FILE: compare FILE with standard input (provision plan); exit 0 when
# equal, 1 with a unified diff (or "new file") when not.
pv_diff() {
	if [ -e "$1" ]; then
		diff -u --label "$1" --label "$1 (rendered)" "$1" -
	else
		echo "new file $1"
		return 1
	fi
}

# pv_apt_get ARGS...: apt-get without questions, waiting up to 5 min for the
# dpkg lock, retrying downloads, through PROVISION_HTTP_PROXY when set.
pv_apt_get() {
	if [ -n "${PROVISION_HTTP_PROXY:-}" ]; then
		set -- -o "Acquire::http::Proxy=$PROVISION_HTTP_PROXY" \
			-o "Acquire::https::Proxy=$PROVISION_HTTP_PROXY" "$@"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"
}

# pv_installed PACKAGE: dpkg has PACKAGE installed, held or not ("ii", "hi").
pv_installed() {
	case $(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) in
	?i*) return 0 ;;
	*) return 1 ;;
	esac
}

# Helm releases (the addons phase, on the control plane).  Every install is
# `helm upgrade --install --wait --timeout` of a chart archive that
# provision pushed (roles/artifacts.yaml) with a values file it rendered
# (templates/), never --set.  /var/lib/provision/helm/NS.RELEASE records the
# SHA-256 of the chart archive and of the values file of the last install
# that succeeded.
#
# Helm 3 and Helm 4 (the inventory's cluster.helm chooses the archive,
# roles/helm): every helm command line here means the same with both.
# Where the two majors spell it differently the line is chosen by
# PV_HELM_MAJOR (pv_helm_major) in a `case "$PV_HELM_MAJOR" in 3) ... ;;
# *) ... ;; esac`, the form tests/tools/roles-flags.py checks each branch
# of against that major's real flags (t0402) and runs with that major's
# real helm (t0403).  Both majors read and write the same release records
# (Secrets sh.helm.release.v1.NAME.vN): Helm 4 takes over the releases
# Helm 3 installed, and the other way round, without reinstalling them.
PV_HELM="helm --kubeconfig /etc/kubernetes/admin.conf"
PV_KUBECTL="kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s"

# pv_pull_failures: the images the text on stdin says could not be pulled,
# "IMAGE<TAB>WHY" once per image, as the real tools print it: the kubelet's
# `"Failed to pull image" err="..." image="IMAGE"` (its log line),
# `Failed to pull image "IMAGE": ...` (its event), `... failed to pull and
# unpack image \"IMAGE\": ...` (the CRI's error, also inside ErrImagePull
# and CreatePodSandbox lines), `failed to pull image \"IMAGE\"`, and
# kubeadm's preflight `[ERROR ImagePull]: failed to pull image IMAGE: ...`.
# WHY is the error's last words, at most 200 characters.
pv_pull_failures() {
	sed -n \
		-e 's/.*"Failed to pull image" err="\(.*\)" image="\([^"]*\)".*/\2\t\1/p' \
		-e 's/.*Failed to pull image \\*"\([^"\\]*\)\\*": \(.*\)/\1\t\2/p' \
		-e 's/.*\[ERROR ImagePull\]: failed to pull image \[\{0,1\}\([^] ]*[^]: ]\)\]\{0,1\}:\{0,1\} *\(.*\)/\1\t\2/p' \
		-e 's/.*[Ff]ailed to pull and unpack image \\*"\([^"\\]*\)\\*": \(.*\)/\1\t\2/p' \
		-e 's/.*failed to pull image \\*"\([^"\\]*\)\\*"\(.*\)/\1\t\2/p' |
		awk -F '\t' '!seen[$1]++ { w = $2; gsub(/\\"/, "\"", w); if (length(w) > 200) w = "..." substr(w, length(w) - 196); print $1 "\t" w }'
}

# pv_pull_cause WHY: what a pull error's words mean, and the fix, in a few words.
pv_pull_cause() {
	case $1 in
	*": not found"* | *"manifest unknown"* | *NotFound* | *"not found"*) echo "the registry has no such image or tag: check the version, or use a mirror that holds it (cluster.registries), or provision fetch --images" ;;
	*"429 Too Many Requests"* | *toomanyrequests*) echo "the registry rate-limits this address (HTTP 429): credentials (cluster.registries.HOST.username/password_file), a mirror, or provision fetch --images" ;;
	*"401 Unauthorized"* | *"403 Forbidden"* | *"pull access denied"* | *"no basic auth credentials"* | *unauthorized*) echo "the registry refuses (401/403): credentials (cluster.registries), a mirror, or provision fetch --images" ;;
	*x509:* | *"tls: "*) echo "TLS: the registry's certificate is not trusted: its CA (cluster.registries ca_file), or provision fetch --images" ;;
	*proxyconnect*) echo "the proxy refused: check cluster.http_proxy" ;;
	*"no such host"* | *"server misbehaving"*) echo "the registry's name does not resolve: the node's DNS, cluster.http_proxy, a mirror, or provision fetch --images" ;;
	*"connection refused"* | *"i/o timeout"* | *"network is unreachable"* | *"no route to host"* | *"deadline exceeded"*) echo "the registry cannot be reached: cluster.http_proxy, a mirror (cluster.registries), or provision fetch --images" ;;
	*) echo "see the error: 'ctr -n k8s.io content fetch --hosts-dir /etc/containerd/certs.d IMAGE' on the node says it again" ;;
	esac
}

# pv_pods_explain NS: why the pods of namespace NS are not ready, one line
# each (ready ones left out), from their states as the API reports them:
#   POD (NODE): container C waits: REASON: MESSAGE   (ErrImagePull, ImagePullBackOff, ...)
#   POD: Pending: MESSAGE                            (not scheduled)
# and the Helm hooks of NS (DaemonSets and Jobs annotated helm.sh/hook) that
# still run, with their pods.  At most 12 lines.  Exit 1 when it found
# nothing to say.
pv_pods_explain() {
	_hooks=$($PV_KUBECTL -n "$1" get daemonsets,jobs -o 'jsonpath={range .items[*]}{.kind}{"/"}{.metadata.name}{"\t"}{.metadata.annotations.helm\.sh/hook}{"\n"}{end}' 2>/dev/null | awk -F '\t' '$2 != ""') || _hooks=
	$PV_KUBECTL -n "$1" get pods -o 'jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.nodeName}{"\t"}{.status.phase}{"\t"}{range .status.initContainerStatuses[*]}{.name}{"|"}{.image}{"|"}{.ready}{"|"}{.state.waiting.reason}{"|"}{.state.waiting.message}{";"}{end}{range .status.containerStatuses[*]}{.name}{"|"}{.image}{"|"}{.ready}{"|"}{.state.waiting.reason}{"|"}{.state.waiting.message}{";"}{end}{"\t"}{.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}' 2>/dev/null |
		awk -F '\t' -v hooks="$_hooks" '
		BEGIN { n = split(hooks, h, "\n"); for (i = 1; i <= n; i++) { split(h[i], f, "\t"); split(f[1], kn, "/"); hook[kn[2]] = kn[1] " " kn[2] " (Helm hook " f[2] ")" } }
		function hookof(pod,   k) { for (k in hook) if (index(pod, k "-") == 1) return hook[k]; return "" }
		{
			pod = $1; node = $2; phase = $3; said = 0
			where = node != "" ? pod " (" node ")" : pod
			hk = hookof(pod); if (hk != "") where = where ", pod of " hk
			m = split($4, cs, ";")
			for (i = 1; i <= m; i++) {
				if (cs[i] == "") continue
				split(cs[i], c, "|")
				if (c[4] != "" && c[4] != "PodInitializing") {
					msg = c[5]; if (length(msg) > 160) msg = substr(msg, 1, 157) "..."
					print where ": container " c[1] " (" c[2] ") waits: " c[4] (msg != "" ? ": " msg : ""); said = 1; lines++
					break
				}
			}
			if (!said && phase == "Pending" && node == "") { print where ": Pending, not scheduled" ($5 != "" ? ": " $5 : ""); lines++ }
			else if (!said && phase == "Pending") { print where ": Pending (ContainerCreating)"; lines++ }
			if (lines >= 12) exit
		}
		END { exit lines ? 0 : 1 }'
}

# pv_helm_major: PV_HELM_MAJOR=3 or 4, the major version of the helm on
# PATH, from `helm version --template '{{.Version}}'` (v3.22.0, v4.3.0:
# both majors take that flag and print that form); 1, saying why, when
# helm does not answer or is another major.
pv_helm_major() {
	_hm=$(helm version --template '{{.Version}}' 2>&1) || {
		echo "helm version: $(printf '%s\n' "$_hm" | tail -n 1)"
		return 1
	}
	case $_hm in
	v3.*) PV_HELM_MAJOR=3 ;;
	v4.*) PV_HELM_MAJOR=4 ;;
	*)
		echo "helm version says '$_hm': provision drives Helm 3 and Helm 4"
		return 1
		;;
	esac
}

# pv_yaml_paths < YAML: one line per scalar of a YAML document as `helm get
# values -o yaml` writes it (keys sorted, two spaces a level, a sequence's
# "- " at its key's indentation, multi-line strings as | blocks):
# PATH<TAB>VALUE, PATH the keys joined with "." and [N] for the Nth item of a
# sequence (toolkit.env[0].name).  Empty maps and sequences are values ({},
# []); a block scalar's lines are joined with \n.
pv_yaml_paths() {
	awk '
	function path(n,   i, p) {
		p = ""
		for (i = 1; i <= n; i++)
			p = p (k[i] ~ /^\[/ || p == "" ? "" : ".") k[i]
		return p
	}
	function keyline(body, ind,   key, val) {
		while (top > 0 && ki[top] >= ind) top--
		if (body ~ /^"/) {
			key = body
			sub(/^"/, "", key)
			sub(/":( .*)?$/, "", key)
			val = body
			sub(/^"[^"]*":[ ]?/, "", val)
		} else {
			key = body
			sub(/:( .*)?$/, "", key)
			val = substr(body, length(key) + 2)
			sub(/^ /, "", val)
		}
		k[++top] = key
		ki[top] = ind
		if (val == "") return
		if (val ~ /^[|>][-+]?$/) {
			blk = path(top)
			bind = ind
			bval = ""
			top--
			return
		}
		print path(top) "\t" val
		top--
	}
	{
		line = $0
		match(line, /^ */)
		ind = RLENGTH
		body = substr(line, ind + 1)
		if (blk != "") {
			if (ind > bind || body == "") {
				bval = bval (bval == "" ? "" : "\\n") body
				next
			}
			print blk "\t" bval
			blk = ""
		}
		if (body == "" || body ~ /^#/) next
		if (body ~ /^- / || body == "-") {
			while (top > 0 && ki[top] > ind) top--
			p = path(top)
			n = cnt[p]++
			k[++top] = "[" n "]"
			ki[top] = ind + 1
			body = substr(body, 3)
			if (body == "") next
			if (body ~ /^("[^"]*"|[^ "][^:]*):( |$)/) {
				keyline(body, ind + 2)
				next
			}
			print path(top) "\t" body
			top--
			next
		}
		keyline(body, ind)
	}
	END { if (blk != "") print blk "\t" bval }'
}

# pv_values_diff RECORDED < CURRENT: both PATH<TAB>VALUE lines
# (pv_yaml_paths); one line per key that differs, "  KEY: OLD -> NEW"
# ("(not set)" for a missing one), at most 20 and then how many more.  The
# values of keys named like a secret (secret, token, password, key) are
# never shown: "(secret)".
pv_values_diff() {
	awk -F '\t' -v rec="$1" '
	function shown(key, v) {
		if (v == "\001") return "(not set)"
		if (tolower(key) ~ /(secret|token|password|passwd|key)[^.]*$/) return "(secret)"
		if (length(v) > 80) v = substr(v, 1, 80) "..."
		return v
	}
	BEGIN {
		while ((getline l < rec) > 0) {
			i = index(l, "\t")
			old[substr(l, 1, i - 1)] = substr(l, i + 1)
		}
	}
	{
		i = index($0, "\t")
		key = substr($0, 1, i - 1)
		v = substr($0, i + 1)
		seen[key] = 1
		if (!(key in old)) out("  " key ": " shown(key, "\001") " -> " shown(key, v))
		else if (old[key] != v) out("  " key ": " shown(key, old[key]) " -> " shown(key, v))
	}
	END {
		for (key in old)
			if (!(key in seen)) out("  " key ": " shown(key, old[key]) " -> " shown(key, "\001"))
		if (n > 20) print "  ... and " n - 20 " more"
	}
	function out(s) { if (++n <= 20) print s }' | sort
}

# pv_helm_state RELEASE NAMESPACE CHART.tgz VALUES [VALUES...]: exit 0 when
# RELEASE is deployed in NAMESPACE from that chart (name and version) with
# exactly that chart archive and values files, and with the values Helm
# keeps for it (`helm get values`) those it kept after provision's last
# install of those files (recorded then, NS.RELEASE.values, 0600: a hand
# `helm upgrade --set` shows here, its keys listed, secrets masked); 1,
# saying what differs, otherwise; 2 when helm cannot answer.  (A second
# values file: one the node made itself, such as the hub's secrets,
# roles/jupyterhub.)
pv_helm_state() {
	_rel=$1 _ns=$2
	# not there yet (provision plan before the first up): it would change
	if [ ! -f /etc/kubernetes/admin.conf ]; then
		echo "release $1: no cluster yet (/etc/kubernetes/admin.conf is missing)"
		return 1
	fi
	if ! command -v helm >/dev/null 2>&1; then
		echo "release $1: helm is not installed yet (roles/helm)"
		return 1
	fi
	if [ ! -f "$3" ] || [ ! -f "$4" ]; then
		echo "release $1: $3 or $4 is not on the node yet"
		return 1
	fi
	# the chart's own Chart.yaml (TOP/Chart.yaml), not a subchart's
	_top=$(tar -tzf "$3" 2>/dev/null | head -n 1 | cut -d / -f 1)
	_meta=$(tar -xzOf "$3" "$_top/Chart.yaml" 2>/dev/null) || {
		echo "$3: not a chart archive"
		return 2
	}
	_chart=$(printf '%s\n' "$_meta" | sed -n 's/^name: *["'\'']*\([^"'\'' ]*\).*/\1/p' | head -n 1)-$(printf '%s\n' "$_meta" | sed -n 's/^version: *["'\'']*\([^"'\'' ]*\).*/\1/p' | head -n 1)
	# Every state, the newest revision of each release: helm 3's -a and
	# helm 4's default (helm 4 removed -a), spelt the same for both: the
	# six state flags together make both majors' state mask ListAll
	# (pkg/action/list.go SetStateMask of v3.17 and v4.2); without one,
	# helm 3 would list only deployed and failed releases and a release
	# left pending-upgrade would read as not installed.
	_list=$($PV_HELM list -n "$2" --deployed --failed --pending --superseded --uninstalled --uninstalling \
		-o json --filter "^$1\$" 2>&1) || {
		printf '%s\n' "$_list" | tail -n 3
		return 2
	}
	_status=$(printf '%s' "$_list" | grep -o '"status":"[^"]*"' | head -n 1 | cut -d '"' -f 4)
	_have=$(printf '%s' "$_list" | grep -o '"chart":"[^"]*"' | head -n 1 | cut -d '"' -f 4)
	if [ -z "$_status" ]; then
		echo "release $1 (namespace $2): not installed"
		return 1
	fi
	if [ "$_status" != deployed ]; then
		case $_status in
		failed | pending-*) echo "release $1 (namespace $2): $_status (left by an interrupted or failed run: provision up recovers it)" ;;
		*) echo "release $1 (namespace $2): $_status" ;;
		esac
		return 1
	fi
	if [ "$_have" != "$_chart" ]; then
		echo "release $1 (namespace $2): chart $_have deployed, pinned $_chart ($3)"
		return 1
	fi
	_stamp=$PROVISION_STATE_DIR/helm/$2.$1
	_what="release $1 (namespace $2)"
	_want=$(sha256sum <"$3" | cut -c1-64)
	_chart_file=$3
	shift 3
	for _v in "$@"; do
		[ -f "$_v" ] || {
			echo "$_what: $_v is not on the node yet"
			return 1
		}
		_want="$_want $(sha256sum <"$_v" | cut -c1-64)"
	done
	if [ "$(cat "$_stamp" 2>/dev/null)" != "$_want" ]; then
		echo "$_what: $* or $_chart_file changed since the last install"
		return 1
	fi
	# Installed by a provision before the values were recorded: the next
	# install records them.
	if [ -f "$_stamp.values" ]; then
		_now=$($PV_HELM get values "$_rel" -n "$_ns" -o yaml 2>&1) || {
			printf '%s\n' "$_now" | tail -n 3
			return 2
		}
		_diff=$(printf '%s\n' "$_now" | pv_yaml_paths | pv_values_diff "$_stamp.values")
		_now=
		if [ -n "$_diff" ]; then
			echo "$_what: its values (helm get values $_rel -n $_ns) are not those of $*; changed by hand:"
			printf '%s\n' "$_diff"
			return 1
		fi
	fi
	echo "$_what: $_chart deployed with $*"
	return 0
}

# pv_helm_revisions RELEASE NAMESPACE: "REVISION STATUS" of each revision
# helm keeps of RELEASE, oldest first (`helm history -o json`: its fields
# revision, updated, status, ... in that order, as helm 3 and 4 print them);
# nothing when there is no such release.
pv_helm_revisions() {
	$PV_HELM history "$1" -n "$2" -o json 2>/dev/null |
		grep -o '"revision":[0-9]*,"updated":"[^"]*","status":"[^"]*"' |
		sed 's/^"revision":\([0-9]*\),"updated":"[^"]*","status":"\([^"]*\)"$/\1 \2/'
}

# pv_helm_recover RELEASE NAMESPACE: a release a cut-off run left behind
# (provision up interrupted while helm waited: helm marks the revision
# failed on SIGINT/SIGTERM, or leaves it pending-install, pending-upgrade or
# pending-rollback when it is killed first) is made upgradable again, and
# the step says so with ::note.  failed: helm upgrades from it as it is
# (pkg/action/upgrade.go: from the last deployed revision, else the failed
# one).  pending-*: helm refuses any other operation on it ("another
# operation (install/upgrade/rollback) is in progress"): rolled back to the
# last deployed revision, or, when none ever was, uninstalled (what was
# half-installed goes; the install that follows starts afresh).  provision
# holds the state folder's lock, so no other provision runs helm here; a
# helm someone runs by hand on the control plane at the same time would
# see its release rolled back.
pv_helm_recover() {
	_revs=$(pv_helm_revisions "$1" "$2")
	[ -n "$_revs" ] || return 0
	_last=$(printf '%s\n' "$_revs" | tail -n 1)
	case ${_last#* } in
	failed)
		pv_say_note "release $1 (namespace $2): revision ${_last% *} was left failed by an earlier run (interrupted, or helm timed out): upgraded again"
		;;
	pending-install | pending-upgrade | pending-rollback)
		# the last deployed revision; else the last that once was (superseded)
		_dep=$(printf '%s\n' "$_revs" | awk '$2 == "deployed" { d = $1 } $2 == "superseded" { s = $1 } END { print d ? d : s }')
		if [ -n "$_dep" ]; then
			echo "release $1 (namespace $2): revision ${_last% *} was left ${_last#* } (helm was cut off); helm rollback $1 $_dep"
			$PV_HELM rollback "$1" "$_dep" -n "$2" || return 1
			pv_say_note "release $1 (namespace $2) was left ${_last#* } by an interrupted run: rolled back to revision $_dep (the last deployed), then upgraded"
		else
			echo "release $1 (namespace $2): revision ${_last% *} was left ${_last#* } and none was ever deployed; helm uninstall $1"
			$PV_HELM uninstall "$1" -n "$2" || return 1
			pv_say_note "release $1 (namespace $2) was left ${_last#* } by an interrupted first install: uninstalled, then installed afresh"
		fi
		;;
	esac
	return 0
}

# pv_helm_install RELEASE NAMESPACE CHART.tgz VALUES TIMEOUT [VALUES...]:
# helm upgrade --install ... --values each file --wait --timeout TIMEOUT,
# then record the stamp.  A release an interrupted run left failed or
# pending is recovered first (pv_helm_recover).
pv_helm_install() {
	_rel=$1 _ns=$2 _chart=$3 _timeout=$5
	pv_helm_recover "$_rel" "$_ns" || {
		pv_hint "release $_rel (namespace $_ns) was left pending by an interrupted run and could not be recovered on $PROVISION_NODE: 'helm history $_rel -n $_ns' shows its revisions; 'helm rollback $_rel REVISION -n $_ns' to a deployed one, or 'helm uninstall $_rel -n $_ns', then run provision up again"
		return 1
	}
	_want=$(sha256sum <"$3" | cut -c1-64)
	_v1=$4
	shift 5
	set -- "$_v1" "$@"
	_n=$#
	for _v in "$@"; do
		_want="$_want $(sha256sum <"$_v" | cut -c1-64)"
		set -- "$@" --values "$_v"
	done
	shift "$_n"
	pv_helm_major || return 1
	# --wait: helm 3's readiness (Deployments' and StatefulSets' pods
	# ready, DaemonSets' pods ready on their nodes, PVCs Bound, Services'
	# addresses; polled every 2 s) is helm 4's --wait=legacy
	# (pkg/kube/wait.go, "Helm 3-style periodic polling"); helm 4's bare
	# --wait is kstatus ("watcher": watches every object of the release
	# and waits for custom resources to be reconciled too, e.g. the GPU
	# Operator's ClusterPolicy until every GPU node is done, which
	# gpu-operator's 20-validated waits for itself, per node, saying
	# which).  legacy keeps the timeouts the roles chose meaning what they
	# meant.  No --server-side: helm 4's default ("auto") keeps the apply
	# method a release was installed with (client-side for Helm 3's
	# releases: taken over without a re-apply) and uses server-side apply
	# for a release it installs first; helm 3 has no such flag.
	PV_HELM_WHY=
	_rc=0
	case "$PV_HELM_MAJOR" in
	3)
		$PV_HELM upgrade --install "$_rel" "$_chart" --namespace "$_ns" --create-namespace \
			"$@" --wait --timeout "$_timeout" || _rc=$?
		;;
	*)
		$PV_HELM upgrade --install "$_rel" "$_chart" --namespace "$_ns" --create-namespace \
			"$@" --wait=legacy --timeout "$_timeout" || _rc=$?
		;;
	esac
	if [ "$_rc" != 0 ]; then
		# What the wait was waiting for, from the pods' and hooks' states
		# (not a guess): a pull error names its image, node and cause.
		if _why=$(pv_pods_explain "$_ns"); then
			echo "what release $_rel waits for (kubectl -n $_ns get pods):"
			printf '%s\n' "$_why" | sed 's/^/  /'
			_pull=$(printf '%s\n' "$_why" | sed -n 's/^\([^ ]*\) (\([^)]*\))[^:]*: container [^ ]* (\([^)]*\)) waits: \(ErrImagePull\|ImagePullBackOff\|Init:ErrImagePull\|Init:ImagePullBackOff\)\(.*\)/\2\t\3\t\5/p' | head -n 1)
			if [ -n "$_pull" ]; then
				_node=$(printf '%s' "$_pull" | cut -f 1)
				_img=$(printf '%s' "$_pull" | cut -f 2)
				PV_HELM_WHY="release $_rel in $_ns waits for a pod on $_node that cannot pull $_img: $(pv_pull_cause "$(printf '%s' "$_pull" | cut -f 3)"); then provision up again (the pull phase pulls it first)"
			else
				PV_HELM_WHY="release $_rel in $_ns did not become ready within $_timeout: $(printf '%s\n' "$_why" | head -n 1)"
			fi
			pv_hint "$PV_HELM_WHY"
		else
			pv_hint "helm upgrade --install $_rel did not finish within $_timeout: 'helm status $_rel -n $_ns' and 'kubectl -n $_ns get pods' on $PROVISION_NODE show what is not ready"
		fi
		return 1
	fi
	mkdir -p "$PROVISION_STATE_DIR/helm"
	# What Helm keeps of these files: pv_helm_state compares it with what it
	# keeps later.  0600: the hub's secrets are among them.
	_kept=$($PV_HELM get values "$_rel" -n "$_ns" -o yaml) || return 1
	printf '%s\n' "$_kept" | pv_yaml_paths | pv_write "$PROVISION_STATE_DIR/helm/$_ns.$_rel.values" 0600 || return 1
	_kept=
	printf '%s\n' "$_want" | pv_write "$PROVISION_STATE_DIR/helm/$_ns.$_rel" 0644
}

# pv_ready_text "STATUS|REASON|MESSAGE": a Node's Ready condition as
# kubectl's STATUS column names it, with the kubelet's reason and message:
# "Ready", "NotReady: KubeletNotReady: container runtime network not
# ready: ...", "Unknown: NodeStatusUnknown: Kubelet stopped posting node
# status."; anything else (kubectl's error) as it is.
pv_ready_text() {
	case $1 in
	*'|'*'|'*)
		_rt_s=${1%%|*}
		_rt_r=${1#*|}
		_rt_m=${_rt_r#*|}
		_rt_r=${_rt_r%%|*}
		case $_rt_s in
		True) _rt_s=Ready ;;
		False) _rt_s=NotReady ;;
		'') _rt_s=Unknown ;;
		esac
		echo "$_rt_s${_rt_r:+: $_rt_r}${_rt_m:+: $_rt_m}"
		;;
	*) echo "$1" ;;
	esac
}

# pv_drain_blockers NODE SECONDS MOVABLE... < DRAIN_OUTPUT: after a `kubectl drain NODE
# ... --timeout=SECONDSs` that failed, one line naming the pods that kept
# NODE from draining, with drain's own reason.  kubectl drain checks every
# pod first and evicts none when it refuses one ("error: cannot delete Pods
# that declare no controller (use --force to override): default/lonely"):
# then only those block, and the others are still there because of them.
# Otherwise the pods whose eviction the API server refused ("error when
# evicting pods/"NAME" -n "NS" ...: a PodDisruptionBudget), else those drain
# would still move when its timeout came (MOVABLE, a command printing
# "namespace/name (kind)" per pod).
pv_drain_blockers() {
	_db_node=$1 _db_secs=$2
	shift 2
	_db_out=$(cat)
	_db=$(printf '%s\n' "$_db_out" | sed -n 's/^error: \(cannot delete [^:]*\): \(.*\)$/\2 (drain: \1)/p' |
		sort -u | paste -sd ';' - | sed 's/;/; /g')
	if [ -n "$_db" ]; then
		echo "pods that would not leave $_db_node: $_db"
		return 0
	fi
	_db=$(printf '%s\n' "$_db_out" | sed -n 's/.*error when evicting pods\/"\([^"]*\)" -n "\([^"]*\)".*/\2\/\1/p' |
		sort -u | paste -sd ',' - | sed 's/,/, /g')
	if [ -n "$_db" ]; then
		echo "pods that would not leave $_db_node: $_db (drain: their eviction was refused, a PodDisruptionBudget allows none now)"
		return 0
	fi
	echo "pods that would not leave $_db_node: $("$@" | paste -sd ',' - | sed 's/,/, /g') (drain: still there when its ${_db_secs}s ran out)"
}

# pv_etcdctl [ENDPOINT] ARGS...: etcdctl (v3 API) against this control
# plane's stacked etcd (or ENDPOINT, an https:// client URL; or
# $PV_ETCD_ENDPOINT) with kubeadm's healthcheck client certificate (from
# $PV_ETCD_PKI, default /etc/kubernetes/pki/etcd); 5 s to connect, 15 s a
# command.
pv_etcdctl() {
	_ec_ep=${PV_ETCD_ENDPOINT:-https://127.0.0.1:2379}
	_ec_pki=${PV_ETCD_PKI:-/etc/kubernetes/pki/etcd}
	case ${1:-} in https://*)
		_ec_ep=$1
		shift
		;;
	esac
	ETCDCTL_API=3 etcdctl --endpoints="$_ec_ep" --cacert="$_ec_pki/ca.crt" \
		--cert="$_ec_pki/healthcheck-client.crt" --key="$_ec_pki/healthcheck-client.key" \
		--dial-timeout=5s --command-timeout=15s "$@"
}

# pv_etcd_members: "ID NAME CLIENT_URL STATUS LEARNER" per etcd member
# (NAME "-" for a member that has not started yet), or fails with
# etcdctl's words on stderr.
pv_etcd_members() {
	pv_etcdctl member list -w simple | awk -F ', ' 'NF >= 5 {
		print $1, ($3 == "" ? "-" : $3), ($5 == "" ? "-" : $5), $2, (NF >= 6 ? $6 : "false") }'
}

# pv_note LIST VALUE: remember VALUE in $PROVISION_STATE_DIR/LIST, once
# (what provision did that provision reset undoes: masked units, packages).
pv_note() {
	mkdir -p "$PROVISION_STATE_DIR"
	touch "$PROVISION_STATE_DIR/$1"
	grep -qxF "$2" "$PROVISION_STATE_DIR/$1" || printf '%s\n' "$2" >>"$PROVISION_STATE_DIR/$1"
}

# pv_dpkg_list: the installed packages, one a line, sorted.
pv_dpkg_list() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 2>/dev/null | awk '$1 ~ /^.i/ { print $2 }' | sort -u
}

# pv_installing CMD...: run CMD (an apt-get install) and note every package
# it added in $PROVISION_STATE_DIR/packages, for provision reset; packages
# that were there before are never noted.  Exits as CMD did.
pv_installing() {
	pv_before=$(mktemp) || return 1
	pv_dpkg_list >"$pv_before"
	pv_rc=0
	"$@" || pv_rc=$?
	for pv_p in $(pv_dpkg_list | comm -13 "$pv_before" -); do
		pv_note packages "$pv_p"
	done
	rm -f "$pv_before"
	return $pv_rc
}

# pv_restore FILE: undo what provision did to FILE: put the original back
# from the backup directory (atomically) when provision replaced it, remove
# it when provision created it; FILE leaves the managed list.  An empty
# ~/.kube left behind goes too.
pv_restore() {
	b=$PROVISION_BACKUP_DIR$1
	if [ -d "$1" ] && [ ! -L "$1" ]; then
		# A folder an older provision noted as a file (the hub's database
		# folder): in provision's own folder, all of it is provision's;
		# elsewhere it is left, and said.
		case $1 in
		"$PROVISION_STATE_DIR"/?*)
			rm -rf "$1"
			echo "removed $1 (a folder provision made in its own)"
			;;
		*)
			echo "kept $1: a folder, not a file provision wrote"
			return 1
			;;
		esac
	elif [ -e "$b" ]; then
		tmp=$(mktemp "$(dirname "$1")/.${1##*/}.provision-XXXXXX") || return 1
		if ! cp -p "$b" "$tmp" || ! mv -f "$tmp" "$1"; then
			rm -f "$tmp"
			return 1
		fi
		rm -f "$b"
		echo "restored $1 (the original from before provision)"
	elif [ -e "$1" ] || [ -L "$1" ]; then
		rm -f "$1"
		echo "removed $1 (written by provision)"
	fi
	case $1 in */.kube/*) rmdir "$(dirname "$1")" 2>/dev/null || true ;; esac
	# The folders provision made for it (pv_mkdir), once empty.
	pv_d=$(dirname "$1")
	while [ -f "$PROVISION_STATE_DIR/dirs" ] && grep -qxF "$pv_d" "$PROVISION_STATE_DIR/dirs" &&
		rmdir "$pv_d" 2>/dev/null; do
		echo "removed the empty $pv_d (made by provision)"
		grep -vxF "$pv_d" "$PROVISION_STATE_DIR/dirs" >"$PROVISION_STATE_DIR/dirs.tmp" || true
		mv -f "$PROVISION_STATE_DIR/dirs.tmp" "$PROVISION_STATE_DIR/dirs"
		pv_d=$(dirname "$pv_d")
	done
	if [ -f "$PROVISION_STATE_DIR/managed" ]; then
		grep -vxF "$1" "$PROVISION_STATE_DIR/managed" >"$PROVISION_STATE_DIR/managed.tmp" || true
		mv -f "$PROVISION_STATE_DIR/managed.tmp" "$PROVISION_STATE_DIR/managed"
	fi
}

# pv_managed_files: the files provision wrote on this node, one a line.
pv_managed_files() {
	[ -f "$PROVISION_STATE_DIR/managed" ] && cat "$PROVISION_STATE_DIR/managed"
	return 0
}

# pv_managed_dir DIR MODE OWNER NAME...: the folder DIR exists with MODE
# and OWNER (uid:gid); when provision makes it (it was not there), it is
# noted in $PROVISION_STATE_DIR/managed-dirs with NAME... (shell patterns,
# quoted: 'jupyterhub.sqlite*'), the files that what provision installs
# writes in it.  provision reset (pv_restore_dir) removes DIR and those
# files, and only when nothing else is in it.  A DIR that was there before
# provision is never noted: reset leaves it.  (An older provision noted the
# hub's database folder as a managed file: it moves to this list.)
pv_managed_dir() {
	_md=$1 _md_mode=$2 _md_own=$3
	shift 3
	_md_list=$PROVISION_STATE_DIR/managed-dirs
	if [ ! -d "$_md" ]; then
		mkdir -p "$_md" || return 1
		_md_new=1
	elif grep -qxF "$_md" "$PROVISION_STATE_DIR/managed" 2>/dev/null; then
		_md_new=1
		grep -vxF "$_md" "$PROVISION_STATE_DIR/managed" >"$PROVISION_STATE_DIR/managed.tmp" || true
		mv -f "$PROVISION_STATE_DIR/managed.tmp" "$PROVISION_STATE_DIR/managed"
	else
		_md_new=0
	fi
	if [ "$_md_new" = 1 ] && ! pv_managed_dirs | grep -q "^$_md	"; then
		mkdir -p "$PROVISION_STATE_DIR"
		printf '%s\t%s\n' "$_md" "$*" >>"$_md_list"
	fi
	chown "$_md_own" "$_md" && chmod "$_md_mode" "$_md"
}

# pv_managed_dirs: "DIR<TAB>NAME..." of each folder provision made
# (pv_managed_dir), one a line.
pv_managed_dirs() {
	[ -f "$PROVISION_STATE_DIR/managed-dirs" ] && cat "$PROVISION_STATE_DIR/managed-dirs"
	return 0
}

# pv_restore_dir DIR NAME...: undo pv_managed_dir: the files of DIR whose
# names match NAME... (regular files, not links) and DIR itself removed,
# DIR leaving the list; 1, saying what, when DIR holds anything else (not
# provision's: a person's files are never removed) and then nothing is.
pv_restore_dir() {
	_rd=$1
	shift
	if [ -d "$_rd" ] && [ ! -L "$_rd" ]; then
		_rd_other=$(
			for _rd_p in "$_rd"/* "$_rd"/.[!.]* "$_rd"/..?*; do
				[ -e "$_rd_p" ] || [ -L "$_rd_p" ] || continue
				_rd_ok=0
				for _rd_n in "$@"; do
					# shellcheck disable=SC2254 # the names are patterns
					case ${_rd_p##*/} in $_rd_n) _rd_ok=1 ;; esac
				done
				if [ "$_rd_ok" = 0 ] || [ -L "$_rd_p" ] || [ ! -f "$_rd_p" ]; then
					echo "$_rd_p"
				fi
			done
		)
		if [ -n "$_rd_other" ]; then
			echo "kept $_rd: it holds what provision did not make there: $(printf '%s\n' "$_rd_other" | head -n 5 | paste -sd ' ' -)"
			return 1
		fi
		_rd_n=0
		for _rd_p in "$_rd"/* "$_rd"/.[!.]* "$_rd"/..?*; do
			[ -f "$_rd_p" ] || continue
			rm -f "$_rd_p"
			_rd_n=$((_rd_n + 1))
		done
		rmdir "$_rd" || return 1
		echo "removed $_rd (made by provision; its $_rd_n file(s) were what provision installed wrote there)"
	fi
	if [ -f "$PROVISION_STATE_DIR/managed-dirs" ]; then
		grep -v "^$_rd	" "$PROVISION_STATE_DIR/managed-dirs" >"$PROVISION_STATE_DIR/managed-dirs.tmp" || true
		mv -f "$PROVISION_STATE_DIR/managed-dirs.tmp" "$PROVISION_STATE_DIR/managed-dirs"
	fi
	return 0
}

# pv_kube_at VERSION PACKAGE...: every PACKAGE is installed at VERSION
# (X.Y.Z, any Debian revision) and held; says which is not.
pv_kube_at() {
	pv_v=$1
	shift
	pv_rc=0
	for pv_p in "$@"; do
		pv_have=$(dpkg-query -W -f='${db:Status-Abbrev}|${Version}' "$pv_p" 2>/dev/null) || pv_have=
		# The first letter of the status is the selection: "h" is what
		# apt-mark hold sets (apt-mark showhold reads the whole apt cache).
		case $pv_have in
		hi*"|$pv_v"-*)
			echo "$pv_p: ${pv_have#*|}, held"
			;;
		?i*"|$pv_v"-*)
			echo "$pv_p: ${pv_have#*|}, not held"
			pv_rc=1
			;;
		*)
			echo "$pv_p: ${pv_have#*|} installed, want $pv_v"
			pv_rc=1
			;;
		esac
	done
	return $pv_rc
}

# pv_kube_install VERSION PACKAGE...: the Kubernetes apt repository of
# VERSION's minor (as roles/kube-packages writes it), then every PACKAGE at
# exactly VERSION, unheld for the install and held again (provision upgrade).
pv_kube_install() {
	pv_v=$1
	shift
	pv_minor=$(printf '%s' "$pv_v" | cut -d . -f 1-2)
	pv_base=${PROVISION_APT_MIRROR:-https://pkgs.k8s.io}
	pv_repo=${pv_base%/}/core:/stable:/v$pv_minor/deb/
	pv_keyring=/etc/apt/keyrings/kubernetes-apt-keyring.asc
	pv_list=/etc/apt/sources.list.d/kubernetes.list
	pv_want="# Kubernetes $pv_minor packages; written by provision (roles/kube-packages).
deb [signed-by=$pv_keyring] $pv_repo /"
	if [ "$(cat "$pv_list" 2>/dev/null || true)" != "$pv_want" ]; then
		pv_key=$(mktemp) || return 1
		echo "fetching ${pv_repo}Release.key"
		if ! /usr/lib/apt/apt-helper ${PROVISION_HTTP_PROXY:+"-oAcquire::http::Proxy=$PROVISION_HTTP_PROXY"} \
			download-file "${pv_repo}Release.key" "$pv_key" || ! grep -q 'BEGIN PGP PUBLIC KEY BLOCK' "$pv_key"; then
			rm -f "$pv_key"
			pv_hint "the node cannot fetch ${pv_repo}Release.key: is Kubernetes $pv_minor on ${pv_base}?"
			return 1
		fi
		pv_write "$pv_keyring" 0644 <"$pv_key"
		rm -f "$pv_key"
		printf '%s\n' "$pv_want" | pv_write "$pv_list" 0644
		echo "$pv_list: $pv_repo"
	fi
	pv_apt_get update -o Dir::Etc::sourcelist="$pv_list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 || return 1
	pv_pkgs=$*
	set --
	for pv_p in $pv_pkgs; do
		pv_c=$(apt-cache madison "$pv_p" 2>/dev/null | awk -F'|' -v v="$pv_v" '{ gsub(/[ \t]/, "", $2); if (index($2, v "-") == 1) print $2 }' | sort -V | tail -n 1)
		if [ -z "$pv_c" ]; then
			echo "$pv_p $pv_v is not in $pv_repo"
			pv_hint "check cluster.kubernetes_version in the inventory (a released version such as $pv_minor.1)"
			return 1
		fi
		set -- "$@" "$pv_p=$pv_c"
	done
	# shellcheck disable=SC2046 # package names are single words
	apt-mark unhold $(printf '%s\n' "$@" | cut -d = -f 1) >/dev/null
	echo "installing $*"
	pv_installing pv_apt_get install -y --allow-downgrades --allow-change-held-packages \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" || return 1
	# shellcheck disable=SC2046
	apt-mark hold $(printf '%s\n' "$@" | cut -d = -f 1)
}

# pv_pgp_fingerprint FILE: the fingerprint (40 upper-case hex digits) of the
# first key of an ASCII-armoured OpenPGP public key file, with coreutils only
# (no gpg on a fresh node).  A v4 key's fingerprint is the SHA-1 of 0x99, the
# public-key packet's length in two bytes and the packet's body (RFC 4880
# 12.2); anything else (no armour, another first packet, another version)
# fails.
pv_pgp_fingerprint() {
	_pg_bin=$(mktemp) || return 1
	awk '/^-----BEGIN PGP PUBLIC KEY BLOCK-----/ { s = 1; next }
		s == 1 && /^[ \t\r]*$/ { s = 2; next }
		s == 1 && /: / { next }
		s == 1 { s = 2 }
		s == 2 && (/^=/ || /^-----END/) { exit }
		s == 2 { gsub(/[ \t\r]/, ""); print }' "$1" | base64 -d >"$_pg_bin" 2>/dev/null || {
		rm -f "$_pg_bin"
		return 1
	}
	# shellcheck disable=SC2046 # the first bytes, one word each
	set -- $(od -An -tu1 -N6 "$_pg_bin")
	_pg_tag='' _pg_len='' _pg_hdr=''
	if [ $# -ge 3 ] && [ $(($1 & 128)) -ne 0 ]; then
		if [ $(($1 & 64)) -ne 0 ]; then
			_pg_tag=$(($1 & 63))
			if [ "$2" -lt 192 ]; then
				_pg_len=$2 _pg_hdr=2
			elif [ "$2" -lt 224 ]; then
				_pg_len=$(((($2 - 192) << 8) + $3 + 192)) _pg_hdr=3
			elif [ "$2" -eq 255 ] && [ $# -ge 6 ]; then
				_pg_len=$((($3 << 24) | ($4 << 16) | ($5 << 8) | $6)) _pg_hdr=6
			fi
		else
			_pg_tag=$((($1 >> 2) & 15))
			case $(($1 & 3)) in
			0) _pg_len=$2 _pg_hdr=2 ;;
			1) _pg_len=$((($2 << 8) | $3)) _pg_hdr=3 ;;
			2) [ $# -ge 5 ] && _pg_len=$((($2 << 24) | ($3 << 16) | ($4 << 8) | $5)) _pg_hdr=5 ;;
			esac
		fi
	fi
	if [ "$_pg_tag" != 6 ] || [ -z "$_pg_len" ] || [ "$_pg_len" -ge 65536 ] ||
		[ "$(od -An -tu1 -j "$_pg_hdr" -N1 "$_pg_bin" | tr -d ' ')" != 4 ] ||
		[ "$(wc -c <"$_pg_bin")" -lt $((_pg_hdr + _pg_len)) ]; then
		rm -f "$_pg_bin"
		return 1
	fi
	{
		printf '\231'
		# shellcheck disable=SC2059 # octal escapes made here
		printf "\\$(printf %03o $((_pg_len >> 8)))\\$(printf %03o $((_pg_len & 255)))"
		tail -c +$((_pg_hdr + 1)) "$_pg_bin" | head -c "$_pg_len"
	} | sha1sum | cut -c 1-40 | tr a-f A-F
	rm -f "$_pg_bin"
}

# pv_admin_homes: "user group home" of root and of the login user (the one
# provision's sudo came from, SUDO_USER), one per line.
pv_admin_homes() {
	for u in root ${SUDO_USER:-}; do
		line=$(getent passwd "$u") || continue
		home=$(printf '%s' "$line" | cut -d : -f 6)
		group=$(id -gn "$u")
		echo "$u $group $home"
	done | sort -u
}

# pv_admin_kubeconfig check|apply ADMIN: ADMIN (the cluster's admin.conf) is
# root's and the login user's ~/.kube/config, owned by each, mode 0600 (the
# seed's `cp -i /etc/kubernetes/admin.conf $HOME/.kube/config` and
# `chown`).  check: one line per user, status 1 when any differs.  apply:
# root's written with pv_write; the login user's written by that user
# (root following a symlink the user planted in their home, ~/.kube ->
# /etc, would chown or overwrite what it points to), the old file to the
# backup folder first (pv_write's rule), read as the user.  Other contexts
# of an old kubeconfig are not merged.
pv_admin_kubeconfig() {
	_rc=0
	for _e in $(pv_admin_homes | tr ' ' ':'); do
		_u=${_e%%:*}
		_r=${_e#*:}
		_g=${_r%%:*}
		_h=${_r#*:}
		_f=$_h/.kube/config
		if [ "$1" = check ]; then
			if [ -f "$_f" ] && cmp -s "$2" "$_f" && [ "$(stat -c %U:%G:%a "$_f")" = "$_u:$_g:600" ]; then
				echo "$_f: the cluster's admin.conf ($_u)"
			else
				echo "$_f: not the cluster's admin.conf yet ($_u)"
				_rc=1
			fi
			continue
		fi
		if [ "$_u" = root ]; then
			install -d -m 0700 "$_h/.kube"
			pv_write "$_f" 0600 <"$2"
		else
			if [ -f "$_f" ] && [ ! -L "$_f" ]; then
				pv_backup "$_f" 2>/dev/null || :
			fi
			# shellcheck disable=SC2016 # expanded by the user's shell
			runuser -u "$_u" -- sh -c 'umask 077 && mkdir -p "$1/.kube" && chmod 0700 "$1/.kube" &&
				cat >"$1/.kube/config.provision" && mv -f "$1/.kube/config.provision" "$1/.kube/config"' \
				sh "$_h" <"$2" || return 1
			pv_managed "$_f"
		fi
		echo "$_f: admin.conf for $_u ($_g)"
	done
	return $_rc
}
