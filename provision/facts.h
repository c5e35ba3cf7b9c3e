/*
 * facts: what a node is, gathered at the start of every run.
 *
 * facts.sh (embedded in the binary) runs on the node as root and prints
 * key=value lines; facts_parse() turns them into a typed struct.  Parsing is
 * pure (text in, struct out) and unit-tested on recorded outputs of real
 * machines (tests/facts/).  Unknown keys are ignored so a newer script can
 * talk to an older parser.
 *
 * Ownership: a struct facts owns all its strings and arrays; release with
 * facts_release().  Read-only once parsed; may be shared between threads.
 */
#ifndef PROVISION_FACTS_H
#define PROVISION_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct gpu {
	char *model;	     /* "NVIDIA GeForce RTX 3070" as nvidia-smi names it */
	unsigned memory_mib; /* 0 when unknown */
	char *driver;	     /* "535.104.05" */
	char *uuid;
};

enum swap_kind { SWAP_FILE, SWAP_PARTITION, SWAP_ZRAM, SWAP_OTHER };

struct swap_dev {
	enum swap_kind kind;
	uint64_t size_kib;
	char *path;
};

struct mac_addr {
	char *iface, *addr;
	bool physical;
};

struct route {
	char *peer, *iface, *src;
};

struct facts {
	int version; /* of facts.sh's output; 0 when the key was missing */
	char *hostname, *os_id, *os_version, *os_pretty, *kernel;
	/*
	 * The machine in Debian's names: "amd64" (the kernel's x86_64) or
	 * "arm64" (aarch64), nothing else (it is used in local file names,
	 * plan_bench.c); NULL when the node said another.  arch_other: that
	 * other machine, when it is a plain word (letters, digits, _, at most
	 * 32), else "(not a machine name)"; NULL when arch is set or missing.
	 */
	char *arch, *arch_other;
	unsigned cpus;
	uint64_t mem_kib, mem_available_kib, disk_free_kib;
	bool systemd;
	int cgroup; /* 1 or 2 */

	struct swap_dev *swaps; /* active swap */
	size_t nr_swaps;
	char **fstab_swap; /* fstab lines of type swap, NULL-terminated */
	size_t nr_fstab_swap;
	char **swap_units; /* "dev-sda2.swap active active" */
	size_t nr_swap_units;
	char *swap_target; /* "masked", "static", ... */

	char **modules; /* of overlay, br_netfilter, nouveau, nvidia: the loaded ones */
	size_t nr_modules;
	char **sysctls; /* "net.ipv4.ip_forward 1" */
	size_t nr_sysctls;

	char *containerd_version; /* "1.6.20" */
	char *containerd_active;  /* "active", "inactive", ... */
	char *containerd_config_sha256;
	bool containerd_systemd_cgroup;
	char **packages; /* "kubeadm 1.30.4-1.1" */
	size_t nr_packages;
	char **held;
	size_t nr_held;

	char **nvidia_pci; /* "0000:01:00.0 0x1b06" */
	size_t nr_nvidia_pci;
	bool nvidia_smi;     /* nvidia-smi is installed */
	int nvidia_smi_rc;   /* its exit status */
	char *nvidia_smi_error; /* its message when it failed */
	struct gpu *gpus;
	size_t nr_gpus;
	char *cuda_version;
	char *secure_boot; /* "on", "off", "legacy", "unknown" */

	/*
	 * DNS: the nameservers of /etc/resolv.conf, of systemd-resolved's
	 * /run/systemd/resolve/resolv.conf (its upstream servers), and
	 * `systemctl is-active systemd-resolved` ("active", ...; NULL without
	 * systemd).
	 */
	char **nameservers;
	size_t nr_nameservers;
	char **resolved_nameservers;
	size_t nr_resolved_nameservers;
	char *resolved;

	bool kubelet_conf; /* /etc/kubernetes/kubelet.conf exists: kube already set up */
	char *machine_id, *product_uuid;
	char **host_keys; /* "ssh-ed25519 AAAA...", from /etc/ssh/ssh_host_*_key.pub */
	size_t nr_host_keys;
	struct mac_addr *macs;
	size_t nr_macs;
	char *default_iface;
	struct route *routes;
	size_t nr_routes;
	char **addresses; /* "eth0 198.18.0.10" */
	size_t nr_addresses;
	int ports_busy[4];
	size_t nr_ports_busy;
	/*
	 * The API's VIP (only when asked: control planes with a vip):
	 * vip_held, the node holds it; vip_route "link IFACE" (on its
	 * subnet) or "gateway"; vip_answer the MAC that answered ARP for it,
	 * "none", or NULL (not probed).  reach: "ADDR:PORT STATE" per other
	 * control plane and port, STATE open, refused, timeout or unreachable.
	 */
	bool vip_held;
	char *vip_route, *vip_answer;
	/*
	 * Only when asked (PROVISION_CHECK_CP: control planes, with an
	 * api_endpoint, when the cluster is checked): the local etcd
	 * member's JSON answers (cluster/member/list, maintenance/status)
	 * and the local API server's /readyz ("CODE TEXT"); "none" when etcd
	 * did not answer, NULL when not asked.  Node text: validate.c parses
	 * it, bounded.
	 */
	char *etcd_members, *etcd_status, *apiserver_readyz;
	char **reach;
	size_t nr_reach;

	/*
	 * The key of the first line whose value carried a character that is
	 * not data (text_unsafe() in util.h: controls, CR, NEL, U+2028/2029,
	 * not UTF-8); NULL when there was none.  Such a line is not parsed:
	 * preflight fails the node, and facts recorded by an earlier run that
	 * have one are not used (plan.c).
	 */
	char *unsafe_field;
	/*
	 * The output as the run record keeps it (nodes/NODE/facts): its
	 * lines, less those of the keys that move by themselves from one
	 * minute to the next (mem_available_kib, disk_free_kib: diff noise);
	 * NULL when a line was not data (text_unsafe(), any line: such facts
	 * are not recorded).
	 */
	char *text;
};

/* The facts script, compiled in from facts.sh. */
extern const char facts_script[];
extern const size_t facts_script_len;

/* The most facts output provision reads from a node (FACTS_MAX bytes, 64 KiB):
 * real nodes print about 1 KiB; more is not facts output. */
#define FACTS_MAX (64u << 10)

/*
 * Parse facts.sh output.  Returns 0, or -1 with a message in err when the
 * text is not facts output at all (no facts_version line, or longer than
 * FACTS_MAX).  Lines with unsafe values are skipped and named in
 * f->unsafe_field.
 */
int facts_parse(struct facts *f, const char *text, size_t len, struct error *err);
void facts_release(struct facts *f);

bool facts_has_module(const struct facts *f, const char *name);
bool facts_port_busy(const struct facts *f, int port);
/* The version of an installed package ("1.30.4-1.1"), or NULL. */
const char *facts_package(const struct facts *f, const char *name);
/* The sysctl's value as reported, or NULL. */
const char *facts_sysctl(const struct facts *f, const char *key);
/*
 * The resolver file this node's kubelet hands pods as their host DNS
 * (KubeletConfiguration resolvConf): systemd-resolved's
 * /run/systemd/resolve/resolv.conf when it lists a server and either
 * systemd-resolved is active (kubeadm's own test) or /etc/resolv.conf names
 * only loopback servers (the stub 127.0.0.53, unreachable from a pod);
 * otherwise /etc/resolv.conf, the kubelet's default.
 */
const char *facts_kubelet_resolv_conf(const struct facts *f);
/* Whether /etc/resolv.conf lists only loopback servers and is the file
 * facts_kubelet_resolv_conf() names: pods would get no DNS (and CoreDNS,
 * forwarding to it, a loop).  False when the facts list no nameserver. */
bool facts_pod_dns_loopback(const struct facts *f);
/* The address this node uses to reach peer (from `route`), or NULL. */
const struct route *facts_route_to(const struct facts *f, const char *peer);
/* True when the GPU model names an NVIDIA GPU without the "NVIDIA " prefix older drivers omit. */
const char *gpu_short_model(const char *model);

#endif
