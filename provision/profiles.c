/* profiles: see profiles.h for the rules. */
#include "profiles.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "util.h"

#define CPU_ONLY_CPU_MILLI 1000
#define CPU_ONLY_MEM_MIB 2048

void profiles_allocatable(unsigned cpus, uint64_t mem_kib, unsigned *cpu_milli, uint64_t *mem_mib)
{
	uint64_t cpu = (uint64_t)cpus * 1000, mem = mem_kib / 1024;
	uint64_t cpu_cut = PROFILES_RESERVED_CPU_MILLI + PROFILES_ADDONS_CPU_MILLI;
	uint64_t mem_cut = PROFILES_RESERVED_MEM_MIB + PROFILES_ADDONS_MEM_MIB;

	*cpu_milli = cpu > cpu_cut ? (unsigned)(cpu - cpu_cut) : 0;
	*mem_mib = mem > mem_cut ? mem - mem_cut : 0;
}

char *profiles_gpu_label(const char *model)
{
	char *l = xstrdup(model), *p;

	for (p = l; *p; p++)
		if (*p == ' ')
			*p = '-';
	return l;
}

static char *slugify(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	bool dash = false;

	for (; *s; s++) {
		if (isalnum((unsigned char)*s)) {
			if (dash && sb.len)
				strbuf_addch(&sb, '-');
			strbuf_addch(&sb, (char)tolower((unsigned char)*s));
			dash = false;
		} else {
			dash = true;
		}
	}
	return strbuf_detach(&sb, NULL);
}

static unsigned round_cpu(uint64_t milli)
{
	return (unsigned)(milli / 100 * 100);
}

static uint64_t round_mem(uint64_t mib)
{
	return mib / 256 * 256;
}

static void fmt_cpu(char *buf, size_t size, unsigned milli)
{
	if (milli % 1000)
		snprintf(buf, size, "%.1f CPU", milli / 1000.0);
	else
		snprintf(buf, size, "%u CPU", milli / 1000);
}

static void fmt_mem(char *buf, size_t size, uint64_t mib)
{
	if (mib % 1024)
		snprintf(buf, size, "%.2f GiB", (double)mib / 1024.0);
	else
		snprintf(buf, size, "%llu GiB", (unsigned long long)(mib / 1024));
}

static bool homogeneous(const struct profile_node *n)
{
	size_t i;

	for (i = 1; i < n->nr_gpus; i++)
		if (strcmp(n->gpus[i].model, n->gpus[0].model))
			return false;
	return n->nr_gpus > 0;
}

/* Notebooks per GPU of a node: 1 when its GPUs are not shared. */
static unsigned share_of(const struct profile_node *n)
{
	return n->sharing >= 2 && n->sharing <= PROFILES_MAX_SHARING ? n->sharing : 1;
}

static struct hub_profile *add(struct hub_profile **out, size_t *nr, size_t *alloc)
{
	struct hub_profile *p;

	ALLOC_GROW(*out, *nr + 1, *alloc);
	p = &(*out)[(*nr)++];
	memset(p, 0, sizeof(*p));
	return p;
}

static void add_node(struct hub_profile *p, const char *name)
{
	p->nodes = xrealloc(p->nodes, (p->nr_nodes + 2) * sizeof(*p->nodes));
	p->nodes[p->nr_nodes++] = xstrdup(name);
	p->nodes[p->nr_nodes] = NULL;
}

/*
 * Fill guarantees and limits from what one notebook may guarantee on the
 * smallest candidate node (`g_*`) and the most it may ever use there
 * (`max_*`): limits are 1.5x the guarantees, never above max.
 */
static void size_profile(struct hub_profile *p, uint64_t g_cpu, uint64_t g_mem, uint64_t max_cpu,
			 uint64_t max_mem)
{
	uint64_t lc, lm;

	p->cpu_guarantee_milli = round_cpu(g_cpu);
	p->mem_guarantee_mib = round_mem(g_mem);
	lc = (uint64_t)p->cpu_guarantee_milli * 3 / 2;
	lm = p->mem_guarantee_mib * 3 / 2;
	p->cpu_limit_milli = round_cpu(lc < max_cpu ? lc : max_cpu);
	p->mem_limit_mib = round_mem(lm < max_mem ? lm : max_mem);
	if (p->cpu_limit_milli < p->cpu_guarantee_milli)
		p->cpu_limit_milli = p->cpu_guarantee_milli;
	if (p->mem_limit_mib < p->mem_guarantee_mib)
		p->mem_limit_mib = p->mem_guarantee_mib;
}

static void describe(struct hub_profile *p, const char *smallest, uint64_t cpu, uint64_t mem,
		     size_t gpus_there, unsigned k, unsigned share)
{
	char gc[32], gm[32], lc[32], lm[32], nc[32], nm[32];
	struct strbuf d = STRBUF_INIT, r = STRBUF_INIT;
	size_t i;

	fmt_cpu(gc, sizeof(gc), p->cpu_guarantee_milli);
	fmt_mem(gm, sizeof(gm), p->mem_guarantee_mib);
	fmt_cpu(lc, sizeof(lc), p->cpu_limit_milli);
	fmt_mem(lm, sizeof(lm), p->mem_limit_mib);
	fmt_cpu(nc, sizeof(nc), (unsigned)cpu);
	fmt_mem(nm, sizeof(nm), mem);
	strbuf_addf(&d, "%s and %s guaranteed, up to %s and %s; runs on ", gc, gm, lc, lm);
	for (i = 0; i < p->nr_nodes; i++)
		strbuf_addf(&d, "%s%s", i ? ", " : "", p->nodes[i]);
	p->description = strbuf_detach(&d, NULL);
	if (gpus_there && share > 1)
		strbuf_addf(&r,
			    "smallest node %s: %s and %s allocatable, %zu GPU%s each shared by up to "
			    "%u notebooks; one of its %zu notebook shares is at most %s and %s (the "
			    "limits, 1.5x the guarantees), so all its GPU notebooks together fit the node",
			    smallest, nc, nm, gpus_there, gpus_there == 1 ? "" : "s", share,
			    gpus_there * share, lc, lm);
	else if (gpus_there)
		strbuf_addf(&r,
			    "smallest node %s: %s and %s allocatable, %zu GPU%s; %u of its %zu "
			    "GPU share%s is at most %s and %s (the limits, 1.5x the guarantees), so "
			    "all its GPU notebooks together fit the node",
			    smallest, nc, nm, gpus_there, gpus_there == 1 ? "" : "s", k, gpus_there,
			    gpus_there == 1 ? "" : "s", lc, lm);
	else
		strbuf_addf(&r,
			    "smallest node %s: %s and %s allocatable; a CPU notebook guarantees at "
			    "most 1 CPU and 2 GiB; limits 1.5x, at most the node",
			    smallest, nc, nm);
	p->reasoning = strbuf_detach(&r, NULL);
}

/*
 * What one share of a time-sliced GPU gives, in the words a student reads
 * before choosing it: the seed lab's measurement (REFERENCE.md §1: each of
 * several containers on one GPU slows roughly in proportion to how many
 * share it) and the memory that nothing divides.
 */
static void describe_shared(struct hub_profile *p, const char *models, unsigned share,
			    unsigned gpu_mib)
{
	struct strbuf d = STRBUF_INIT;

	strbuf_addf(&d,
		    "%s shared by up to %u — expect about 1/%u of the GPU when all are busy; "
		    "GPU memory is not isolated: ",
		    models, share, share);
	if (gpu_mib && gpu_mib != UINT32_MAX)
		strbuf_addf(&d, "the %u GiB are for all of them", (gpu_mib + 512) / 1024);
	else
		strbuf_addstr(&d, "its memory is for all of them");
	strbuf_addf(&d, ", and one notebook can take it from the others. %s", p->description);
	free(p->description);
	p->description = strbuf_detach(&d, NULL);
}

static int cmp_profile(const void *a, const void *b)
{
	const struct hub_profile *x = a, *y = b;

	if (!x->gpus != !y->gpus)
		return x->gpus ? 1 : -1;
	return strcmp(x->slug, y->slug);
}

void profiles_generate(struct hub_profile **out, size_t *nr, const struct profile_node *nodes,
		       size_t nr_nodes)
{
	size_t alloc = 0, i, j;
	bool *done = xcalloc(nr_nodes ? nr_nodes : 1, sizeof(*done));
	struct hub_profile *p;

	*out = NULL;
	*nr = 0;

	/* CPU only: any schedulable node. */
	{
		uint64_t min_cpu = UINT64_MAX, min_mem = UINT64_MAX;
		const struct profile_node *smallest = NULL;
		p = NULL;
		for (i = 0; i < nr_nodes; i++) {
			if (!nodes[i].schedulable)
				continue;
			if (!p) {
				p = add(out, nr, &alloc);
				p->slug = xstrdup("cpu");
				p->display_name = xstrdup("CPU only");
				p->visible_devices = PROFILES_NO_GPU_DEVICES;
			}
			add_node(p, nodes[i].name);
			if (!smallest || nodes[i].cpu_milli < smallest->cpu_milli ||
			    (nodes[i].cpu_milli == smallest->cpu_milli &&
			     nodes[i].mem_mib < smallest->mem_mib))
				smallest = &nodes[i];
			if (nodes[i].cpu_milli < min_cpu)
				min_cpu = nodes[i].cpu_milli;
			if (nodes[i].mem_mib < min_mem)
				min_mem = nodes[i].mem_mib;
		}
		if (p) {
			size_profile(p, min_cpu < CPU_ONLY_CPU_MILLI ? min_cpu : CPU_ONLY_CPU_MILLI,
				     min_mem < CPU_ONLY_MEM_MIB ? min_mem : CPU_ONLY_MEM_MIB, min_cpu,
				     min_mem);
			describe(p, smallest->name, smallest->cpu_milli, smallest->mem_mib, 0, 0, 1);
		}
	}

	/* GPU groups. */
	for (i = 0; i < nr_nodes; i++) {
		const struct profile_node *n = &nodes[i];
		size_t max_count = 0, k;
		unsigned share;
		bool homo;

		if (done[i] || !n->schedulable || !n->nr_gpus)
			continue;
		homo = homogeneous(n);
		share = share_of(n);
		done[i] = true;
		/* The group: this node and (for one model) every other node of that model. */
		for (j = i; j < nr_nodes; j++) {
			if (j != i && (!homo || done[j] || !nodes[j].schedulable ||
				       !homogeneous(&nodes[j]) || share_of(&nodes[j]) != share ||
				       strcmp(nodes[j].gpus[0].model, n->gpus[0].model)))
				continue;
			done[j] = true;
			if (nodes[j].nr_gpus > max_count)
				max_count = nodes[j].nr_gpus;
			if (!homo)
				break;
		}
		/* A time-sliced GPU is offered one share at a time: more replicas of one GPU give no more of it. */
		if (share > 1 && max_count > 1)
			max_count = 1;
		for (k = 1; k <= max_count; k++) {
			uint64_t share_cpu = UINT64_MAX, share_mem = UINT64_MAX;
			unsigned gpu_mib = UINT32_MAX;
			const char *smallest = NULL;
			uint64_t smallest_cpu = 0, smallest_mem = 0;
			size_t smallest_gpus = 0, g;
			struct strbuf name = STRBUF_INIT, models = STRBUF_INIT;

			p = add(out, nr, &alloc);
			p->gpus = (unsigned)k;
			p->runtime_class = xstrdup(PROFILES_GPU_RUNTIME_CLASS);
			for (j = i; j < nr_nodes; j++) {
				const struct profile_node *m = &nodes[j];
				uint64_t sc, sm;
				if (j != i && (!homo || !m->schedulable || !homogeneous(m) ||
					       share_of(m) != share ||
					       strcmp(m->gpus[0].model, n->gpus[0].model)))
					continue;
				if (m->nr_gpus < k)
					continue;
				add_node(p, m->name);
				/* shared: every one of GPUs x N notebooks gets its part of the node */
				sc = (uint64_t)m->cpu_milli / (m->nr_gpus * share) * k;
				sm = m->mem_mib / (m->nr_gpus * share) * k;
				if (sc < share_cpu || (sc == share_cpu && sm < share_mem)) {
					smallest = m->name;
					smallest_gpus = m->nr_gpus;
					smallest_cpu = m->cpu_milli;
					smallest_mem = m->mem_mib;
				}
				if (sc < share_cpu)
					share_cpu = sc;
				if (sm < share_mem)
					share_mem = sm;
				for (g = 0; g < m->nr_gpus; g++)
					if (m->gpus[g].memory_mib < gpu_mib)
						gpu_mib = m->gpus[g].memory_mib;
				if (!homo)
					break;
			}
			if (homo) {
				strbuf_addstr(&models, gpu_short_model(n->gpus[0].model));
				p->selector_key = xstrdup("nvidia.com/gpu.product");
				p->selector_value = profiles_gpu_label(n->gpus[0].model);
				if (share > 1) {
					/* GPU feature discovery's product of a time-sliced GPU */
					char *l = p->selector_value;
					p->selector_value = xasprintf("%s-SHARED", l);
					free(l);
				}
			} else {
				for (g = 0; g < n->nr_gpus; g++) {
					const char *sm = gpu_short_model(n->gpus[g].model);
					if (strstr(models.buf, sm))
						continue;
					strbuf_addf(&models, "%s%s", models.len ? " or " : "", sm);
				}
				p->selector_key = xstrdup("kubernetes.io/hostname");
				p->selector_value = xstrdup(n->name);
			}
			if (share > 1) {
				strbuf_addf(&name, "%s shared by up to %u", models.buf, share);
				if (gpu_mib && gpu_mib != UINT32_MAX)
					strbuf_addf(&name, " (%u GiB, not isolated)", (gpu_mib + 512) / 1024);
				else
					strbuf_addstr(&name, " (memory not isolated)");
			} else {
				strbuf_addf(&name, "%zu× %s", k, models.buf);
				/* Memory unknown (no GFD label, no annotation): say nothing rather than 0. */
				if (gpu_mib && gpu_mib != UINT32_MAX)
					strbuf_addf(&name, " (%u GiB)", (gpu_mib + 512) / 1024);
			}
			if (!homo)
				strbuf_addf(&name, " on %s", n->name);
			p->display_name = strbuf_detach(&name, NULL);
			{
				char *base = slugify(homo ? models.buf : n->name);
				if (share > 1)
					p->slug = xasprintf("gpu-%s-shared-by-%u", base, share);
				else
					p->slug = xasprintf("gpu-%s-x%zu", base, k);
				free(base);
			}
			/*
			 * Guarantee 2/3 of the GPUs' share, so that the limit (1.5x)
			 * is exactly the share: the GPU notebooks of a node together
			 * can never use more than the node, and a third of it stays
			 * free for CPU notebooks.
			 */
			size_profile(p, share_cpu * 2 / 3, share_mem * 2 / 3, share_cpu, share_mem);
			describe(p, smallest, smallest_cpu, smallest_mem, smallest_gpus, (unsigned)k, share);
			if (share > 1)
				describe_shared(p, models.buf, share, gpu_mib);
			strbuf_release(&models);
		}
	}
	free(done);
	if (*nr > 1)
		qsort(*out, *nr, sizeof(**out), cmp_profile);
}

void profiles_free(struct hub_profile *p, size_t nr)
{
	size_t i, k;

	for (i = 0; i < nr; i++) {
		free(p[i].slug);
		free(p[i].display_name);
		free(p[i].description);
		free(p[i].selector_key);
		free(p[i].selector_value);
		free(p[i].runtime_class);
		for (k = 0; k < p[i].nr_nodes; k++)
			free(p[i].nodes[k]);
		free(p[i].nodes);
		free(p[i].reasoning);
	}
	free(p);
}

int profiles_parse_cpu(const char *q, unsigned *milli)
{
	char *end;
	double v;

	if (!q || !*q)
		return -1;
	v = strtod(q, &end);
	if (end == q || !(v >= 0))
		return -1;
	if (!*end)
		v = v * 1000.0 + 0.5;
	else if (strcmp(end, "m"))
		return -1;
	/* in millicores, at most 1e9 (a million CPUs): it fits an unsigned */
	if (v > 1e9)
		return -1;
	*milli = (unsigned)v;
	return 0;
}

int profiles_parse_mem(const char *q, uint64_t *mib)
{
	static const struct {
		const char *suffix;
		double factor; /* to bytes */
	} units[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
		     {"Ti", 1099511627776.0}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
		     {"", 1.0}};
	char *end;
	double v;
	size_t i;

	if (!q || !*q)
		return -1;
	v = strtod(q, &end);
	if (end == q || !(v >= 0))
		return -1;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(end, units[i].suffix)) {
			/* at most 1e15 MiB (an exabyte, a thousand times over): it fits a uint64_t */
			double m = v * units[i].factor / 1048576.0;
			if (!(m <= 1e15))
				return -1;
			*mib = (uint64_t)m;
			return 0;
		}
	}
	return -1;
}

/* Storage for the model names the nodes point into: one block per node. */
struct names_block {
	char *names[PROFILES_MAX_GPUS + 1];
};

static const char *label(json_t *node, const char *where, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(node, "metadata"), where), key));
}

static bool node_schedulable(json_t *node)
{
	json_t *spec = json_object_get(node, "spec"), *taints, *t, *conds, *c;
	size_t i;
	bool ready = false;

	if (json_is_true(json_object_get(spec, "unschedulable")))
		return false;
	taints = json_object_get(spec, "taints");
	json_array_foreach(taints, i, t)
	{
		const char *e = json_string_value(json_object_get(t, "effect"));
		if (e && (!strcmp(e, "NoSchedule") || !strcmp(e, "NoExecute")))
			return false;
	}
	conds = json_object_get(json_object_get(node, "status"), "conditions");
	json_array_foreach(conds, i, c)
	{
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));
		if (type && st && !strcmp(type, "Ready"))
			ready = !strcmp(st, "True");
	}
	return ready;
}

int profiles_nodes_from_json(struct profile_node **out, size_t *nr, const char *json, size_t len,
			     struct error *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, 0, &jerr), *items, *item;
	const char *kind;
	size_t i, n = 0;

	*out = NULL;
	*nr = 0;
	if (!root)
		return error_set(err, -1, "not JSON at line %d column %d: %s", jerr.line, jerr.column,
				 jerr.text);
	kind = json_string_value(json_object_get(root, "kind"));
	items = json_object_get(root, "items");
	if (!kind || (strcmp(kind, "List") && strcmp(kind, "NodeList")) || !json_is_array(items)) {
		/* The message first: kind lives inside root. */
		error_set(err, -1, "expected a NodeList with items, got '%s'", kind ? kind : "no kind");
		json_decref(root);
		return -1;
	}
	*out = xcalloc(json_array_size(items) ? json_array_size(items) : 1, sizeof(**out));
	json_array_foreach(items, i, item)
	{
		struct profile_node *p = &(*out)[n];
		json_t *alloc = json_object_get(json_object_get(item, "status"), "allocatable");
		const char *name = json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
		const char *ann = label(item, "annotations", "provision.dev/gpus");
		const char *gpu_alloc = json_string_value(json_object_get(alloc, "nvidia.com/gpu"));
		struct names_block *b = xcalloc(1, sizeof(*b));
		uint64_t mem = 0;
		unsigned cpu = 0;

		if (!name) {
			free(b);
			continue;
		}
		/* The node's name is block slot PROFILES_MAX_GPUS; models before it. */
		b->names[PROFILES_MAX_GPUS] = xstrdup(name);
		p->name = b->names[PROFILES_MAX_GPUS];
		(void)profiles_parse_cpu(json_string_value(json_object_get(alloc, "cpu")), &cpu);
		(void)profiles_parse_mem(json_string_value(json_object_get(alloc, "memory")), &mem);
		p->cpu_milli = cpu;
		p->mem_mib = mem;
		p->schedulable = node_schedulable(item);
		{
			/* time-slicing as GPU feature discovery labels it; bounded: what a node says is untrusted */
			const char *rep = label(item, "labels", "nvidia.com/gpu.replicas");
			const char *strat = label(item, "labels", "nvidia.com/gpu.sharing-strategy");
			char *rend = NULL;
			unsigned long r = rep ? strtoul(rep, &rend, 10) : 0;
			p->sharing = 1;
			if (rep && rend != rep && !*rend && strat && !strcmp(strat, "time-slicing") && r >= 2 &&
			    r <= PROFILES_MAX_SHARING)
				p->sharing = (unsigned)r;
		}
		if (ann && *ann) {
			char *copy = xstrdup(ann), *save = NULL, *tok;
			for (tok = strtok_r(copy, ",", &save); tok && p->nr_gpus < PROFILES_MAX_GPUS;
			     tok = strtok_r(NULL, ",", &save)) {
				char *colon = strrchr(tok, ':');
				if (colon)
					*colon = '\0';
				b->names[p->nr_gpus] = xstrdup(tok);
				p->gpus[p->nr_gpus].model = b->names[p->nr_gpus];
				p->gpus[p->nr_gpus].memory_mib =
					colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
				p->nr_gpus++;
			}
			free(copy);
		} else {
			const char *product = label(item, "labels", "nvidia.com/gpu.product");
			const char *count = label(item, "labels", "nvidia.com/gpu.count");
			const char *memory = label(item, "labels", "nvidia.com/gpu.memory");
			size_t c, k;
			if (!count && !gpu_alloc)
				count = label(item, "labels", "provision.dev/gpu-count");
			c = count ? strtoul(count, NULL, 10)
			    : gpu_alloc ? strtoul(gpu_alloc, NULL, 10) / p->sharing
					: 0;
			if (!product)
				product = label(item, "labels", "provision.dev/gpu-model");
			if (product && c) {
				/* Labels cannot hold blanks: GFD writes them as '-'. */
				char *model = xstrdup(product), *q;
				size_t ml = strlen(model);
				/* GFD's product of a time-sliced GPU ends in -SHARED */
				if (p->sharing > 1 && ml > 7 && !strcmp(model + ml - 7, "-SHARED"))
					model[ml - 7] = '\0';
				for (q = model; *q; q++)
					if (*q == '-')
						*q = ' ';
				b->names[0] = model;
				for (k = 0; k < c && k < PROFILES_MAX_GPUS; k++) {
					p->gpus[k].model = model;
					p->gpus[k].memory_mib =
						memory ? (unsigned)strtoul(memory, NULL, 10) : 0;
				}
				p->nr_gpus = k;
			}
		}
		/* GPUs the device plugin does not advertise (N times each, when shared) cannot be scheduled. */
		if (gpu_alloc && strtoul(gpu_alloc, NULL, 10) / p->sharing < p->nr_gpus)
			p->nr_gpus = strtoul(gpu_alloc, NULL, 10) / p->sharing;
		p->owned = b;
		n++;
	}
	json_decref(root);
	*nr = n;
	return 0;
}

void profiles_nodes_free(struct profile_node *nodes, size_t nr)
{
	size_t i, k;

	for (i = 0; nodes && i < nr; i++) {
		struct names_block *b = nodes[i].owned;
		for (k = 0; b && k <= PROFILES_MAX_GPUS; k++)
			free(b->names[k]);
		free(b);
	}
	free(nodes);
}

void profiles_reserve_addons(struct profile_node *nodes, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		nodes[i].cpu_milli = nodes[i].cpu_milli > PROFILES_ADDONS_CPU_MILLI
					     ? nodes[i].cpu_milli - PROFILES_ADDONS_CPU_MILLI
					     : 0;
		nodes[i].mem_mib = nodes[i].mem_mib > PROFILES_ADDONS_MEM_MIB
					   ? nodes[i].mem_mib - PROFILES_ADDONS_MEM_MIB
					   : 0;
	}
}
