#!/bin/sh
# tests/bench/ansible-inventory.sh INVENTORY.yaml: the nodes and SSH settings
# of a provision inventory (as tests/testbed/testbed.sh writes it) as an
# Ansible INI inventory on stdout: the same hosts, user, key and known_hosts,
# strict host keys.  Only the keys the testbed's inventories use.
set -eu
[ $# = 1 ] || { echo "usage: $0 INVENTORY.yaml" >&2; exit 2; }
awk '
	function val(s) { sub(/^[^:]*:[ \t]*/, "", s); gsub(/^"|"$/, "", s); return s }
	/^ssh:/ { sect = "ssh"; next }
	/^nodes:/ { sect = "nodes"; next }
	/^[^ \t#]/ { sect = "" }
	sect == "ssh" && $1 == "user:" { user = val($0) }
	sect == "ssh" && $1 == "port:" { port = val($0) }
	sect == "ssh" && $1 == "identity:" { key = val($0) }
	sect == "ssh" && $1 == "known_hosts:" { known = val($0) }
	sect == "nodes" && $1 == "-" && $2 == "name:" { name[++n] = $3 }
	sect == "nodes" && $1 == "address:" { addr[n] = $2 }
	END {
		if (!n) { print "ansible-inventory.sh: no nodes" > "/dev/stderr"; exit 1 }
		print "[nodes]"
		for (i = 1; i <= n; i++) print name[i] " ansible_host=" addr[i]
		print ""
		print "[all:vars]"
		print "ansible_user=" (user ? user : "root")
		print "ansible_port=" (port ? port : 22)
		print "ansible_python_interpreter=/usr/bin/python3"
		if (key) print "ansible_ssh_private_key_file=" key
		print "ansible_ssh_common_args=-o IdentitiesOnly=yes -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null" \
			(known ? " -o UserKnownHostsFile=" known : "")
	}' "$1"
