/*
 * inventory: see inventory.h.
 *
 * The file is loaded with the schema reader (schema.h: libyaml's document
 * API, one tree with marks), then walked section by section.  Every check
 * reports through diag_add() and carries on, so one run shows every
 * mistake; only a YAML syntax error stops the walk, because after one there
 * is no tree to walk.  Checks across
 * nodes (duplicates, the control plane, NFS, CIDRs) run after the walk and
 * skip what an earlier error already made unknowable, so that one mistake
 * is reported once and not again as a cascade.
 */
#include "inventory.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hostlist.h"
#include "schema.h"
#include "util.h"

/* Larger than any inventory a person writes; stops a runaway file early. */
#define INVENTORY_MAX_BYTES (16u << 20)
#define INVENTORY_MAX_NODES HOSTLIST_MAX

/* Roles -------------------------------------------------------------------- */

static const char *const role_names[] = {"control-plane", "worker", "nfs-server"};

const char *node_role_name(enum node_role role)
{
	switch (role) {
	case NODE_ROLE_CONTROL_PLANE:
		return role_names[0];
	case NODE_ROLE_WORKER:
		return role_names[1];
	case NODE_ROLE_NFS_SERVER:
		return role_names[2];
	}
	return NULL;
}

unsigned node_role_parse(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(role_names); i++)
		if (!strcmp(name, role_names[i]))
			return 1u << i;
	return 0;
}

/* Parser state ------------------------------------------------------------- */

struct cidr {
	uint32_t net; /* host order, host bits clear */
	unsigned prefix;
	bool set;
};

struct parser {
	struct schema s; /* the file, its diag list and its YAML document */
	struct inventory *inv;
	char *base_dir; /* directory of the inventory, for relative paths; NULL: cwd */

	bool nodes_incomplete; /* some entry could not be turned into nodes */
	size_t expanded;       /* names the node entries expand to so far */
	bool names_incomplete; /* some entry's names are unknown */
	size_t errors_before;  /* errors in the diag list before this load */
	bool roles_incomplete; /* some node's roles could not be read */

	struct cidr pod, service, export;
	struct source_pos pod_pos, service_pos, export_pos, nodes_pos;
	bool have_nfs_section;
	struct source_pos nfs_pos, nfs_server_pos;
	bool hub_section;
	struct source_pos hub_pos, hub_node_pos;
	/* Every node name that expanded, with where it was written: duplicates are
	 * found even when another key of the entry was wrong. */
	struct seen_name {
		char *name;
		struct source_pos pos;
	} * names;
	size_t nr_names, alloc_names;
};

#define err_at(p, n, hint, ...)	    schema_error(&(p)->s, (n), (hint), __VA_ARGS__)
#define err_pos(p, pos, hint, ...)  schema_report(&(p)->s, DIAG_ERROR, (pos), (hint), __VA_ARGS__)
#define warn_pos(p, pos, hint, ...) schema_report(&(p)->s, DIAG_WARNING, (pos), (hint), __VA_ARGS__)

/* Syntax of values --------------------------------------------------------- */

static bool is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

/* RFC 1123 label: what Kubernetes accepts as a node name here. */
static bool dns_label(const char *s)
{
	size_t len = strlen(s), i;

	if (len == 0 || len > 63 || !is_alnum_lower(s[0]) || !is_alnum_lower(s[len - 1]))
		return false;
	for (i = 0; i < len; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-')
			return false;
	return true;
}

static const char dns_label_hint[] =
    "use lowercase letters, digits and '-', starting and ending with a letter or "
    "digit, at most 63 characters";

static void report_bad_label(struct parser *p, const yaml_node_t *n, const char *what,
			     const char *v)
{
	char *lower = xstrdup(v), *q;

	for (q = lower; *q; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	if (strcmp(lower, v) && dns_label(lower)) {
		char *hint = xasprintf("names are lowercase: did you mean '%s'?", lower);
		err_at(p, n, hint, "%s '%s' is not a valid DNS label", what, v);
		free(hint);
	} else {
		err_at(p, n, dns_label_hint, "%s '%s' is not a valid DNS label", what, v);
	}
	free(lower);
}

static bool host_name(const char *s)
{
	size_t len = strlen(s), i, label = 0;

	if (len == 0 || len > 253)
		return false;
	for (i = 0; i <= len; i++) {
		if (s[i] == '.' || s[i] == '\0') {
			if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!is_alnum(s[i]) && s[i] != '-')
			return false;
		label++;
	}
	return true;
}

static bool ipv4_parse(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*out = ntohl(a.s_addr);
	return true;
}

/* Report and return false when s is no host name or IP literal. */
static bool check_address(struct parser *p, const yaml_node_t *n, const char *s)
{
	struct in6_addr a6;
	uint32_t v4;

	if (ipv4_parse(s, &v4))
		return true;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, &a6) == 1)
			return true;
		err_at(p, n, NULL, "address '%s' is not a valid IPv6 address", s);
		return false;
	}
	if (strspn(s, "0123456789.") == strlen(s)) {
		err_at(p, n, "each of the four numbers is 0 to 255, without leading zeros",
		       "address '%s' is not a valid IPv4 address", s);
		return false;
	}
	if (!host_name(s)) {
		err_at(p, n,
		       "a host name is letters, digits, '-' and '.'; or write an IPv4 or IPv6 "
		       "address",
		       "address '%s' is not a valid host name or IP address", s);
		return false;
	}
	return true;
}

static uint32_t prefix_mask(unsigned prefix)
{
	return prefix ? ~(uint32_t)0 << (32 - prefix) : 0;
}

static void cidr_format(char *buf, size_t size, uint32_t net, unsigned prefix)
{
	snprintf(buf, size, "%u.%u.%u.%u/%u", net >> 24, (net >> 16) & 255, (net >> 8) & 255,
		 net & 255, prefix);
}

/* An IPv4 CIDR with its host bits clear; reports and returns false otherwise. */
static bool get_cidr(struct parser *p, const yaml_node_t *n, const char *key, struct cidr *c)
{
	const char *v = schema_text(&p->s, n, key), *slash;
	char addr[INET_ADDRSTRLEN], fixed[32], hint[64];
	size_t alen;
	uint32_t a = 0;
	long prefix = -1;
	bool ok;

	if (!v)
		return false;
	if (strchr(v, ':')) {
		err_at(p, n, "write an IPv4 network such as 10.244.0.0/16",
		       "'%s' %s: IPv6 networks are not supported yet", key, v);
		return false;
	}
	slash = strchr(v, '/');
	alen = slash ? (size_t)(slash - v) : 0;
	ok = slash && alen < sizeof(addr);
	if (ok) {
		memcpy(addr, v, alen);
		addr[alen] = '\0';
		ok = ipv4_parse(addr, &a) && strspn(slash + 1, "0123456789") == strlen(slash + 1) &&
		     schema_parse_decimal(slash + 1, &prefix) && prefix <= 32 &&
		     !(slash[1] == '0' && slash[2]);
	}
	if (!ok) {
		err_at(p, n, "write ADDRESS/PREFIX, such as 10.244.0.0/16",
		       "'%s' must be an IPv4 network in CIDR form, not '%s'", key, v);
		return false;
	}
	if (a & ~prefix_mask((unsigned)prefix)) {
		cidr_format(fixed, sizeof(fixed), a & prefix_mask((unsigned)prefix),
			    (unsigned)prefix);
		snprintf(hint, sizeof(hint), "did you mean %s?", fixed);
		err_at(p, n, hint, "'%s' %s has host bits set", key, v);
		return false;
	}
	*c = (struct cidr){a, (unsigned)prefix, true};
	return true;
}

static bool cidr_contains(const struct cidr *c, uint32_t a)
{
	return (a & prefix_mask(c->prefix)) == c->net;
}

static bool cidr_overlap(const struct cidr *a, const struct cidr *b)
{
	unsigned prefix = a->prefix < b->prefix ? a->prefix : b->prefix;

	return (a->net & prefix_mask(prefix)) == (b->net & prefix_mask(prefix));
}

/* X.Y.Z, each a decimal number without leading zeros. */
static bool exact_version(const char *s, long part[3])
{
	int i;

	for (i = 0; i < 3; i++) {
		size_t n = strspn(s, "0123456789");
		if (n == 0 || n > 6 || (n > 1 && s[0] == '0'))
			return false;
		part[i] = strtol(s, NULL, 10);
		s += n;
		if (i < 2 && *s++ != '.')
			return false;
	}
	return *s == '\0';
}

static bool url_ok(const char *v)
{
	const char *rest;

	if (!strncmp(v, "http://", 7))
		rest = v + 7;
	else if (!strncmp(v, "https://", 8))
		rest = v + 8;
	else
		return false;
	return *rest && *rest != '/' && !strpbrk(v, " \t");
}

/*
 * An OpenPGP v4 fingerprint: 40 hexadecimal digits, in groups or not (as
 * `gpg --show-keys` prints it); kept upper case without blanks.
 */
static bool get_fingerprint(struct parser *p, const yaml_node_t *n, const char *key, char **dst)
{
	const char *v = schema_text(&p->s, n, key), *s;
	char out[41];
	size_t k = 0;

	if (!v)
		return false;
	for (s = v; *s; s++) {
		if (*s == ' ')
			continue;
		if (!isxdigit((unsigned char)*s) || k == 40) {
			k = 41;
			break;
		}
		out[k++] = (char)toupper((unsigned char)*s);
	}
	if (k != 40) {
		err_at(p, n,
		       "the 40 hexadecimal digits of the mirror's signing key, as 'gpg --show-keys "
		       "KEYFILE' prints them",
		       "'%s' must be an OpenPGP fingerprint (40 hexadecimal digits), not '%s'", key,
		       v);
		return false;
	}
	out[40] = 0;
	free(*dst);
	*dst = xstrdup(out);
	return true;
}

static bool get_url(struct parser *p, const yaml_node_t *n, const char *key, const char *example,
		    char **dst)
{
	const char *v = schema_text(&p->s, n, key), *host, *at, *slash;

	if (!v)
		return false;
	if (!url_ok(v)) {
		char *hint = xasprintf("such as %s", example);
		err_at(p, n, hint, "'%s' must be an http:// or https:// URL, not '%s'", key, v);
		free(hint);
		return false;
	}
	host = strstr(v, "//") + 2;
	slash = strchr(host, '/');
	at = memchr(host, '@', slash ? (size_t)(slash - host) : strlen(host));
	if (at && memchr(host, ':', (size_t)(at - host))) {
		err_at(p, n, "keep secrets out of the inventory: it is recorded with every run",
		       "'%s' must not contain a password", key);
		return false;
	}
	free(*dst);
	*dst = xstrdup(v);
	return true;
}

/* A Kubernetes quantity such as 10Gi, 512Mi or 1.5G. */
static bool quantity(const char *s, bool *has_unit, bool *zero)
{
	static const char *const units[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
					    "k",  "M",	"G",  "T",  "P",  "E"};
	size_t n = strspn(s, "0123456789"), i;
	const char *q = s;

	if (n == 0)
		return false;
	*zero = strspn(s, "0") == n;
	q += n;
	if (*q == '.') {
		size_t f = strspn(q + 1, "0123456789");
		if (f == 0)
			return false;
		if (strspn(q + 1, "0") != f)
			*zero = false;
		q += f + 1;
	}
	*has_unit = *q != '\0';
	if (!*q)
		return true;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(q, units[i]))
			return true;
	return false;
}

static bool get_quantity(struct parser *p, const yaml_node_t *n, const char *key, char **dst)
{
	const char *v = schema_text(&p->s, n, key);
	bool unit = false, zero = false;

	if (!v)
		return false;
	if (!quantity(v, &unit, &zero)) {
		err_at(p, n, "write a size such as 10Gi or 512Mi",
		       "'%s' must be a Kubernetes quantity, not '%s'", key, v);
		return false;
	}
	if (!unit) {
		char hint[96];
		snprintf(hint, sizeof(hint), "did you mean %.40sGi?", v);
		err_at(p, n, hint, "'%s' %s has no unit and would mean %s bytes", key, v, v);
		return false;
	}
	if (zero) {
		err_at(p, n, NULL, "'%s' must be larger than zero", key);
		return false;
	}
	free(*dst);
	*dst = xstrdup(v);
	return true;
}

/* A path on this machine: ~/ is expanded, a relative one is taken from the inventory's directory.
 */
static bool get_local_path(struct parser *p, const yaml_node_t *n, const char *key, char **dst)
{
	const char *v = schema_text(&p->s, n, key);

	if (!v)
		return false;
	free(*dst);
	if (v[0] == '~')
		*dst = expand_home(v);
	else if (v[0] != '/' && p->base_dir)
		*dst = xasprintf("%s/%s", p->base_dir, v);
	else
		*dst = xstrdup(v);
	return true;
}

/* Sections ----------------------------------------------------------------- */

static char *current_user(void)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	const char *env;

	if (!getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &res) && res && res->pw_name[0])
		return xstrdup(res->pw_name);
	env = getenv("USER");
	return xstrdup(env && *env ? env : "root");
}

static void ssh_defaults(struct ssh_settings *s)
{
	*s = (struct ssh_settings){
	    .user = current_user(),
	    .port = 22,
	    .known_hosts = expand_home("~/.ssh/known_hosts"),
	    .host_keys = HOST_KEYS_STRICT,
	    .sudo = SUDO_AUTO,
	    .connect_timeout = 10,
	    .command_timeout = 600,
	    .keepalive = 15,
	};
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void ssh_copy(struct ssh_settings *dst, const struct ssh_settings *src)
{
	*dst = *src;
	dst->user = dup_or_null(src->user);
	dst->identity = dup_or_null(src->identity);
	dst->known_hosts = dup_or_null(src->known_hosts);
	dst->jump = dup_or_null(src->jump);
	dst->sudo_password_file = dup_or_null(src->sudo_password_file);
}

static void ssh_release(struct ssh_settings *s)
{
	free(s->user);
	free(s->identity);
	free(s->known_hosts);
	free(s->jump);
	free(s->sudo_password_file);
}

static bool user_name_ok(const char *s)
{
	size_t i;

	if (!*s || s[0] == '-' || strlen(s) > 32)
		return false;
	for (i = 0; s[i]; i++)
		if (!is_alnum(s[i]) && !strchr("._-$", s[i]))
			return false;
	return true;
}

static bool port_text_ok(const char *s)
{
	long n;

	return strspn(s, "0123456789") == strlen(s) && schema_parse_decimal(s, &n) && n >= 1 &&
	       n <= 65535;
}

/* "[user@]host[:port]", the host possibly a bracketed IPv6 literal. */
static bool jump_ok(const char *v)
{
	const char *at = strrchr(v, '@'), *host = at ? at + 1 : v;
	char buf[256];
	size_t len;
	struct in6_addr a6;

	if (at) {
		len = (size_t)(at - v);
		if (len == 0 || len >= sizeof(buf))
			return false;
		memcpy(buf, v, len);
		buf[len] = '\0';
		if (!user_name_ok(buf))
			return false;
	}
	if (host[0] == '[') {
		const char *end = strchr(host, ']');
		if (!end || (size_t)(end - host - 1) >= sizeof(buf))
			return false;
		len = (size_t)(end - host - 1);
		memcpy(buf, host + 1, len);
		buf[len] = '\0';
		if (inet_pton(AF_INET6, buf, &a6) != 1)
			return false;
		return end[1] == '\0' || (end[1] == ':' && port_text_ok(end + 2));
	}
	len = strcspn(host, ":");
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, host, len);
	buf[len] = '\0';
	if (!host_name(buf))
		return false;
	return host[len] == '\0' || port_text_ok(host + len + 1);
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

static char **strv_new(void)
{
	return xcalloc(1, sizeof(char *));
}

static char **strv_dup(char *const *v)
{
	size_t n = 0, i;
	char **out;

	while (v && v[n])
		n++;
	out = xcalloc(n + 1, sizeof(*out));
	for (i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

static const char *const ssh_keys[] = {
    "user",
    "port",
    "identity",
    "known_hosts",
    "host_keys",
    "sudo",
    "sudo_password_file",
    "jump",
    "connect_timeout",
    "command_timeout",
    "keepalive",
};
enum {
	SSH_USER,
	SSH_PORT,
	SSH_IDENTITY,
	SSH_KNOWN_HOSTS,
	SSH_HOST_KEYS,
	SSH_SUDO,
	SSH_SUDO_PASSWORD_FILE,
	SSH_JUMP,
	SSH_CONNECT_TIMEOUT,
	SSH_COMMAND_TIMEOUT,
	SSH_KEEPALIVE,
};
static const char *const host_key_names[] = {"strict", "accept-new"};
static const char *const sudo_names[] = {"auto", "always", "never"};

/* Settings over what *s holds already (built-in defaults, or the ssh: defaults for a node). */
static void parse_ssh(struct parser *p, const yaml_node_t *n, struct ssh_settings *s)
{
	struct schema_fields f;
	const yaml_node_t *y;
	const char *t;
	int v;

	if (!schema_want_type(&p->s, n, "ssh", YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "'ssh'", ssh_keys, ARRAY_SIZE(ssh_keys), &f);
	if ((y = f.val[SSH_USER]) && (t = schema_text(&p->s, y, "user"))) {
		if (user_name_ok(t))
			set_str(&s->user, t);
		else
			err_at(p, y, "a user name is letters, digits, '.', '_' and '-'",
			       "user name '%s' is not valid", t);
	}
	if ((y = f.val[SSH_PORT]))
		schema_int(&p->s, y, "port", 1, 65535, &s->port);
	if ((y = f.val[SSH_IDENTITY]))
		get_local_path(p, y, "identity", &s->identity);
	if ((y = f.val[SSH_KNOWN_HOSTS]))
		get_local_path(p, y, "known_hosts", &s->known_hosts);
	if ((y = f.val[SSH_HOST_KEYS]) &&
	    schema_choice(&p->s, y, "host_keys", host_key_names, ARRAY_SIZE(host_key_names),
			  "provision always verifies host keys; accept-new records the key of "
			  "a host it has never seen",
			  &v))
		s->host_keys = (enum host_key_policy)v;
	if ((y = f.val[SSH_SUDO]) &&
	    schema_choice(&p->s, y, "sudo", sudo_names, ARRAY_SIZE(sudo_names),
			  "auto runs commands through sudo when the user is not root", &v))
		s->sudo = (enum sudo_mode)v;
	if ((y = f.val[SSH_SUDO_PASSWORD_FILE]))
		get_local_path(p, y, "sudo_password_file", &s->sudo_password_file);
	if ((y = f.val[SSH_JUMP]) && (t = schema_text(&p->s, y, "jump"))) {
		if (jump_ok(t))
			set_str(&s->jump, t);
		else
			err_at(p, y, "such as admin@gateway.example.ac.jp:22",
			       "'jump' must be [user@]host[:port], not '%s'", t);
	}
	if ((y = f.val[SSH_CONNECT_TIMEOUT]))
		schema_int(&p->s, y, "connect_timeout", 1, 3600, &s->connect_timeout);
	if ((y = f.val[SSH_COMMAND_TIMEOUT]))
		schema_int(&p->s, y, "command_timeout", 0, 86400, &s->command_timeout);
	if ((y = f.val[SSH_KEEPALIVE]))
		schema_int(&p->s, y, "keepalive", 0, 3600, &s->keepalive);
}

static const char *const cluster_keys[] = {
    "name",
    "kubernetes_version",
    "pod_cidr",
    "service_cidr",
    "api_port",
    "apt_mirror",
    "http_proxy",
    "no_proxy",
    "apt_key_fingerprint",
    "containerd",
    "cert_warning_days",
    "backups_keep",
    "registries",
    "images",
    "helm",
    "api_endpoint",
};
enum {
	CL_NAME,
	CL_VERSION,
	CL_POD_CIDR,
	CL_SERVICE_CIDR,
	CL_API_PORT,
	CL_APT_MIRROR,
	CL_HTTP_PROXY,
	CL_NO_PROXY,
	CL_APT_KEY_FINGERPRINT,
	CL_CONTAINERD,
	CL_CERT_WARNING_DAYS,
	CL_BACKUPS_KEEP,
	CL_REGISTRIES,
	CL_IMAGES,
	CL_HELM,
	CL_API_ENDPOINT,
};

static void parse_kubernetes_version(struct parser *p, const yaml_node_t *y)
{
	const char *t = schema_text(&p->s, y, "kubernetes_version");
	long part[3];

	if (!t)
		return;
	if (!exact_version(t, part)) {
		if ((t[0] == 'v' || t[0] == 'V') && exact_version(t + 1, part)) {
			char *hint = xasprintf("write '%s' without the 'v'", t + 1);
			err_at(p, y, hint, "'kubernetes_version' must be X.Y.Z, not '%s'", t);
			free(hint);
		} else {
			err_at(p, y,
			       "pin a patch release such as 1.30.4: every node gets exactly "
			       "this version",
			       "'kubernetes_version' must be an exact version X.Y.Z, not '%s'", t);
		}
		return;
	}
	if (part[0] != 1 || part[1] < 24) {
		err_at(p, y, "pkgs.k8s.io has Kubernetes 1.24.0 and later",
		       "'kubernetes_version' %s is not a Kubernetes release provision can install",
		       t);
		return;
	}
	set_str(&p->inv->cluster.kubernetes_version, t);
	p->inv->cluster.kubernetes_version_pos = schema_pos(y);
}

/* Registries (cluster.registries) ------------------------------------------ */

/* host[:port] as it appears in image references: a DNS name or an IPv4 address. */
static bool registry_host_ok(const char *s)
{
	const char *colon = strchr(s, ':');
	char host[256];
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	uint32_t a;

	if (len == 0 || len >= sizeof(host))
		return false;
	memcpy(host, s, len);
	host[len] = '\0';
	if (colon && !port_text_ok(colon + 1))
		return false;
	if (ipv4_parse(host, &a))
		return true;
	/* lower case only: containerd looks the folder up by the name as written */
	for (const char *c = host; *c; c++)
		if (isupper((unsigned char)*c))
			return false;
	return host_name(host);
}

/* http(s)://host[:port] with nothing after it but an optional '/'. */
static bool registry_get_url(struct parser *p, const yaml_node_t *n, const char *key,
			     const char *example, char **dst)
{
	const char *v, *host;
	char *h = NULL;
	bool ok;

	if (!get_url(p, n, key, example, dst))
		return false;
	v = *dst;
	host = strstr(v, "//") + 2;
	h = xstrndup(host, strcspn(host, "/"));
	ok = !strchr(h, '@') && registry_host_ok(h) &&
	     (host[strlen(h)] == '\0' || !strcmp(host + strlen(h), "/"));
	if (!ok) {
		char *hint = xasprintf("write the registry's address only, such as %s", example);
		err_at(p, n, hint,
		       "'%s' must be http:// or https:// and host[:port], with no user or path, "
		       "not '%s'",
		       key, v);
		free(hint);
		free(*dst);
		*dst = NULL;
	} else if (host[strlen(h)] == '/') {
		(*dst)[strlen(*dst) - 1] = '\0';
	}
	free(h);
	return ok;
}

/*
 * A CA file: read now, so that a missing or wrong file is an error at its
 * line; PEM certificates only (BEGIN/END CERTIFICATE lines with base64 between).
 */
static void registry_ca(struct parser *p, const yaml_node_t *n, char **file, char **pem)
{
	struct strbuf sb = STRBUF_INIT;
	const char *line;
	int e, certs = 0;
	bool inside = false, bad = false;

	if (!get_local_path(p, n, "ca_file", file))
		return;
	if ((e = read_file(*file, &sb)) < 0) {
		err_at(p, n, "the CA certificate that signed the registry's certificate, in PEM",
		       "cannot read ca_file '%s': %s", *file, strerror(-e));
		goto out;
	}
	for (line = sb.buf; *line && !bad;) {
		size_t len = strcspn(line, "\n");
		char l[128];

		if (len >= sizeof(l)) {
			bad = true;
			break;
		}
		memcpy(l, line, len);
		l[len] = '\0';
		if (len && l[len - 1] == '\r')
			l[--len] = '\0';
		if (!strcmp(l, "-----BEGIN CERTIFICATE-----") && !inside)
			inside = true;
		else if (!strcmp(l, "-----END CERTIFICATE-----") && inside)
			inside = false, certs++;
		else if (inside && strspn(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					     "0123456789+/=") != len)
			bad = true;
		else if (!inside && len)
			bad = true;
		line += len + (line[len] == '\n');
	}
	if (bad || inside || !certs || sb.len > 256 * 1024) {
		err_at(p, n, "only PEM certificates (-----BEGIN CERTIFICATE-----), no key or text",
		       "ca_file '%s' is not a PEM certificate file", *file);
		goto out;
	}
	free(*pem);
	*pem = strbuf_detach(&sb, NULL);
out:
	strbuf_release(&sb);
}

static bool registry_username(struct parser *p, const yaml_node_t *n, char **dst)
{
	const char *v = schema_text(&p->s, n, "username");

	if (!v)
		return false;
	if (!*v || strchr(v, ':') || strlen(v) > 128) {
		err_at(p, n, NULL, "'username' must be 1 to 128 characters without ':', not '%s'",
		       v);
		return false;
	}
	set_str(dst, v);
	return true;
}

/* username and password_file come together; what a TLS key asks of the URL. */
static void registry_check_access(struct parser *p, const yaml_node_t *map, const char *what,
				  const char *url, const yaml_node_t *user, const yaml_node_t *pw,
				  const yaml_node_t *ca, const yaml_node_t *skip, bool skip_verify)
{
	if (user && !pw)
		err_at(
		    p, user,
		    "put the password in a file only you can read and name it with 'password_file'",
		    "%s has a username but no password_file", what);
	else if (pw && !user)
		err_at(p, pw, NULL, "%s has a password_file but no username", what);
	if (url && !strncmp(url, "http://", 7)) {
		if (ca)
			err_at(p, ca, "remove it, or use https://",
			       "ca_file for %s, which is http://", what);
		if (skip && skip_verify)
			err_at(p, skip, "remove it, or use https://",
			       "skip_verify for %s, which is http://", what);
	}
	if (ca && skip && skip_verify)
		err_at(p, skip, "keep one: the CA checks the certificate, skip_verify does not",
		       "both ca_file and skip_verify for %s", what);
	(void)map;
}

static const char *const mirror_keys[] = {"url", "ca_file", "skip_verify", "username",
					  "password_file"};
enum { MI_URL, MI_CA_FILE, MI_SKIP_VERIFY, MI_USERNAME, MI_PASSWORD_FILE };

static const char *const registry_keys[] = {"mirrors",	   "upstream", "server",       "ca_file",
					    "skip_verify", "username", "password_file"};
enum {
	RG_MIRRORS,
	RG_UPSTREAM,
	RG_SERVER,
	RG_CA_FILE,
	RG_SKIP_VERIFY,
	RG_USERNAME,
	RG_PASSWORD_FILE
};

static void parse_mirror(struct parser *p, const yaml_node_t *n, const char *host,
			 struct registry_mirror *m)
{
	struct schema_fields f;
	const yaml_node_t *y;
	char what[320];

	m->pos = schema_pos(n);
	if (!schema_want_type(&p->s, n, "mirrors", YAML_MAPPING_NODE,
			      "write each mirror as '- url: https://...'"))
		return;
	schema_map_fields(&p->s, n, "a mirror", mirror_keys, ARRAY_SIZE(mirror_keys), &f);
	schema_require(&p->s, &f, mirror_keys, MI_URL, schema_pos(n), "a mirror");
	if ((y = f.val[MI_URL]))
		registry_get_url(p, y, "url", "https://mirror.lab.example:5000", &m->url);
	if ((y = f.val[MI_CA_FILE]))
		registry_ca(p, y, &m->ca_file, &m->ca_pem);
	if ((y = f.val[MI_SKIP_VERIFY]))
		schema_bool(&p->s, y, "skip_verify", &m->skip_verify);
	if ((y = f.val[MI_USERNAME]))
		registry_username(p, y, &m->username);
	if ((y = f.val[MI_PASSWORD_FILE]) &&
	    get_local_path(p, y, "password_file", &m->password_file))
		m->password_file_pos = schema_pos(y);
	snprintf(what, sizeof(what), "the mirror %s of %s", m->url ? m->url : "", host);
	registry_check_access(p, n, what, m->url, f.val[MI_USERNAME], f.val[MI_PASSWORD_FILE],
			      f.val[MI_CA_FILE], f.val[MI_SKIP_VERIFY], m->skip_verify);
}

static void parse_registry(struct parser *p, const yaml_node_t *key, const yaml_node_t *n,
			   struct registry *r)
{
	struct schema_fields f;
	const yaml_node_t *y;
	yaml_node_item_t *it;
	size_t alloc = 0, i, j;
	char what[320];

	r->pos = schema_pos(key);
	r->upstream = true;
	if (schema_is_null(n)) {
		err_at(p, n, "add 'mirrors:' (or remove the registry)",
		       "registry '%s' has no settings", r->host);
		return;
	}
	if (!schema_want_type(&p->s, n, r->host, YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "a registry", registry_keys, ARRAY_SIZE(registry_keys), &f);
	if ((y = f.val[RG_UPSTREAM]))
		schema_bool(&p->s, y, "upstream", &r->upstream);
	if ((y = f.val[RG_MIRRORS]) &&
	    schema_want_type(&p->s, y, "mirrors", YAML_SEQUENCE_NODE, NULL)) {
		for (it = y->data.sequence.items.start; it < y->data.sequence.items.top; it++) {
			if (r->nr_mirrors == INVENTORY_MIRRORS_MAX) {
				err_at(p, schema_node(&p->s, *it), NULL,
				       "more than %d mirrors for '%s'", INVENTORY_MIRRORS_MAX,
				       r->host);
				break;
			}
			ALLOC_GROW(r->mirrors, r->nr_mirrors + 1, alloc);
			r->mirrors[r->nr_mirrors] = (struct registry_mirror){0};
			parse_mirror(p, schema_node(&p->s, *it), r->host,
				     &r->mirrors[r->nr_mirrors]);
			r->nr_mirrors++;
		}
	}
	for (i = 0; i < r->nr_mirrors; i++)
		for (j = 0; j < i; j++)
			if (r->mirrors[i].url && r->mirrors[j].url &&
			    !strcmp(r->mirrors[i].url, r->mirrors[j].url))
				err_pos(p, r->mirrors[i].pos, "remove one of them",
					"mirror %s is listed twice for '%s' (first at %u:%u)",
					r->mirrors[i].url, r->host, r->mirrors[j].pos.line,
					r->mirrors[j].pos.col);
	if (!r->upstream) {
		static const int upstream_only[] = {RG_SERVER, RG_CA_FILE, RG_SKIP_VERIFY,
						    RG_USERNAME, RG_PASSWORD_FILE};
		if (!r->nr_mirrors && !f.val[RG_MIRRORS])
			err_at(p, f.val[RG_UPSTREAM], "add 'mirrors:', or set upstream: true",
			       "'%s' has upstream: false and no mirror: no image of it could be "
			       "pulled",
			       r->host);
		for (i = 0; i < ARRAY_SIZE(upstream_only); i++)
			if (f.key[upstream_only[i]])
				err_at(p, f.key[upstream_only[i]],
				       "give it to a mirror, or set upstream: true",
				       "'%s' is for the upstream registry, and '%s' has upstream: "
				       "false",
				       registry_keys[upstream_only[i]], r->host);
		return;
	}
	if ((y = f.val[RG_SERVER]))
		registry_get_url(p, y, "server", "https://registry.lab.example", &r->server);
	else if (!strcmp(r->host, "docker.io"))
		r->server = xstrdup("https://registry-1.docker.io");
	else
		r->server = xasprintf("https://%s", r->host);
	if ((y = f.val[RG_CA_FILE]))
		registry_ca(p, y, &r->ca_file, &r->ca_pem);
	if ((y = f.val[RG_SKIP_VERIFY]))
		schema_bool(&p->s, y, "skip_verify", &r->skip_verify);
	if ((y = f.val[RG_USERNAME]))
		registry_username(p, y, &r->username);
	if ((y = f.val[RG_PASSWORD_FILE]) &&
	    get_local_path(p, y, "password_file", &r->password_file))
		r->password_file_pos = schema_pos(y);
	snprintf(what, sizeof(what), "the upstream %s", r->server ? r->server : r->host);
	registry_check_access(p, n, what, r->server, f.val[RG_USERNAME], f.val[RG_PASSWORD_FILE],
			      f.val[RG_CA_FILE], f.val[RG_SKIP_VERIFY], r->skip_verify);
}

static void parse_registries(struct parser *p, const yaml_node_t *n)
{
	struct cluster_settings *c = &p->inv->cluster;
	yaml_node_pair_t *pair;
	size_t alloc = 0, i;
	char buf[64];

	if (!schema_want_type(&p->s, n, "registries", YAML_MAPPING_NODE,
			      "write one entry per registry: 'docker.io: {mirrors: [...]}'"))
		return;
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = schema_node(&p->s, pair->key),
			    *v = schema_node(&p->s, pair->value);
		const char *host;

		if (k->type != YAML_SCALAR_NODE || schema_is_null(k)) {
			err_at(p, k, NULL, "keys in 'registries' must be registry names, not %s",
			       schema_describe(k, buf, sizeof(buf)));
			continue;
		}
		host = schema_scalar(k);
		if (!registry_host_ok(host)) {
			err_at(p, k,
			       "the registry's name as image references write it: docker.io, "
			       "registry.k8s.io, registry.lab.example:5000",
			       "'%s' is not a registry name (host[:port], lower case)", host);
			continue;
		}
		for (i = 0; i < c->nr_registries; i++)
			if (!strcmp(c->registries[i].host, host))
				break;
		if (i < c->nr_registries) {
			err_at(p, k, "remove one of them",
			       "registry '%s' is listed twice (first at %u:%u)", host,
			       c->registries[i].pos.line, c->registries[i].pos.col);
			continue;
		}
		if (c->nr_registries == INVENTORY_REGISTRIES_MAX) {
			err_at(p, k, NULL, "more than %d registries", INVENTORY_REGISTRIES_MAX);
			break;
		}
		ALLOC_GROW(c->registries, c->nr_registries + 1, alloc);
		c->registries[c->nr_registries] = (struct registry){.host = xstrdup(host)};
		parse_registry(p, k, v, &c->registries[c->nr_registries]);
		c->nr_registries++;
	}
}

/* A duration: seconds, or a number with s, m or h (90s, 30m, 2h); -1 when not one. */
static long duration_seconds(const char *s)
{
	long n;
	char *end;

	if (!isdigit((unsigned char)*s) || strlen(s) > 12)
		return -1;
	n = strtol(s, &end, 10);
	if (!*end || !strcmp(end, "s"))
		return n;
	if (!strcmp(end, "m"))
		return n * 60;
	if (!strcmp(end, "h"))
		return n * 3600;
	return -1;
}

static const char *const images_keys[] = {"source", "pull_timeout"};
static const char *const images_sources[] = {"auto", "registry", "bundle"};

/* cluster.images: where images come from, how long one pull may take. */
static void parse_images(struct parser *p, const yaml_node_t *n)
{
	struct cluster_settings *c = &p->inv->cluster;
	struct schema_fields f;
	const yaml_node_t *y;
	const char *t;
	int src;
	long secs;

	if (!schema_want_type(&p->s, n, "images", YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "'images'", images_keys, ARRAY_SIZE(images_keys), &f);
	if ((y = f.val[0]) &&
	    schema_choice(&p->s, y, "source", images_sources, ARRAY_SIZE(images_sources),
			  "auto: import what provision fetch --images cached and pull the rest; "
			  "registry: always pull; bundle: import only",
			  &src))
		c->images_source = (enum images_source)src;
	if ((y = f.val[1]) &&
	    (t = y->type == YAML_SCALAR_NODE && !schema_is_null(y) ? schema_scalar(y) : NULL,
	     !t || (secs = duration_seconds(t)) < 60 || secs > 86400)) {
		char buf[64];
		err_at(p, y, "such as 30m, 2h or 900s",
		       "'pull_timeout' must be a duration from 60s to 24h, not %s",
		       schema_describe(y, buf, sizeof(buf)));
	} else if (y) {
		c->image_pull_timeout = (int)secs;
	}
}

/* An entry of no_proxy: a name, .domain, address or CIDR (it goes into a systemd unit). */
static bool no_proxy_item_ok(const char *s)
{
	return *s &&
	       strspn(s,
		      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:/*[]") ==
		   strlen(s);
}

static const char *const endpoint_keys[] = {"vip", "address", "port", "virtual_router_id"};
enum { EP_VIP, EP_ADDRESS, EP_PORT, EP_VRID };

/*
 * cluster.api_endpoint: `vip` (provision's keepalived + HAProxy) or
 * `address` HOST[:PORT] (the lab's load balancer or DNS name), never both.
 * The checks against the nodes (a VIP that is a node's address, the count
 * of control planes) are in check_api_endpoint, once the nodes are read.
 */
static void parse_api_endpoint(struct parser *p, const yaml_node_t *key, const yaml_node_t *n)
{
	struct api_endpoint *e = &p->inv->cluster.api_endpoint;
	struct schema_fields f;
	const yaml_node_t *y;
	const char *t;
	uint32_t v4;

	if (!schema_want_type(&p->s, n, "api_endpoint", YAML_MAPPING_NODE, NULL))
		return;
	e->pos = schema_pos(key);
	schema_map_fields(&p->s, n, "'api_endpoint'", endpoint_keys, ARRAY_SIZE(endpoint_keys), &f);
	if (f.val[EP_VIP] && f.val[EP_ADDRESS]) {
		err_at(p, f.key[EP_ADDRESS],
		       "keep vip (provision runs keepalived and HAProxy on the control planes) "
		       "or address (a load balancer or DNS name of the lab), not both",
		       "'api_endpoint' has both 'vip' and 'address'");
		return;
	}
	if (!f.val[EP_VIP] && !f.val[EP_ADDRESS]) {
		if (!(f.suggested & ((1u << EP_VIP) | (1u << EP_ADDRESS))))
			err_pos(p, e->pos,
				"add vip: ADDRESS (a free address on the control planes' subnet) "
				"or address: HOST[:PORT] (the lab's load balancer)",
				"'api_endpoint' needs 'vip' or 'address'");
		return;
	}
	if ((y = f.val[EP_VIP]) && (t = schema_text(&p->s, y, "vip"))) {
		e->host_pos = schema_pos(y);
		if (ipv4_parse(t, &v4) && v4 != 0 && (v4 >> 24) != 127 && (v4 >> 28) < 14) {
			e->kind = API_ENDPOINT_VIP;
			set_str(&e->host, t);
			e->port = INVENTORY_VIP_PORT;
			e->virtual_router_id = INVENTORY_VIRTUAL_ROUTER_ID;
		} else {
			err_at(p, y,
			       "a free IPv4 address on the control planes' subnet, such as "
			       "192.168.10.50 (keepalived moves it between them with VRRP)",
			       "'vip' must be an IPv4 address a host can hold, not '%s'", t);
		}
	}
	if ((y = f.val[EP_ADDRESS]) && (t = schema_text(&p->s, y, "address"))) {
		const char *colon = strchr(t, ':'), *port = NULL;
		char *host = NULL;

		e->host_pos = schema_pos(y);
		if (t[0] == '[') { /* [IPv6] or [IPv6]:PORT */
			const char *close = strchr(t, ']');
			if (close && (close[1] == '\0' || close[1] == ':')) {
				host = xstrndup(t + 1, (size_t)(close - t - 1));
				port = close[1] ? close + 2 : NULL;
			}
		} else if (colon && colon == strrchr(t, ':')) { /* HOST:PORT */
			host = xstrndup(t, (size_t)(colon - t));
			port = colon + 1;
		} else { /* a name, an IPv4 or a bare IPv6 address */
			host = xstrdup(t);
		}
		if (!host || !host[0] || (port && !port_text_ok(port))) {
			err_at(p, y, "such as k8s-api.lab.example.ac.jp or 192.168.10.50:6443",
			       "'address' must be HOST or HOST:PORT, not '%s'", t);
		} else if (check_address(p, y, host)) {
			e->kind = API_ENDPOINT_ADDRESS;
			set_str(&e->host, host);
			e->port = port ? atoi(port) : 0; /* 0: api_port, set once all is read */
		}
		free(host);
	}
	if ((y = f.val[EP_PORT])) {
		e->port_pos = schema_pos(y);
		if (f.val[EP_ADDRESS])
			err_at(p, y, "write the port into address, as HOST:PORT",
			       "'port' goes with 'vip'; 'address' takes HOST:PORT");
		else if (e->kind == API_ENDPOINT_VIP)
			schema_int(&p->s, y, "port", 1, 65535, &e->port);
	}
	if ((y = f.val[EP_VRID])) {
		if (f.val[EP_ADDRESS])
			err_at(p, y, "remove it: only a vip is negotiated with VRRP",
			       "'virtual_router_id' goes with 'vip'");
		else
			schema_int(&p->s, y, "virtual_router_id", 1, 255, &e->virtual_router_id);
	}
}

static void parse_cluster(struct parser *p, const yaml_node_t *key, const yaml_node_t *n)
{
	struct cluster_settings *c = &p->inv->cluster;
	struct schema_fields f;
	const yaml_node_t *y;
	const char *t;
	struct cidr cidr;
	char buf[32];

	if (!schema_want_type(&p->s, n, "cluster", YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "'cluster'", cluster_keys, ARRAY_SIZE(cluster_keys), &f);
	schema_require(&p->s, &f, cluster_keys, CL_NAME, schema_pos(key), "'cluster'");
	schema_require(&p->s, &f, cluster_keys, CL_VERSION, schema_pos(key), "'cluster'");
	if ((y = f.val[CL_NAME]) && (t = schema_text(&p->s, y, "name"))) {
		if (dns_label(t))
			set_str(&c->name, t);
		else
			report_bad_label(p, y, "cluster name", t);
	}
	if ((y = f.val[CL_VERSION]))
		parse_kubernetes_version(p, y);
	if ((y = f.val[CL_POD_CIDR]))
		p->pod.set = false; /* until it proves valid: no checks against a default */
	if ((y = f.val[CL_POD_CIDR]) && get_cidr(p, y, "pod_cidr", &cidr)) {
		p->pod_pos = schema_pos(y);
		if (cidr.prefix > 24) {
			err_at(p, y, "use a /16 such as 10.244.0.0/16",
			       "'pod_cidr' %s is too small: every node takes a /24 of it",
			       schema_scalar(y));
		} else {
			p->pod = cidr;
			cidr_format(buf, sizeof(buf), cidr.net, cidr.prefix);
			set_str(&c->pod_cidr, buf);
		}
	}
	if ((y = f.val[CL_SERVICE_CIDR]))
		p->service.set = false;
	if ((y = f.val[CL_SERVICE_CIDR]) && get_cidr(p, y, "service_cidr", &cidr)) {
		p->service_pos = schema_pos(y);
		if (cidr.prefix < 12 || cidr.prefix > 28) {
			err_at(p, y, "use a network from /12 to /28 such as 10.96.0.0/12",
			       "'service_cidr' %s is too %s", schema_scalar(y),
			       cidr.prefix < 12 ? "large: Kubernetes allows at most a /12"
						: "small: it needs room for the API server and DNS "
						  "service addresses");
		} else {
			p->service = cidr;
			cidr_format(buf, sizeof(buf), cidr.net, cidr.prefix);
			set_str(&c->service_cidr, buf);
		}
	}
	if ((y = f.val[CL_API_PORT]))
		schema_int(&p->s, y, "api_port", 1, 65535, &c->api_port);
	if ((y = f.val[CL_API_ENDPOINT]))
		parse_api_endpoint(p, f.key[CL_API_ENDPOINT], y);
	/* kubeadm's certificates live a year (365 days): a longer warning is always on */
	if ((y = f.val[CL_CERT_WARNING_DAYS]))
		schema_int(&p->s, y, "cert_warning_days", 1, 364, &c->cert_warning_days);
	if ((y = f.val[CL_APT_MIRROR]))
		get_url(p, y, "apt_mirror", "https://mirror.example.ac.jp/kubernetes",
			&c->apt_mirror);
	if ((y = f.val[CL_HTTP_PROXY]) &&
	    get_url(p, y, "http_proxy", "http://proxy.example.ac.jp:8080", &c->http_proxy) &&
	    strpbrk(c->http_proxy, "%\"\\'")) {
		/* it goes into containerd's systemd unit as Environment="HTTP_PROXY=..." */
		err_at(p, y, NULL, "'http_proxy' must not contain %%, quotes or backslashes");
		free(c->http_proxy);
		c->http_proxy = NULL;
	}
	if ((y = f.val[CL_NO_PROXY]) && schema_str_list(&p->s, y, "no_proxy", &c->no_proxy)) {
		yaml_node_item_t *it = y->data.sequence.items.start;
		for (; it < y->data.sequence.items.top; it++) {
			const yaml_node_t *e = schema_node(&p->s, *it);
			if (!no_proxy_item_ok(schema_scalar(e)))
				err_at(p, e, "a host name, .domain, address or network (CIDR)",
				       "'%s' is not a no_proxy entry", schema_scalar(e));
		}
	}
	if ((y = f.val[CL_REGISTRIES]))
		parse_registries(p, y);
	if ((y = f.val[CL_IMAGES]))
		parse_images(p, y);
	if ((y = f.val[CL_APT_KEY_FINGERPRINT]))
		get_fingerprint(p, y, "apt_key_fingerprint", &c->apt_key_fingerprint);
	if ((y = f.val[CL_BACKUPS_KEEP]))
		schema_int(&p->s, y, "backups_keep", 1, 1000, &c->backups_keep);
	if ((y = f.val[CL_CONTAINERD]) && (t = schema_text(&p->s, y, "containerd"))) {
		if (!strcmp(t, "release"))
			c->containerd_release = true;
		else if (strcmp(t, "distribution"))
			err_at(
			    p, y,
			    "write 'distribution' (the node's containerd package, the default) or "
			    "'release' (containerd 2.x from its release archive)",
			    "'containerd' must be distribution or release, not '%s'", t);
	}
	/* the Helm major roles/helm installs (its artifacts are pinned per major) */
	if ((y = f.val[CL_HELM]) && (t = schema_text(&p->s, y, "helm"))) {
		c->helm_pos = schema_pos(y);
		if (!strcmp(t, "3") || !strcmp(t, "4"))
			c->helm_major = t[0] - '0';
		else
			err_at(p, y,
			       "write 4 (Helm 4) or 3 (Helm 3, until its security support ends), "
			       "or remove the key: the newest pinned Helm of the cluster's minor",
			       "'helm' must be 4 or 3, not '%s'", t);
	}
}

/* Nodes ---------------------------------------------------------------------- */

static bool label_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (i = 0; i < len; i++)
		if (!is_alnum(s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

static bool dns_subdomain(const char *s, size_t len)
{
	size_t start = 0, i;
	char label[64];

	if (len == 0 || len > 253)
		return false;
	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (i - start == 0 || i - start > 63)
			return false;
		memcpy(label, s + start, i - start);
		label[i - start] = '\0';
		if (!dns_label(label))
			return false;
		start = i + 1;
	}
	return true;
}

static bool label_key_ok(const char *k)
{
	const char *slash = strchr(k, '/');

	if (!slash)
		return label_name_ok(k, strlen(k));
	return dns_subdomain(k, (size_t)(slash - k)) && label_name_ok(slash + 1, strlen(slash + 1));
}

static bool parse_labels(struct parser *p, const yaml_node_t *n, char ***dst)
{
	char **out = NULL;
	const yaml_node_t **seen = NULL;
	size_t nr = 0, alloc = 0, nr_seen = 0, alloc_seen = 0, j;
	yaml_node_pair_t *pair;
	bool ok = true;

	if (!schema_want_type(&p->s, n, "labels", YAML_MAPPING_NODE, NULL))
		return false;
	ALLOC_GROW(out, 1, alloc);
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		const yaml_node_t *k = schema_node(&p->s, pair->key),
				  *v = schema_node(&p->s, pair->value);
		const char *kt = schema_text(&p->s, k, "labels"), *vt;

		ok = false;
		if (!kt)
			continue;
		for (j = 0; j < nr_seen; j++)
			if (!strcmp(schema_scalar(seen[j]), kt))
				break;
		if (j < nr_seen) {
			struct source_pos first = schema_pos(seen[j]);
			err_at(p, k, "remove one of them", "duplicate label '%s' (first at %u:%u)",
			       kt, first.line, first.col);
			continue;
		}
		ALLOC_GROW(seen, nr_seen + 1, alloc_seen);
		seen[nr_seen++] = k;
		if (!label_key_ok(kt)) {
			err_at(
			    p, k,
			    "a label key is an optional DNS prefix and '/', then up to 63 letters, "
			    "digits, '-', '_' and '.', starting and ending with a letter or digit",
			    "label key '%s' is not valid", kt);
			continue;
		}
		if (schema_is_null(v)) {
			err_at(p, v, "write '' for an empty value", "label '%s' has no value", kt);
			continue;
		}
		vt = schema_text(&p->s, v, kt);
		if (!vt)
			continue;
		if (*vt && !label_name_ok(vt, strlen(vt))) {
			err_at(p, v,
			       "a label value is up to 63 letters, digits, '-', '_' and '.', "
			       "starting and ending with a letter or digit",
			       "value '%s' of label '%s' is not valid", vt, kt);
			continue;
		}
		ok = true;
		ALLOC_GROW(out, nr + 2, alloc);
		out[nr++] = xasprintf("%s=%s", kt, vt);
	}
	out[nr] = NULL;
	free(seen);
	if (!ok && nr_seen == 0)
		ok = true; /* an empty mapping is fine */
	strv_free(*dst);
	*dst = out;
	return ok;
}

static void parse_roles(struct parser *p, const yaml_node_t *n, unsigned *roles, bool *ok)
{
	yaml_node_item_t *it;

	*ok = false;
	if (!schema_want_type(&p->s, n, "roles", YAML_SEQUENCE_NODE, NULL))
		return;
	if (n->data.sequence.items.start == n->data.sequence.items.top) {
		err_at(p, n, "give the node at least one of control-plane, worker and nfs-server",
		       "'roles' is empty");
		return;
	}
	*ok = true;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		const yaml_node_t *c = schema_node(&p->s, *it);
		const char *t = schema_item_text(&p->s, c, "roles"), *s;
		unsigned bit;

		if (!t) {
			*ok = false;
			continue;
		}
		bit = node_role_parse(t);
		if (!bit) {
			s = schema_suggest(t, role_names, ARRAY_SIZE(role_names));
			if (s)
				err_at(p, c, NULL, "unknown role '%s' (did you mean '%s'?)", t, s);
			else
				err_at(p, c, "roles are control-plane, worker and nfs-server",
				       "unknown role '%s'", t);
			*ok = false;
			continue;
		}
		if (*roles & bit)
			warn_pos(p, schema_pos(c), NULL, "role '%s' is listed twice", t);
		*roles |= bit;
	}
}

/* Expand a name or address pattern; NULL after reporting. */
static char **expand(struct parser *p, const yaml_node_t *n, const char *key, size_t *nr)
{
	const char *t;
	struct error err = {0};
	char **list = NULL;

	*nr = 0;
	if (n->type == YAML_SEQUENCE_NODE) {
		err_at(p, n,
		       "for several nodes write one range, such as b-[2-4] with 192.168.10.[52-54]",
		       "'%s' must be a single value, not a list", key);
		return NULL;
	}
	t = schema_text(&p->s, n, key);
	if (!t)
		return NULL;
	if (hostlist_expand(&list, nr, t, &err) < 0) {
		err_at(p, n, err.hint[0] ? err.hint : NULL, "%s", err.msg);
		return NULL;
	}
	return list;
}

/*
 * gpu_sharing: N notebooks per GPU, on a node that declares its GPUs (the
 * inventory cannot look at the node; preflight checks that the declared
 * GPUs are there).  `have_gpus` tells a `gpus` that was written but wrong
 * (already reported) from one that is missing.
 */
static void parse_gpu_sharing(struct parser *p, const yaml_node_t *n, bool have_gpus, int gpus,
			      int *dst)
{
	char buf[64];
	long v;

	if (n->type == YAML_SCALAR_NODE && !schema_is_null(n) && schema_is_plain(n) &&
	    schema_parse_decimal(schema_scalar(n), &v) &&
	    (v < INVENTORY_GPU_SHARING_MIN || v > INVENTORY_GPU_SHARING_MAX)) {
		err_at(p, n,
		       v == 1 ? "a GPU shared by 1 is not shared: remove the key"
			      : "each GPU is shared by this many notebooks; GPU memory is not "
				"isolated, so more than 16 leaves each too little of it",
		       "'gpu_sharing' must be an integer from %d to %d, not %s",
		       INVENTORY_GPU_SHARING_MIN, INVENTORY_GPU_SHARING_MAX,
		       schema_describe(n, buf, sizeof(buf)));
		return;
	}
	if (!schema_int(&p->s, n, "gpu_sharing", INVENTORY_GPU_SHARING_MIN,
			INVENTORY_GPU_SHARING_MAX, dst))
		return;
	if (!have_gpus)
		err_at(p, n, "add 'gpus: N' with the number of GPUs the node has",
		       "'gpu_sharing' needs the node's GPUs declared: this node has no 'gpus'");
	else if (gpus == 0)
		err_at(p, n, "remove 'gpu_sharing', or declare the node's GPUs",
		       "'gpu_sharing' on a node without GPUs ('gpus' is 0): there is nothing to "
		       "share");
	if (!have_gpus || gpus == 0)
		*dst = 0;
}

static const char *const node_keys[] = {"name", "address", "roles", "gpus",
					"ssh",	"labels",  "arch",  "gpu_sharing"};
enum { N_NAME, N_ADDRESS, N_ROLES, N_GPUS, N_SSH, N_LABELS, N_ARCH, N_GPU_SHARING };

static void parse_node(struct parser *p, const yaml_node_t *item)
{
	struct inventory *inv = p->inv;
	struct ssh_settings ssh;
	struct schema_fields f;
	struct source_pos where = schema_pos(item);
	char **names = NULL, **addrs = NULL, **labels = strv_new();
	char *section = NULL;
	size_t nr_names = 0, nr_addrs = 0, i;
	unsigned roles = 0;
	int gpus = -1, sharing = 0;
	const char *arch = "amd64", *t;
	bool roles_ok = false;
	char buf[64];

	ssh_copy(&ssh, &inv->ssh);
	if (item->type != YAML_MAPPING_NODE) {
		err_at(p, item,
		       "write '- name: b-0' with 'address:' and 'roles:' indented under it",
		       "each node must be a mapping with name, address and roles, not %s",
		       schema_describe(item, buf, sizeof(buf)));
		p->nodes_incomplete = p->roles_incomplete = p->names_incomplete = true;
		goto out;
	}
	schema_map_fields(&p->s, item, "a node", node_keys, ARRAY_SIZE(node_keys), &f);
	if (f.val[N_NAME] && f.val[N_NAME]->type == YAML_SCALAR_NODE &&
	    !schema_is_null(f.val[N_NAME]))
		section = xasprintf("node '%s'", schema_scalar(f.val[N_NAME]));
	for (i = N_NAME; i <= N_ROLES; i++)
		schema_require(&p->s, &f, node_keys, i, where, section ? section : "a node");

	if (f.val[N_NAME] && (names = expand(p, f.val[N_NAME], "name", &nr_names))) {
		p->expanded += nr_names;
		if (p->expanded > INVENTORY_MAX_NODES) {
			err_at(
			    p, f.val[N_NAME],
			    "Kubernetes supports at most 5000 nodes in one cluster: split the lab "
			    "into clusters",
			    "the inventory has more than %d nodes", INVENTORY_MAX_NODES);
			hostlist_free(names);
			names = NULL;
			p->nodes_incomplete = true;
			goto out;
		}
		for (i = 0; i < nr_names; i++)
			if (!dns_label(names[i]))
				break;
		if (i < nr_names) {
			report_bad_label(p, f.val[N_NAME], "node name", names[i]);
			hostlist_free(names);
			names = NULL;
		}
		for (i = 0; names && i < nr_names; i++) {
			ALLOC_GROW(p->names, p->nr_names + 1, p->alloc_names);
			p->names[p->nr_names++] =
			    (struct seen_name){xstrdup(names[i]), schema_pos(f.val[N_NAME])};
		}
	}
	if (f.val[N_ADDRESS] && (addrs = expand(p, f.val[N_ADDRESS], "address", &nr_addrs))) {
		for (i = 0; i < nr_addrs; i++)
			if (!check_address(p, f.val[N_ADDRESS], addrs[i]))
				break;
		if (i < nr_addrs) {
			hostlist_free(addrs);
			addrs = NULL;
		}
	}
	if (names && addrs && nr_names != nr_addrs) {
		err_at(p, f.val[N_ADDRESS],
		       "give one address per node, e.g. 192.168.10.[52-54] for b-[2-4]",
		       "'address' %s gives %zu address%s but 'name' %s gives %zu node%s",
		       schema_scalar(f.val[N_ADDRESS]), nr_addrs, nr_addrs == 1 ? "" : "es",
		       schema_scalar(f.val[N_NAME]), nr_names, nr_names == 1 ? "" : "s");
		hostlist_free(addrs);
		addrs = NULL;
	}
	if (f.val[N_ROLES])
		parse_roles(p, f.val[N_ROLES], &roles, &roles_ok);
	if (f.val[N_GPUS])
		schema_int(&p->s, f.val[N_GPUS], "gpus", 0, INT_MAX, &gpus);
	if (f.val[N_GPU_SHARING])
		parse_gpu_sharing(p, f.val[N_GPU_SHARING], f.val[N_GPUS] != NULL, gpus, &sharing);
	if (f.val[N_SSH])
		parse_ssh(p, f.val[N_SSH], &ssh);
	if (f.val[N_LABELS])
		parse_labels(p, f.val[N_LABELS], &labels);
	if (f.val[N_ARCH] && (t = schema_text(&p->s, f.val[N_ARCH], "arch"))) {
		if (!strcmp(t, "arm64"))
			arch = "arm64";
		else if (strcmp(t, "amd64"))
			err_at(
			    p, f.val[N_ARCH],
			    "write amd64 (x86_64, the default) or arm64 (aarch64: Jetson, Grace), "
			    "the names of the release archives",
			    "'arch' must be amd64 or arm64, not '%s'", t);
	}
	if (!roles_ok)
		p->roles_incomplete = true;
	if (!names)
		p->names_incomplete = true;
	if (!names || !addrs) {
		p->nodes_incomplete = true;
		goto out;
	}
	if (inv->nr_nodes + nr_names > INVENTORY_MAX_NODES) {
		err_at(p, f.val[N_NAME],
		       "Kubernetes supports at most 5000 nodes in one cluster: split the lab into "
		       "clusters",
		       "the inventory has more than %d nodes", INVENTORY_MAX_NODES);
		p->nodes_incomplete = true;
		goto out;
	}
	inv->nodes = xrealloc(inv->nodes, (inv->nr_nodes + nr_names) * sizeof(*inv->nodes));
	for (i = 0; i < nr_names; i++) {
		struct node *nd = &inv->nodes[inv->nr_nodes++];
		*nd = (struct node){
		    .name = xstrdup(names[i]),
		    .address = xstrdup(addrs[i]),
		    .roles = roles,
		    .gpus = gpus,
		    .gpu_sharing = sharing,
		    .arch = arch,
		    .labels = strv_dup(labels),
		    .pos = where,
		    .name_pos = schema_pos(f.val[N_NAME]),
		    .address_pos = schema_pos(f.val[N_ADDRESS]),
		    .roles_pos = f.val[N_ROLES] ? schema_pos(f.val[N_ROLES]) : where,
		    .gpus_pos = f.val[N_GPUS] ? schema_pos(f.val[N_GPUS]) : (struct source_pos){0},
		    .arch_pos = f.val[N_ARCH] ? schema_pos(f.val[N_ARCH]) : (struct source_pos){0},
		    .gpu_sharing_pos = f.val[N_GPU_SHARING] ? schema_pos(f.val[N_GPU_SHARING])
							    : (struct source_pos){0},
		};
		ssh_copy(&nd->ssh, &ssh);
	}
out:
	free(section);
	hostlist_free(names);
	hostlist_free(addrs);
	strv_free(labels);
	ssh_release(&ssh);
}

static void parse_nodes(struct parser *p, const yaml_node_t *key, const yaml_node_t *n)
{
	yaml_node_item_t *it;

	p->nodes_pos = schema_pos(key);
	if (!schema_want_type(
		&p->s, n, "nodes", YAML_SEQUENCE_NODE,
		schema_is_null(n) ? "list the machines under it, starting with '- name:'" : NULL)) {
		p->nodes_incomplete = p->roles_incomplete = p->names_incomplete = true;
		return;
	}
	if (n->data.sequence.items.start == n->data.sequence.items.top) {
		err_at(p, n, "list at least the control-plane node", "'nodes' is empty");
		p->nodes_incomplete = p->roles_incomplete = p->names_incomplete = true;
		return;
	}
	/*
	 * Past the node limit nothing more is expanded: one entry and its
	 * aliases (YAML shares them, we would not) could make millions.
	 */
	for (it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top && p->expanded <= INVENTORY_MAX_NODES; it++)
		parse_node(p, schema_node(&p->s, *it));
	if (it < n->data.sequence.items.top)
		p->nodes_incomplete = p->roles_incomplete = p->names_incomplete = true;
}

/* Storage -------------------------------------------------------------------- */

static const char *const storage_keys[] = {"nfs"};
static const char *const nfs_keys[] = {"server", "path", "export_network", "options"};
enum { NFS_SERVER, NFS_PATH, NFS_EXPORT_NETWORK, NFS_OPTIONS };

/*
 * The path as the NFS server will resolve it: "." and empty components
 * dropped, ".." taking one off (never above "/").  The caller frees it.
 */
static char *export_path_normal(const char *s)
{
	struct strbuf out = STRBUF_INIT;

	while (*s) {
		size_t len;
		while (*s == '/')
			s++;
		len = strcspn(s, "/");
		if (!len || (len == 1 && s[0] == '.')) {
			/* nothing */
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			char *slash = strrchr(out.buf, '/');
			strbuf_setlen(&out, slash ? (size_t)(slash - out.buf) : 0);
		} else {
			strbuf_addch(&out, '/');
			strbuf_add(&out, s, len);
		}
		s += len;
	}
	if (!out.len)
		strbuf_addch(&out, '/');
	return strbuf_detach(&out, NULL);
}

static bool export_path_ok(const char *s)
{
	size_t i;

	if (s[0] != '/' || strstr(s, "/../") || strstr(s, "/./") || strstr(s, "//"))
		return false;
	for (i = 0; s[i]; i++)
		if (!is_alnum(s[i]) && !strchr("/._-+@", s[i]))
			return false;
	return true;
}

static void parse_storage(struct parser *p, const yaml_node_t *n)
{
	struct nfs_settings *nfs = &p->inv->nfs;
	struct schema_fields f, g;
	const yaml_node_t *y;
	const char *t;
	struct cidr cidr;
	char buf[32];

	if (!schema_want_type(&p->s, n, "storage", YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "'storage'", storage_keys, ARRAY_SIZE(storage_keys), &f);
	if (!f.val[0] || !schema_want_type(&p->s, f.val[0], "nfs", YAML_MAPPING_NODE, NULL))
		return;
	p->have_nfs_section = true;
	p->nfs_pos = schema_pos(f.key[0]);
	schema_map_fields(&p->s, f.val[0], "'nfs'", nfs_keys, ARRAY_SIZE(nfs_keys), &g);
	if ((y = g.val[NFS_SERVER]) && schema_str(&p->s, y, "server", &nfs->server))
		p->nfs_server_pos = schema_pos(y);
	if ((y = g.val[NFS_PATH]) && (t = schema_text(&p->s, y, "path"))) {
		/* the guard looks at the path the server exports, not at its spelling */
		char *norm = export_path_normal(t);
		if (!strcmp(t, "/"))
			err_at(p, y, "export a directory such as /nfs", "'path' must not be '/'");
		else if (t[0] == '/' && !strcmp(norm, "/"))
			err_at(p, y, "export a directory such as /nfs",
			       "'path' must not be '/' ('%s' is '/')", t);
		else if (t[0] == '/' && strcmp(norm, t) && (strstr(t, "/.") || strstr(t, "//")))
			err_at(p, y, "write the directory as the server resolves it",
			       "'path' must not have '.' or '..' components or '//' ('%s' is '%s')",
			       t, norm);
		else if (!export_path_ok(t))
			err_at(p, y, "such as /nfs or /srv/nfs/lab",
			       "'path' must be an absolute path of letters, digits and /._-+@, not "
			       "'%s'",
			       t);
		else
			set_str(&nfs->path, t);
		free(norm);
	}
	if ((y = g.val[NFS_EXPORT_NETWORK]) && get_cidr(p, y, "export_network", &cidr)) {
		p->export = cidr;
		p->export_pos = schema_pos(y);
		cidr_format(buf, sizeof(buf), cidr.net, cidr.prefix);
		set_str(&nfs->export_network, buf);
	}
	if ((y = g.val[NFS_OPTIONS]) && (t = schema_text(&p->s, y, "options"))) {
		if (!*t || strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_=,:./-") != strlen(t) ||
		    t[0] == ',' || t[strlen(t) - 1] == ',' || strstr(t, ",,"))
			err_at(p, y, "such as rw,sync,no_root_squash,no_subtree_check",
			       "'options' must be comma-separated export options, not '%s'", t);
		else
			set_str(&nfs->options, t);
	}
}

/* JupyterHub ----------------------------------------------------------------- */

static const char *const hub_keys[] = {
    "enabled",	     "chart_version", "node_port",     "image",	   "storage", "admin_users",
    "allowed_users", "auth",	      "start_timeout", "shm_size", "node",
};
enum {
	HUB_ENABLED,
	HUB_CHART_VERSION,
	HUB_NODE_PORT,
	HUB_IMAGE,
	HUB_STORAGE,
	HUB_ADMIN_USERS,
	HUB_ALLOWED_USERS,
	HUB_AUTH,
	HUB_START_TIMEOUT,
	HUB_SHM_SIZE,
	HUB_NODE,
};
static const char *const auth_keys[] = {"type", "github", "ldap"};
static const char *const github_keys[] = {"client_id", "client_secret_file", "callback_url"};
static const char *const ldap_keys[] = {"server", "bind_dn_template"};
static const char *const auth_names[] = {"native", "github", "ldap"};

static bool chart_version_ok(const char *s)
{
	const char *dash = strchr(s, '-');
	char core[32];
	long part[3];
	size_t len = dash ? (size_t)(dash - s) : strlen(s);

	if (len >= sizeof(core))
		return false;
	memcpy(core, s, len);
	core[len] = '\0';
	if (!exact_version(core, part))
		return false;
	if (!dash)
		return true;
	return dash[1] &&
	       strspn(dash + 1, "abcdefghijklmnopqrstuvwxyz"
				"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == strlen(dash + 1);
}

static void parse_image(struct parser *p, const yaml_node_t *y)
{
	const char *t = schema_text(&p->s, y, "image"), *last, *tag;
	size_t i, name_len;

	if (!t)
		return;
	last = strrchr(t, '/');
	last = last ? last + 1 : t;
	tag = strpbrk(last, ":@");
	name_len = tag ? (size_t)(tag - t) : strlen(t);
	for (i = 0; t[i]; i++)
		if (t[i] == ' ' || (i < name_len && t[i] >= 'A' && t[i] <= 'Z'))
			break;
	if (!*t || t[i] || (tag && !tag[1])) {
		err_at(p, y, "such as quay.io/jupyter/pytorch-notebook:cuda12-python-3.11",
		       "'image' must be an image reference name:tag in lowercase, not '%s'", t);
		return;
	}
	if (!tag)
		warn_pos(p, schema_pos(y), "pin a tag so that every node runs the same image",
			 "'image' %s has no tag and follows ':latest'", t);
	set_str(&p->inv->hub.image, t);
}

static void parse_auth(struct parser *p, const yaml_node_t *n)
{
	struct hub_settings *hub = &p->inv->hub;
	struct schema_fields f, g;
	const yaml_node_t *y;
	const char *t;
	int type = HUB_AUTH_NATIVE;
	struct source_pos type_pos;

	if (!schema_want_type(&p->s, n, "auth", YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "'auth'", auth_keys, ARRAY_SIZE(auth_keys), &f);
	type_pos = f.val[0] ? schema_pos(f.val[0]) : schema_pos(n);
	if (f.val[0] && !schema_choice(&p->s, f.val[0], "type", auth_names, ARRAY_SIZE(auth_names),
				       NULL, &type))
		type = -1;
	if (type >= 0)
		hub->auth = (enum hub_auth)type;
	if ((y = f.val[1]) && schema_want_type(&p->s, y, "github", YAML_MAPPING_NODE, NULL)) {
		schema_map_fields(&p->s, y, "'github'", github_keys, ARRAY_SIZE(github_keys), &g);
		if (g.val[0])
			schema_str(&p->s, g.val[0], "client_id", &hub->github_client_id);
		if (g.val[1])
			get_local_path(p, g.val[1], "client_secret_file",
				       &hub->github_client_secret_file);
		if (g.val[2])
			get_url(p, g.val[2], "callback_url",
				"https://hub.example.ac.jp/hub/oauth_callback",
				&hub->github_callback_url);
		if (type == HUB_AUTH_GITHUB) {
			schema_require(&p->s, &g, github_keys, 0, schema_pos(f.key[1]), "'github'");
			schema_require(&p->s, &g, github_keys, 1, schema_pos(f.key[1]), "'github'");
		} else if (type >= 0) {
			warn_pos(p, schema_pos(f.key[1]), NULL,
				 "'github' is ignored: auth type is '%s'", auth_names[type]);
		}
	} else if (!y && type == HUB_AUTH_GITHUB) {
		err_pos(p, type_pos, "add 'github:' with client_id and client_secret_file",
			"auth type 'github' needs a 'github' section");
	}
	if ((y = f.val[2]) && schema_want_type(&p->s, y, "ldap", YAML_MAPPING_NODE, NULL)) {
		schema_map_fields(&p->s, y, "'ldap'", ldap_keys, ARRAY_SIZE(ldap_keys), &g);
		if (g.val[0] && (t = schema_text(&p->s, g.val[0], "server"))) {
			const char *host = !strncmp(t, "ldaps://", 8)  ? t + 8
					   : !strncmp(t, "ldap://", 7) ? t + 7
								       : t;
			if (*host && jump_ok(host) && !strchr(host, '@'))
				set_str(&hub->ldap_server, t);
			else
				err_at(
				    p, g.val[0], "such as ldaps://ldap.example.ac.jp",
				    "'server' must be an LDAP host or ldap:// or ldaps:// URL, not "
				    "'%s'",
				    t);
		}
		if (g.val[1] && (t = schema_text(&p->s, g.val[1], "bind_dn_template"))) {
			if (strstr(t, "{username}"))
				set_str(&hub->ldap_bind_dn_template, t);
			else
				err_at(p, g.val[1],
				       "such as uid={username},ou=people,dc=example,dc=jp",
				       "'bind_dn_template' must contain {username}");
		}
		if (type == HUB_AUTH_LDAP) {
			schema_require(&p->s, &g, ldap_keys, 0, schema_pos(f.key[2]), "'ldap'");
			schema_require(&p->s, &g, ldap_keys, 1, schema_pos(f.key[2]), "'ldap'");
		} else if (type >= 0) {
			warn_pos(p, schema_pos(f.key[2]), NULL,
				 "'ldap' is ignored: auth type is '%s'", auth_names[type]);
		}
	} else if (!y && type == HUB_AUTH_LDAP) {
		err_pos(p, type_pos, "add 'ldap:' with server and bind_dn_template",
			"auth type 'ldap' needs an 'ldap' section");
	}
}

static void parse_hub(struct parser *p, const yaml_node_t *key, const yaml_node_t *n)
{
	struct hub_settings *hub = &p->inv->hub;
	struct schema_fields f;
	const yaml_node_t *y;
	const char *t;

	p->hub_section = true;
	p->hub_pos = schema_pos(key);
	if (!schema_want_type(&p->s, n, "jupyterhub", YAML_MAPPING_NODE, NULL))
		return;
	schema_map_fields(&p->s, n, "'jupyterhub'", hub_keys, ARRAY_SIZE(hub_keys), &f);
	if ((y = f.val[HUB_ENABLED]))
		schema_bool(&p->s, y, "enabled", &hub->enabled);
	if ((y = f.val[HUB_CHART_VERSION]) && (t = schema_text(&p->s, y, "chart_version"))) {
		if (chart_version_ok(t)) {
			set_str(&hub->chart_version, t);
			hub->chart_version_pos = schema_pos(y);
		} else
			err_at(p, y, "pin a release of the jupyterhub chart such as 3.3.8",
			       "'chart_version' must be an exact version X.Y.Z, not '%s'", t);
	}
	if ((y = f.val[HUB_NODE_PORT]))
		schema_int(&p->s, y, "node_port", 30000, 32767, &hub->node_port);
	if ((y = f.val[HUB_IMAGE]))
		parse_image(p, y);
	if ((y = f.val[HUB_STORAGE]))
		get_quantity(p, y, "storage", &hub->storage);
	if ((y = f.val[HUB_ADMIN_USERS]))
		schema_str_list(&p->s, y, "admin_users", &hub->admin_users);
	if ((y = f.val[HUB_ALLOWED_USERS]))
		schema_str_list(&p->s, y, "allowed_users", &hub->allowed_users);
	if ((y = f.val[HUB_AUTH]))
		parse_auth(p, y);
	if ((y = f.val[HUB_START_TIMEOUT]))
		schema_int(&p->s, y, "start_timeout", 1, 86400, &hub->start_timeout);
	if ((y = f.val[HUB_SHM_SIZE]))
		get_quantity(p, y, "shm_size", &hub->shm_size);
	if ((y = f.val[HUB_NODE]) && schema_str(&p->s, y, "node", &hub->node))
		p->hub_node_pos = schema_pos(y);
}

/* Checks across sections ------------------------------------------------------ */

struct key_idx {
	const char *key;
	size_t idx;
};

static int cmp_key_idx(const void *a, const void *b)
{
	const struct key_idx *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool same_pos(struct source_pos a, struct source_pos b)
{
	return a.line == b.line && a.col == b.col;
}

static void check_duplicates(struct parser *p)
{
	struct inventory *inv = p->inv;
	size_t n = inv->nr_nodes, i, j;
	size_t nr_names = p->nr_names;
	struct key_idx *v = xcalloc((n > nr_names ? n : nr_names) + 1, sizeof(*v));
	char **addr_keys = xcalloc(n + 1, sizeof(*addr_keys));

	for (i = 0; i < nr_names; i++)
		v[i] = (struct key_idx){p->names[i].name, i};
	qsort(v, nr_names, sizeof(*v), cmp_key_idx);
	for (i = 0; i < nr_names; i = j) {
		const struct seen_name *first = &p->names[v[i].idx];
		for (j = i + 1; j < nr_names && !strcmp(v[j].key, v[i].key); j++)
			err_pos(p, p->names[v[j].idx].pos, "node names must be unique",
				"duplicate node name '%s' (first at %u:%u)", first->name,
				first->pos.line, first->pos.col);
	}
	for (i = 0; i < n; i++) {
		char *q;
		addr_keys[i] =
		    xasprintf("%s port %d", inv->nodes[i].address, inv->nodes[i].ssh.port);
		for (q = addr_keys[i]; *q; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q - 'A' + 'a');
		v[i] = (struct key_idx){addr_keys[i], i};
	}
	qsort(v, n, sizeof(*v), cmp_key_idx);
	for (i = 0; i < n; i = j) {
		const struct node *first = &inv->nodes[v[i].idx];
		for (j = i + 1; j < n && !strcmp(v[j].key, v[i].key); j++) {
			const struct node *nd = &inv->nodes[v[j].idx];
			err_pos(p, nd->address_pos,
				"each node needs its own address, or its own ssh port on a shared "
				"host",
				"node '%s' has the same address %s and port %d as node '%s' (first "
				"at %u:%u)",
				nd->name, nd->address, nd->ssh.port, first->name,
				first->address_pos.line, first->address_pos.col);
		}
	}
	for (i = 0; i < n; i++)
		free(addr_keys[i]);
	free(addr_keys);
	free(v);
}

static bool is_kube_node(const struct node *nd)
{
	return nd->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER);
}

/*
 * The API endpoint against the nodes: a VIP no node has and outside the
 * cluster's own networks; HAProxy's port not the API server's, which it
 * runs beside.  An address without a port takes api_port.
 */
static void check_api_endpoint(struct parser *p)
{
	struct inventory *inv = p->inv;
	struct api_endpoint *e = &inv->cluster.api_endpoint;
	uint32_t vip, a;
	size_t i;

	if (e->kind == API_ENDPOINT_ADDRESS && !e->port)
		e->port = inv->cluster.api_port;
	if (e->kind != API_ENDPOINT_VIP || !ipv4_parse(e->host, &vip))
		return;
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *nd = &inv->nodes[i];
		if ((nd->roles & NODE_ROLE_CONTROL_PLANE) && nd->address &&
		    !ipv4_parse(nd->address, &a))
			err_pos(p, nd->address_pos,
				"write the control plane's IPv4 address: keepalived talks VRRP to "
				"the other control planes at their addresses, and the VIP must be "
				"on their subnet",
				"with a 'vip', control plane '%s' needs an IPv4 address, not '%s'",
				nd->name, nd->address);
	}
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *nd = &inv->nodes[i];
		if (nd->address && ipv4_parse(nd->address, &a) && a == vip) {
			err_pos(p, e->host_pos,
				"give the VIP an address no machine has: keepalived adds it to "
				"the control plane that holds it",
				"'vip' %s is the address of node '%s' (at %u:%u)", e->host,
				nd->name, nd->address_pos.line, nd->address_pos.col);
			break;
		}
	}
	if (p->pod.set && cidr_contains(&p->pod, vip))
		err_pos(p, e->host_pos, "take the VIP from the control planes' own subnet",
			"'vip' %s is inside pod_cidr %s", e->host, inv->cluster.pod_cidr);
	else if (p->service.set && cidr_contains(&p->service, vip))
		err_pos(p, e->host_pos, "take the VIP from the control planes' own subnet",
			"'vip' %s is inside service_cidr %s", e->host, inv->cluster.service_cidr);
	if (e->port == inv->cluster.api_port)
		err_pos(p, e->port_pos.line ? e->port_pos : e->host_pos,
			"give api_endpoint.port another port (without it HAProxy listens on "
			"8443)",
			"HAProxy runs beside the API server on every control plane: it cannot "
			"listen on the API server's port %d too",
			e->port);
}

static void check_roles(struct parser *p)
{
	struct inventory *inv = p->inv;
	const struct node *cp = NULL, *second_cp = NULL, *last_cp = NULL, *nfs = NULL;
	struct source_pos last = {0};
	bool worker = false;
	size_t nr_cp = 0;
	size_t i;

	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *nd = &inv->nodes[i];

		if (nd->roles & NODE_ROLE_WORKER)
			worker = true;
		if (nd->roles & NODE_ROLE_CONTROL_PLANE) {
			if (!cp)
				cp = nd;
			else if (!second_cp)
				second_cp = nd;
			last_cp = nd;
			nr_cp++;
		}
		if (nd->roles & NODE_ROLE_NFS_SERVER) {
			if (!nfs)
				nfs = nd;
			else
				err_pos(
				    p, nd->roles_pos, "give exactly one node the nfs-server role",
				    "more than one NFS server: node '%s' besides '%s' (at %u:%u); "
				    "one NFS server is supported",
				    nd->name, nfs->name, nfs->roles_pos.line, nfs->roles_pos.col);
		}
		if (nd->gpus > 0 && !(nd->roles & NODE_ROLE_WORKER) &&
		    !same_pos(last, nd->gpus_pos)) {
			last = nd->gpus_pos;
			warn_pos(p, nd->gpus_pos, "add worker to its roles to offer its GPUs",
				 "node '%s' declares %d GPU%s but is not a worker", nd->name,
				 nd->gpus, nd->gpus == 1 ? "" : "s");
		}
	}
	if (p->roles_incomplete || p->nodes_incomplete || !inv->nr_nodes)
		return;
	if (!cp)
		err_pos(p, p->nodes_pos,
			"add control-plane to the roles of the node that should run the "
			"Kubernetes API server",
			"no node has the control-plane role");
	/*
	 * Stacked etcd: every control plane is an etcd member, and etcd accepts
	 * a write only while more than half of its members agree (quorum).
	 * 2 members survive no loss, 4 the loss of one, as 1 and 3 do.
	 */
	if (nr_cp > 1 && nr_cp % 2 == 0)
		err_pos(p, last_cp->roles_pos,
			"use an odd number of control planes: 1, 3 or 5 (3 survive the loss of "
			"one, 5 of two)",
			"%zu control planes: each runs an etcd member, and etcd accepts writes "
			"only while a majority (%zu of %zu) is up: %zu control planes survive "
			"%s, no more than %zu do",
			nr_cp, nr_cp / 2 + 1, nr_cp, nr_cp,
			nr_cp == 2   ? "no loss at all"
			: nr_cp == 4 ? "the loss of 1 machine"
				     : "the loss of fewer than half of them",
			nr_cp - 1);
	if (second_cp && inv->cluster.api_endpoint.kind == API_ENDPOINT_NONE &&
	    !inv->cluster.api_endpoint.pos.line)
		err_pos(p, second_cp->roles_pos,
			"add cluster.api_endpoint: vip: ADDRESS (provision runs keepalived and "
			"HAProxy on the control planes) or address: HOST[:PORT] (the lab's load "
			"balancer or DNS name)",
			"%zu control planes (node '%s' besides '%s' at %u:%u) need one address for "
			"the API in front of them: the workers and kubeadm must not depend on one",
			nr_cp, second_cp->name, cp->name, cp->roles_pos.line, cp->roles_pos.col);
	if (!worker && p->s.dl->errors == p->errors_before)
		warn_pos(p, p->nodes_pos,
			 "add worker to the roles of the compute nodes (the control plane may be "
			 "a worker too)",
			 "no node has the worker role: nothing can run notebooks");
}

/* Node addresses inside the pod or service network would be unreachable. */
static void check_networks(struct parser *p)
{
	struct inventory *inv = p->inv;
	struct source_pos last = {0};
	size_t i, kube = 0, room;
	char buf[32];

	if (p->pod.set && p->service.set && cidr_overlap(&p->pod, &p->service)) {
		if (p->service_pos.line)
			err_pos(p, p->service_pos,
				"the pod and service networks must not share addresses",
				"'service_cidr' %s overlaps 'pod_cidr' %s%s",
				inv->cluster.service_cidr, inv->cluster.pod_cidr,
				p->pod_pos.line ? "" : " (the default)");
		else
			err_pos(p, p->pod_pos,
				"the pod and service networks must not share addresses",
				"'pod_cidr' %s overlaps 'service_cidr' %s (the default)",
				inv->cluster.pod_cidr, inv->cluster.service_cidr);
	}
	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *nd = &inv->nodes[i];
		const struct cidr *in = NULL;
		const char *which = NULL;
		uint32_t a;

		kube += is_kube_node(nd);
		if (!ipv4_parse(nd->address, &a) || same_pos(last, nd->address_pos))
			continue;
		if (p->pod.set && cidr_contains(&p->pod, a)) {
			in = &p->pod;
			which = "pod_cidr";
		} else if (p->service.set && cidr_contains(&p->service, a)) {
			in = &p->service;
			which = "service_cidr";
		}
		if (!in)
			continue;
		last = nd->address_pos;
		cidr_format(buf, sizeof(buf), in->net, in->prefix);
		err_pos(p, nd->address_pos, "choose cluster networks that no node address falls in",
			"address %s of node '%s' is inside '%s' %s", nd->address, nd->name, which,
			buf);
	}
	if (!p->pod.set)
		return;
	room = p->pod.prefix <= 8 ? (size_t)1 << 16 : (size_t)1 << (24 - p->pod.prefix);
	if (kube > room)
		err_pos(
		    p, p->pod_pos.line ? p->pod_pos : p->nodes_pos,
		    "use a larger pod_cidr such as a /16",
		    "'pod_cidr' %s has room for %zu node%s (a /24 each) but the inventory has %zu",
		    inv->cluster.pod_cidr, room, room == 1 ? "" : "s", kube);
}

static void check_nfs(struct parser *p)
{
	struct inventory *inv = p->inv;
	struct nfs_settings *nfs = &inv->nfs;
	const struct node *server = NULL, *nd;
	struct source_pos last = {0}, where;
	size_t i;

	if (nfs->server) {
		bool known = false;
		server = inventory_find(inv, nfs->server);
		for (i = 0; i < p->nr_names && !known; i++)
			known = !strcmp(p->names[i].name, nfs->server);
		if (!known && !p->names_incomplete) {
			const char **names = xcalloc(p->nr_names + 1, sizeof(*names));
			const char *s;
			for (i = 0; i < p->nr_names; i++)
				names[i] = p->names[i].name;
			s = schema_suggest(nfs->server, names, p->nr_names);
			if (s)
				err_pos(p, p->nfs_server_pos, NULL,
					"'server' names no node called '%s' (did you mean '%s'?)",
					nfs->server, s);
			else
				err_pos(p, p->nfs_server_pos,
					"name the node that has the nfs-server role",
					"'server' names no node called '%s'", nfs->server);
			free(names);
		} else if (server && !(server->roles & NODE_ROLE_NFS_SERVER)) {
			char *hint = xasprintf("add nfs-server to the roles of '%s'", server->name);
			err_pos(p, p->nfs_server_pos, hint,
				"'server' names node '%s', which does not have the nfs-server role",
				server->name);
			free(hint);
			server = NULL;
		}
		if (!server)
			return;
	} else {
		for (i = 0; i < inv->nr_nodes && !server; i++)
			if (inv->nodes[i].roles & NODE_ROLE_NFS_SERVER)
				server = &inv->nodes[i];
		if (!server) {
			if (p->have_nfs_section && !p->roles_incomplete && !p->nodes_incomplete)
				err_pos(p, p->nfs_pos,
					"add nfs-server to the roles of the storage node",
					"'nfs' is set but no node has the nfs-server role");
			return;
		}
		nfs->server = xstrdup(server->name);
	}
	where = p->have_nfs_section ? p->nfs_pos : server->roles_pos;
	if (p->export.set) {
		for (i = 0; i < inv->nr_nodes; i++) {
			uint32_t a;
			nd = &inv->nodes[i];
			if (!is_kube_node(nd) || !ipv4_parse(nd->address, &a) ||
			    cidr_contains(&p->export, a) || same_pos(last, nd->address_pos))
				continue;
			last = nd->address_pos;
			warn_pos(
			    p, p->export_pos, "widen export_network to the nodes' network",
			    "node '%s' (%s) is outside 'export_network' %s and cannot mount the "
			    "NFS export",
			    nd->name, nd->address, nfs->export_network);
		}
	} else if (!p->nodes_incomplete && inv->nr_nodes) {
		/* The smallest network holding every node, at least a /24. */
		uint32_t first = 0, diff = 0, a;
		unsigned prefix = 0;
		char buf[32];

		for (i = 0; i < inv->nr_nodes; i++) {
			nd = &inv->nodes[i];
			if (!ipv4_parse(nd->address, &a)) {
				err_pos(
				    p, where,
				    "set storage.nfs.export_network to the nodes' network, such as "
				    "192.168.10.0/24",
				    "cannot work out the NFS export network: node '%s' has the "
				    "address '%s', not an IPv4 address",
				    nd->name, nd->address);
				return;
			}
			if (i == 0)
				first = a;
			diff |= a ^ first;
		}
		while (prefix < 24 && !(diff & (0x80000000u >> prefix)))
			prefix++;
		cidr_format(buf, sizeof(buf), first & prefix_mask(prefix), prefix);
		set_str(&nfs->export_network, buf);
	}
}

/* jupyterhub.node names a control plane of the inventory. */
static void check_hub_node(struct parser *p)
{
	struct inventory *inv = p->inv;
	const struct node *nd = inventory_find(inv, inv->hub.node);
	bool known = false;
	size_t i;

	for (i = 0; i < p->nr_names && !known; i++)
		known = !strcmp(p->names[i].name, inv->hub.node);
	if (!known && !p->names_incomplete) {
		const char **names = xcalloc(p->nr_names + 1, sizeof(*names));
		const char *s;

		for (i = 0; i < p->nr_names; i++)
			names[i] = p->names[i].name;
		s = schema_suggest(inv->hub.node, names, p->nr_names);
		if (s)
			err_pos(p, p->hub_node_pos, NULL,
				"'node' names no node called '%s' (did you mean '%s'?)",
				inv->hub.node, s);
		else
			err_pos(p, p->hub_node_pos,
				"name the control plane that runs the hub and holds its database",
				"'node' names no node called '%s'", inv->hub.node);
		free(names);
	} else if (nd && !(nd->roles & NODE_ROLE_CONTROL_PLANE) && !p->roles_incomplete) {
		err_pos(p, p->hub_node_pos,
			"name a control plane: the hub runs beside the cluster's services, away "
			"from the notebooks",
			"'node' names node '%s', which does not have the control-plane role",
			nd->name);
	}
}

static void check_hub(struct parser *p)
{
	struct inventory *inv = p->inv;
	struct source_pos where = p->hub_section ? p->hub_pos : (struct source_pos){0};

	if (!inv->hub.enabled)
		return;
	if (inv->hub.node)
		check_hub_node(p);
	if (!inv->nfs.server && !p->roles_incomplete && !p->nodes_incomplete && inv->nr_nodes)
		warn_pos(p, where,
			 "give one node the nfs-server role, or set jupyterhub.enabled: false",
			 "jupyterhub needs storage but no node has the nfs-server role");
	if (inv->hub.auth == HUB_AUTH_NATIVE && !inv->hub.admin_users[0])
		warn_pos(p, where, "list at least one user in jupyterhub.admin_users",
			 "jupyterhub has no admin_users: nobody can approve sign-ups");
	/* GitHub lets in the admins and allowed users only: never every GitHub account */
	if (inv->hub.auth == HUB_AUTH_GITHUB && !inv->hub.admin_users[0] &&
	    !inv->hub.allowed_users[0])
		err_pos(
		    p, where,
		    "list the GitHub accounts that may log in in jupyterhub.allowed_users "
		    "(and the admins in admin_users)",
		    "jupyterhub with GitHub sign-in names neither admin_users nor allowed_users: "
		    "nobody could log in");
}

/* Loading -------------------------------------------------------------------- */

static const char *const top_keys[] = {"version", "cluster",	"ssh",
				       "storage", "jupyterhub", "nodes"};
enum { TOP_VERSION, TOP_CLUSTER, TOP_SSH, TOP_STORAGE, TOP_HUB, TOP_NODES };

static struct inventory *inventory_new(const char *path)
{
	struct inventory *inv = xcalloc(1, sizeof(*inv));

	inv->path = xstrdup(path);
	inv->version = 1;
	inv->cluster = (struct cluster_settings){
	    .pod_cidr = xstrdup("10.244.0.0/16"),
	    .service_cidr = xstrdup("10.96.0.0/12"),
	    .api_port = 6443,
	    .cert_warning_days = 30,
	    .backups_keep = 5,
	    .helm_major = 0, /* role_set_resolve_helm */
	    .no_proxy = strv_new(),
	    .image_pull_timeout = 1800,
	};
	ssh_defaults(&inv->ssh);
	inv->nfs = (struct nfs_settings){
	    .path = xstrdup("/nfs"),
	    .options = xstrdup("rw,sync,no_root_squash,no_subtree_check"),
	};
	inv->hub = (struct hub_settings){
	    .enabled = true,
	    .node_port = 30080,
	    .storage = xstrdup("10Gi"),
	    .admin_users = strv_new(),
	    .allowed_users = strv_new(),
	    .auth = HUB_AUTH_NATIVE,
	    .start_timeout = 900,
	    .shm_size = xstrdup("1Gi"),
	};
	return inv;
}

static void walk(struct parser *p, const yaml_node_t *root)
{
	static const struct source_pos nowhere;
	struct schema_fields f;
	int version;

	schema_map_fields(&p->s, root, "the inventory", top_keys, ARRAY_SIZE(top_keys), &f);
	if (!f.val[TOP_CLUSTER] && !(f.suggested & (1u << TOP_CLUSTER)))
		err_pos(p, nowhere, "start from inventory/seed.yaml",
			"missing required key 'cluster'");
	if (!f.val[TOP_NODES] && !(f.suggested & (1u << TOP_NODES)))
		err_pos(p, nowhere, "start from inventory/seed.yaml",
			"missing required key 'nodes'");
	if (f.val[TOP_VERSION] &&
	    schema_int(&p->s, f.val[TOP_VERSION], "version", 0, INT_MAX, &version) && version != 1)
		err_at(p, f.val[TOP_VERSION], "this provision reads version 1",
		       "unsupported inventory version %d", version);
	p->pod = (struct cidr){0x0af40000u, 16, true};	   /* 10.244.0.0/16 */
	p->service = (struct cidr){0x0a600000u, 12, true}; /* 10.96.0.0/12 */
	if (f.val[TOP_SSH])
		parse_ssh(p, f.val[TOP_SSH], &p->inv->ssh);
	if (f.val[TOP_CLUSTER])
		parse_cluster(p, f.key[TOP_CLUSTER], f.val[TOP_CLUSTER]);
	if (f.val[TOP_NODES])
		parse_nodes(p, f.key[TOP_NODES], f.val[TOP_NODES]);
	else
		p->nodes_incomplete = p->roles_incomplete = p->names_incomplete = true;
	if (f.val[TOP_STORAGE])
		parse_storage(p, f.val[TOP_STORAGE]);
	if (f.val[TOP_HUB])
		parse_hub(p, f.key[TOP_HUB], f.val[TOP_HUB]);
	check_duplicates(p);
	check_roles(p);
	check_api_endpoint(p);
	check_networks(p);
	check_nfs(p);
	/* Its warnings would mostly repeat an error: "no admin" after a misspelt admin_users. */
	if (p->s.dl->errors == p->errors_before)
		check_hub(p);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return NULL;
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

int inventory_load_buffer(struct inventory **out, const char *name, const char *data, size_t len,
			  struct diag_list *dl)
{
	static const struct source_pos nowhere;
	struct parser p = {0};
	size_t first = dl->nr, errors = dl->errors;
	yaml_node_t *root;
	char buf[64];
	int ret = -1;

	*out = NULL;
	if (schema_load(&p.s, name, data, len, dl) < 0)
		goto out;
	p.s.secrets_in = "the inventory";
	root = schema_root(&p.s);
	if (!root || schema_is_null(root)) {
		err_pos(&p, nowhere, "start from inventory/seed.yaml", "the inventory is empty");
		goto out;
	}
	if (schema_one_document(&p.s, "inventory") < 0)
		goto out; /* a syntax error after the first document */
	if (root->type != YAML_MAPPING_NODE) {
		/* at the list's or scalar's own start, like every other error */
		err_pos(&p, schema_pos(root), "start from inventory/seed.yaml",
			"the inventory must be a mapping with 'cluster' and 'nodes', not %s",
			schema_describe(root, buf, sizeof(buf)));
		goto out;
	}
	p.inv = inventory_new(name);
	p.base_dir = dir_of(name);
	p.errors_before = errors;
	walk(&p, root);
	if (dl->errors == errors) {
		*out = p.inv;
		p.inv = NULL;
		ret = 0;
	}
out:
	diag_sort_from(dl, first);
	inventory_free(p.inv);
	free(p.base_dir);
	for (size_t i = 0; i < p.nr_names; i++)
		free(p.names[i].name);
	free(p.names);
	schema_release(&p.s);
	return ret;
}

int inventory_load(struct inventory **out, const char *path, struct diag_list *dl)
{
	struct strbuf sb = STRBUF_INIT;
	int r;

	*out = NULL;
	sb.max = INVENTORY_MAX_BYTES;
	r = read_file(path, &sb);
	if (r == -ENOENT)
		diag_add(dl, DIAG_ERROR, path, 0, 0, NULL, "inventory file not found");
	else if (r == -EACCES)
		diag_add(dl, DIAG_ERROR, path, 0, 0, NULL,
			 "inventory file is not readable (permission denied)");
	else if (r == -EISDIR)
		diag_add(dl, DIAG_ERROR, path, 0, 0, NULL, "inventory is a directory, not a file");
	else if (r < 0)
		diag_add(dl, DIAG_ERROR, path, 0, 0, NULL, "cannot read the inventory: %s",
			 strerror(-r));
	else if (sb.truncated)
		diag_add(dl, DIAG_ERROR, path, 0, 0, NULL, "inventory is larger than %u MiB",
			 INVENTORY_MAX_BYTES >> 20);
	else
		r = inventory_load_buffer(out, path, sb.buf, sb.len, dl);
	strbuf_release(&sb);
	return r < 0 ? -1 : 0;
}

static void node_release(struct node *nd)
{
	if (nd->sudo_password)
		explicit_bzero(nd->sudo_password, strlen(nd->sudo_password));
	free(nd->sudo_password);
	free(nd->name);
	free(nd->address);
	ssh_release(&nd->ssh);
	strv_free(nd->labels);
}

void inventory_free(struct inventory *inv)
{
	size_t i;

	if (!inv)
		return;
	free(inv->path);
	free(inv->cluster.name);
	free(inv->cluster.api_endpoint.host);
	free(inv->cluster.kubernetes_version);
	free(inv->cluster.pod_cidr);
	free(inv->cluster.service_cidr);
	free(inv->cluster.apt_mirror);
	free(inv->cluster.apt_key_fingerprint);
	free(inv->cluster.http_proxy);
	strv_free(inv->cluster.no_proxy);
	for (i = 0; i < inv->cluster.nr_registries; i++) {
		struct registry *r = &inv->cluster.registries[i];
		size_t j;
		for (j = 0; j < r->nr_mirrors; j++) {
			free(r->mirrors[j].url);
			free(r->mirrors[j].ca_file);
			free(r->mirrors[j].ca_pem);
			free(r->mirrors[j].username);
			free(r->mirrors[j].password_file);
		}
		free(r->mirrors);
		free(r->host);
		free(r->server);
		free(r->ca_file);
		free(r->ca_pem);
		free(r->username);
		free(r->password_file);
	}
	free(inv->cluster.registries);
	ssh_release(&inv->ssh);
	free(inv->nfs.server);
	free(inv->nfs.path);
	free(inv->nfs.export_network);
	free(inv->nfs.options);
	free(inv->hub.chart_version);
	free(inv->hub.chart_resolved);
	free(inv->hub.image);
	free(inv->hub.storage);
	strv_free(inv->hub.admin_users);
	strv_free(inv->hub.allowed_users);
	free(inv->hub.github_client_id);
	free(inv->hub.github_client_secret_file);
	free(inv->hub.github_callback_url);
	free(inv->hub.ldap_server);
	free(inv->hub.ldap_bind_dn_template);
	free(inv->hub.shm_size);
	free(inv->hub.node);
	for (i = 0; i < inv->nr_nodes; i++)
		node_release(&inv->nodes[i]);
	free(inv->nodes);
	free(inv);
}

const struct node *inventory_find(const struct inventory *inv, const char *name)
{
	size_t i;

	for (i = 0; i < inv->nr_nodes; i++)
		if (!strcmp(inv->nodes[i].name, name))
			return &inv->nodes[i];
	return NULL;
}

const struct node *inventory_control_plane(const struct inventory *inv)
{
	size_t i;

	for (i = 0; i < inv->nr_nodes; i++)
		if (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE)
			return &inv->nodes[i];
	return NULL;
}

const struct node *inventory_hub_node(const struct inventory *inv)
{
	const struct node *first = NULL;
	size_t i;

	if (inv->hub.node) {
		const struct node *nd = inventory_find(inv, inv->hub.node);
		if (nd && (nd->roles & NODE_ROLE_CONTROL_PLANE))
			return nd;
	}
	for (i = 0; i < inv->nr_nodes; i++) {
		if (!(inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		if (first)
			return &inv->nodes[i];
		first = &inv->nodes[i];
	}
	return first;
}

size_t inventory_nr_control_planes(const struct inventory *inv)
{
	size_t i, n = 0;

	for (i = 0; i < inv->nr_nodes; i++)
		if (inv->nodes[i].roles & NODE_ROLE_CONTROL_PLANE)
			n++;
	return n;
}

const char *inventory_api_host(const struct inventory *inv)
{
	const struct node *cp;

	if (inv->cluster.api_endpoint.kind != API_ENDPOINT_NONE)
		return inv->cluster.api_endpoint.host;
	cp = inventory_control_plane(inv);
	return cp ? cp->address : NULL;
}

int inventory_api_port(const struct inventory *inv)
{
	if (inv->cluster.api_endpoint.kind != API_ENDPOINT_NONE)
		return inv->cluster.api_endpoint.port;
	return inv->cluster.api_port;
}

static int select_item(const struct inventory *inv, const char *item, bool *sel, struct error *err)
{
	char **names = NULL;
	size_t nr = 0, i, j;
	const char *s;
	int ret = -1;

	if (item[0] == '@') {
		unsigned role = node_role_parse(item + 1);
		bool any = false;
		if (!role) {
			s = schema_suggest(item + 1, role_names, ARRAY_SIZE(role_names));
			error_set(err, -1, "unknown role '%s' in the limit", item);
			error_hint(err, s ? "did you mean '@%s'?" : "%s",
				   s ? s : "roles are @control-plane, @worker and @nfs-server");
			return -1;
		}
		for (i = 0; i < inv->nr_nodes; i++)
			if (inv->nodes[i].roles & role)
				any = sel[i] = true;
		if (!any)
			return error_set(err, -1, "no node has the role '%s'", item + 1);
		return 0;
	}
	if (hostlist_expand(&names, &nr, item, err) < 0)
		return -1;
	for (j = 0; j < nr; j++) {
		for (i = 0; i < inv->nr_nodes; i++)
			if (!strcmp(inv->nodes[i].name, names[j]))
				break;
		if (i == inv->nr_nodes) {
			const char **all = xcalloc(inv->nr_nodes + 1, sizeof(*all));
			for (i = 0; i < inv->nr_nodes; i++)
				all[i] = inv->nodes[i].name;
			s = schema_suggest(names[j], all, inv->nr_nodes);
			error_set(err, -1, "no node named '%s' in the inventory", names[j]);
			if (s)
				error_hint(err, "did you mean '%s'?", s);
			free(all);
			goto out;
		}
		sel[i] = true;
	}
	ret = 0;
out:
	hostlist_free(names);
	return ret;
}

int inventory_select(const struct inventory *inv, const char *limit, bool *sel, struct error *err)
{
	char **items;
	size_t nr, i;
	int count = 0;

	for (i = 0; i < inv->nr_nodes; i++)
		sel[i] = false;
	items = hostlist_split(limit, &nr);
	for (i = 0; i < nr; i++) {
		char *item = items[i], *end;
		while (*item == ' ')
			item++;
		end = item + strlen(item);
		while (end > item && end[-1] == ' ')
			*--end = '\0';
		if (!*item) {
			error_set(err, -1, "empty item in the limit '%s'", limit);
			error_hint(err, "separate names, ranges and @roles with single commas");
			goto fail;
		}
		if (select_item(inv, item, sel, err) < 0)
			goto fail;
	}
	hostlist_free(items);
	for (i = 0; i < inv->nr_nodes; i++)
		count += sel[i];
	return count;
fail:
	hostlist_free(items);
	for (i = 0; i < inv->nr_nodes; i++)
		sel[i] = false;
	return -1;
}
