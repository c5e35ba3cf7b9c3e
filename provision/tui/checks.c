/* tui checks: see checks.h. */
#include "checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tui_checks_init(struct tui_checks *c, size_t nr_nodes)
{
	memset(c, 0, sizeof(*c));
	c->nr_nodes = nr_nodes;
}

static void cell_release(struct tui_check *k)
{
	free(k->expected);
	free(k->observed);
	free(k->fix);
	memset(k, 0, sizeof(*k));
}

void tui_checks_clear(struct tui_checks *c)
{
	size_t i, j;

	for (i = 0; i < c->nr; i++)
		for (j = 0; j < c->nr_nodes; j++)
			cell_release(&c->cols[i].cells[j]);
}

void tui_checks_release(struct tui_checks *c)
{
	size_t i;

	tui_checks_clear(c);
	for (i = 0; i < c->nr; i++) {
		free(c->cols[i].id);
		free(c->cols[i].label);
		free(c->cols[i].cells);
	}
	free(c->cols);
	memset(c, 0, sizeof(*c));
}

size_t tui_checks_column(struct tui_checks *c, const char *id, const char *label)
{
	size_t i;

	for (i = 0; i < c->nr; i++)
		if (!strcmp(c->cols[i].id, id))
			return i;
	ALLOC_GROW(c->cols, c->nr + 1, c->alloc);
	c->cols[c->nr].id = xstrdup(id);
	c->cols[c->nr].label = xstrdup(label ? label : id);
	c->cols[c->nr].cells = xcalloc(c->nr_nodes ? c->nr_nodes : 1, sizeof(struct tui_check));
	return c->nr++;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void tui_checks_set(struct tui_checks *c, const char *id, size_t node, enum tui_check_state state,
		    const char *expected, const char *observed, const char *fix)
{
	struct tui_check *k;
	size_t col;

	if (node >= c->nr_nodes)
		return;
	/*
	 * Two statements: tui_checks_column() may grow (move) c->cols, and C
	 * does not say whether c->cols is read before or after the call.
	 */
	col = tui_checks_column(c, id, tui_checks_label(id));
	k = &c->cols[col].cells[node];
	cell_release(k);
	k->state = (unsigned char)state;
	k->gen = c->gen;
	k->expected = dup_or_null(expected);
	k->observed = dup_or_null(observed);
	k->fix = dup_or_null(fix);
}

const struct tui_check *tui_checks_get(const struct tui_checks *c, size_t col, size_t node)
{
	if (col >= c->nr || node >= c->nr_nodes)
		return NULL;
	return &c->cols[col].cells[node];
}

bool tui_checks_failed(const struct tui_checks *c)
{
	size_t i, j;

	for (i = 0; i < c->nr; i++)
		for (j = 0; j < c->nr_nodes; j++)
			if (c->cols[i].cells[j].state == TUI_CHECK_FAILED)
				return true;
	return false;
}

const char *tui_check_state_name(enum tui_check_state s)
{
	switch (s) {
	case TUI_CHECK_UNKNOWN:
		return "?";
	case TUI_CHECK_OK:
		return "ok";
	case TUI_CHECK_WARN:
		return "warn";
	case TUI_CHECK_FAILED:
		return "FAIL";
	case TUI_CHECK_NA:
		return "n/a";
	}
	return "?";
}

/* ---- the status checks ---- */

const char *tui_checks_label(const char *id)
{
	static const char *const labels[][2] = {
	    {"reachable", "reach"},
	    {"preflight", "preflight"},
	    {"swap-off", "swap"},
	    {"swap-off-at-boot", "swap@boot"},
	    {"containerd-systemd-cgroup", "cgroup"},
	    {"kube-packages", "kube pkgs"},
	    {"node-ready", "ready"},
	    {"api-readyz", "readyz"},
	    {"certificates", "certs"},
	    {"kubelet-client-cert", "kubelet cert"},
	    {"gpu-alloc", "gpu alloc"},
	    {"gpu-pod", "gpu pod"},
	    {"last-run", "last run"},
	    {"bench-cpu", "bench cpu"},
	    {"bench-memory", "bench mem"},
	    {"bench-gpu", "bench gpu"},
	};
	size_t k;

	for (k = 0; k < ARRAY_SIZE(labels); k++)
		if (!strcmp(labels[k][0], id))
			return labels[k][1];
	return id;
}

/*
 * The matrix's columns are the checks and the roles: at 80 columns a title
 * has 7 characters over its cell, and a cut one ("kubead\u2026" twice, for
 * kubeadm-init and kubeadm-join) names nothing.  A title that does not fit
 * whole is its short form here (doc/provision.1 lists them; the pane under
 * the matrix names the selected column in full).  At most 7 characters,
 * every one different (test_tui).
 */
static const char *const short_forms[][2] = {
    /* the status checks */
    {"preflight", "preflt"},
    {"swap-off-at-boot", "swap@bt"},
    {"kube-packages", "kubepkg"},
    {"kubelet-client-cert", "klcert"},
    {"gpu-alloc", "alloc"},
    {"last-run", "lastrun"},
    /* the validation checks */
    {"gpu-allocatable", "gpu#"},
    {"gpu-operator-validated", "gpu-val"},
    {"default-storageclass", "defclas"},
    {"nfs-claim-binds", "claim"},
    {"hub-health", "hub-ok"},
    {"etcd-member", "etcd"},
    {"etcd-cluster", "etcd-cl"},
    {"apiserver-ready", "apisrv"},
    {"vip-holder", "vip"},
    /* provision bench, check --bench */
    {"bench-cpu", "b-cpu"},
    {"bench-memory", "b-mem"},
    {"bench-gpu", "b-gpu"},
    /* the roles */
    {"containerd", "ctrd"},
    {"containerd-release", "ctrd-rl"},
    {"images-init", "img-in"},
    {"images-addons", "img-add"},
    {"images-upgrade", "img-upg"},
    {"images-upgrade-workers", "img-uw"},
    {"swap-off", "swapoff"},
    {"nfs-server", "nfs-srv"},
    {"nfs-client", "nfs-cli"},
    {"nfs-provisioner", "nfs-prv"},
    {"kubeadm-init", "init"},
    {"kubeadm-join", "join"},
    {"join-tokens", "tokens"},
    {"join-cleanup", "tkclean"},
    {"join-control-planes", "cp-keys"},
    {"kubeadm-join-control-plane", "cp-join"},
    {"certificate-key-cleanup", "key-rm"},
    {"node-labels", "labels"},
    {"gpu-runtime", "gpu-rt"},
    {"gpu-operator", "gpu-op"},
    {"hub-database", "hub-db"},
    {"jupyterhub", "hub"},
    {"etcd-backup", "backup"},
    /* the roles of reset, upgrade, remove-node, renew-certs, restore */
    {"etcd-restore", "restore"},
    {"remove-node", "rmnode"},
    {"renew-certs", "renew"},
    {"reset-cluster", "reset"},
    {"reset-prep", "rs-prep"},
    {"reset-verify", "rs-chk"},
    {"upgrade-control-plane", "upg-cp"},
    {"upgrade-drain", "drain"},
    {"upgrade-uncordon", "uncordn"},
    {"upgrade-worker", "upg-wk"},
    /* the role view's last column: the validation, as in the phase grid */
    {"validate", "valid"},
};

const char *tui_checks_short(const char *id)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(short_forms); k++)
		if (!strcmp(short_forms[k][0], id))
			return short_forms[k][1];
	return NULL;
}

size_t tui_checks_short_forms(const char *const (**forms)[2])
{
	*forms = short_forms;
	return ARRAY_SIZE(short_forms);
}

static bool is_held(const struct facts *f, const char *pkg)
{
	size_t k;

	for (k = 0; k < f->nr_held; k++)
		if (!strcmp(f->held[k], pkg))
			return true;
	return false;
}

static void check_kube_packages(struct tui_checks *c, size_t i, const struct inventory *inv,
				const struct facts *f)
{
	static const char *const pkgs[] = {"kubeadm", "kubelet", "kubectl"};
	const char *want = inv->cluster.kubernetes_version;
	struct strbuf obs = STRBUF_INIT;
	char *expected = xasprintf("kubeadm, kubelet, kubectl %s, held", want);
	bool ok = true;
	size_t k, wl = strlen(want);

	for (k = 0; k < ARRAY_SIZE(pkgs); k++) {
		const char *v = facts_package(f, pkgs[k]);
		bool held = is_held(f, pkgs[k]);
		/* Debian versions are "1.30.4-1.1": the upstream version, then the packaging's. */
		bool right = v && !strncmp(v, want, wl) && (v[wl] == '-' || v[wl] == '\0');

		strbuf_addf(&obs, "%s%s %s%s", k ? ", " : "", pkgs[k], v ? v : "missing",
			    v && !held ? " (not held)" : "");
		ok = ok && right && held;
	}
	tui_checks_set(c, "kube-packages", i, ok ? TUI_CHECK_OK : TUI_CHECK_FAILED, expected,
		       obs.buf, ok ? NULL : "provision up --phases kube-packages");
	strbuf_release(&obs);
	free(expected);
}

void tui_checks_gpus(struct tui_checks *c, size_t i, const struct node *n, const struct facts *f)
{
	struct strbuf exp = STRBUF_INIT, obs = STRBUF_INIT;
	size_t found = f->nr_nvidia_pci > f->nr_gpus ? f->nr_nvidia_pci : f->nr_gpus, k;
	enum tui_check_state state = TUI_CHECK_OK;
	const char *fix = NULL;

	if (n->gpus >= 0)
		strbuf_addf(&exp, "%d NVIDIA GPU%s (the inventory's gpus), each seen by the driver",
			    n->gpus, n->gpus == 1 ? "" : "s");
	else
		strbuf_addstr(&exp, "any number (gpus not declared), each seen by the driver");
	strbuf_addf(&obs, "%zu NVIDIA GPU%s found", found, found == 1 ? "" : "s");
	for (k = 0; k < f->nr_gpus; k++)
		strbuf_addf(&obs, "%s%s", k ? ", " : ": ", f->gpus[k].model);
	if (f->nr_gpus && f->gpus[0].driver)
		strbuf_addf(&obs, " (driver %s)", f->gpus[0].driver);
	if (n->gpus >= 0 && (size_t)n->gpus != found) {
		state = TUI_CHECK_FAILED;
		fix = "fix 'gpus' in the inventory, or check that every card is seated and powered";
	} else if (f->nr_nvidia_pci > 0 && (!f->nvidia_smi || f->nvidia_smi_rc != 0)) {
		state = TUI_CHECK_FAILED;
		strbuf_addstr(&obs,
			      f->nvidia_smi ? "; nvidia-smi fails" : "; no driver (no nvidia-smi)");
		fix = "install the NVIDIA driver and reboot; nvidia-smi must list every GPU";
	}
	tui_checks_set(c, "gpus", i, state, exp.buf, obs.buf, fix);
	strbuf_release(&exp);
	strbuf_release(&obs);
}

void tui_checks_status_columns(struct tui_checks *c)
{
	static const char *const order[] = {
	    "reachable",	"preflight",  "swap-off",
	    "swap-off-at-boot", "containerd", "containerd-systemd-cgroup",
	    "kube-packages",	"gpus",	      "node-ready",
	    "kubelet",		"gpu-alloc",  "last-run",
	};
	size_t k;

	for (k = 0; k < ARRAY_SIZE(order); k++)
		tui_checks_column(c, order[k], tui_checks_label(order[k]));
}

void tui_checks_status(struct tui_checks *c, size_t i, const struct inventory *inv,
		       const struct node *n, const struct facts *f)
{
	static const struct {
		const char *id, *why;
	} later[] = {
	    {"kubelet", "kubelet active: checked by a later version (the kubeadm phases)"},
	    {"gpu-alloc", "GPUs allocatable = GPUs found: checked by a later version "
			  "(the GPU Operator phase)"},
	    {"last-run", "the last run's result per phase: comes with run records"},
	};
	size_t k;

	tui_checks_status_columns(c);
	if (f) {
		check_kube_packages(c, i, inv, f);
		tui_checks_gpus(c, i, n, f);
	}
	for (k = 0; k < ARRAY_SIZE(later); k++)
		tui_checks_set(c, later[k].id, i, TUI_CHECK_NA, later[k].why,
			       "n/a: not checked by this version", NULL);
}

void tui_checks_expire(struct tui_checks *c, unsigned gen, const char *why)
{
	size_t i, j;

	for (i = 0; i < c->nr; i++) {
		for (j = 0; j < c->nr_nodes; j++) {
			struct tui_check *k = &c->cols[i].cells[j];
			if (k->gen == gen && k->state != TUI_CHECK_UNKNOWN)
				continue;
			cell_release(k);
			k->state = TUI_CHECK_NA;
			k->gen = gen;
			k->observed = xstrdup(why);
		}
	}
}

/* ---- the plain table ---- */

void tui_checks_table(struct strbuf *out, const struct tui_checks *c,
		      const struct node *const *nodes, size_t nr)
{
	size_t i, k, w = 4, *cw = xcalloc(c->nr ? c->nr : 1, sizeof(*cw));
	bool any = false;

	for (i = 0; i < nr; i++)
		if (strlen(nodes[i]->name) > w)
			w = strlen(nodes[i]->name);
	strbuf_addf(out, "%-*s", (int)w, "NODE");
	for (k = 0; k < c->nr; k++) {
		size_t j;
		cw[k] = strlen(c->cols[k].label) > 4 ? strlen(c->cols[k].label) : 4;
		strbuf_addstr(out, "  ");
		for (j = 0; c->cols[k].label[j]; j++)
			strbuf_addch(out, c->cols[k].label[j] >= 'a' && c->cols[k].label[j] <= 'z'
					      ? c->cols[k].label[j] - 'a' + 'A'
					      : c->cols[k].label[j]);
		strbuf_addf(out, "%*s", (int)(cw[k] - strlen(c->cols[k].label)), "");
	}
	strbuf_rtrim(out);
	strbuf_addch(out, '\n');
	for (i = 0; i < nr && i < c->nr_nodes; i++) {
		strbuf_addf(out, "%-*s", (int)w, nodes[i]->name);
		for (k = 0; k < c->nr; k++)
			strbuf_addf(out, "  %-*s", (int)cw[k],
				    tui_check_state_name(c->cols[k].cells[i].state));
		strbuf_rtrim(out);
		strbuf_addch(out, '\n');
	}
	for (i = 0; i < nr && i < c->nr_nodes; i++) {
		for (k = 0; k < c->nr; k++) {
			const struct tui_check *x = &c->cols[k].cells[i];
			if (x->state != TUI_CHECK_FAILED && x->state != TUI_CHECK_WARN)
				continue;
			if (!any)
				strbuf_addch(out, '\n');
			any = true;
			strbuf_addf(
			    out, "%s: %s %s: expected %s; observed %s\n", nodes[i]->name,
			    c->cols[k].id, x->state == TUI_CHECK_FAILED ? "failed" : "warning",
			    x->expected ? x->expected : "?", x->observed ? x->observed : "?");
			if (x->fix)
				strbuf_addf(out, "  fix: %s\n", x->fix);
		}
	}
	free(cw);
}
