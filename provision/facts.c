/* facts: see facts.h. */
#include "facts.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void push_str(char ***arr, size_t *nr, const char *s)
{
	*arr = xrealloc(*arr, (*nr + 2) * sizeof(**arr));
	(*arr)[(*nr)++] = xstrdup(s);
	(*arr)[*nr] = NULL;
}

static void free_strs(char **arr, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(arr[i]);
	free(arr);
}

static void set(char **field, const char *v)
{
	free(*field);
	*field = xstrdup(v);
}

static uint64_t to_u64(const char *s)
{
	uint64_t v = 0;

	while (isspace((unsigned char)*s))
		s++;
	while (isdigit((unsigned char)*s)) {
		if (v > (UINT64_MAX - 9) / 10)
			return UINT64_MAX;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	return v;
}

/* Split s at spaces into at most n words (copies); returns the count. */
static size_t split_words(const char *s, char **w, size_t n)
{
	size_t k = 0;

	while (*s && k < n) {
		const char *start;
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		start = s;
		if (k == n - 1) {
			w[k++] = xstrdup(start); /* the rest, spaces and all */
			break;
		}
		while (*s && *s != ' ')
			s++;
		w[k++] = xstrndup(start, (size_t)(s - start));
	}
	return k;
}

static char *trim_dup(const char *s, size_t len)
{
	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	return xstrndup(s, len);
}

/* "NVIDIA GeForce RTX 3070, 8192 MiB, 535.104.05, GPU-..." */
static void parse_gpu(struct facts *f, const char *v)
{
	const char *field[4];
	size_t len[4], k = 0;
	const char *p = v;
	struct gpu *g;

	while (k < 4) {
		const char *comma = strchr(p, ',');
		field[k] = p;
		len[k] = comma ? (size_t)(comma - p) : strlen(p);
		k++;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (k < 2)
		return;
	f->gpus = xrealloc(f->gpus, (f->nr_gpus + 1) * sizeof(*f->gpus));
	g = &f->gpus[f->nr_gpus++];
	memset(g, 0, sizeof(*g));
	g->model = trim_dup(field[0], len[0]);
	{
		char *mem = trim_dup(field[1], len[1]);
		uint64_t m = to_u64(mem);
		if (strstr(mem, "GiB"))
			m *= 1024;
		g->memory_mib = m > UINT32_MAX ? 0 : (unsigned)m;
		free(mem);
	}
	if (k > 2)
		g->driver = trim_dup(field[2], len[2]);
	if (k > 3)
		g->uuid = trim_dup(field[3], len[3]);
}

/* uname -m of the node, in Debian's names; see facts.h. */
static void parse_arch(struct facts *f, const char *v)
{
	size_t n = strlen(v), i;
	bool word = n && n <= 32;

	free(f->arch_other);
	f->arch_other = NULL;
	if (!strcmp(v, "x86_64") || !strcmp(v, "amd64")) {
		set(&f->arch, "amd64");
		return;
	}
	if (!strcmp(v, "aarch64") || !strcmp(v, "arm64")) {
		set(&f->arch, "arm64");
		return;
	}
	free(f->arch);
	f->arch = NULL;
	for (i = 0; word && i < n; i++)
		word = isalnum((unsigned char)v[i]) || v[i] == '_';
	f->arch_other = xstrdup(word ? v : "(not a machine name)");
}

static void parse_line(struct facts *f, const char *key, const char *v, struct strbuf *smi_out)
{
	char *w[3] = {0};
	size_t n, i;

	if (!strcmp(key, "facts_version"))
		f->version = (int)to_u64(v);
	else if (!strcmp(key, "hostname"))
		set(&f->hostname, v);
	else if (!strcmp(key, "os_id"))
		set(&f->os_id, v);
	else if (!strcmp(key, "os_version"))
		set(&f->os_version, v);
	else if (!strcmp(key, "os_pretty"))
		set(&f->os_pretty, v);
	else if (!strcmp(key, "kernel"))
		set(&f->kernel, v);
	else if (!strcmp(key, "arch"))
		parse_arch(f, v);
	else if (!strcmp(key, "cpus"))
		f->cpus = (unsigned)to_u64(v);
	else if (!strcmp(key, "mem_kib"))
		f->mem_kib = to_u64(v);
	else if (!strcmp(key, "mem_available_kib"))
		f->mem_available_kib = to_u64(v);
	else if (!strcmp(key, "disk_free_kib"))
		f->disk_free_kib = to_u64(v);
	else if (!strcmp(key, "init"))
		f->systemd = !strcmp(v, "systemd");
	else if (!strcmp(key, "cgroup"))
		f->cgroup = (int)to_u64(v);
	else if (!strcmp(key, "swap")) {
		n = split_words(v, w, 3);
		if (n == 3) {
			struct swap_dev *s;
			f->swaps = xrealloc(f->swaps, (f->nr_swaps + 1) * sizeof(*f->swaps));
			s = &f->swaps[f->nr_swaps++];
			s->kind = !strcmp(w[0], "file")		? SWAP_FILE
				  : !strcmp(w[0], "partition") ? SWAP_PARTITION
				  : !strcmp(w[0], "zram")      ? SWAP_ZRAM
							       : SWAP_OTHER;
			s->size_kib = to_u64(w[1]);
			s->path = xstrdup(w[2]);
		}
	} else if (!strcmp(key, "fstab_swap"))
		push_str(&f->fstab_swap, &f->nr_fstab_swap, v);
	else if (!strcmp(key, "swap_unit"))
		push_str(&f->swap_units, &f->nr_swap_units, v);
	else if (!strcmp(key, "swap_target"))
		set(&f->swap_target, v);
	else if (!strcmp(key, "module"))
		push_str(&f->modules, &f->nr_modules, v);
	else if (!strcmp(key, "sysctl"))
		push_str(&f->sysctls, &f->nr_sysctls, v);
	else if (!strcmp(key, "containerd_version"))
		set(&f->containerd_version, v);
	else if (!strcmp(key, "containerd_active"))
		set(&f->containerd_active, v);
	else if (!strcmp(key, "containerd_config_sha256"))
		set(&f->containerd_config_sha256, v);
	else if (!strcmp(key, "containerd_systemd_cgroup"))
		f->containerd_systemd_cgroup = !strcmp(v, "true");
	else if (!strcmp(key, "package"))
		push_str(&f->packages, &f->nr_packages, v);
	else if (!strcmp(key, "held"))
		push_str(&f->held, &f->nr_held, v);
	else if (!strcmp(key, "nvidia_pci"))
		push_str(&f->nvidia_pci, &f->nr_nvidia_pci, v);
	else if (!strcmp(key, "nvidia_smi_rc")) {
		f->nvidia_smi = true;
		f->nvidia_smi_rc = (int)to_u64(v);
	} else if (!strcmp(key, "gpu")) {
		/* Kept raw until the exit status is known: on failure these are its message. */
		strbuf_addstr(smi_out, v);
		strbuf_addch(smi_out, '\n');
	} else if (!strcmp(key, "cuda_version"))
		set(&f->cuda_version, v);
	else if (!strcmp(key, "secure_boot"))
		set(&f->secure_boot, v);
	else if (!strcmp(key, "nameserver"))
		push_str(&f->nameservers, &f->nr_nameservers, v);
	else if (!strcmp(key, "resolved_nameserver"))
		push_str(&f->resolved_nameservers, &f->nr_resolved_nameservers, v);
	else if (!strcmp(key, "resolved"))
		set(&f->resolved, v);
	else if (!strcmp(key, "kubelet_conf"))
		f->kubelet_conf = !strcmp(v, "present");
	else if (!strcmp(key, "machine_id"))
		set(&f->machine_id, v);
	else if (!strcmp(key, "product_uuid"))
		set(&f->product_uuid, v);
	else if (!strcmp(key, "host_key"))
		push_str(&f->host_keys, &f->nr_host_keys, v);
	else if (!strcmp(key, "mac")) {
		n = split_words(v, w, 3);
		if (n >= 2) {
			struct mac_addr *m;
			f->macs = xrealloc(f->macs, (f->nr_macs + 1) * sizeof(*f->macs));
			m = &f->macs[f->nr_macs++];
			m->iface = xstrdup(w[0]);
			m->addr = xstrdup(w[1]);
			m->physical = n == 3 && !strcmp(w[2], "phys");
		}
	} else if (!strcmp(key, "default_iface"))
		set(&f->default_iface, v);
	else if (!strcmp(key, "route")) {
		n = split_words(v, w, 3);
		if (n >= 2) {
			struct route *r;
			f->routes = xrealloc(f->routes, (f->nr_routes + 1) * sizeof(*f->routes));
			r = &f->routes[f->nr_routes++];
			r->peer = xstrdup(w[0]);
			r->iface = xstrdup(w[1]);
			r->src = xstrdup(n == 3 ? w[2] : "");
		}
	} else if (!strcmp(key, "address"))
		push_str(&f->addresses, &f->nr_addresses, v);
	else if (!strcmp(key, "vip_held"))
		f->vip_held = !strcmp(v, "1");
	else if (!strcmp(key, "vip_route"))
		set(&f->vip_route, v);
	else if (!strcmp(key, "vip_answer"))
		set(&f->vip_answer, v);
	else if (!strcmp(key, "etcd_members"))
		set(&f->etcd_members, v);
	else if (!strcmp(key, "etcd_status"))
		set(&f->etcd_status, v);
	else if (!strcmp(key, "apiserver_readyz"))
		set(&f->apiserver_readyz, v);
	else if (!strcmp(key, "reach") && f->nr_reach < 64)
		push_str(&f->reach, &f->nr_reach, v);
	else if (!strcmp(key, "port_busy")) {
		if (f->nr_ports_busy < ARRAY_SIZE(f->ports_busy))
			f->ports_busy[f->nr_ports_busy++] = (int)to_u64(v);
	}
	for (i = 0; i < ARRAY_SIZE(w); i++)
		free(w[i]);
}

/* Keys whose values move by themselves from one minute to the next: not in f->text. */
static const char *const volatile_keys[] = {"mem_available_kib=", "disk_free_kib=",
					    "etcd_members=", "etcd_status=", "apiserver_readyz=", NULL};

static bool volatile_line(const char *line, size_t len)
{
	size_t i, n;

	for (i = 0; volatile_keys[i]; i++) {
		n = strlen(volatile_keys[i]);
		if (len >= n && !memcmp(line, volatile_keys[i], n))
			return true;
	}
	return false;
}

int facts_parse(struct facts *f, const char *text, size_t len, struct error *err)
{
	struct strbuf smi = STRBUF_INIT, key = STRBUF_INIT, val = STRBUF_INIT;
	struct strbuf kept = STRBUF_INIT;
	const char *p = text, *end = text + len;
	bool unsafe_line = false;

	memset(f, 0, sizeof(*f));
	if (len > FACTS_MAX)
		return error_set(err, -1, "the node's facts are longer than %u KiB: not facts output",
				 FACTS_MAX >> 10);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(eol - p));

		/* The record's form: every line (a line that is not data: none at all) */
		if (text_unsafe(p, (size_t)(eol - p))) {
			unsafe_line = true;
		} else if (!unsafe_line && !volatile_line(p, (size_t)(eol - p))) {
			strbuf_add(&kept, p, (size_t)(eol - p));
			strbuf_addch(&kept, '\n');
		}
		if (eq && eq > p) {
			strbuf_reset(&key);
			strbuf_reset(&val);
			strbuf_add(&key, p, (size_t)(eq - p));
			strbuf_add(&val, eq + 1, (size_t)(eol - eq - 1));
			/* A CRLF line end is a line end; any other CR is data (below). */
			if (val.len && val.buf[val.len - 1] == '\r')
				strbuf_setlen(&val, val.len - 1);
			/*
			 * What a node says goes into templates (YAML, comments
			 * included) and onto terminals: a value with a control
			 * character, CR, NEL, U+2028/U+2029 or bytes that are not
			 * UTF-8 (a NUL too) is not used, and the field is named for
			 * preflight to fail the node (facts.h).
			 */
			if (text_unsafe(key.buf, key.len) || text_unsafe(val.buf, val.len)) {
				if (!f->unsafe_field) {
					struct strbuf clean = STRBUF_INIT;
					text_clean_line(&clean, key.buf);
					f->unsafe_field = strbuf_detach(&clean, NULL);
				}
			} else {
				parse_line(f, key.buf, val.buf, &smi);
			}
		}
		p = eol + 1;
	}
	strbuf_release(&key);
	strbuf_release(&val);
	if (unsafe_line)
		strbuf_release(&kept);
	else
		f->text = strbuf_detach(&kept, NULL);
	if (f->nvidia_smi && f->nvidia_smi_rc == 0) {
		const char *q = smi.buf;
		while (*q) {
			const char *nl = strchr(q, '\n');
			char *line = xstrndup(q, (size_t)(nl - q));
			parse_gpu(f, line);
			free(line);
			q = nl + 1;
		}
	} else if (f->nvidia_smi) {
		strbuf_rtrim(&smi);
		f->nvidia_smi_error = strbuf_detach(&smi, NULL);
	}
	strbuf_release(&smi);
	if (!f->version) {
		facts_release(f);
		return error_set(err, -1, "no facts in the node's answer (facts_version missing)");
	}
	return 0;
}

void facts_release(struct facts *f)
{
	size_t i;

	free(f->unsafe_field);
	free(f->text);
	free(f->hostname);
	free(f->os_id);
	free(f->os_version);
	free(f->os_pretty);
	free(f->kernel);
	free(f->arch);
	free(f->arch_other);
	for (i = 0; i < f->nr_swaps; i++)
		free(f->swaps[i].path);
	free(f->swaps);
	free_strs(f->fstab_swap, f->nr_fstab_swap);
	free_strs(f->nameservers, f->nr_nameservers);
	free_strs(f->resolved_nameservers, f->nr_resolved_nameservers);
	free(f->resolved);
	free_strs(f->swap_units, f->nr_swap_units);
	free(f->swap_target);
	free_strs(f->modules, f->nr_modules);
	free_strs(f->sysctls, f->nr_sysctls);
	free(f->containerd_version);
	free(f->containerd_active);
	free(f->containerd_config_sha256);
	free_strs(f->packages, f->nr_packages);
	free_strs(f->held, f->nr_held);
	free_strs(f->host_keys, f->nr_host_keys);
	free_strs(f->nvidia_pci, f->nr_nvidia_pci);
	free(f->nvidia_smi_error);
	for (i = 0; i < f->nr_gpus; i++) {
		free(f->gpus[i].model);
		free(f->gpus[i].driver);
		free(f->gpus[i].uuid);
	}
	free(f->gpus);
	free(f->cuda_version);
	free(f->secure_boot);
	free(f->machine_id);
	free(f->product_uuid);
	for (i = 0; i < f->nr_macs; i++) {
		free(f->macs[i].iface);
		free(f->macs[i].addr);
	}
	free(f->macs);
	free(f->default_iface);
	for (i = 0; i < f->nr_routes; i++) {
		free(f->routes[i].peer);
		free(f->routes[i].iface);
		free(f->routes[i].src);
	}
	free(f->routes);
	free_strs(f->addresses, f->nr_addresses);
	free(f->vip_route);
	free(f->vip_answer);
	free(f->etcd_members);
	free(f->etcd_status);
	free(f->apiserver_readyz);
	free_strs(f->reach, f->nr_reach);
	memset(f, 0, sizeof(*f));
}

bool facts_has_module(const struct facts *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nr_modules; i++)
		if (!strcmp(f->modules[i], name))
			return true;
	return false;
}

bool facts_port_busy(const struct facts *f, int port)
{
	size_t i;

	for (i = 0; i < f->nr_ports_busy; i++)
		if (f->ports_busy[i] == port)
			return true;
	return false;
}

static const char *lookup_pair(char **arr, size_t nr, const char *key)
{
	size_t i, len = strlen(key);

	for (i = 0; i < nr; i++)
		if (!strncmp(arr[i], key, len) && arr[i][len] == ' ')
			return arr[i] + len + 1;
	return NULL;
}

const char *facts_package(const struct facts *f, const char *name)
{
	return lookup_pair(f->packages, f->nr_packages, name);
}

const char *facts_sysctl(const struct facts *f, const char *key)
{
	return lookup_pair(f->sysctls, f->nr_sysctls, key);
}

const struct route *facts_route_to(const struct facts *f, const char *peer)
{
	size_t i;

	for (i = 0; i < f->nr_routes; i++)
		if (!strcmp(f->routes[i].peer, peer))
			return &f->routes[i];
	return NULL;
}

const char *gpu_short_model(const char *model)
{
	if (!strncmp(model, "NVIDIA ", 7))
		return model + 7;
	return model;
}

/* 127.0.0.0/8 and ::1: a server on the node itself, which a pod's own
 * network namespace does not reach. */
static bool loopback_server(const char *a)
{
	return !strncmp(a, "127.", 4) || !strcmp(a, "::1");
}

/* Whether a list of nameservers has one that is not on loopback. */
static bool has_real_server(char *const *list, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!loopback_server(list[i]))
			return true;
	return false;
}

const char *facts_kubelet_resolv_conf(const struct facts *f)
{
	bool active = f->resolved && !strcmp(f->resolved, "active");

	if (has_real_server(f->resolved_nameservers, f->nr_resolved_nameservers) &&
	    (active || !has_real_server(f->nameservers, f->nr_nameservers)))
		return "/run/systemd/resolve/resolv.conf";
	return "/etc/resolv.conf";
}

bool facts_pod_dns_loopback(const struct facts *f)
{
	if (!strcmp(facts_kubelet_resolv_conf(f), "/run/systemd/resolve/resolv.conf"))
		return false;
	/* no nameserver line at all: facts of an older facts.sh, not known */
	return f->nr_nameservers > 0 && !has_real_server(f->nameservers, f->nr_nameservers);
}
