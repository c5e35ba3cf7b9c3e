/* record_files: see record_files.h. */
#include "record_files.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const node_files[] = {
    [RECORD_FACTS] = "facts",	  [RECORD_BENCH] = "bench", [RECORD_RESULTS] = "results",
    [RECORD_TIMINGS] = "timings", [RECORD_PULLS] = "pulls", [RECORD_DEPLOYED] = "deployed",
};

char *record_node_path(const char *node, enum record_node_file f)
{
	return xasprintf("nodes/%s/%s", node, node_files[f]);
}

char *record_file_path(const char *node, const char *dest)
{
	return xasprintf("nodes/%s/files%s", node, dest);
}

char *record_log_path(const char *node)
{
	return xasprintf(RECORD_LOGS "/%s.log", node);
}

char *record_log_node(const char *file_name)
{
	size_t len = strlen(file_name);

	if (len < 5 || strcmp(file_name + len - 4, ".log") || file_name[0] == '.')
		return NULL;
	return xstrndup(file_name, len - 4);
}

void record_path_parse(const char *path, struct record_path *out)
{
	static const char logs[] = RECORD_LOGS "/", nodes[] = "nodes/";
	const char *slash;
	size_t i;

	*out = (struct record_path){.kind = RECORD_PATH_OTHER};
	if (!strcmp(path, RECORD_SUMMARY)) {
		out->kind = RECORD_PATH_SUMMARY;
	} else if (!strcmp(path, RECORD_VALIDATION)) {
		out->kind = RECORD_PATH_VALIDATION;
	} else if (!strcmp(path, RECORD_INVENTORY)) {
		out->kind = RECORD_PATH_INVENTORY;
	} else if (!strncmp(path, logs, sizeof(logs) - 1)) {
		const char *name = path + sizeof(logs) - 1;
		size_t len = strlen(name);
		out->kind = RECORD_PATH_LOG;
		if (len > 4 && !strcmp(name + len - 4, ".log") && !strchr(name, '/')) {
			out->node = name;
			out->node_len = len - 4;
		}
	} else if (!strncmp(path, nodes, sizeof(nodes) - 1) &&
		   (slash = strchr(path + sizeof(nodes) - 1, '/'))) {
		const char *rest = slash + 1;
		out->node = path + sizeof(nodes) - 1;
		out->node_len = (size_t)(slash - out->node);
		out->kind = RECORD_PATH_NODE_OTHER;
		if (!strncmp(rest, "files/", 6)) {
			out->kind = RECORD_PATH_NODE_COPY;
			out->dest = rest + 5;
			return;
		}
		for (i = 0; i < sizeof(node_files) / sizeof(*node_files); i++)
			if (!strcmp(rest, node_files[i])) {
				out->kind = RECORD_PATH_NODE;
				out->file = (enum record_node_file)i;
			}
	}
}

bool record_path_same_node(const struct record_path *a, const struct record_path *b)
{
	return a->kind >= RECORD_PATH_NODE && b->kind >= RECORD_PATH_NODE &&
	       a->node_len == b->node_len && !memcmp(a->node, b->node, a->node_len);
}

int record_facts_parse(const char *text, size_t len, struct facts *out)
{
	struct error err = {0};

	if (facts_parse(out, text, len, &err) < 0)
		return -1;
	if (out->unsafe_field) {
		facts_release(out);
		return -1;
	}
	return 0;
}

int record_facts_read(const char *state_dir, const char *node, struct facts *out)
{
	struct strbuf text = STRBUF_INIT;
	char *rel = record_node_path(node, RECORD_FACTS);
	char *path = xasprintf("%s/%s", state_dir, rel);
	int rc = -1;

	text.max = FACTS_MAX + 1;
	if (read_file(path, &text) == 0)
		rc = record_facts_parse(text.buf, text.len, out);
	strbuf_release(&text);
	free(path);
	free(rel);
	return rc;
}

/* Split text's lines at tabs (runs of tabs are one): fn gets up to 5 fields of each. */
static void each_line(const char *text, void (*fn)(char **f, int nf, void *data), void *data)
{
	const char *l = text ? text : "";

	while (*l) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		char *line = xstrndup(l, ll), *f[5] = {NULL}, *save = NULL, *w;
		int nf = 0;

		for (w = strtok_r(line, "\t", &save); w && nf < 5; w = strtok_r(NULL, "\t", &save))
			f[nf++] = w;
		fn(f, nf, data);
		free(line);
		l += ll + (nl ? 1 : 0);
	}
}

struct timings_acc {
	struct record_timing *v;
	size_t nr, alloc;
};

static void timing_line(char **f, int nf, void *data)
{
	struct timings_acc *a = data;
	struct record_timing *t;

	if (nf < 4)
		return;
	ALLOC_GROW(a->v, a->nr + 1, a->alloc);
	t = &a->v[a->nr++];
	t->role = xstrdup(f[0]);
	t->step = xstrdup(f[1]);
	t->ms = strtoll(f[2], NULL, 10);
	t->result = xstrdup(f[3]);
	t->check_ms = nf == 5 ? strtoll(f[4], NULL, 10) : -1;
}

size_t record_timings_parse(const char *text, struct record_timing **out)
{
	struct timings_acc a = {0};

	each_line(text, timing_line, &a);
	*out = a.v;
	return a.nr;
}

void record_timings_free(struct record_timing *t, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		free(t[i].role);
		free(t[i].step);
		free(t[i].result);
	}
	free(t);
}

struct pulls_acc {
	struct record_pull *v;
	size_t nr, alloc;
};

static void pull_line(char **f, int nf, void *data)
{
	struct pulls_acc *a = data;
	struct record_pull *p;

	if (nf < 5)
		return;
	ALLOC_GROW(a->v, a->nr + 1, a->alloc);
	p = &a->v[a->nr++];
	p->role = xstrdup(f[0]);
	p->ref = xstrdup(f[1]);
	p->bytes = strtoull(f[2], NULL, 10);
	p->ms = strtoll(f[3], NULL, 10);
	p->done = !strcmp(f[4], "done");
}

size_t record_pulls_parse(const char *text, struct record_pull **out)
{
	struct pulls_acc a = {0};

	each_line(text, pull_line, &a);
	*out = a.v;
	return a.nr;
}

void record_pulls_free(struct record_pull *p, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		free(p[i].role);
		free(p[i].ref);
	}
	free(p);
}
