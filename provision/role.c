/* role: see role.h and roles/README.md. */
#include "role.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema.h"
#include "util.h"

/* The phases of `up` first (ROLE_UP_PHASES of them), then those of the lifecycle commands. */
const char *const role_phases[] = {
    [PHASE_PREP] = "prep",
    [PHASE_KUBE_PACKAGES] = "kube-packages",
    [PHASE_NFS] = "nfs",
    [PHASE_INIT] = "init",
    [PHASE_CNI] = "cni",
    [PHASE_JOIN] = "join",
    [PHASE_ADDONS] = "addons",
    [PHASE_VALIDATE] = "validate",
    [PHASE_REMOVE] = "remove",
    [PHASE_RESET] = "reset",
    [PHASE_RESET_PREP] = "reset-prep",
    [PHASE_RESET_VERIFY] = "reset-verify",
    [PHASE_UPGRADE] = "upgrade",
    [PHASE_UPGRADE_WORKERS] = "upgrade-workers",
    [PHASE_RENEW_CERTS] = "renew-certs",
    [PHASE_BACKUP] = "backup",
    [PHASE_RESTORE] = "restore",
    [PHASE_ROLES] = NULL,
};
_Static_assert(PHASE_VALIDATE + 1 == ROLE_UP_PHASES, "up's phases end with validate");

const char *phase_name(enum phase p)
{
	if (p == PHASE_NONE)
		return NULL;
	if (p == PHASE_FACTS)
		return "facts";
	if (p == PHASE_PREFLIGHT)
		return "preflight";
	return p < PHASE_ROLES ? role_phases[p] : "?";
}

bool phase_is(const char *s, enum phase p)
{
	return s && !strcmp(s, phase_name(p));
}

/* Names a template may use without declaring them in `vars`. */
static const char *const standard_roots[] = {"node", "facts", "cluster", "nodes",
					     "gpu",  "set",   NULL};

enum phase role_phase_index(const char *s)
{
	int i;

	for (i = 0; role_phases[i]; i++)
		if (!strcmp(role_phases[i], s))
			return (enum phase)i;
	return PHASE_NONE;
}

static void strv_push(char ***v, const char *s)
{
	size_t n = 0;

	while (*v && (*v)[n])
		n++;
	*v = xrealloc(*v, (n + 2) * sizeof(**v));
	(*v)[n] = xstrdup(s);
	(*v)[n + 1] = NULL;
}


/* role.yaml and kubernetes.yaml are read with the schema reader (schema.h). */
static const char *scalar(const yaml_node_t *n)
{
	return schema_scalar(n);
}

/* A key of no table: reported as the inventory's are (schema.h), in `section`. */
static void unknown_key(struct schema *l, const yaml_node_t *k, const char *section,
			const char *const *known)
{
	size_t nr = 0;

	while (known[nr])
		nr++;
	schema_unknown_key(l, k, section, known, nr);
}

static const char *const role_keys[] = {
    "description", "phase",	"applies_to", "when",	 "depends_on", "wait_for", "after", "vars",
    "templates",   "artifacts", "hands",      "fetches", "images",     "chart",	   "pulls", NULL};
static const char *const tmpl_keys[] = {"src", "dest", "mode", "owner", "before", NULL};
static const char *const image_keys[] = {"ref", "manifest", "on", NULL};
static const char *const chart_keys[] = {"artifact", "values", NULL};
static const char *const image_on_words[] = {"cluster", "control-plane", "workers", "gpu", NULL};
static const char *const when_words[] = {"gpu", "no-gpu", "nfs", "not-nfs-server", "hub",
					 "containerd-release", "api-vip", "first-control-plane",
					 "other-control-plane", "api-endpoint", "hub-node", NULL};

static bool parse_mode(const char *s, unsigned *mode)
{
	unsigned v = 0;
	size_t i;

	if (!s || strlen(s) < 3 || strlen(s) > 4)
		return false;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '7')
			return false;
		v = v * 8 + (unsigned)(s[i] - '0');
	}
	*mode = v;
	return true;
}

static void load_template_entry(struct schema *l, struct role *r, const yaml_node_t *m)
{
	struct role_template t = {.mode = 0644};
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	bool ok = true;

	if (m->type != YAML_MAPPING_NODE) {
		schema_error(l, m,
			     "each template is a mapping: {src: FILE, dest: /PATH, mode: \"0644\"}",
			     "a template must be a mapping");
		return;
	}
	p = NULL;
	while (schema_next_pair(l, m, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s;

		if (!strcmp(key, "src")) {
			if ((s = schema_nonempty(l, v, key))) {
				free(t.src);
				t.src = xstrdup(s);
			}
		} else if (!strcmp(key, "dest")) {
			if ((s = schema_nonempty(l, v, key))) {
				if (s[0] != '/') {
					schema_error(l, v, NULL,
						     "'dest' must be an absolute path, not '%s'",
						     s);
					ok = false;
				}
				free(t.dest);
				t.dest = xstrdup(s);
			}
		} else if (!strcmp(key, "mode")) {
			if (!parse_mode(scalar(v), &t.mode)) {
				schema_error(
				    l, v,
				    "write the mode as a quoted octal string such as \"0644\"",
				    "'mode' must be an octal mode");
				ok = false;
			}
		} else if (!strcmp(key, "owner")) {
			if ((s = schema_nonempty(l, v, key))) {
				free(t.owner);
				t.owner = xstrdup(s);
			}
		} else if (!strcmp(key, "before")) {
			if ((s = schema_nonempty(l, v, key))) {
				free(t.before);
				t.before = xstrdup(s);
			}
		} else {
			unknown_key(l, k, "a template", tmpl_keys);
			ok = false;
		}
	}
	if (!t.src || !t.dest) {
		schema_error(l, m, NULL, "a template needs both 'src' and 'dest'");
		ok = false;
	}
	if (!ok) {
		free(t.src);
		free(t.dest);
		free(t.owner);
		free(t.before);
		return;
	}
	if (!t.owner)
		t.owner = xstrdup("root:root");
	t.path = xasprintf("%s/templates/%s", r->dir, t.src);
	r->templates = xrealloc(r->templates, (r->nr_templates + 1) * sizeof(*r->templates));
	r->templates[r->nr_templates++] = t;
}

static const char *const artifact_keys[] = {"name",	  "dest",	   "mode",    "owner",
					    "before", "arch",	   "helm",    "kube",
					    "chart_version", "default", NULL};

static int helm_range_next(const char **p, unsigned *major, unsigned *lo, unsigned *hi);

/* `kube: "1.30-1.33"` or "1.31": one range of Kubernetes minors, as MAJOR*1000+MINOR. */
static bool parse_kube_range(const char *s, unsigned *lo, unsigned *hi)
{
	unsigned major, a, b;

	if (!s || helm_range_next(&s, &major, &a, &b) != 1 || *s || a >= 1000 || b >= 1000)
		return false;
	*lo = major * 1000 + a;
	*hi = major * 1000 + b;
	return true;
}

/* A Kubernetes version's minor ("1.30.4", "1.30") as MAJOR*1000+MINOR; 0: not one. */
static unsigned kube_minor_key(const char *version)
{
	unsigned major, minor;

	if (!version || sscanf(version, "%u.%u", &major, &minor) != 2 || minor >= 1000)
		return 0;
	return major * 1000 + minor;
}

static void load_artifact_entry(struct schema *l, struct role *r, const yaml_node_t *m)
{
	struct role_artifact a = {.mode = 0644};
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	bool ok = true;

	if (m->type != YAML_MAPPING_NODE) {
		schema_error(
		    l, m, "each artifact is a mapping: {name: NAME, dest: /PATH, mode: \"0644\"}",
		    "an artifact must be a mapping");
		return;
	}
	p = NULL;
	while (schema_next_pair(l, m, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s = NULL;
		char **slot = NULL;

		if (!strcmp(key, "mode")) {
			if (!parse_mode(scalar(v), &a.mode)) {
				schema_error(
				    l, v,
				    "write the mode as a quoted octal string such as \"0644\"",
				    "'mode' must be an octal mode");
				ok = false;
			}
			continue;
		}
		if (!strcmp(key, "helm")) {
			s = scalar(v);
			if (s && (!strcmp(s, "3") || !strcmp(s, "4"))) {
				a.helm = s[0] - '0';
			} else {
				schema_error(
				    l, v,
				    "write 3 or 4: the artifact reaches the nodes when the "
				    "inventory's cluster.helm is that major",
				    "'helm' must be 3 or 4");
				ok = false;
			}
			continue;
		}
		if (!strcmp(key, "kube")) {
			if (!parse_kube_range(scalar(v), &a.kube_lo, &a.kube_hi)) {
				schema_error(l, v,
					     "write the Kubernetes minors the artifact serves as "
					     "\"1.A-1.B\" or \"1.A\", e.g. \"1.30-1.33\"",
					     "'kube' must be a range of Kubernetes minors");
				ok = false;
			}
			continue;
		}
		if (!strcmp(key, "default")) {
			s = scalar(v);
			if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
				a.chart_default = !strcmp(s, "true");
			} else {
				schema_error(
				    l, v,
				    "write true on the chart version the inventory gets when it "
				    "pins none",
				    "'default' must be true or false");
				ok = false;
			}
			continue;
		}
		if (!strcmp(key, "name"))
			slot = &a.name;
		else if (!strcmp(key, "chart_version"))
			slot = &a.chart_version;
		else if (!strcmp(key, "dest"))
			slot = &a.dest;
		else if (!strcmp(key, "owner"))
			slot = &a.owner;
		else if (!strcmp(key, "before"))
			slot = &a.before;
		else if (!strcmp(key, "arch"))
			slot = &a.arch;
		if (!slot) {
			unknown_key(l, k, "an artifact", artifact_keys);
			ok = false;
			continue;
		}
		if ((s = schema_nonempty(l, v, key))) {
			free(*slot);
			*slot = xstrdup(s);
		} else {
			ok = false;
		}
	}
	if (a.dest && a.dest[0] != '/') {
		schema_error(l, m, NULL, "'dest' must be an absolute path, not '%s'", a.dest);
		ok = false;
	}
	if (!a.name || !a.dest) {
		schema_error(l, m, NULL, "an artifact needs both 'name' and 'dest'");
		ok = false;
	}
	if (a.arch && strcmp(a.arch, "amd64") && strcmp(a.arch, "arm64")) {
		schema_error(l, m, "write amd64 or arm64, the node arch names of the inventory",
			     "'arch' must be amd64 or arm64, not '%s'", a.arch);
		ok = false;
	}
	if (a.chart_default && !a.chart_version) {
		schema_error(l, m, "give the artifact its chart_version: X.Y.Z",
			     "'default: true' is for an artifact with a chart_version");
		ok = false;
	}
	if (!ok) {
		free(a.name);
		free(a.dest);
		free(a.owner);
		free(a.before);
		free(a.arch);
		free(a.chart_version);
		return;
	}
	if (!a.owner)
		a.owner = xstrdup("root:root");
	r->artifacts = xrealloc(r->artifacts, (r->nr_artifacts + 1) * sizeof(*r->artifacts));
	r->artifacts[r->nr_artifacts++] = a;
}

static const char *const hand_keys[] = {"name", "secret", "to", "about", "labels", NULL};

/* A Kubernetes label key: [PREFIX/]NAME, PREFIX a DNS subdomain, NAME 1-63 of A-Z a-z 0-9 - _ . */
static bool valid_label_key(const char *k)
{
	const char *slash = strchr(k, '/'), *name = slash ? slash + 1 : k;
	size_t i, n = strlen(name);

	if (slash) {
		if (slash == k || (size_t)(slash - k) > 253 || strchr(name, '/'))
			return false;
		for (i = 0; k + i < slash; i++)
			if (!isalnum((unsigned char)k[i]) && k[i] != '-' && k[i] != '.')
				return false;
		if (!isalnum((unsigned char)k[0]) || !isalnum((unsigned char)slash[-1]))
			return false;
	}
	if (!n || n > 63 || !isalnum((unsigned char)name[0]) ||
	    !isalnum((unsigned char)name[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
			return false;
	return true;
}
static const char *const fetch_keys[] = {"name", "path", NULL};

/* NAME of a `hands` entry: a ::set name, with at most one {self} or {n}. */
static bool valid_hand_name(const char *s)
{
	size_t i, len = strlen(s), holes = 0;

	if (!len || len > 64 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (i = 0; i < len; i++) {
		if (!strncmp(s + i, "{self}", 6) || !strncmp(s + i, "{n}", 3)) {
			i += s[i + 1] == 's' ? 5 : 2;
			holes++;
		} else if (!isalnum((unsigned char)s[i]) && s[i] != '_') {
			return false;
		}
	}
	return holes <= 1;
}

static void load_hand_entry(struct schema *l, struct role *r, const yaml_node_t *m)
{
	struct role_hand h = {0};
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	bool ok = true;
	size_t i;

	if (m->type != YAML_MAPPING_NODE) {
		schema_error(l, m,
			     "each entry is a mapping: {name: NAME, to: self|control-plane|node}",
			     "a 'hands' entry must be a mapping");
		return;
	}
	p = NULL;
	while (schema_next_pair(l, m, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s = scalar(v);

		if (!strcmp(key, "name")) {
			if (!s || !valid_hand_name(s)) {
				schema_error(
				    l, v,
				    "letters, digits and _, not starting with a digit, at most 64, "
				    "with at most one {self} or {n}",
				    "'name' must be a ::set name");
				ok = false;
			} else {
				free(h.name);
				h.name = xstrdup(s);
			}
		} else if (!strcmp(key, "secret")) {
			if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
				h.secret = !strcmp(s, "true");
			} else {
				schema_error(l, v, NULL, "'secret' must be true or false");
				ok = false;
			}
		} else if (!strcmp(key, "to")) {
			if (s && !strcmp(s, "self")) {
				h.to = ROLE_TO_SELF;
			} else if (s && !strcmp(s, "control-plane")) {
				h.to = ROLE_TO_CONTROL_PLANE;
			} else if (s && !strcmp(s, "node")) {
				h.to = ROLE_TO_NODE;
			} else {
				schema_error(
				    l, v, "to: self, control-plane or node (the NODE of NAME@NODE)",
				    "unknown receiver '%s'", s ? s : "");
				ok = false;
			}
		} else if (!strcmp(key, "about")) {
			if (s && !strcmp(s, "self")) {
				h.about_self = true;
			} else {
				schema_error(
				    l, v,
				    "about: self (the value's first word is the sender's name)",
				    "unknown 'about' '%s'", s ? s : "");
				ok = false;
			}
		} else if (!strcmp(key, "labels")) {
			char **keys = NULL;
			size_t j;
			schema_word_list(l, v, key, &keys);
			for (j = 0; keys && keys[j]; j++)
				if (!valid_label_key(keys[j])) {
					schema_error(
					    l, v,
					    "[PREFIX/]NAME: a DNS subdomain, then 1-63 letters, "
					    "digits, - _ .",
					    "'%s' is not a Kubernetes label key", keys[j]);
					ok = false;
				}
			if (!keys) {
				schema_error(l, v, NULL,
					     "'labels' must name the label keys the value may set");
				ok = false;
			}
			strv_free(h.labels);
			h.labels = keys;
		} else {
			unknown_key(l, k, "a 'hands' entry", hand_keys);
			ok = false;
		}
	}
	if (ok && (!h.name || !h.to)) {
		schema_error(l, m, NULL, "a 'hands' entry needs both 'name' and 'to'");
		ok = false;
	}
	for (i = 0; ok && i < r->nr_hands; i++)
		if (!strcmp(r->hands[i].name, h.name)) {
			schema_error(l, m, NULL, "'%s' is already in 'hands'", h.name);
			ok = false;
		}
	if (!ok) {
		free(h.name);
		strv_free(h.labels);
		return;
	}
	r->hands = xrealloc(r->hands, (r->nr_hands + 1) * sizeof(*r->hands));
	r->hands[r->nr_hands++] = h;
}

static void load_fetch_entry(struct schema *l, struct role *r, const yaml_node_t *m)
{
	struct role_fetch f = {0};
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	bool ok = true;
	size_t i;

	if (m->type != YAML_MAPPING_NODE) {
		schema_error(l, m, "each entry is a mapping: {name: NAME, path: /PATH}",
			     "a 'fetches' entry must be a mapping");
		return;
	}
	p = NULL;
	while (schema_next_pair(l, m, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s = scalar(v);

		if (!strcmp(key, "name")) {
			bool good = s && *s && *s != '.' && strlen(s) <= 64;
			for (i = 0; good && s[i]; i++)
				good = isalnum((unsigned char)s[i]) || strchr("._-", s[i]);
			if (!good) {
				schema_error(
				    l, v,
				    "letters, digits, '.', '_' and '-', not starting with '.'",
				    "'name' must be a file name");
				ok = false;
			} else {
				free(f.name);
				f.name = xstrdup(s);
			}
		} else if (!strcmp(key, "path")) {
			if (!s || s[0] != '/') {
				schema_error(l, v, NULL, "'path' must be an absolute path");
				ok = false;
			} else {
				free(f.path);
				f.path = xstrdup(s);
			}
		} else {
			unknown_key(l, k, "a 'fetches' entry", fetch_keys);
			ok = false;
		}
	}
	if (ok && (!f.name || !f.path)) {
		schema_error(l, m, NULL, "a 'fetches' entry needs both 'name' and 'path'");
		ok = false;
	}
	for (i = 0; ok && i < r->nr_fetches; i++)
		if (!strcmp(r->fetches[i].name, f.name)) {
			schema_error(l, m, NULL, "'%s' is already in 'fetches'", f.name);
			ok = false;
		}
	if (!ok) {
		free(f.name);
		free(f.path);
		return;
	}
	r->fetches = xrealloc(r->fetches, (r->nr_fetches + 1) * sizeof(*r->fetches));
	r->fetches[r->nr_fetches++] = f;
}

/* One entry of `images`: {ref: TEMPLATE, on: WHERE} or {manifest: SRC, on: WHERE}. */
static void load_image_entry(struct schema *l, struct role *r, const yaml_node_t *m)
{
	struct role_image im = {0};
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	bool ok = true;

	if (m->type != YAML_MAPPING_NODE) {
		schema_error(
		    l, m,
		    "each entry is {ref: TEMPLATE, on: WHERE} or {manifest: TEMPLATE_SRC, on: "
		    "WHERE}",
		    "an 'images' entry must be a mapping");
		return;
	}
	im.line = (unsigned)m->start_mark.line + 1;
	p = NULL;
	while (schema_next_pair(l, m, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s = schema_nonempty(l, v, key);

		if (!s) {
			ok = false;
		} else if (!strcmp(key, "ref")) {
			struct error err = {0};
			const char *msg;
			free(im.ref);
			template_free(im.tmpl);
			im.tmpl = NULL;
			im.ref = xstrdup(s);
			if (template_parse(&im.tmpl, "ref", s, strlen(s), &err) < 0) {
				/* "ref:1:COL: message": point at the value instead */
				msg = strstr(err.msg, ": ");
				schema_error(l, v, NULL, "bad 'ref' template: %s",
					     msg ? msg + 2 : err.msg);
				ok = false;
			}
		} else if (!strcmp(key, "manifest")) {
			free(im.manifest);
			im.manifest = xstrdup(s);
		} else if (!strcmp(key, "on")) {
			size_t w;
			for (w = 0; image_on_words[w]; w++)
				if (!strcmp(s, image_on_words[w]))
					break;
			if (image_on_words[w]) {
				im.on = (enum role_image_on)(w + 1);
			} else {
				schema_error(l, v, "on: cluster, control-plane, workers or gpu",
					     "unknown 'on' value '%s'", s);
				ok = false;
			}
		} else {
			unknown_key(l, k, "an 'images' entry", image_keys);
			ok = false;
		}
	}
	if (ok && !im.ref == !im.manifest) {
		schema_error(l, m, NULL, "an 'images' entry needs one of 'ref' and 'manifest'");
		ok = false;
	}
	if (ok && !im.on) {
		schema_error(l, m, "on: cluster, control-plane, workers or gpu",
			     "an 'images' entry needs 'on'");
		ok = false;
	}
	if (!ok) {
		free(im.ref);
		free(im.manifest);
		template_free(im.tmpl);
		return;
	}
	r->images = xrealloc(r->images, (r->nr_images + 1) * sizeof(*r->images));
	r->images[r->nr_images++] = im;
}

static void load_chart(struct schema *l, struct role *r, const yaml_node_t *m)
{
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;

	if (m->type != YAML_MAPPING_NODE) {
		schema_error(l, m, "chart: {artifact: NAME, values: TEMPLATE_SRC}",
			     "'chart' must be a mapping");
		return;
	}
	p = NULL;
	while (schema_next_pair(l, m, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s;

		if (!strcmp(key, "artifact")) {
			if ((s = schema_nonempty(l, v, key))) {
				free(r->chart_artifact);
				r->chart_artifact = xstrdup(s);
			}
		} else if (!strcmp(key, "values")) {
			if ((s = schema_nonempty(l, v, key))) {
				free(r->chart_values);
				r->chart_values = xstrdup(s);
			}
		} else {
			unknown_key(l, k, "'chart'", chart_keys);
		}
	}
	if (!r->chart_artifact)
		schema_error(
		    l, m, NULL,
		    "'chart' needs 'artifact' (the chart archive of roles/artifacts.yaml)");
}

static void check_kube_var(struct schema *l, const struct kube_matrix *m, const yaml_node_t *item);

static void load_role_yaml(struct role *r, const char *path, const struct kube_matrix *kube,
			   struct diag_list *dl)
{
	struct strbuf text = STRBUF_INIT;
	struct schema l;
	yaml_node_t *root, *k, *v;
	yaml_node_pair_t *p;
	bool saw_phase = false;
	int e;

	if ((e = read_file(path, &text)) < 0) {
		diag_add(dl, DIAG_ERROR, path, 0, 0,
			 "every role needs a role.yaml (see roles/README.md)",
			 "cannot read role: %s", strerror(-e));
		return;
	}
	if (schema_load(&l, path, text.buf, text.len, dl) < 0 ||
	    schema_one_document(&l, "role.yaml") < 0)
		goto out;
	root = schema_root(&l);
	if (!root || root->type != YAML_MAPPING_NODE) {
		diag_add(dl, DIAG_ERROR, path, 1, 1, NULL, "a role.yaml must be a mapping");
		goto out;
	}
	p = NULL;
	while (schema_next_pair(&l, root, &p, &k, &v)) {
		const char *key = scalar(k) ? scalar(k) : "";
		const char *s;
		char **words = NULL;
		size_t i;

		if (!strcmp(key, "description")) {
			if ((s = schema_nonempty(&l, v, key)))
				r->description = xstrdup(s);
		} else if (!strcmp(key, "phase")) {
			saw_phase = true;
			if ((s = schema_nonempty(&l, v, key))) {
				r->phase = role_phase_index(s);
				if (r->phase == PHASE_NONE)
					schema_error(&l, v,
						     "phases: " ROLE_PHASE_LIST
						     " (provision up), " ROLE_LIFECYCLE_PHASE_LIST,
						     "unknown phase '%s'", s);
			}
		} else if (!strcmp(key, "applies_to")) {
			schema_word_list(&l, v, key, &words);
			for (i = 0; words && words[i]; i++) {
				unsigned bit = node_role_parse(words[i]);
				if (!bit)
					schema_error(
					    &l, v, "node roles: control-plane, worker, nfs-server",
					    "unknown node role '%s'", words[i]);
				r->applies_to |= bit;
			}
			strv_free(words);
		} else if (!strcmp(key, "when")) {
			schema_word_list(&l, v, key, &words);
			for (i = 0; words && words[i]; i++) {
				size_t w;
				for (w = 0; when_words[w]; w++)
					if (!strcmp(words[i], when_words[w]))
						break;
				if (when_words[w])
					r->when |= 1u << w;
				else
					schema_error(
					    &l, v,
					    "conditions: gpu, no-gpu, nfs, not-nfs-server, hub, "
					    "containerd-release, api-vip, first-control-plane, "
					    "other-control-plane, api-endpoint, hub-node",
					    "unknown condition '%s'", words[i]);
			}
			strv_free(words);
		} else if (!strcmp(key, "depends_on")) {
			schema_word_list(&l, v, key, &r->depends_on);
		} else if (!strcmp(key, "wait_for")) {
			schema_word_list(&l, v, key, &r->wait_for);
		} else if (!strcmp(key, "after")) {
			schema_word_list(&l, v, key, &r->after);
		} else if (!strcmp(key, "vars")) {
			schema_word_list(&l, v, key, &r->vars);
			if (v->type == YAML_SEQUENCE_NODE) {
				yaml_node_item_t *it;
				for (it = v->data.sequence.items.start;
				     it < v->data.sequence.items.top; it++)
					check_kube_var(&l, kube, schema_node(&l, *it));
			}
		} else if (!strcmp(key, "templates")) {
			yaml_node_item_t *it;
			if (v->type != YAML_SEQUENCE_NODE) {
				schema_error(&l, v, NULL, "'templates' must be a list");
				continue;
			}
			for (it = v->data.sequence.items.start; it < v->data.sequence.items.top;
			     it++)
				load_template_entry(&l, r, schema_node(&l, *it));
		} else if (!strcmp(key, "hands") || !strcmp(key, "fetches")) {
			yaml_node_item_t *it;
			if (v->type == YAML_SCALAR_NODE && !*scalar(v))
				continue;
			if (v->type != YAML_SEQUENCE_NODE) {
				schema_error(&l, v, NULL, "'%s' must be a list", key);
				continue;
			}
			for (it = v->data.sequence.items.start; it < v->data.sequence.items.top;
			     it++) {
				const yaml_node_t *entry = schema_node(&l, *it);
				if (key[0] == 'h')
					load_hand_entry(&l, r, entry);
				else
					load_fetch_entry(&l, r, entry);
			}
		} else if (!strcmp(key, "images")) {
			yaml_node_item_t *it;
			if (v->type == YAML_SCALAR_NODE && !*scalar(v))
				continue;
			if (v->type != YAML_SEQUENCE_NODE) {
				schema_error(&l, v, NULL, "'images' must be a list");
				continue;
			}
			for (it = v->data.sequence.items.start; it < v->data.sequence.items.top;
			     it++)
				load_image_entry(&l, r, schema_node(&l, *it));
		} else if (!strcmp(key, "chart")) {
			load_chart(&l, r, v);
		} else if (!strcmp(key, "pulls")) {
			schema_word_list(&l, v, key, &r->pulls);
		} else if (!strcmp(key, "artifacts")) {
			yaml_node_item_t *it;
			if (v->type == YAML_SCALAR_NODE && !*scalar(v))
				continue;
			if (v->type != YAML_SEQUENCE_NODE) {
				schema_error(&l, v, NULL, "'artifacts' must be a list");
				continue;
			}
			for (it = v->data.sequence.items.start; it < v->data.sequence.items.top;
			     it++)
				load_artifact_entry(&l, r, schema_node(&l, *it));
		} else {
			unknown_key(&l, k, "role.yaml", role_keys);
		}
	}
	if (!r->description)
		schema_error(&l, root, NULL, "missing 'description'");
	if (!saw_phase)
		schema_error(&l, root, "phases: " ROLE_PHASE_LIST, "missing 'phase'");
out:
	schema_release(&l);
	strbuf_release(&text);
}

/* roles/artifacts.yaml, and every artifact a role names is in it. */
static void check_artifacts(struct role_set *rs, struct diag_list *dl)
{
	char *path = xasprintf("%s/artifacts.yaml", rs->dir);
	size_t i, j, k;

	artifact_manifest_load(&rs->artifacts, path, dl);
	for (i = 0; i < rs->nr; i++) {
		const struct role *r = &rs->roles[i];
		char *yaml = xasprintf("%s/role.yaml", r->dir);
		if (r->chart_artifact && !artifact_find(&rs->artifacts, r->chart_artifact))
			diag_add(dl, DIAG_ERROR, yaml, 0, 0,
				 "declare it (url, sha256) in the artifact manifest",
				 "role '%s' has chart '%s', which '%s' does not declare", r->name,
				 r->chart_artifact, path);
		for (j = 0; j < r->nr_artifacts; j++) {
			const struct role_artifact *a = &r->artifacts[j];
			bool found = !a->before;
			if (!artifact_find(&rs->artifacts, a->name))
				diag_add(
				    dl, DIAG_ERROR, yaml, 0, 0,
				    "declare it (url, sha256) in the artifact manifest",
				    "role '%s' needs artifact '%s', which '%s' does not declare",
				    r->name, a->name, path);
			for (k = 0; k < r->nr_steps && !found; k++)
				found = !strcmp(r->steps[k].name, a->before);
			if (!found)
				diag_add(dl, DIAG_ERROR, yaml, 0, 0, NULL,
					 "'before: %s' of artifact '%s' names no step of role '%s'",
					 a->before, a->name, r->name);
		}
		free(yaml);
	}
	free(path);
}

/*
 * A private file has one source: two roles fetching the same NAME could
 * overwrite each other's (admin.conf from anywhere but kubeadm-init).
 */
static void check_fetches(struct role_set *rs, struct diag_list *dl)
{
	size_t i, j, a, b;

	for (i = 0; i < rs->nr; i++)
		for (a = 0; a < rs->roles[i].nr_fetches; a++)
			for (j = 0; j < i; j++)
				for (b = 0; b < rs->roles[j].nr_fetches; b++) {
					char *yaml;
					if (strcmp(rs->roles[i].fetches[a].name,
						   rs->roles[j].fetches[b].name))
						continue;
					yaml = xasprintf("%s/role.yaml", rs->roles[i].dir);
					diag_add(dl, DIAG_ERROR, yaml, 0, 0,
						 "give each fetched file one role",
						 "roles '%s' and '%s' both fetch '%s'",
						 rs->roles[j].name, rs->roles[i].name,
						 rs->roles[i].fetches[a].name);
					free(yaml);
				}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of directory entries (no dot files), sorted; NULL-terminated. */
static char **list_dir(const char *dir, int *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;

	*err = 0;
	if (!d) {
		*err = errno;
		return NULL;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		strv_push(&v, de->d_name);
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	return v;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static void load_steps(struct role *r, struct diag_list *dl)
{
	char *dir = xasprintf("%s/steps", r->dir);
	char **names;
	int e;
	size_t i;

	names = list_dir(dir, &e);
	if (e && e != ENOENT)
		diag_add(dl, DIAG_ERROR, dir, 0, 0, NULL, "cannot read steps: %s", strerror(e));
	for (i = 0; names && names[i]; i++) {
		struct role_step s = {0};
		struct strbuf text = STRBUF_INIT;
		size_t len = strlen(names[i]);

		if (len < 4 || strcmp(names[i] + len - 3, ".sh")) {
			diag_add(dl, DIAG_ERROR, dir, 0, 0, "steps are NN-name.sh files",
				 "unexpected file '%s' in steps/", names[i]);
			continue;
		}
		s.path = xasprintf("%s/%s", dir, names[i]);
		if ((e = read_file(s.path, &text)) < 0) {
			diag_add(dl, DIAG_ERROR, s.path, 0, 0, NULL, "cannot read step: %s",
				 strerror(-e));
			free(s.path);
			continue;
		}
		if (strlen(text.buf) != text.len) {
			diag_add(dl, DIAG_ERROR, s.path, 0, 0, NULL, "step contains a NUL byte");
			free(s.path);
			strbuf_release(&text);
			continue;
		}
		s.name = xstrndup(names[i], len - 3);
		s.script = strbuf_detach(&text, &s.len);
		r->steps = xrealloc(r->steps, (r->nr_steps + 1) * sizeof(*r->steps));
		r->steps[r->nr_steps++] = s;
	}
	if (!r->nr_steps && !e)
		diag_add(dl, DIAG_ERROR, dir, 0, 0, "add at least one steps/NN-name.sh",
			 "role '%s' has no steps", r->name);
	else if (e == ENOENT)
		diag_add(dl, DIAG_ERROR, dir, 0, 0, "add at least one steps/NN-name.sh",
			 "role '%s' has no steps/ folder", r->name);
	strv_free(names);
	free(dir);
}

static bool declared(const struct role *r, const char *name)
{
	size_t i, k, len;

	for (k = 0; standard_roots[k]; k++) {
		len = strlen(standard_roots[k]);
		if (!strncmp(name, standard_roots[k], len) && (name[len] == '.' || !name[len]))
			return true;
	}
	for (i = 0; r->vars && r->vars[i]; i++) {
		len = strlen(r->vars[i]);
		if (!strncmp(name, r->vars[i], len) && (name[len] == '.' || !name[len]))
			return true;
	}
	return false;
}

static void load_templates(struct role *r, struct diag_list *dl)
{
	size_t i, j;

	for (i = 0; i < r->nr_templates; i++) {
		struct role_template *t = &r->templates[i];
		struct strbuf text = STRBUF_INIT;
		struct error err = {0};
		char **names = NULL;
		size_t nr = 0;
		int e;

		if ((e = read_file(t->path, &text)) < 0) {
			diag_add(dl, DIAG_ERROR, t->path, 0, 0, NULL, "cannot read template: %s",
				 strerror(-e));
			continue;
		}
		if (template_parse(&t->tmpl, t->path, text.buf, text.len, &err) < 0) {
			/* err.msg is already "PATH:LINE:COL: message". */
			diag_add(dl, DIAG_ERROR, NULL, 0, 0, NULL, "%s", err.msg);
			strbuf_release(&text);
			continue;
		}
		strbuf_release(&text);
		template_names(t->tmpl, &names, &nr);
		for (j = 0; j < nr; j++) {
			if (!declared(r, names[j]))
				diag_add(dl, DIAG_ERROR, t->path, 0, 0,
					 "declare it in the role's 'vars' list",
					 "template uses '%s', which role '%s' does not declare",
					 names[j], r->name);
			free(names[j]);
		}
		free(names);
		if (t->before) {
			bool found = false;
			for (j = 0; j < r->nr_steps; j++)
				if (!strcmp(r->steps[j].name, t->before))
					found = true;
			if (!found)
				diag_add(dl, DIAG_ERROR, t->path, 0, 0, NULL,
					 "'before: %s' names no step of role '%s'", t->before,
					 r->name);
		}
	}
}

/*
 * The `images` entries: their templates use only what the role's files
 * may (plus values, chart and subcharts with a `chart`), a manifest or
 * values template is one of the role's.
 */
static void check_images(struct role *r, struct diag_list *dl)
{
	char *yaml = xasprintf("%s/role.yaml", r->dir);
	size_t i, j, k;

	if (r->chart_values) {
		bool found = false;
		for (k = 0; k < r->nr_templates; k++)
			found = found || !strcmp(r->templates[k].src, r->chart_values);
		if (!found)
			diag_add(dl, DIAG_ERROR, yaml, 0, 0,
				 "name one of the role's 'templates' (src)",
				 "chart 'values: %s' is not a template of role '%s'",
				 r->chart_values, r->name);
	}
	for (i = 0; i < r->nr_images; i++) {
		const struct role_image *im = &r->images[i];
		char **names = NULL;
		size_t nr = 0;

		if (im->manifest) {
			bool found = false;
			for (k = 0; k < r->nr_templates; k++)
				found = found || !strcmp(r->templates[k].src, im->manifest);
			if (!found)
				diag_add(dl, DIAG_ERROR, yaml, im->line, 0,
					 "name one of the role's 'templates' (src)",
					 "'manifest: %s' is not a template of role '%s'",
					 im->manifest, r->name);
			continue;
		}
		template_names(im->tmpl, &names, &nr);
		for (j = 0; j < nr; j++) {
			const char *n = names[j];
			bool chartish = !strncmp(n, "values", 6) || !strncmp(n, "chart", 5) ||
					!strncmp(n, "subcharts", 9);
			if (!(declared(r, n) || (r->chart_artifact && chartish)))
				diag_add(dl, DIAG_ERROR, yaml, im->line, 0,
					 r->chart_artifact
					     ? "declare it in the role's 'vars' list"
					     : "declare it in 'vars', or give the role a 'chart'",
					 "image ref uses '%s', which role '%s' does not declare", n,
					 r->name);
			free(names[j]);
		}
		free(names);
	}
	free(yaml);
}

static void role_release(struct role *r)
{
	size_t i;

	free(r->name);
	free(r->dir);
	free(r->description);
	strv_free(r->depends_on);
	strv_free(r->wait_for);
	strv_free(r->after);
	strv_free(r->vars);
	for (i = 0; i < r->nr_templates; i++) {
		free(r->templates[i].src);
		free(r->templates[i].path);
		free(r->templates[i].dest);
		free(r->templates[i].owner);
		free(r->templates[i].before);
		template_free(r->templates[i].tmpl);
	}
	free(r->templates);
	for (i = 0; i < r->nr_artifacts; i++) {
		free(r->artifacts[i].name);
		free(r->artifacts[i].dest);
		free(r->artifacts[i].owner);
		free(r->artifacts[i].before);
		free(r->artifacts[i].arch);
		free(r->artifacts[i].chart_version);
	}
	free(r->artifacts);
	for (i = 0; i < r->nr_hands; i++) {
		free(r->hands[i].name);
		strv_free(r->hands[i].labels);
	}
	free(r->hands);
	for (i = 0; i < r->nr_fetches; i++) {
		free(r->fetches[i].name);
		free(r->fetches[i].path);
	}
	free(r->fetches);
	for (i = 0; i < r->nr_steps; i++) {
		free(r->steps[i].name);
		free(r->steps[i].path);
		free(r->steps[i].script);
	}
	free(r->steps);
	for (i = 0; i < r->nr_images; i++) {
		free(r->images[i].ref);
		free(r->images[i].manifest);
		template_free(r->images[i].tmpl);
	}
	free(r->images);
	free(r->chart_artifact);
	free(r->chart_values);
	strv_free(r->pulls);
}

/* The columns of roles/kubernetes.yaml; every row must have each. */
static const char *const kube_columns[] = {"pause_image",	   "etcd_image",  "coredns_image",
					   "apt_key_fingerprint",  "kubeadm_api", "containerd_min",
					   "containerd_preferred", "cgroup",	  "patch",
					   "end_of_life",	   "helm",	  NULL};
#define KUBE_COLUMNS_HINT                                                                          \
	"columns: pause_image, etcd_image, coredns_image, apt_key_fingerprint, kubeadm_api, "      \
	"containerd_min, containerd_preferred, cgroup, patch, end_of_life, helm"

static bool kube_column_known(const char *name)
{
	size_t c;

	for (c = 0; kube_columns[c]; c++)
		if (!strcmp(name, kube_columns[c]))
			return true;
	return false;
}

/*
 * A role that declares kube.COLUMN in `vars` needs the roles folder's
 * kubernetes.yaml, and COLUMN among its columns: said at load time, at the
 * declaration, not as an undefined value when a template is rendered on a
 * node.
 */
static void check_kube_var(struct schema *l, const struct kube_matrix *m, const yaml_node_t *item)
{
	const char *s = item ? scalar(item) : NULL;

	if (!s || strncmp(s, "kube", 4) || (s[4] != '.' && s[4]))
		return;
	if (!m->nr) {
		schema_error(
		    l, item,
		    "put the table of Kubernetes minors in the roles folder (provision's own "
		    "roles/kubernetes.yaml; roles/README.md)",
		    "'%s' comes from %s, which is missing or has no minors", s, m->path);
		return;
	}
	if (!s[4]) {
		schema_error(l, item, "name the column: kube.pause_image",
			     "'kube' alone: declare the columns the role uses");
		return;
	}
	if (!kube_column_known(s + 5))
		schema_error(l, item, KUBE_COLUMNS_HINT, "'%s': %s has no column '%s'", s, m->path,
			     s + 5);
}

const struct kube_minor *kube_matrix_find(const struct kube_matrix *m, const char *version)
{
	const char *dot1 = version ? strchr(version, '.') : NULL;
	const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	size_t len = dot2 ? (size_t)(dot2 - version) : version ? strlen(version) : 0;
	size_t i;

	for (i = 0; version && i < m->nr; i++)
		if (strlen(m->rows[i].minor) == len && !strncmp(m->rows[i].minor, version, len))
			return &m->rows[i];
	return NULL;
}

const char *kube_minor_get(const struct kube_minor *row, const char *name)
{
	size_t j;

	for (j = 0; row && j < row->nr; j++)
		if (!strcmp(row->keys[j], name))
			return row->vals[j];
	return NULL;
}

char *kube_matrix_minors(const struct kube_matrix *m)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	for (i = 0; i < m->nr; i++)
		strbuf_addf(&sb, "%s%s", i ? ", " : "", m->rows[i].minor);
	return strbuf_detach(&sb, NULL);
}

/*
 * The next range of a helm column ("3.19-3.22, 4.0-4.3": MAJOR.A-MAJOR.B
 * with A <= B, or MAJOR.A, ", "-separated) at *P: 1 and *P past it (and
 * its separator), 0 at the end, -1 where the text is no such list.
 */
static int helm_range_next(const char **p, unsigned *major, unsigned *lo, unsigned *hi)
{
	unsigned bm;
	int used = 0;

	if (!**p)
		return 0;
	if (sscanf(*p, "%u.%u-%u.%u%n", major, lo, &bm, hi, &used) != 4 || bm != *major ||
	    *lo > *hi) {
		used = 0;
		if (sscanf(*p, "%u.%u%n", major, lo, &used) != 2)
			return -1;
		*hi = *lo;
	}
	*p += used;
	if (!**p)
		return 1;
	if (strncmp(*p, ", ", 2) || !(*p)[2])
		return -1;
	*p += 2;
	return 1;
}

int kube_helm_skew(const char *ranges, const char *helm_version)
{
	unsigned hm, hn, major, lo, hi, hi_major = 0;
	const char *p = ranges;
	bool any = false;
	int k;

	if (!ranges || !helm_version || sscanf(helm_version, "%u.%u", &hm, &hn) != 2)
		return -1;
	while ((k = helm_range_next(&p, &major, &lo, &hi)) > 0) {
		if (hm == major)
			return hn < lo ? -1 : hn > hi ? 1 : 0;
		if (major > hi_major)
			hi_major = major;
		any = true;
	}
	/* no range of Helm's major: a major after every listed one is newer */
	return k == 0 && any && hm > hi_major ? 1 : -1;
}

bool kube_helm_supported(const char *ranges, const char *helm_version)
{
	return kube_helm_skew(ranges, helm_version) == 0;
}

/* A helm column that is a list of ranges (helm_range_next), not empty. */
static bool helm_ranges_ok(const char *s)
{
	unsigned major, lo, hi;
	int k, n = 0;

	while ((k = helm_range_next(&s, &major, &lo, &hi)) > 0)
		n++;
	return k == 0 && n > 0;
}

/* The X.Y.Z of a Helm release archive's URL (.../helm-vX.Y.Z-linux-ARCH.tar.gz); NULL: none. */
static char *helm_url_version(const char *url)
{
	const char *v = url ? strstr(url, "/helm-v") : NULL;
	size_t len;

	if (!v)
		return NULL;
	v += 7;
	len = strspn(v, "0123456789.");
	while (len && v[len - 1] == '.')
		len--;
	return len ? xstrndup(v, len) : NULL;
}

char *role_set_helm_version(const struct role_set *rs, const struct inventory *inv,
			    const struct node *n)
{
	const struct role *r = role_set_find(rs, "helm");
	size_t i;

	for (i = 0; r && n && i < r->nr_artifacts; i++) {
		const struct role_artifact *a = &r->artifacts[i];
		const struct artifact *m;
		char *v;

		if (!role_artifact_for(a, inv, n) || !(m = artifact_find(&rs->artifacts, a->name)))
			continue;
		if ((v = helm_url_version(m->url)))
			return v;
	}
	return NULL;
}

static void kube_row(struct schema *l, struct kube_matrix *m, const yaml_node_t *k,
		     const yaml_node_t *v)
{
	const char *minor = scalar(k);
	struct kube_minor *row;
	yaml_node_pair_t *p;
	yaml_node_t *ck, *cv;
	size_t c, j;

	if (!minor || !*minor || strspn(minor, "0123456789.") != strlen(minor) ||
	    !strchr(minor, '.') || strchr(strchr(minor, '.') + 1, '.')) {
		schema_error(l, k, "a minor is \"MAJOR.MINOR\", e.g. \"1.30\"",
			     "'%s' is not a Kubernetes minor", minor ? minor : "(not a string)");
		return;
	}
	if (!v || v->type != YAML_MAPPING_NODE) {
		schema_error(l, v ? v : k, NULL, "minor %s: must be a mapping of columns", minor);
		return;
	}
	for (j = 0; j < m->nr; j++)
		if (!strcmp(m->rows[j].minor, minor))
			schema_error(l, k, NULL, "minor %s is listed twice", minor);
	m->rows = xrealloc(m->rows, (m->nr + 1) * sizeof(*m->rows));
	row = &m->rows[m->nr++];
	memset(row, 0, sizeof(*row));
	row->minor = xstrdup(minor);
	p = NULL;
	while (schema_next_pair(l, v, &p, &ck, &cv)) {
		const char *key = scalar(ck), *val;

		if (!key || !kube_column_known(key)) {
			schema_error(l, ck, KUBE_COLUMNS_HINT, "minor %s: unknown column '%s'",
				     minor, key ? key : "(not a string)");
			continue;
		}
		if (!(val = schema_nonempty(l, cv, key)))
			continue;
		if (!strcmp(key, "helm") && !helm_ranges_ok(val)) {
			schema_error(l, cv, "Helm minors as \"3.19-3.22, 4.0-4.3\"",
				     "minor %s: helm '%s' is not a list of Helm minor ranges",
				     minor, val);
			continue;
		}
		strv_push(&row->keys, key);
		strv_push(&row->vals, val);
		row->nr++;
	}
	for (c = 0; kube_columns[c]; c++)
		if (!kube_minor_get(row, kube_columns[c]))
			schema_error(l, k, NULL, "minor %s: missing '%s'", minor, kube_columns[c]);
}

static const char *const kube_keys[] = {"default", "minors", NULL};

/* roles/kubernetes.yaml: `minors:` mapping "1.30" to its columns.  Absent: empty. */
static void load_kube_matrix(struct kube_matrix *m, const char *dir, struct diag_list *dl)
{
	struct strbuf text = STRBUF_INIT;
	struct schema l;
	yaml_node_t *root, *k, *v;
	yaml_node_pair_t *p;
	int e;

	memset(m, 0, sizeof(*m));
	m->path = xasprintf("%s/kubernetes.yaml", dir);
	if ((e = read_file(m->path, &text)) < 0) {
		if (e != -ENOENT)
			diag_add(dl, DIAG_ERROR, m->path, 0, 0, NULL, "cannot read it: %s",
				 strerror(-e));
		return;
	}
	if (schema_load(&l, m->path, text.buf, text.len, dl) < 0 ||
	    schema_one_document(&l, "kubernetes.yaml") < 0)
		goto out;
	root = schema_root(&l);
	if (!root || root->type != YAML_MAPPING_NODE) {
		schema_error(&l, root, "minors: {\"1.30\": {pause_image: IMAGE}}",
			     "must be a mapping");
		goto out;
	}
	p = NULL;
	while (schema_next_pair(&l, root, &p, &k, &v)) {
		yaml_node_pair_t *q;

		if (scalar(k) && !strcmp(scalar(k), "default")) {
			const char *d = schema_nonempty(&l, v, "default");
			if (d) {
				free(m->default_version);
				m->default_version = xstrdup(d);
			}
			continue;
		}
		if (!scalar(k) || strcmp(scalar(k), "minors")) {
			unknown_key(&l, k, "kubernetes.yaml", kube_keys);
			continue;
		}
		if (!v || v->type != YAML_MAPPING_NODE) {
			schema_error(&l, v, NULL, "'minors' must be a mapping of minors");
			continue;
		}
		for (q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++)
			kube_row(&l, m, schema_node(&l, q->key), schema_node(&l, q->value));
	}
	if (m->default_version && m->nr && !kube_matrix_find(m, m->default_version))
		diag_add(dl, DIAG_ERROR, m->path, 0, 0, "give default a version of a minor in the table",
			 "default %s: its minor is not in the table", m->default_version);
out:
	schema_release(&l);
	strbuf_release(&text);
}

static void kube_matrix_release(struct kube_matrix *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++) {
		free(m->rows[i].minor);
		strv_free(m->rows[i].keys);
		strv_free(m->rows[i].vals);
	}
	free(m->rows);
	free(m->path);
	free(m->default_version);
	memset(m, 0, sizeof(*m));
}

void role_set_release(struct role_set *rs)
{
	size_t i;

	for (i = 0; i < rs->nr; i++)
		role_release(&rs->roles[i]);
	free(rs->roles);
	free(rs->dir);
	free(rs->lib);
	artifact_manifest_release(&rs->artifacts);
	kube_matrix_release(&rs->kube);
	memset(rs, 0, sizeof(*rs));
}

const struct role *role_set_find(const struct role_set *rs, const char *name)
{
	size_t i;

	for (i = 0; i < rs->nr; i++)
		if (!strcmp(rs->roles[i].name, name))
			return &rs->roles[i];
	return NULL;
}

/*
 * Order: by phase, then so that every role comes after what it depends on
 * (a depth-first topological sort), ties by name.  Reports unknown
 * dependencies and cycles.
 */
/* A wait_for or after entry names a role of the same or an earlier phase. */
static void check_barrier(const struct role_set *rs, const struct role *r, const char *verb,
			  const char *name, const char *yaml, struct diag_list *dl)
{
	const struct role *w = role_set_find(rs, name);

	if (!w)
		diag_add(dl, DIAG_ERROR, yaml, 0, 0, NULL,
			 "role '%s' %s '%s', which does not exist", r->name, verb, name);
	else if (w->phase != PHASE_NONE && r->phase != PHASE_NONE && w->phase > r->phase)
		diag_add(dl, DIAG_ERROR, yaml, 0, 0, NULL,
			 "role '%s' (phase %s) %s '%s' of the later phase %s", r->name,
			 phase_name(r->phase), verb, w->name, phase_name(w->phase));
}

static void order_roles(struct role_set *rs, struct diag_list *dl)
{
	struct role *sorted = xcalloc(rs->nr ? rs->nr : 1, sizeof(*sorted));
	int *mark = xcalloc(rs->nr ? rs->nr : 1, sizeof(*mark)); /* 0 new, 1 visiting, 2 done */
	size_t n = 0, i, p, depth;
	size_t stack[256];

	for (i = 0; i < rs->nr; i++) {
		struct role *r = &rs->roles[i];
		char *yaml = xasprintf("%s/role.yaml", r->dir);
		size_t j;
		for (j = 0; r->depends_on && r->depends_on[j]; j++) {
			const struct role *d = role_set_find(rs, r->depends_on[j]);
			if (!d)
				diag_add(dl, DIAG_ERROR, yaml, 0, 0, NULL,
					 "role '%s' depends on '%s', which does not exist", r->name,
					 r->depends_on[j]);
			else if (d->phase != PHASE_NONE && r->phase != PHASE_NONE &&
				 d->phase > r->phase)
				diag_add(
				    dl, DIAG_ERROR, yaml, 0, 0, NULL,
				    "role '%s' (phase %s) depends on '%s' of the later phase %s",
				    r->name, phase_name(r->phase), d->name, phase_name(d->phase));
		}
		for (j = 0; r->wait_for && r->wait_for[j]; j++)
			check_barrier(rs, r, "waits for", r->wait_for[j], yaml, dl);
		for (j = 0; r->after && r->after[j]; j++)
			check_barrier(rs, r, "comes after", r->after[j], yaml, dl);
		free(yaml);
	}
	for (p = 0; role_phases[p]; p++) {
		for (i = 0; i < rs->nr; i++) {
			if (mark[i] || rs->roles[i].phase != (enum phase)p)
				continue;
			/* Iterative DFS: emit a role once all its dependencies are emitted. */
			depth = 0;
			stack[depth++] = i;
			mark[i] = 1;
			while (depth) {
				struct role *r = &rs->roles[stack[depth - 1]];
				size_t j, next = (size_t)-1, nd = 0, nw = 0, na = 0;
				/* A role comes after what it depends on, waits for or comes after.
				 */
				while (r->depends_on && r->depends_on[nd])
					nd++;
				while (r->wait_for && r->wait_for[nw])
					nw++;
				while (r->after && r->after[na])
					na++;
				for (j = 0; j < nd + nw + na; j++) {
					const char *dn = j < nd	       ? r->depends_on[j]
							 : j < nd + nw ? r->wait_for[j - nd]
								       : r->after[j - nd - nw];
					const struct role *d = role_set_find(rs, dn);
					size_t di;
					if (!d)
						continue;
					di = (size_t)(d - rs->roles);
					if (mark[di] == 1) {
						char *yaml = xasprintf("%s/role.yaml", r->dir);
						diag_add(dl, DIAG_ERROR, yaml, 0, 0, NULL,
							 "dependency cycle: '%s' and '%s' depend "
							 "on each other",
							 r->name, d->name);
						free(yaml);
					} else if (!mark[di]) {
						next = di;
						break;
					}
				}
				if (next != (size_t)-1 && depth < ARRAY_SIZE(stack)) {
					mark[next] = 1;
					stack[depth++] = next;
					continue;
				}
				mark[stack[depth - 1]] = 2;
				sorted[n++] = rs->roles[stack[--depth]];
			}
		}
	}
	/* Roles with no valid phase keep their place at the end (errors already reported). */
	for (i = 0; i < rs->nr; i++)
		if (!mark[i])
			sorted[n++] = rs->roles[i];
	free(rs->roles);
	rs->roles = sorted;
	free(mark);
}

int role_set_load(struct role_set *rs, const char *dir, struct diag_list *dl)
{
	size_t errors_before = dl->errors, i;
	char **names;
	char *lib_path;
	struct strbuf lib = STRBUF_INIT;
	int e;

	memset(rs, 0, sizeof(*rs));
	rs->dir = xstrdup(dir);
	names = list_dir(dir, &e);
	if (e) {
		diag_add(dl, DIAG_ERROR, dir, 0, 0, "give the roles folder with --roles DIR",
			 "cannot read roles: %s", strerror(e));
		return -1;
	}
	lib_path = xasprintf("%s/lib.sh", dir);
	if ((e = read_file(lib_path, &lib)) < 0)
		diag_add(dl, DIAG_ERROR, lib_path, 0, 0, NULL, "cannot read the step helpers: %s",
			 strerror(-e));
	rs->lib = strbuf_detach(&lib, &rs->lib_len);
	free(lib_path);
	/* Before the roles: their `vars` are checked against its columns. */
	load_kube_matrix(&rs->kube, dir, dl);
	for (i = 0; names && names[i]; i++) {
		char *rdir = xasprintf("%s/%s", dir, names[i]);
		char *yaml;
		struct role *r;

		if (!is_dir(rdir)) {
			free(rdir);
			continue;
		}
		rs->roles = xrealloc(rs->roles, (rs->nr + 1) * sizeof(*rs->roles));
		r = &rs->roles[rs->nr++];
		memset(r, 0, sizeof(*r));
		r->phase = PHASE_NONE;
		r->name = xstrdup(names[i]);
		r->dir = rdir;
		yaml = xasprintf("%s/role.yaml", rdir);
		load_role_yaml(r, yaml, &rs->kube, dl);
		free(yaml);
		load_steps(r, dl);
		load_templates(r, dl);
		check_images(r, dl);
	}
	strv_free(names);
	for (i = 0; i < rs->nr; i++) {
		const struct role *r = &rs->roles[i];
		size_t j;
		for (j = 0; r->pulls && r->pulls[j]; j++)
			if (!role_set_find(rs, r->pulls[j])) {
				char *yaml = xasprintf("%s/role.yaml", r->dir);
				diag_add(dl, DIAG_ERROR, yaml, 0, 0, NULL,
					 "role '%s' pulls the images of '%s', which does not exist",
					 r->name, r->pulls[j]);
				free(yaml);
			}
	}
	check_artifacts(rs, dl);
	check_fetches(rs, dl);
	order_roles(rs, dl);
	if (dl->errors > errors_before) {
		role_set_release(rs);
		return -1;
	}
	return 0;
}

bool role_applies(const struct role *r, const struct inventory *inv, const struct node *n,
		  bool has_gpu)
{
	if (r->applies_to && !(r->applies_to & n->roles))
		return false;
	if ((r->when & ROLE_WHEN_GPU) && !has_gpu)
		return false;
	if ((r->when & ROLE_WHEN_NO_GPU) && has_gpu)
		return false;
	if ((r->when & ROLE_WHEN_NFS) && !inv->nfs.server)
		return false;
	if ((r->when & ROLE_WHEN_NOT_NFS_SERVER) && (n->roles & NODE_ROLE_NFS_SERVER))
		return false;
	if ((r->when & ROLE_WHEN_HUB) && !inv->hub.enabled)
		return false;
	if ((r->when & ROLE_WHEN_CONTAINERD_RELEASE) && !inv->cluster.containerd_release)
		return false;
	if ((r->when & ROLE_WHEN_API_VIP) && inv->cluster.api_endpoint.kind != API_ENDPOINT_VIP)
		return false;
	if ((r->when & ROLE_WHEN_API_ENDPOINT) && inv->cluster.api_endpoint.kind == API_ENDPOINT_NONE)
		return false;
	if (r->when & ROLE_WHEN_HUB_NODE) {
		const struct node *h = inventory_hub_node(inv);

		if (!h || strcmp(h->name, n->name))
			return false;
	}
	if (r->when & (ROLE_WHEN_FIRST_CONTROL_PLANE | ROLE_WHEN_OTHER_CONTROL_PLANE)) {
		const struct node *first = inventory_control_plane(inv);
		bool is_first = first && !strcmp(first->name, n->name);

		if ((r->when & ROLE_WHEN_FIRST_CONTROL_PLANE) && !is_first)
			return false;
		if ((r->when & ROLE_WHEN_OTHER_CONTROL_PLANE) &&
		    (!(n->roles & NODE_ROLE_CONTROL_PLANE) || is_first))
			return false;
	}
	return true;
}

bool role_may_apply(const struct role *r, const struct inventory *inv, const struct node *n)
{
	return role_applies(r, inv, n, true) || role_applies(r, inv, n, false);
}

/* An artifact with a chart_version: the inventory's jupyterhub.chart_version, or the default. */
static bool chart_picked(const struct role_artifact *a, const struct inventory *inv)
{
	if (!a->chart_version)
		return true;
	return inv->hub.chart_version ? !strcmp(a->chart_version, inv->hub.chart_version)
				      : a->chart_default;
}

/* Whether artifact A serves the cluster's Kubernetes minor (its `kube:` range). */
static bool kube_picked(const struct role_artifact *a, const struct inventory *inv)
{
	unsigned k = kube_minor_key(inv->cluster.kubernetes_version);

	return !a->kube_lo || (k >= a->kube_lo && k <= a->kube_hi);
}

bool role_artifact_for(const struct role_artifact *a, const struct inventory *inv,
		       const struct node *n)
{
	if (a->helm && a->helm != inv->cluster.helm_major)
		return false;
	if (!kube_picked(a, inv))
		return false;
	if (!chart_picked(a, inv))
		return false;
	return !a->arch || !strcmp(a->arch, n->arch ? n->arch : "amd64");
}

static const struct role_artifact *role_artifact_named(const struct role *r, const char *name)
{
	size_t i;

	for (i = 0; name && i < r->nr_artifacts; i++)
		if (!strcmp(r->artifacts[i].name, name))
			return &r->artifacts[i];
	return NULL;
}

const char *role_chart_artifact(const struct role *r, const struct inventory *inv)
{
	const struct role_artifact *c = role_artifact_named(r, r->chart_artifact);
	size_t i;

	if (!c || !c->chart_version)
		return r->chart_artifact;
	for (i = 0; i < r->nr_artifacts; i++) {
		const struct role_artifact *a = &r->artifacts[i];
		if (a->chart_version && !strcmp(a->dest, c->dest) && chart_picked(a, inv))
			return a->name;
	}
	return r->chart_artifact;
}

int role_set_resolve_hub_chart(const struct role_set *rs, struct inventory *inv,
			       struct diag_list *dl)
{
	const char *want = inv->hub.chart_version, *found = NULL;
	struct strbuf offered = STRBUF_INIT;
	size_t i, j;

	free(inv->hub.chart_resolved);
	inv->hub.chart_resolved = NULL;
	for (i = 0; i < rs->nr; i++) {
		const struct role *r = &rs->roles[i];
		if (!(r->when & ROLE_WHEN_HUB))
			continue;
		for (j = 0; j < r->nr_artifacts; j++) {
			const struct role_artifact *a = &r->artifacts[j];
			if (!a->chart_version)
				continue;
			strbuf_addf(&offered, "%s%s%s", offered.len ? ", " : "", a->chart_version,
				    a->chart_default ? " (the default)" : "");
			if (want ? !strcmp(want, a->chart_version) : a->chart_default)
				found = a->chart_version;
		}
	}
	if (found || !offered.len) {
		/* no role offers versions: the inventory's pin, checked on the node */
		inv->hub.chart_resolved = xstrdup(found ? found : want ? want : "");
		strbuf_release(&offered);
		if (!inv->hub.chart_resolved[0]) {
			free(inv->hub.chart_resolved);
			inv->hub.chart_resolved = NULL;
		}
		return 0;
	}
	if (want)
		diag_add(dl, DIAG_ERROR, inv->path, inv->hub.chart_version_pos.line,
			 inv->hub.chart_version_pos.col,
			 "pin one the jupyterhub role offers, or add that chart to roles/artifacts.yaml "
			 "and the role's artifacts",
			 "jupyterhub.chart_version %s: no chart of that version is offered (offered: %s)",
			 want, offered.buf);
	else
		diag_add(dl, DIAG_ERROR, inv->path, 0, 0,
			 "mark one chart artifact of the jupyterhub role 'default: true'",
			 "the roles offer the jupyterhub charts %s but none is the default",
			 offered.buf);
	strbuf_release(&offered);
	return -1;
}

/* "Helm 4.3.0 for 1.34-1.37" of a helm artifact, once per version (the arches share it). */
static void helm_offered(struct strbuf *sb, const struct role_set *rs, const struct role_artifact *a)
{
	const struct artifact *m = artifact_find(&rs->artifacts, a->name);
	char *v = m ? helm_url_version(m->url) : NULL;
	char range[32], *item;

	if (!v)
		return;
	if (!a->kube_lo)
		snprintf(range, sizeof(range), "every minor");
	else if (a->kube_lo == a->kube_hi)
		snprintf(range, sizeof(range), "%u.%u", a->kube_lo / 1000, a->kube_lo % 1000);
	else
		snprintf(range, sizeof(range), "%u.%u-%u.%u", a->kube_lo / 1000, a->kube_lo % 1000,
			 a->kube_hi / 1000, a->kube_hi % 1000);
	item = xasprintf("Helm %s for %s", v, range);
	if (!sb->len || !strstr(sb->buf, item))
		strbuf_addf(sb, "%s%s", sb->len ? ", " : "", item);
	free(item);
	free(v);
}

int role_set_resolve_helm(const struct role_set *rs, struct inventory *inv, struct diag_list *dl)
{
	struct cluster_settings *c = &inv->cluster;
	struct strbuf offered = STRBUF_INIT;
	bool has[5] = {false}, any = false;
	int want;
	size_t i, j;

	if (c->helm_auto)
		c->helm_major = 0;
	/* every role's artifacts pinned for a Helm major (roles/helm's archives) */
	for (j = 0; j < rs->nr; j++) {
		const struct role *r = &rs->roles[j];

		for (i = 0; i < r->nr_artifacts; i++) {
			const struct role_artifact *a = &r->artifacts[i];

			if (a->helm < 3 || a->helm > 4)
				continue;
			any = true;
			helm_offered(&offered, rs, a);
			if (kube_picked(a, inv))
				has[a->helm] = true;
		}
	}
	want = c->helm_major;
	if (!want) {
		c->helm_auto = true;
		want = has[4] || !has[3] ? 4 : 3;
	}
	if (has[want] || !any) {
		c->helm_major = want;
		strbuf_release(&offered);
		return 0;
	}
	if (!c->helm_auto)
		diag_add(dl, DIAG_ERROR, inv->path, c->helm_pos.line, c->helm_pos.col,
			 has[7 - want] ? "remove the key (provision then takes the newest pinned Helm "
					 "of the cluster's minor) or write the other major: a Helm "
					 "release supports the Kubernetes minor it was built against "
					 "and the three before it (helm.sh/docs/topics/version_skew)"
				       : "give kubernetes_version a minor a pinned Helm supports, or pin "
					 "a Helm of that minor in roles/artifacts.yaml and roles/helm "
					 "(its kube: range)",
			 "cluster.helm %d: no Helm %d is pinned for Kubernetes %s (roles/helm: %s)",
			 want, want, c->kubernetes_version, offered.buf);
	else
		diag_add(dl, DIAG_ERROR, inv->path, c->kubernetes_version_pos.line,
			 c->kubernetes_version_pos.col,
			 "give kubernetes_version a minor a pinned Helm supports, or pin a Helm of "
			 "that minor in roles/artifacts.yaml and roles/helm (its kube: range): a "
			 "Helm release supports the Kubernetes minor it was built against and the "
			 "three before it (helm.sh/docs/topics/version_skew)",
			 "cluster.kubernetes_version %s: no pinned Helm supports its minor (roles/helm: "
			 "%s)",
			 c->kubernetes_version, offered.buf);
	strbuf_release(&offered);
	return -1;
}

static void sanitized(char *out, size_t size, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < size; i++)
		out[i] = isalnum((unsigned char)s[i]) || s[i] == '_' ? s[i] : '_';
	out[i] = '\0';
}

bool role_hand_match(const struct role_hand *h, const char *name, size_t len, const char *sender)
{
	const char *open = strchr(h->name, '{');
	size_t pre, post, i;
	const char *tail;

	if (!open)
		return strlen(h->name) == len && !memcmp(h->name, name, len);
	pre = (size_t)(open - h->name);
	tail = strchr(open, '}') + 1;
	post = strlen(tail);
	if (len < pre + post || memcmp(name, h->name, pre) || memcmp(name + len - post, tail, post))
		return false;
	name += pre;
	len -= pre + post;
	if (open[1] == 's') {
		char self[128];
		sanitized(self, sizeof(self), sender);
		return strlen(self) == len && !memcmp(self, name, len);
	}
	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (!isdigit((unsigned char)name[i]))
			return false;
	return true;
}

static bool listed(char **v, const char *name)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

bool role_reads_from(const struct role *r, const struct role *p)
{
	return r == p || listed(r->depends_on, p->name) || listed(r->wait_for, p->name) ||
	       listed(r->after, p->name);
}
