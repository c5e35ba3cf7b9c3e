# images-init / images-addons 10-pull: every image of $PROVISION_IMAGES
# (what this node will run, from the roles this role `pulls`, provision
# /images.h) is in containerd, namespace k8s.io (where the kubelet looks),
# complete.
#
# check: `ctr -n k8s.io images check` lists each one "complete"; no
# network.  apply: each missing image is downloaded into containerd's
# content store with `ctr -n k8s.io content fetch` -- the same command and
# output on containerd 1.6, 1.7 and 2.x: the content and the image record
# (name -> manifest), not unpacked: containerd's CRI unpacks an image when
# it creates its first container (its WithNewSnapshot unpacks what is not
# unpacked yet), and the kubelet (IfNotPresent) finds the image present and
# pulls nothing.  At most $PROVISION_IMAGE_PULLS at once; through
# /etc/containerd/certs.d (the registries' hosts.toml: mirrors, CAs,
# credentials) and the proxy containerd's service has (roles/containerd;
# lib.sh pv_registry_env), so the bytes take the path containerd's own
# pulls take.
#
# Progress: about once a second, per image in flight,
#   ::progress image=REF done=BYTES total=BYTES
# exact bytes from containerd's content store: the digests come from ctr's
# own table (its lines name each blob), a blob in flight is
# ingest/DIR/{ref,total,data}, a blob done is blobs/sha256/HEX.  total is
# 0 until every blob of the image is known.
#
# Failures: an error that will not go away by itself -- the image or tag
# does not exist, the registry wants credentials or refuses them (401,
# 403), rate limits (429), TLS, DNS, a proxy that refuses -- stops the
# step at once, the other pulls with it, with the image, the registry,
# the cause and what to do.  A connection cut in the middle is tried again
# (twice; containerd resumes the blobs it has).  An image whose bytes do
# not move for $PROVISION_IMAGE_STALL_TIMEOUT s, or that takes more than
# $PROVISION_IMAGE_PULL_TIMEOUT s, fails the same way.  With
# PROVISION_IMAGE_SOURCE=bundle nothing is pulled: what the bundle did not
# bring is an error naming `provision fetch --images`.
#
# On the control plane of images-init, kubeadm (installed by
# kube-packages) is asked for its own list (`kubeadm config images list`):
# an image it names that $PROVISION_IMAGES lacks (roles/kubernetes.yaml's
# row is behind the patch release) is pulled too, without progress lines,
# and said.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
PULLS=${PROVISION_IMAGE_PULLS:-3}
STALL=${PROVISION_IMAGE_STALL_TIMEOUT:-60}
TIMEOUT=${PROVISION_IMAGE_PULL_TIMEOUT:-1800}
SOURCE=${PROVISION_IMAGE_SOURCE:-auto}

# The refs containerd holds complete (first column of `images check`).
complete_images() {
	ctr -n k8s.io images check 2>/dev/null | awk 'NR > 1 && $4 == "complete" { print $1 }'
}

# Those of the words of $1 not in the lines of $2.
missing_of() {
	for ref in $1; do
		case "
$2
" in
		*"
$ref
"*) ;;
		*) echo "$ref" ;;
		esac
	done
}

registry_of() { # REF -> its registry host
	echo "${1%%/*}"
}

kubeadm_extra() { # kubeadm's own images that $PROVISION_IMAGES lacks (control plane, images-init)
	case " $PROVISION_ROLES " in *" control-plane "*) ;; *) return 0 ;; esac
	[ "${PROVISION_ROLE:-}" = images-init ] || return 0
	command -v kubeadm >/dev/null 2>&1 || return 0
	list=$(kubeadm config images list --kubernetes-version "v$PROVISION_K8S_VERSION" 2>/dev/null) || return 0
	for ref in $list; do
		case " $PROVISION_IMAGES " in *" $ref "*) ;; *) echo "$ref" ;; esac
	done
}

if ! ctr -n k8s.io version >/dev/null 2>&1; then
	echo "containerd does not answer on $PROVISION_NODE (ctr version failed)"
	pv_hint "containerd must run before images are pulled: provision up --phases prep; 'journalctl -u containerd' on $PROVISION_NODE"
	exit 2
fi

case ${1:-} in
check)
	have=$(complete_images)
	want="$PROVISION_IMAGES"
	[ "${PROVISION_ROLE:-}" != images-init ] || want="$want $(kubeadm_extra | tr '\n' ' ')"
	missing=$(missing_of "$want" "$have")
	n=0
	for ref in $want; do n=$((n + 1)); done
	if [ -z "$missing" ]; then
		echo "$n image(s) in containerd (k8s.io), complete"
		exit 0
	fi
	m=0
	for ref in $missing; do
		m=$((m + 1))
		echo "missing: $ref"
	done
	echo "$m of $n image(s) missing on $PROVISION_NODE"
	exit 1
	;;
apply) ;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac

have=$(complete_images)
extra=$(kubeadm_extra)
for ref in $extra; do
	echo "kubeadm $PROVISION_K8S_VERSION lists $ref, which roles/kubernetes.yaml does not: pulling it too (update the row of this minor)"
done
queue=$(missing_of "$PROVISION_IMAGES $extra" "$have")
[ -n "$queue" ] || exit 0

if [ "$SOURCE" = bundle ]; then
	for ref in $queue; do
		echo "not in the bundle: $ref"
	done
	echo "$(echo "$queue" | wc -w) image(s) are neither on $PROVISION_NODE nor in this machine's image bundle, and cluster.images.source is bundle (no registry)"
	pv_hint "run 'provision fetch -i INVENTORY --images' on a machine that reaches the registries, then provision up again; or set cluster.images.source to auto"
	exit 1
fi

# ctr pulls in its own process: containerd's proxy (roles/containerd's
# drop-in) and the registries' hosts.toml (lib.sh pv_registry_env).
pv_registry_env
hosts=
[ ! -d "$PV_HOSTS_DIR" ] || hosts="--hosts-dir $PV_HOSTS_DIR"
root=$(containerd config dump 2>/dev/null | sed -n 's/^root = "\(.*\)"$/\1/p' | head -n 1)
content=${root:-/var/lib/containerd}/io.containerd.content.v1.content

work=$(mktemp -d)
cleanup() {
	for p in "$work"/*.pid; do
		[ -f "$p" ] || continue
		kill "$(cat "$p")" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# start I REF: `ctr --debug content fetch REF` in the background.  ctr's
# content fetch resolves and fetches in its own process (1.6, 1.7 and 2.1
# alike) and, with --debug, logs each blob it fetches with its digest and
# size (msg=fetch digest=... size=N: the index, the manifest, the config,
# the layers), each host its resolver tries (msg=resolving host=...) and
# the one that resolved the image (msg=resolved ... host=...), in the same
# words on the three (it prints no progress table then).  $work/I.log
# keeps those lines, "A SECONDS" for a response's Retry-After, ctr's error
# lines (20 at most), then "::rc
# STATUS"; nothing else of the debug lines (they carry the registries'
# headers).  The shell reads them as they come (awk would wait for a
# pipe's block); $work/I.pid is ctr's pid.
start() {
	echo "$2" >"$work/$1.ref"
	date +%s >"$work/$1.t0"
	rm -f "$work/$1.moved"
	(
		# shellcheck disable=SC2086 # $hosts: two words or none
		ctr --debug -n k8s.io content fetch $hosts "$2" 2>&1 &
		echo $! >"$work/$1.pid"
		rc=0
		wait $! || rc=$?
		echo "::rc $rc"
	) 2>/dev/null | {
		e=0
		while IFS= read -r l; do
			case $l in
			"::rc "* | *"level=debug msg=fetch digest="* | *"level=debug msg=resolving "* | *"level=debug msg=resolved "*)
				printf '%s\n' "$l" ;;
			*"response.header.retry-after="*)
				# a 429's Retry-After, when in seconds (ctr logs the response's headers)
				a=${l#*response.header.retry-after=}
				a=${a#\"}
				a=${a%%[!0-9]*}
				[ -z "$a" ] || printf 'A %s\n' "$a"
				;;
			*level=debug*) ;;
			"ctr: "* | *level=error* | *level=fatal* | *level=warning* | *level=info*)
				e=$((e + 1))
				[ "$e" -gt 20 ] || printf 'E %s\n' "$l"
				;;
			esac
		done
	} >"$work/$1.log" &
}

# parse I: $work/I.out from $work/I.log: once each, "D HEX SIZE KIND" per
# blob (KIND index, manifest or blob, from its media type), "T HOST" per
# host tried, "H HOST" for the host that resolved the image, the error
# lines ("E ...") and "::rc STATUS".
parse() {
	awk '
		/^::rc |^E |^A / { print; next }
		/level=debug msg=fetch digest=/ && match($0, /digest="?sha256:[0-9a-f]+/) {
			d = substr($0, RSTART, RLENGTH)
			sub(/.*sha256:/, "", d)
			z = ""
			if (match($0, / size=[0-9]+/)) z = substr($0, RSTART + 6, RLENGTH - 6)
			k = "blob"
			if ($0 ~ /mediatype=[^ ]*(index|manifest\.list)/) k = "index"
			else if ($0 ~ /mediatype=[^ ]*manifest/) k = "manifest"
			if (!(d in seen) && z != "") { seen[d] = 1; print "D " d " " z " " k }
			next
		}
		/level=debug msg=(resolving|resolved) / && match($0, / host=("[^"]*"|[^ ]+)/) {
			h = substr($0, RSTART + 6, RLENGTH - 6)
			gsub(/"/, "", h)
			if ($0 ~ /msg=resolved /) print "H " h
			else if (!(h in tried)) { tried[h] = 1; print "T " h }
		}
	' "$work/$1.log" >"$work/$1.out"
}

# The bytes of each image in flight: "I DONE TOTAL".  DONE: the bytes of
# its blobs in the content store, whole or being written (ingest/*/data).
# TOTAL: its index's and manifest's sizes and the sizes the manifest lists
# (config and layers), so known once the manifest is there; 0 before.
measure() {
	{
		for f in "$content"/ingest/*/ref; do
			[ -f "$f" ] || continue
			dir=${f%/ref}
			r='' t=0
			read -r r <"$f" || true
			[ ! -f "$dir/total" ] || read -r t <"$dir/total" || true
			echo "I ${r##*sha256:} ${t:-0} $dir/data"
		done
		for live in "$work"/*.live; do
			[ -f "$live" ] || continue
			i=${live##*/}
			i=${i%.live}
			awk -v i="$i" '$1 == "D" { print "W", i, $2, $3, $4 }' "$work/$i.out"
		done
	} >"$work/m.in"
	blobs=$(awk '$1 == "W" { print $3 }' "$work/m.in" | sort -u)
	datas=$(awk '$1 == "I" { print $4 }' "$work/m.in")
	{
		cat "$work/m.in"
		# what each manifest in the store lists: "M HEX BYTES"
		awk '$1 == "W" && $5 == "manifest" { print $3 }' "$work/m.in" | sort -u | while read -r m; do
			[ -f "$content/blobs/sha256/$m" ] || continue
			grep -o '"size": *[0-9]*' "$content/blobs/sha256/$m" |
				awk -v m="$m" '{ sub(/.*: */, ""); n += $0 } END { printf "M %s %.0f\n", m, n }'
		done
		# shellcheck disable=SC2086 # lists of paths without blanks
		[ -z "$blobs" ] || (cd "$content/blobs/sha256" 2>/dev/null && stat -c 'B %s %n' $blobs 2>/dev/null) || true
		# shellcheck disable=SC2086
		[ -z "$datas" ] || stat -c 'S %s %n' $datas 2>/dev/null || true
	} | awk '
		$1 == "I" { itotal[$2] = $3; ipath[$4] = $2; next }
		$1 == "S" { isize[ipath[$3]] = $2; next }
		$1 == "B" { blob[$3] = $2; next }
		$1 == "M" { inner[$2] = $3; next }
		$1 == "W" { want[$2] = want[$2] " " $3; size[$3] = $4; kind[$3] = $5; next }
		END {
			for (i in want) {
				n = split(want[i], d, " "); done = 0; total = 0; lists = 0; known = 1
				for (k = 1; k <= n; k++) {
					if (d[k] in blob) done += blob[d[k]]
					else if (d[k] in isize) done += isize[d[k]]
					if (kind[d[k]] == "blob") continue
					total += size[d[k]]
					if (kind[d[k]] != "manifest") continue
					lists++
					if (d[k] in inner) total += inner[d[k]]
					else known = 0
				}
				if (!lists || !known) total = 0
				else if (done > total) done = total
				printf "%s %.0f %.0f\n", i, done, total
			}
		}'
}

# bytes I: "DONE TOTAL" of image I from the last measure
bytes() {
	v=$(awk -v i="$1" '$1 == i { print $2, $3 }' "$work/m.out")
	echo "${v:-0 0}"
}

# Why a pull failed, from ctr's error lines in $1: "CAUSE|FIX" for an
# error that stays, "" for one worth trying again.
classify() {
	# containerd 1.6/1.7 refuse a hosts.toml they cannot read and go to the
	# registry's upstream instead: that is the cause, whatever came after
	bad=$(sed -n 's/^E .*msg="failed to decode hosts.toml" error="\([^"]*\)".*/\1/p' "$1" | head -n 1)
	if [ -n "$bad" ]; then
		echo "containerd cannot read $PV_HOSTS_DIR/$(registry_of "$ref")/hosts.toml ($bad), so it went to the registry itself|check that file (roles/containerd writes it from cluster.registries: provision up --phases prep puts it back)"
		return 0
	fi
	msg=$(sed -n 's/^E ctr: //p' "$1" | tail -n 1)
	[ -n "$msg" ] || msg=$(sed -n 's/^E //p' "$1" | tail -n 1)
	case $msg in
	*": not found"* | *"manifest unknown"* | *"name unknown"* | *NOT_FOUND*)
		echo "not found: the registry has no such image or tag|check the image and its tag (the inventory's versions, roles/kubernetes.yaml, the charts' values), or use a mirror that holds it (cluster.registries), or bring it with 'provision fetch --images'" ;;
	*"429 Too Many Requests"* | *toomanyrequests*)
		echo "rate limited (HTTP 429 Too Many Requests)|the registry limits pulls from this address (Docker Hub: 100 per 6 h anonymous): give credentials for it (cluster.registries.HOST.username/password_file), use a mirror (cluster.registries), or bring the images with 'provision fetch --images'" ;;
	*"401 Unauthorized"* | *"no basic auth credentials"* | *"authorization failed"* | *"pull access denied"* | *unauthorized*)
		echo "unauthorized (HTTP 401): the registry wants credentials, or refused the ones given|give or fix the credentials for this registry (cluster.registries.HOST.username/password_file), use a mirror, or 'provision fetch --images'" ;;
	*"403 Forbidden"* | *denied*)
		echo "forbidden (HTTP 403): the registry refuses this client|check the credentials and the registry's access rules, use a mirror, or 'provision fetch --images'" ;;
	*x509:* | *"tls: "* | *certificate*)
		echo "TLS: $(echo "$msg" | sed 's/.*\(x509: [^"]*\).*/\1/' | cut -c1-160)|give the registry's or mirror's CA (cluster.registries.HOST.mirrors[].ca_file; a proxy that intercepts TLS needs its CA too), or use 'provision fetch --images'" ;;
	*proxyconnect*)
		echo "the proxy refused or is not reachable ($(echo "$msg" | sed 's/.*\(proxyconnect [^"]*\).*/\1/' | cut -c1-160))|check cluster.http_proxy (containerd's proxy: its unit's Environment), or use a mirror or 'provision fetch --images'" ;;
	*"no such host"* | *"server misbehaving"* | *"lookup "*)
		echo "DNS: the registry's name does not resolve on $PROVISION_NODE|check the node's DNS (/etc/resolv.conf); a lab that reaches the internet only through a proxy needs cluster.http_proxy; or use a mirror (cluster.registries) or 'provision fetch --images'" ;;
	*"connection refused"*)
		echo "connection refused (the registry, or a firewall)|the node cannot reach the registry: cluster.http_proxy, a mirror (cluster.registries), or 'provision fetch --images'" ;;
	*"network is unreachable"* | *"no route to host"* | *"i/o timeout"* | *"deadline exceeded"*)
		echo "not reachable from $PROVISION_NODE ($(echo "$msg" | tail -c 120))|cluster.http_proxy (a lab behind a proxy), a mirror (cluster.registries), or 'provision fetch --images'" ;;
	*) ;;
	esac
}

# 429: when the registry says when to come back: its Retry-After as ctr
# logged it, else asked again with curl (the URL in ctr's message).
retry_after() {
	a=$(sed -n 's/^A //p' "$1" | tail -n 1)
	if [ -n "$a" ]; then
		echo "$a"
		return 0
	fi
	command -v curl >/dev/null 2>&1 || return 0
	url=$(sed -n 's/^E .*\(https\{0,1\}:\/\/[^ "\\]*\).*/\1/p' "$1" | tail -n 1)
	url=${url%:}
	[ -n "$url" ] || return 0
	curl -sS -o /dev/null -D - -I --max-time 10 "$url" 2>/dev/null |
		sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9][0-9]*\).*/\1/p' | head -n 1
}

fail() { # REF CAUSE FIX [OUT]: OUT, ctr's lines, for the hosts it tried
	reg=$(registry_of "$1")
	tried=$([ -z "${4:-}" ] || sed -n 's/^T //p' "$4" | paste -sd , - | sed 's/,/, /g')
	[ -z "$tried" ] || [ "$tried" = "$reg" ] || reg="$reg (tried $tried)"
	echo "cannot pull $1 from $reg on $PROVISION_NODE: $2"
	pv_hint "$PROVISION_NODE cannot pull $1 from $reg: $3"
	exit 1
}

progress() { # REF DONE TOTAL: a ::progress line, for the images provision asked for
	case " $PROVISION_IMAGES " in
	*" $1 "*) echo "::progress image=$1 done=$2 total=$3" ;;
	esac
}

for ref in $queue; do
	echo "$ref" >>"$work/queue"
done
count=$(wc -l <"$work/queue")
echo "pulling $count image(s) on $PROVISION_NODE, at most $PULLS at once"
next=1 running=0 pulled=0
while :; do
	while [ "$running" -lt "$PULLS" ] && [ "$next" -le "$count" ]; do
		ref=$(sed -n "${next}p" "$work/queue")
		touch "$work/$next.live"
		echo 0 >"$work/$next.tries"
		start "$next" "$ref"
		running=$((running + 1))
		next=$((next + 1))
	done
	[ "$running" -gt 0 ] || break
	sleep 1
	now=$(date +%s)
	for live in "$work"/*.live; do
		[ ! -f "$live" ] || { i=${live##*/}; parse "${i%.live}"; }
	done
	measure >"$work/m.out" || true
	for live in "$work"/*.live; do
		[ -f "$live" ] || continue
		i=${live##*/}
		i=${i%.live}
		ref=$(cat "$work/$i.ref")
		b=$(bytes "$i")
		d=${b% *} t=${b#* }
		rc=$(sed -n 's/^::rc //p' "$work/$i.out" | tail -n 1)
		if [ -z "$rc" ]; then
			progress "$ref" "$d" "$t"
			moved=$(cat "$work/$i.moved" 2>/dev/null || echo "x $now")
			if [ "$d" != "${moved% *}" ]; then
				echo "$d $now" >"$work/$i.moved"
			elif [ $((now - ${moved#* })) -ge "$STALL" ]; then
				fail "$ref" "stalled: no byte for $STALL s (at $d of $t bytes)" "a slow or stuck registry, mirror or proxy: check cluster.http_proxy and cluster.registries, or bring the images with 'provision fetch --images' (then nothing is pulled)" "$work/$i.out"
			fi
			if [ $((now - $(cat "$work/$i.t0"))) -ge "$TIMEOUT" ]; then
				fail "$ref" "not done after $TIMEOUT s ($d of $t bytes; cluster.images.pull_timeout)" "raise cluster.images.pull_timeout for a slow link, or bring the images with 'provision fetch --images'" "$work/$i.out"
			fi
			continue
		fi
		if [ "$rc" = 0 ]; then
			b=$(measure | awk -v i="$i" '$1 == i { print $2, $3 }')
			d=${b% *} t=${b#* }
			[ "${t:-0}" != 0 ] || t=$d
			progress "$ref" "${t:-0}" "${t:-0}"
			from=$(sed -n 's/^H //p' "$work/$i.out" | tail -n 1)
			echo "pulled $ref${from:+ from $from} (${t:-0} bytes)"
			rm -f "$work/$i.live" "$work/$i.pid"
			running=$((running - 1))
			pulled=$((pulled + 1))
			continue
		fi
		why=$(classify "$work/$i.out")
		tries=$(cat "$work/$i.tries")
		if [ -z "$why" ] && [ "$tries" -lt 2 ]; then
			sed -n 's/^E //p' "$work/$i.out" | tail -n 1
			echo "pulling $ref again (containerd keeps the blobs it has)"
			echo $((tries + 1)) >"$work/$i.tries"
			start "$i" "$ref"
			continue
		fi
		sed -n 's/^E //p' "$work/$i.out" | tail -n 3
		[ -n "$why" ] || why="$(sed -n 's/^E ctr: //p' "$work/$i.out" | tail -n 1 | cut -c1-200)|'ctr -n k8s.io content fetch $ref' on $PROVISION_NODE shows ctr's error again"
		cause=${why%%|*}
		case $cause in
		"rate limited"*)
			after=$(retry_after "$work/$i.out")
			[ -z "$after" ] || cause="$cause, retry after $after s"
			;;
		esac
		fail "$ref" "$cause" "${why#*|}" "$work/$i.out"
	done
done
echo "$pulled image(s) pulled on $PROVISION_NODE"
