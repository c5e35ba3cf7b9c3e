# jupyterhub 10-secrets: the hub's own secrets exist on the control plane,
# made here and nowhere else.  (The folder of the hub's database is on the
# hub's node: roles/hub-database.)
#
# /etc/provision/jupyterhub/secrets.yaml (root, 0600) holds the chart's
# hub.cookieSecret (signs the users' login cookies) and proxy.secretToken
# (the hub's token for the proxy's API), each 32 random bytes in hex (what
# `openssl rand -hex 32` gives, the chart's documented way to make them).
# The values are read from /dev/urandom and written straight to the file;
# they are never printed.  `check` hands them to provision with ::secret so
# that any output line that might ever carry them is redacted.  Made once:
# a new cookie secret would log every user out.
#
# With GitHub OAuth (jupyterhub.auth.type github), the app's client secret
# comes from this machine's jupyterhub.auth.github.client_secret_file,
# handed to this node alone (the secret hub_github_client_secret, read
# with pv_secret), and
# goes into the same file as hub.config.GitHubOAuthenticator.client_secret;
# a changed secret rewrites the file, keeping the other two.
#
# /etc/provision/jupyterhub is made with pv_mkdir: reset
# removes it once empty.
set -eu
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
DIR=/etc/provision/jupyterhub
SECRETS=$DIR/secrets.yaml

hex32() {
	od -An -tx1 -N32 /dev/urandom | tr -d ' \n'
}

GITHUB=$(pv_secret hub_github_client_secret)

value() { # KEY: the value of "  KEY: VALUE" in the secrets file
	sed -n "s/^  $1: \"\\([0-9a-f]\\{64\\}\\)\"\$/\\1/p" "$SECRETS"
}

github_value() {
	sed -n 's/^      client_secret: "\(.*\)"$/\1/p' "$SECRETS"
}

secrets_ok() {
	[ -f "$SECRETS" ] && [ "$(stat -c %a:%u "$SECRETS")" = 600:0 ] &&
		[ -n "$(value cookieSecret)" ] && [ -n "$(value secretToken)" ] &&
		[ "$(github_value)" = "$GITHUB" ]
}

case $GITHUB in
*[!A-Za-z0-9._-]*)
	echo "the GitHub client secret holds characters other than letters, digits, . _ -"
	pv_hint "check jupyterhub.auth.github.client_secret_file: it must hold the OAuth app's client secret only"
	exit 2
	;;
esac

case ${1:-} in
check)
	rc=0
	if secrets_ok; then
		pv_say_secret hub_cookie_secret "$(value cookieSecret)"
		pv_say_secret hub_proxy_token "$(value secretToken)"
		echo "hub secrets in $SECRETS"
	else
		echo "no hub secrets yet in $SECRETS"
		rc=1
	fi
	exit $rc
	;;
apply)
	pv_mkdir "$DIR"
	chmod 0700 "$DIR"
	if ! secrets_ok; then
		# Keep what can be kept: a secret already made stays (a new cookie
		# secret would log every user out).
		cookie=''
		token=''
		if [ -f "$SECRETS" ]; then
			cookie=$(value cookieSecret)
			token=$(value secretToken)
		fi
		umask 077
		{
			echo "# Made by provision (roles/jupyterhub 10-secrets) on $PROVISION_NODE; never printed."
			echo "hub:"
			printf '  cookieSecret: "%s"\n' "${cookie:-$(hex32)}"
			if [ -n "$GITHUB" ]; then
				echo "  config:"
				echo "    GitHubOAuthenticator:"
				printf '      client_secret: "%s"\n' "$GITHUB"
			fi
			echo "proxy:"
			printf '  secretToken: "%s"\n' "${token:-$(hex32)}"
		} | pv_write "$SECRETS" 0600
		echo "wrote the hub secrets in $SECRETS"
	fi
	;;
*)
	echo "usage: $0 check|apply" >&2
	exit 2
	;;
esac
