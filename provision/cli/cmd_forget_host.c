/*
 * provision forget-host: a node was rebuilt and offers a new host key; show
 * the key known_hosts has for it and the one it offers now, and after
 * confirmation replace the old entry with the new one.  Never silently:
 * without a terminal --yes is required, and --fingerprint pins the key the
 * admin checked on the node's console.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../inventory.h"
#include "../runner.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "prompt.h"

static struct {
	const char *inventory, *fingerprint;
	bool yes;
} args;

static const struct opt forget_host_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
    OPT_STRING(0, "fingerprint", &args.fingerprint, "SHA256:...",
	       "replace only if the node now offers the key with this SHA256 fingerprint"),
    OPT_BOOL('y', "yes", &args.yes, "do not ask (required when not on a terminal)"),
    OPT_END,
};

/* Write `data` to `path` atomically (temporary file beside it, fsync, rename), mode kept. */
static int replace_file(const char *path, const char *data, size_t len, mode_t mode)
{
	char *tmp = xasprintf("%s.provision-XXXXXX", path);
	int fd = mkstemp(tmp), ok;

	if (fd < 0) {
		free(tmp);
		return -1;
	}
	ok = !write_all(fd, data, len) && !fchmod(fd, mode) && !fsync(fd);
	if (close(fd))
		ok = 0;
	if (ok && rename(tmp, path))
		ok = 0;
	if (!ok)
		unlink(tmp);
	free(tmp);
	return ok ? 0 : -1;
}

static int forget_host_exec(int nr_pos, char **pos)
{
	struct inventory *inv = NULL;
	const struct node *n;
	struct transport_host_key now = {0};
	struct strbuf file = STRBUF_INIT, kept = STRBUF_INIT, backup = STRBUF_INIT,
		      updated = STRBUF_INIT;
	struct error err = {0};
	struct stat st;
	char *path = NULL, *question = NULL;
	const char *p;
	unsigned lineno = 0, old = 0, same = 0;
	size_t at = 0;
	char *entry;
	int ret;

	(void)nr_pos;
	ret = cli_load_inventory("forget-host", args.inventory, &inv);
	if (ret)
		return ret;
	n = inventory_find(inv, pos[0]);
	if (!n) {
		fprintf(stderr, "provision forget-host: no node '%s' in '%s'\n", pos[0],
			args.inventory);
		ret = EXIT_USAGE;
		goto out;
	}
	path = n->ssh.known_hosts ? expand_home(n->ssh.known_hosts)
				  : expand_home("~/.ssh/known_hosts");
	if (read_file(path, &file) < 0 || stat(path, &st) < 0) {
		fprintf(stderr,
			"provision forget-host: cannot read '%s': %s; nothing was changed\n", path,
			strerror(errno));
		ret = EXIT_LOCAL;
		goto out;
	}
	if (runner_host_key(n, &now, &err) < 0) {
		fprintf(stderr, "provision forget-host: %s: %s; nothing was changed\n", n->name,
			err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		ret = EXIT_NODE_FAILED;
		goto out;
	}
	printf("%s (%s, port %d) in %s:\n", n->name, n->address, n->ssh.port > 0 ? n->ssh.port : 22,
	       path);
	/* Every entry for this host:port goes; every other line stays as it is. */
	for (p = file.buf; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, len), type[32], fp[128];
		lineno++;
		if (transport_known_hosts_match(n->address, n->ssh.port, line, type, sizeof(type),
						fp, sizeof(fp))) {
			printf("  known:   %s %s (line %u)\n", type, fp, lineno);
			/* The new entry takes the place of the first old one. */
			if (!old++)
				at = kept.len;
			same += !strcmp(fp, now.fingerprint);
		} else {
			strbuf_add(&kept, p, len);
			strbuf_addch(&kept, '\n');
		}
		free(line);
		p += len + (nl ? 1 : 0);
	}
	printf("  offered: %s %s\n", now.type, now.fingerprint);
	if (!old) {
		printf("%s has no entry for %s: nothing to forget; nothing was changed\n", path,
		       n->name);
		ret = EXIT_OK;
		goto out;
	}
	if (same == old) {
		printf(
		    "the known key is the one offered: nothing to forget; nothing was changed\n");
		ret = EXIT_OK;
		goto out;
	}
	if (args.fingerprint && strcmp(args.fingerprint, now.fingerprint)) {
		fprintf(stderr,
			"provision forget-host: %s offers %s, not the %s given with --fingerprint; "
			"nothing was changed\n"
			"  hint: someone may be intercepting the connection; compare with "
			"'ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub' on the node's console\n",
			n->name, now.fingerprint, args.fingerprint,
			strncmp(now.type, "ssh-", 4) ? "ecdsa" : now.type + 4);
		ret = EXIT_USAGE;
		goto out;
	}
	question = xasprintf("replace the %u known key%s of %s with %s %s?", old,
			     old == 1 ? "" : "s", n->name, now.type, now.fingerprint);
	ret = cli_confirm("forget-host", args.yes || args.fingerprint, question);
	if (ret)
		goto out;
	entry =
	    xasprintf("%s%s", now.known_hosts_line, strchr(now.known_hosts_line, '\n') ? "" : "\n");
	strbuf_add(&updated, kept.buf, at);
	strbuf_addstr(&updated, entry);
	strbuf_add(&updated, kept.buf + at, kept.len - at);
	free(entry);
	/* The old file stays beside it, as ssh-keygen -R leaves known_hosts.old. */
	strbuf_addf(&backup, "%s.old", path);
	if (replace_file(backup.buf, file.buf, file.len, st.st_mode & 07777) < 0 ||
	    replace_file(path, updated.buf, updated.len, st.st_mode & 07777) < 0) {
		fprintf(stderr, "provision forget-host: cannot write '%s': %s\n", path,
			strerror(errno));
		ret = EXIT_LOCAL;
		goto out;
	}
	printf("replaced: %u old entr%s of %s removed, %s %s recorded (the old file is %s)\n", old,
	       old == 1 ? "y" : "ies", n->name, now.type, now.fingerprint, backup.buf);
	ret = EXIT_OK;
out:
	free(now.known_hosts_line);
	free(question);
	free(path);
	strbuf_release(&file);
	strbuf_release(&kept);
	strbuf_release(&updated);
	strbuf_release(&backup);
	inventory_free(inv);
	return ret;
}

const struct cmd cmd_forget_host = {
    .name = "forget-host",
    .summary = "replace a rebuilt node's old host key in known_hosts, after confirmation",
    .usage = "-i FILE [--fingerprint SHA256:...] [--yes] NAME",
    .description = "For a node that was reinstalled and now offers a new SSH host key: show the\n"
		   "key(s) known_hosts has for it and the key it offers now, and after\n"
		   "confirmation remove the old entries and record the new key.  Nothing else in\n"
		   "known_hosts changes; the previous file is kept as known_hosts.old.  On a\n"
		   "terminal it asks; otherwise it needs --yes, or --fingerprint with the key\n"
		   "checked on the node's console (the safer way).",
    .options = forget_host_options,
    .exec = forget_host_exec,
    .min_pos = 1,
    .max_pos = 1,
};
