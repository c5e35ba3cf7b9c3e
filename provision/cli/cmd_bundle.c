/*
 * provision bundle: a support archive of the last run (or RUN), safe to
 * attach to a bug report: the inventory, the summary, every node's facts,
 * results and log, and the validation -- read from the state repository
 * (so nothing from private/ can be in it), each file scrubbed once more.
 * A plain POSIX tar (ustar) that every tar reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../record_files.h"
#include "../state.h"
#include "../util.h"
#include "cmd.h"
#include "run_record.h"

static struct {
	const char *inventory, *state, *out;
} args;

static const struct opt bundle_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file"),
    OPT_STRING(0, "state", &args.state, "DIR",
	       "the cluster's state folder (default: beside the inventory, NAME.state)"),
    OPT_STRING('o', "output", &args.out, "FILE",
	       "where to write the archive (default: CLUSTER-bundle-RUN.tar here)"),
    OPT_END,
};

static void octal(char *field, size_t size, unsigned long long v)
{
	snprintf(field, size, "%0*llo", (int)size - 1, v);
}

/* One ustar member; 0 or -1 when the name does not fit. */
static int tar_add(struct strbuf *tar, const char *name, const char *data, size_t len, time_t mtime)
{
	unsigned char h[512];
	unsigned sum = 0;
	size_t i, nl = strlen(name);

	memset(h, 0, sizeof(h));
	if (nl > 100) {
		const char *cut = name + nl - 100;
		const char *slash = strchr(cut, '/');
		if (!slash || (size_t)(slash - name) > 155)
			return -1;
		memcpy(h + 345, name, (size_t)(slash - name));
		memcpy(h, slash + 1, nl - (size_t)(slash + 1 - name));
	} else {
		memcpy(h, name, nl);
	}
	octal((char *)h + 100, 8, 0644);
	octal((char *)h + 108, 8, 0);
	octal((char *)h + 116, 8, 0);
	octal((char *)h + 124, 12, len);
	octal((char *)h + 136, 12, (unsigned long long)mtime);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memcpy(h + 265, "provision", 9);
	memcpy(h + 297, "provision", 9);
	for (i = 0; i < sizeof(h); i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	strbuf_add(tar, h, sizeof(h));
	strbuf_add(tar, data, len);
	if (len % 512) {
		static const char zeros[512];
		strbuf_add(tar, zeros, 512 - len % 512);
	}
	return 0;
}

static bool wanted(const char *path)
{
	struct record_path rp;

	record_path_parse(path, &rp);
	switch (rp.kind) {
	case RECORD_PATH_SUMMARY:
	case RECORD_PATH_INVENTORY:
	case RECORD_PATH_VALIDATION:
	case RECORD_PATH_LOG:
		return true;
	case RECORD_PATH_NODE:
		return rp.file == RECORD_FACTS || rp.file == RECORD_RESULTS ||
		       rp.file == RECORD_DEPLOYED;
	default:
		return false;
	}
}

static int bundle_exec(int nr_pos, char **pos)
{
	struct state *s = NULL;
	struct strbuf tar = STRBUF_INIT, file = STRBUF_INIT, list = STRBUF_INIT, sum = STRBUF_INIT,
		      clean = STRBUF_INIT;
	struct error err = {0};
	char id[41], **paths = NULL, *cluster = NULL, *out = NULL, *top = NULL;
	size_t nr = 0, i, scrubbed = 0;
	time_t now = time(NULL);
	int ret, fd = -1, e;

	ret = cli_state_open_ro("bundle", args.inventory, args.state, &s);
	if (ret)
		return ret;
	if (state_resolve(s, nr_pos ? pos[0] : "~0", id, &err) < 0 ||
	    state_list(s, id, "", &paths, &nr, &err) < 0) {
		fprintf(stderr, "provision bundle: %s\n", err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		ret = EXIT_USAGE;
		goto out;
	}
	state_read(s, id, RECORD_SUMMARY, &sum, NULL);
	cluster = state_summary_get(sum.buf, "cluster");
	top = xasprintf("%s-bundle-%.8s", cluster ? cluster : "cluster", id);
	out = args.out ? xstrdup(args.out) : xasprintf("%s.tar", top);
	for (i = 0; i < nr; i++) {
		char *name;
		if (!wanted(paths[i]))
			continue;
		strbuf_reset(&file);
		if (state_read(s, id, paths[i], &file, &err) < 0)
			continue;
		scrubbed += state_scrub(&file);
		/* read with cat by whoever gets the bundle: no escape sequences */
		text_clean(&clean, file.buf, file.len);
		name = xasprintf("%s/%s", top, paths[i]);
		if (tar_add(&tar, name, clean.buf, clean.len, now) == 0)
			strbuf_addf(&list, "  %s\n", paths[i]);
		free(name);
	}
	{
		struct strbuf readme = STRBUF_INIT;
		char *name = xasprintf("%s/README", top);
		strbuf_addf(
		    &readme,
		    "provision support bundle of run %s of cluster '%s'.\n\n"
		    "summary          the run: command, who, when, result\n"
		    "inventory.yaml   the inventory as given\n"
		    "validation       the checks: id, node, result, observed, expected\n"
		    "nodes/N/facts    what the node reported about itself\n"
		    "nodes/N/results  each step's result; files changed by hand show how they "
		    "looked\n"
		    "logs/N.log       each step's output and times\n\n"
		    "Secrets handed with ::secret and the sudo password were redacted before\n"
		    "anything was recorded; fetched files (admin.conf) are never recorded;\n"
		    "rendered files are left out of this bundle.\n",
		    id, cluster ? cluster : "?");
		tar_add(&tar, name, readme.buf, readme.len, now);
		free(name);
		strbuf_release(&readme);
	}
	{
		static const char end[1024];
		strbuf_add(&tar, end, sizeof(end));
	}
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	e = fd < 0 ? -errno : write_all(fd, tar.buf, tar.len);
	if (fd >= 0 && close(fd) < 0 && !e)
		e = -errno;
	if (e < 0) {
		fprintf(stderr, "provision bundle: cannot write '%s': %s\n", out, strerror(-e));
		ret = EXIT_LOCAL;
		goto out;
	}
	printf("wrote %s (run %.8s of '%s'):\n%s", out, id, cluster ? cluster : "?", list.buf);
	if (scrubbed)
		printf("(%zu value%s that looked like keys or tokens removed)\n", scrubbed,
		       scrubbed == 1 ? "" : "s");
	ret = EXIT_OK;
out:
	for (i = 0; i < nr; i++)
		free(paths[i]);
	free(paths);
	free(cluster);
	free(out);
	free(top);
	strbuf_release(&tar);
	strbuf_release(&file);
	strbuf_release(&clean);
	strbuf_release(&list);
	strbuf_release(&sum);
	state_free(s);
	return ret;
}

const struct cmd cmd_bundle = {
    .name = "bundle",
    .summary = "write a support archive of a run, safe to attach to a bug report",
    .usage = "-i FILE [--state DIR] [-o FILE] [RUN]",
    .description =
	"Write a tar archive of the last run (or RUN): the inventory, the run's summary,\n"
	"every node's facts, step results and log, and the validation.  Everything comes\n"
	"from the run history, where secrets were redacted before they were recorded;\n"
	"fetched files (admin.conf) are never in it, and each file is scrubbed once more\n"
	"for private keys and token or password values.",
    .options = bundle_options,
    .exec = bundle_exec,
    .min_pos = 0,
    .max_pos = 1,
};
