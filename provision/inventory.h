/*
 * inventory: the inventory file (schema v1) parsed and validated into one
 * immutable `struct inventory`.
 *
 * inventory_load() reads YAML with the schema reader (schema.h), expands
 * pdsh-style ranges (`b-[2-4]`, `192.168.10.[52-54]`), applies the `ssh:`
 * defaults to every node, and validates everything it can without
 * connecting anywhere.  It reports *every* problem it finds, each as a
 * `struct diag` (diag.h) with the 1-based line and column of the offending
 * YAML node, so that one run of
 * `provision inventory` shows the admin all their mistakes at once.
 *
 * Ownership: the inventory owns every string and array in it; free it with
 * inventory_free().  Diagnostics are owned by the `struct diag_list`.
 * Threading: once loaded, an inventory is read-only and may be shared by
 * every thread.
 *
 * The reference for users is inventory/README.md; keep them in step.
 */
#ifndef PROVISION_INVENTORY_H
#define PROVISION_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

enum node_role {
	NODE_ROLE_CONTROL_PLANE = 1u << 0,
	NODE_ROLE_WORKER = 1u << 1,
	NODE_ROLE_NFS_SERVER = 1u << 2,
};

enum host_key_policy {
	HOST_KEYS_STRICT = 0, /* unknown or changed key: refuse */
	HOST_KEYS_ACCEPT_NEW, /* unknown key: record it; changed key: refuse */
};

enum sudo_mode {
	SUDO_AUTO = 0, /* root runs directly; anyone else through sudo -n */
	SUDO_ALWAYS,
	SUDO_NEVER,
};

struct ssh_settings {
	char *user;	   /* default: the current user */
	int port;	   /* default: 22 */
	char *identity;	   /* expanded (~/ -> $HOME); NULL: agent and default keys */
	char *known_hosts; /* expanded; default ~/.ssh/known_hosts */
	enum host_key_policy host_keys;
	enum sudo_mode sudo;
	char *jump;		  /* ProxyJump-style "[user@]host[:port]"; NULL: direct */
	char *sudo_password_file; /* expanded; file holding the sudo password; NULL: none */
	int connect_timeout;	  /* seconds, default 10 */
	int command_timeout;	  /* seconds per command, default 600 (0: none) */
	int keepalive;		  /* seconds between keepalives, default 15 (0: off) */
};

struct node {
	char *name;
	char *address;	/* host name or IPv4/IPv6 literal, as written or expanded */
	unsigned roles; /* enum node_role bits */
	int gpus;	/* expected GPU count; -1 when not declared */
	/*
	 * gpu_sharing: how many notebooks share each of its GPUs (the device
	 * plugin's time-slicing replicas), INVENTORY_GPU_SHARING_MIN to _MAX;
	 * 0: not shared.  Only on a node that declares gpus >= 1.
	 */
	int gpu_sharing;
	const char *arch; /* "amd64" (default) or "arm64": which release archives it gets */
	struct ssh_settings ssh;
	/*
	 * Never parsed: the CLI reads a node's own ssh.sudo_password_file (one
	 * that is not the inventory's ssh default) into sudo_password and sets
	 * own_sudo_password; such a node gets that password or none, never the
	 * one of the other nodes (runner_target_from_node).  Wiped when freed.
	 */
	char *sudo_password;
	bool own_sudo_password;
	char **labels;	       /* "key=value" Kubernetes labels to add, NULL-terminated */
	struct source_pos pos; /* the node's entry (the `- name:` mapping) */
	/* Where its values were written (shared by the nodes of one range). */
	struct source_pos name_pos, address_pos, roles_pos, gpus_pos, arch_pos, gpu_sharing_pos;
};

/*
 * Bounds of a node's gpu_sharing.  2: the device plugin refuses fewer
 * replicas (a GPU "shared by 1" is a GPU not shared: leave the key out).
 * 16: GPU memory is not isolated between the notebooks sharing a GPU, and
 * every CUDA process holds a few hundred MiB of it for its context alone;
 * 16 notebooks on a lab's 8 GiB card leave each about 500 MiB, the edge of
 * usable.  Sharing wider than that is not a lab setting but a mistake.
 */
#define INVENTORY_GPU_SHARING_MIN 2
#define INVENTORY_GPU_SHARING_MAX 16

struct nfs_settings {
	char *server;	      /* name of the storage node; NULL when no NFS */
	char *path;	      /* export path, default /nfs */
	char *export_network; /* CIDR allowed to mount; default: derived from node addresses */
	char *options;	      /* export options, default rw,sync,no_root_squash,no_subtree_check */
};

enum hub_auth {
	HUB_AUTH_NATIVE = 0, /* NativeAuthenticator: sign-up, admins authorise */
	HUB_AUTH_GITHUB,     /* GitHub OAuth */
	HUB_AUTH_LDAP,
	HUB_AUTH_PAM_NONE, /* placeholder: never produced by the parser */
};

struct hub_settings {
	bool enabled;	     /* default true */
	char *chart_version; /* pinned chart version; NULL: the jupyterhub role's pin */
	struct source_pos chart_version_pos;
	/* the chart version the roles install (role_set_resolve_hub_chart); NULL: not resolved */
	char *chart_resolved;
	int node_port; /* proxy NodePort, default 30080 (30000-32767) */
	/* the control plane that runs the hub and holds its database (jupyterhub.node);
	 * NULL: inventory_hub_node's default */
	char *node;
	char *image;	      /* singleuser image "name:tag"; NULL: the chart's default */
	char *storage;	      /* per-user volume size, e.g. "10Gi" */
	char **admin_users;   /* NULL-terminated */
	char **allowed_users; /* NULL-terminated; may be empty */
	enum hub_auth auth;
	char *github_client_id;
	char *github_client_secret_file; /* a file on the controller; never inlined */
	char *github_callback_url;
	char *ldap_server;
	char *ldap_bind_dn_template;
	int start_timeout; /* seconds, default 900 (large CUDA images) */
	char *shm_size;	   /* memory-backed /dev/shm per notebook, default 1Gi */
};

/*
 * cluster.registries: how nodes reach one upstream registry (containerd's
 * hosts.toml for HOST, roles/containerd).  Credentials only as a file on
 * this machine (password_file, read at run time: provision/cli/common.c);
 * a CA file is read and checked here (ca_pem: its PEM certificates).
 */
struct registry_mirror {
	char *url;	     /* http(s)://host[:port], tried in list order */
	char *ca_file;	     /* expanded path on this machine; NULL: the system's CAs */
	char *ca_pem;	     /* its content (PEM certificates only); NULL without ca_file */
	bool skip_verify;    /* TLS certificate not checked */
	char *username;	     /* NULL: no credentials */
	char *password_file; /* expanded; set exactly when username is */
	struct source_pos pos, password_file_pos;
};

/* Bounds: a lab names a handful of registries, each with a mirror or two. */
#define INVENTORY_REGISTRIES_MAX 32
#define INVENTORY_MIRRORS_MAX	 8

struct registry {
	char *host;    /* the registry's name in image references: docker.io, HOST:PORT */
	bool upstream; /* default true: the upstream after the mirrors; false: mirrors only */
	/* The upstream itself (only with upstream: true): */
	char *
	    server; /* its URL; default https://HOST (https://registry-1.docker.io for docker.io) */
	char *ca_file, *ca_pem;
	bool skip_verify;
	char *username, *password_file;
	struct registry_mirror *mirrors;
	size_t nr_mirrors;
	struct source_pos pos, password_file_pos;
};

/* cluster.images.source: where a node's images come from (the pull phase, `fetch --images`). */
enum images_source {
	IMAGES_SOURCE_AUTO = 0, /* import what `provision fetch --images` cached, pull the rest */
	IMAGES_SOURCE_REGISTRY, /* always pull */
	IMAGES_SOURCE_BUNDLE,	/* import only; a missing image fails preflight */
};

/*
 * cluster.api_endpoint: the one address the API is reached at when there
 * is more than one control plane (doc/provision-inventory.5, ../DESIGN).
 * NONE: the control plane's own address and api_port, as with one control
 * plane always.  VIP: a virtual IPv4 address held by one control plane at
 * a time (keepalived, VRRP) in front of HAProxy on every control plane,
 * which listens on `port` and balances the API servers (api_port).
 * ADDRESS: a load balancer or DNS name the lab provides, HOST:port.
 */
enum api_endpoint_kind {
	API_ENDPOINT_NONE = 0,
	API_ENDPOINT_VIP,
	API_ENDPOINT_ADDRESS,
};

/* Defaults: HAProxy's port beside the API server's 6443; keepalived's usual VRRP id. */
#define INVENTORY_VIP_PORT	    8443
#define INVENTORY_VIRTUAL_ROUTER_ID 51

struct api_endpoint {
	enum api_endpoint_kind kind;
	char *host;	       /* the VIP (IPv4 literal) or the lab's host name or address */
	int port;	       /* VIP: HAProxy's port (default 8443); ADDRESS: default api_port */
	int virtual_router_id; /* VIP: VRRP's router id, 1-255, default 51 */
	struct source_pos pos, host_pos, port_pos;
};

struct cluster_settings {
	char *name;		   /* DNS label */
	char *kubernetes_version;  /* exact X.Y.Z */
	char *pod_cidr;		   /* default 10.244.0.0/16 */
	char *service_cidr;	   /* default 10.96.0.0/12 */
	int api_port;		   /* default 6443 */
	struct api_endpoint api_endpoint; /* kind NONE unless cluster.api_endpoint */
	char *apt_mirror;	   /* NULL: upstream pkgs.k8s.io */
	char *apt_key_fingerprint; /* NULL: pkgs.k8s.io's (roles/kubernetes.yaml) */
	char *http_proxy;	   /* NULL: none */
	char **no_proxy;	   /* extra NO_PROXY entries, NULL-terminated (maybe empty) */
	bool containerd_release;   /* containerd: release (roles/containerd-release) */
	/*
	 * helm: 4 or 3, the Helm major roles/helm installs.  Not given: 0 at
	 * load, then role_set_resolve_helm sets it (4 when a Helm 4 is pinned
	 * for the cluster's minor, else 3) and helm_auto.
	 */
	int helm_major;
	bool helm_auto;
	struct source_pos helm_pos; /* where cluster.helm is written; 0: not given */
	int cert_warning_days;	   /* check warns below this many days left, default 30 */
	int backups_keep;	   /* etcd backups kept on this machine, default 5 (provision backup) */
	struct source_pos kubernetes_version_pos; /* where it is written (provision upgrade) */
	struct registry *registries;		  /* cluster.registries, in file order */
	size_t nr_registries;
	enum images_source images_source;	  /* cluster.images.source, default auto */
	int image_pull_timeout;			  /* cluster.images.pull_timeout, seconds, default 1800 */
};

struct inventory {
	char *path;  /* as given */
	int version; /* schema version: 1 */
	struct cluster_settings cluster;
	struct ssh_settings ssh; /* the defaults, after built-in defaults */
	struct nfs_settings nfs;
	struct hub_settings hub;
	size_t nr_nodes;
	struct node *nodes; /* in file order, ranges expanded in order */
};

/*
 * Load and validate an inventory.  Returns 0 and sets *out on success
 * (warnings may still be in dl); returns -1 with at least one error in dl
 * otherwise (*out is NULL).  Never touches the network.  The diagnostics it
 * adds are in file order: whole-file ones first, then by line and column.
 * A file that cannot be read, is empty or is not a mapping gives exactly one
 * diagnostic without a position; a YAML syntax error stops the check.
 */
int inventory_load(struct inventory **out, const char *path, struct diag_list *dl);
/* The same from a buffer; `name` is used in diagnostics (tests, fuzzing). */
int inventory_load_buffer(struct inventory **out, const char *name, const char *data, size_t len,
			  struct diag_list *dl);
void inventory_free(struct inventory *inv);

const struct node *inventory_find(const struct inventory *inv, const char *name);
/*
 * The first control-plane node (at least one in a valid inventory: one, or
 * an odd number with cluster.api_endpoint).
 */
const struct node *inventory_control_plane(const struct inventory *inv);
/*
 * The node that runs the hub and holds its SQLite database on its disk:
 * jupyterhub.node, else the control plane when there is one, else the second
 * control plane in the inventory's order (the first holds the API's virtual
 * IP by preference: losing one machine costs the hub or the VIP's holder,
 * never both).  NULL without a control plane.
 */
const struct node *inventory_hub_node(const struct inventory *inv);
/* How many nodes have the control-plane role. */
size_t inventory_nr_control_planes(const struct inventory *inv);
/*
 * Where the API is reached: cluster.api_endpoint's host and port, or the
 * (first) control plane's address and api_port when there is none.  NULL
 * host only when the inventory has no control plane.
 */
const char *inventory_api_host(const struct inventory *inv);
int inventory_api_port(const struct inventory *inv);

/* "control-plane", "worker", "nfs-server" for one bit; NULL otherwise. */
const char *node_role_name(enum node_role role);
/* Parse a role name; returns the bit or 0. */
unsigned node_role_parse(const char *name);

/*
 * Select nodes for -l/--limit: a comma-separated list of names, pdsh ranges
 * (`b-[2-4]`) and roles (`@worker`).  Fills sel[i] (nr_nodes entries) with
 * true for chosen nodes.  Returns the count chosen, or -1 with a message in
 * err (an unknown name or role) -- the limit must never silently select less.
 */
struct error;
int inventory_select(const struct inventory *inv, const char *limit, bool *sel, struct error *err);

#endif
