/* preflight: see preflight.h. */
#include "preflight.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport.h"
#include "util.h"

static void add(struct preflight *pf, size_t node, bool fatal, const char *hint, const char *fmt,
		...) PRINTF_LIKE(5, 6);
static void add(struct preflight *pf, size_t node, bool fatal, const char *hint, const char *fmt,
		...)
{
	struct preflight_problem *p;
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	pf->items = xrealloc(pf->items, (pf->nr + 1) * sizeof(*pf->items));
	p = &pf->items[pf->nr++];
	p->node = node;
	p->fatal = fatal;
	p->msg = strbuf_detach(&sb, NULL);
	p->hint = hint ? xstrdup(hint) : NULL;
}

void preflight_release(struct preflight *pf)
{
	size_t i;

	for (i = 0; i < pf->nr; i++) {
		free(pf->items[i].msg);
		free(pf->items[i].hint);
	}
	free(pf->items);
	memset(pf, 0, sizeof(*pf));
}

bool preflight_node_failed(const struct preflight *pf, size_t i)
{
	size_t k;

	for (k = 0; k < pf->nr; k++)
		if (pf->items[k].node == i && pf->items[k].fatal)
			return true;
	return false;
}

bool node_has_gpu(const struct node *n, const struct facts *f)
{
	if (f)
		return f->nr_nvidia_pci > 0 || f->nr_gpus > 0;
	return n->gpus > 0;
}

/*
 * The operating systems provision covers, with what follows from each for
 * the Kubernetes matrix (roles/kubernetes.yaml): the containerd its
 * distribution ships (roles/containerd installs that package when the node
 * has none) and whether it boots with cgroup v2.  Run: every role was run
 * on it here, in the testbed (Debian 12: the cluster tests; Debian 13:
 * tests/t0400 and the demo with PROVISION_TESTBED_SUITE=trixie); the others
 * are covered from their documentation and recorded facts only
 * (doc/provision.1, KUBERNETES VERSIONS).
 */
static const struct os_row {
	const char *id, *version, *pretty;
	const char *containerd; /* the distribution's containerd package, major.minor */
	bool cgroup_v2;		/* boots with cgroup v2 by default */
} os_table[] = {
    /* run here */
    {"debian", "12", "Debian 12", "1.6", true},
    {"debian", "13", "Debian 13", "1.7", true},
    /*
     * From documentation and recorded facts.  The containerd is what
     * `apt-get install containerd` gets from the -updates pocket (source
     * package containerd-app, kept at upstream's stable releases by
     * Ubuntu's DockerUpdates exception, wiki.ubuntu.com/DockerUpdates):
     * jammy-updates 2.2.1-0ubuntu1~22.04.2 and noble-updates
     * 2.2.1-0ubuntu1~24.04.3 on packages.ubuntu.com (the releases
     * themselves shipped 1.5.9 and 1.7.12).  focal left standard support
     * in May 2025 and packages.ubuntu.com no longer lists it; its last
     * containerd updates were 1.7.x, not checked against the archive here.
     * cgroup: Ubuntu boots the unified (v2) hierarchy from 21.10 on
     * (ubuntu-devel, 2021-08-17, "systemd enabling cgroup v2 by default");
     * 20.04's systemd 245 boots the hybrid (v1) one.
     */
    {"ubuntu", "20.04", "Ubuntu 20.04", "1.7", false},
    {"ubuntu", "22.04", "Ubuntu 22.04", "2.2", true},
    {"ubuntu", "24.04", "Ubuntu 24.04", "2.2", true},
};

static const struct os_row *os_find(const struct facts *f)
{
	size_t i;

	if (!f->os_id || !f->os_version)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(os_table); i++)
		if (!strcmp(f->os_id, os_table[i].id) && !strcmp(f->os_version, os_table[i].version))
			return &os_table[i];
	return NULL;
}

/* "1.6.20" against "2.0": <0, 0, >0 on major.minor; 0 when either does not parse. */
/* The containerd of roles/artifacts.yaml's release archive (containerd-linux-*). */
#define CONTAINERD_RELEASE "2.4.1"

static int cmp_major_minor(const char *a, const char *b)
{
	unsigned am, an, bm, bn;

	if (!a || !b || sscanf(a, "%u.%u", &am, &an) != 2 || sscanf(b, "%u.%u", &bm, &bn) != 2)
		return 0;
	if (am != bm)
		return am < bm ? -1 : 1;
	return an < bn ? -1 : an > bn;
}

/*
 * What the cluster's Kubernetes minor needs of a node that runs a kubelet:
 * the cgroup version and the containerd (roles/kubernetes.yaml, cgroup and
 * containerd_min).
 */
static void check_kube_minor(struct preflight *pf, size_t i, const struct node *n,
			     const struct facts *f, const struct os_row *os,
			     const struct kube_minor *kube, const struct inventory *inv)
{
	const char *version = inv->cluster.kubernetes_version;
	const char *cg = kube_minor_get(kube, "cgroup");
	const char *cmin = kube_minor_get(kube, "containerd_min");
	const char *cpref = kube_minor_get(kube, "containerd_preferred");
	const char *have;

	if (!(n->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER)))
		return;
	if (cg && !strcmp(cg, "2") && f->cgroup == 1) {
		char *hint = xasprintf(
		    "boot %s with cgroup v2: in /etc/default/grub add systemd.unified_cgroup_hierarchy=1 "
		    "to GRUB_CMDLINE_LINUX (and remove any systemd.unified_cgroup_hierarchy=0 or "
		    "cgroup_no_v1), run update-grub, reboot; 'stat -fc %%T /sys/fs/cgroup' then "
		    "prints cgroup2fs.%s  Or stay on Kubernetes 1.34 (past its end of life)",
		    os ? os->pretty : "the node",
		    os && !os->cgroup_v2 ? " (Ubuntu 20.04 boots with cgroup v1 unless told so.)" : "");
		add(pf, i, true, hint,
		    "the node runs cgroup v1, and the kubelet of Kubernetes %s refuses to start on "
		    "cgroup v1 (failCgroupV1)",
		    version);
		free(hint);
	}
	/* containerd: release installs CONTAINERD_RELEASE (roles/containerd-release) */
	have = inv->cluster.containerd_release ? CONTAINERD_RELEASE
	       : f->containerd_version		? f->containerd_version
	       : os				? os->containerd
						: NULL;
	if (cmin && have && cmp_major_minor(have, cmin) < 0) {
		char *hint = xasprintf(
		    "set 'containerd: release' under cluster in the inventory: provision then "
		    "installs containerd %s from its release archive on every Kubernetes node",
		    CONTAINERD_RELEASE);
		add(pf, i, true, hint, "containerd %s%s is older than %s, the oldest Kubernetes %s runs on",
		    have, f->containerd_version ? "" : " (the distribution's package)", cmin, version);
		free(hint);
	} else if (cpref && have && cmp_major_minor(have, cpref) < 0) {
		char *hint = xasprintf(
		    "containerd %s answers the kubelet's RuntimeConfig question (its cgroup driver); "
		    "containerd %s does not, and the kubelet falls back to its own setting, a "
		    "fallback Kubernetes plans to drop in 1.38.  It works with %s; to move to "
		    "containerd %s now, set 'containerd: release' under cluster in the inventory",
		    cpref, have, version, CONTAINERD_RELEASE);
		add(pf, i, false, hint,
		    "containerd %s%s is older than %s: kubeadm %s warns (preflight "
		    "ContainerRuntimeVersion)",
		    have, f->containerd_version ? "" : " (the distribution's package)", cpref,
		    version);
		free(hint);
	}
}

void preflight_helm(struct preflight *pf, const struct inventory *inv, const struct kube_minor *kube,
		    const char *helm_version, const struct node *const *nodes,
		    const struct facts *const *facts, size_t nr)
{
	const char *ranges = kube_minor_get(kube, "helm");
	const char *version = inv->cluster.kubernetes_version;
	int skew;
	size_t i;

	if (!ranges || !helm_version || !(skew = kube_helm_skew(ranges, helm_version)))
		return;
	for (i = 0; i < nr; i++) {
		char *hint;

		if (!facts[i] || !(nodes[i]->roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		if (skew > 0) {
			/*
			 * A cluster older than the Helm's four minors: Helm keeps
			 * no forward compatibility promise, and roles/helm pins a
			 * Helm per range of minors (`kube:`), so a pin outside its
			 * range is refused as a too-old one is.
			 */
			hint = xasprintf(
			    "pin a Helm of %s for this minor in roles/artifacts.yaml and roles/helm "
			    "(its kube: range), or upgrade the cluster to a minor Helm %s supports "
			    "(provision upgrade): a Helm release supports the Kubernetes minor it was "
			    "built against and the three before it (helm.sh/docs/topics/version_skew)",
			    ranges, helm_version);
			add(pf, i, true, hint,
			    "Helm %s, which drives the add-ons, is newer than Kubernetes %s's "
			    "Helms (%s): it does not support this minor",
			    helm_version, version, ranges);
			free(hint);
			continue;
		}
		hint = xasprintf(
		    "pin a Helm of %s in roles/artifacts.yaml (the helm archives roles/helm names), or "
		    "give kubernetes_version a minor Helm %s supports (roles/kubernetes.yaml, column "
		    "helm): a Helm release supports the Kubernetes minor it was built against and "
		    "the three before it, never a newer one (helm.sh/docs/topics/version_skew)",
		    ranges, helm_version);
		add(pf, i, true, hint,
		    "Helm %s, which drives the add-ons, does not support Kubernetes %s: its minor "
		    "needs Helm %s",
		    helm_version, version, ranges);
		free(hint);
	}
}

/* The release archives a node gets follow its inventory arch: it must be the machine's. */
static void check_arch(struct preflight *pf, size_t i, const struct node *n,
		       const struct facts *f)
{
	const char *want = n->arch ? n->arch : "amd64";
	const char *have = f->arch; /* "amd64" or "arm64" (facts.c) */

	if (f->arch_other) {
		add(pf, i, true,
		    "provision covers x86_64 (amd64) and aarch64 (arm64) machines: their release "
		    "archives are the ones pinned in roles/artifacts.yaml",
		    "the node is a %s machine", f->arch_other);
		return;
	}
	if (!have || !strcmp(have, want))
		return;
	char *hint = xasprintf("write 'arch: %s' in the node's entry of the inventory", have);
	add(pf, i, true, hint, "the node is an %s machine, but the inventory says arch %s%s", have,
	    want, n->arch_pos.line ? "" : " (the default)");
	free(hint);
}

/* Report every pair of nodes sharing a value that must be unique. */
static void unique(struct preflight *pf, const struct node *const *nodes, size_t nr,
		   const char *const *vals, const char *what, const char *hint)
{
	size_t i, j;

	for (i = 0; i < nr; i++) {
		if (!vals[i] || !*vals[i])
			continue;
		for (j = 0; j < nr; j++) {
			if (i == j || !vals[j] || strcmp(vals[i], vals[j]))
				continue;
			add(pf, i, true, hint, "%s '%s' is the same as on node '%s' (a cloned disk image?)",
			    what, vals[i], nodes[j]->name);
			break;
		}
	}
}

static bool is_ipv4(const char *s)
{
	struct in_addr a;
	return inet_pton(AF_INET, s, &a) == 1;
}

static const char *reach_port_name(const struct inventory *inv, int port)
{
	if (port == 2379)
		return "etcd's clients";
	if (port == 2380)
		return "etcd's peers";
	if (port == inv->cluster.api_port)
		return "the API server";
	return "a control-plane port";
}

/*
 * Several control planes, a VIP (facts.sh: vip_*, reach).  The VIP is ours
 * when a control plane holds it (provision's keepalived); otherwise nobody
 * may answer ARP for it but a control plane (whose MAC the facts show), and
 * it must be on the control planes' subnet.  The control planes reach each
 * other's etcd and API ports: nothing listens there before `up`, so an
 * answer of any kind (a connection, or its refusal by the peer's kernel)
 * proves the path; silence or a rejection does not.  Whose the VIP is can
 * only be judged by a run of every control plane (up, check): a run of some
 * of them (upgrade and renew-certs run one at a time) does not see the MACs
 * of the others, one of which holds it.
 */
static void check_control_planes(struct preflight *pf, const struct inventory *inv,
				 const struct node *const *nodes, const struct facts *const *facts,
				 size_t nr)
{
	const struct api_endpoint *e = &inv->cluster.api_endpoint;
	const char *holder = NULL;
	size_t i, j, k, nr_cps = 0;
	bool whole;

	for (i = 0; i < nr; i++) {
		if (nodes[i]->roles & NODE_ROLE_CONTROL_PLANE)
			nr_cps++;
		if (facts[i] && facts[i]->vip_held && (nodes[i]->roles & NODE_ROLE_CONTROL_PLANE))
			holder = nodes[i]->name;
	}
	/* the run's control planes are all of them: whose the VIP is can be judged */
	whole = nr_cps == inventory_nr_control_planes(inv);
	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		bool ours = false;

		if (!f || !(nodes[i]->roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		if (e->kind == API_ENDPOINT_VIP && f->vip_route && !strcmp(f->vip_route, "gateway"))
			add(pf, i, true,
			    "take a free address of the control planes' own subnet for "
			    "cluster.api_endpoint.vip: VRRP moves it between machines of one subnet",
			    "the VIP %s is not on the subnet of control plane '%s' (it reaches it "
			    "through a gateway)",
			    e->host, nodes[i]->name);
		if (e->kind == API_ENDPOINT_VIP && whole && !holder && f->vip_answer &&
		    strcmp(f->vip_answer, "none")) {
			for (j = 0; j < nr && !ours; j++)
				for (k = 0; facts[j] && (nodes[j]->roles & NODE_ROLE_CONTROL_PLANE) &&
					    k < facts[j]->nr_macs;
				     k++)
					if (!strcasecmp(facts[j]->macs[k].addr, f->vip_answer))
						ours = true;
			if (!ours)
				add(pf, i, true,
				    "take an address nobody uses for cluster.api_endpoint.vip (ask the "
				    "lab's network admin), or switch off the machine that has it",
				    "the VIP %s is in use: %s answers for it, and no control plane "
				    "holds it",
				    e->host, f->vip_answer);
		}
		for (k = 0; k < f->nr_reach; k++) {
			char *copy = xstrdup(f->reach[k]), *state = strchr(copy, ' '), *colon;
			const char *peer = NULL;
			int port;

			if (state)
				*state++ = '\0';
			colon = strrchr(copy, ':');
			if (state && colon && (strcmp(state, "timeout") == 0 || strcmp(state, "unreachable") == 0)) {
				*colon = '\0';
				port = atoi(colon + 1);
				for (j = 0; j < inv->nr_nodes && !peer; j++)
					if (!strcmp(inv->nodes[j].address, copy))
						peer = inv->nodes[j].name;
				add(pf, i, true,
				    "open TCP 2379, 2380 and the API port between the control planes "
				    "(the firewall of either machine, or the network between them)",
				    "control plane '%s' cannot reach control plane '%s' (%s) on port %d "
				    "(%s): %s",
				    nodes[i]->name, peer ? peer : "?", copy, port,
				    reach_port_name(inv, port),
				    !strcmp(state, "timeout") ? "no answer within 2 s"
							      : "rejected or no route");
			}
			free(copy);
		}
	}
}

void preflight_run(struct preflight *pf, const struct inventory *inv, const struct kube_minor *kube,
		   const struct node *const *nodes, const struct facts *const *facts, size_t nr)
{
	const char **vals = xcalloc(nr ? nr : 1, sizeof(*vals));
	size_t i, j, k;

	for (i = 0; i < nr; i++) {
		const struct node *n = nodes[i];
		const struct facts *f = facts[i];
		const struct os_row *os;
		size_t found;

		if (!f)
			continue;
		if (f->unsafe_field)
			add(pf, i, true,
			    "a node prints its facts as plain text; find what prints control "
			    "characters on it (a broken or compromised tool) before provisioning it",
			    "node '%s': facts field '%s' carries control characters or line breaks "
			    "(CR, NEL, U+2028/U+2029) or is not UTF-8",
			    n->name, f->unsafe_field);
		os = os_find(f);
		if (!os)
			add(pf, i, true,
			    "provision supports Ubuntu 20.04, 22.04, 24.04 and Debian 12, 13",
			    "unsupported OS '%s %s'", f->os_id ? f->os_id : "unknown",
			    f->os_version ? f->os_version : "");
		check_arch(pf, i, n, f);
		check_kube_minor(pf, i, n, f, os, kube, inv);
		if ((n->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER)) && facts_pod_dns_loopback(f))
			add(pf, i, false,
			    "give /etc/resolv.conf the lab's real DNS servers, or run systemd-resolved "
			    "(provision then hands the kubelet /run/systemd/resolve/resolv.conf); "
			    "CoreDNS forwards to these servers and stops on a loop "
			    "(coredns.io/plugins/loop)",
			    "/etc/resolv.conf lists only servers on the node itself (%s), which pods "
			    "cannot reach",
			    f->nameservers[0]);
		found = f->nr_nvidia_pci > f->nr_gpus ? f->nr_nvidia_pci : f->nr_gpus;
		if (n->gpus >= 0 && (size_t)n->gpus != found)
			add(pf, i, true,
			    "fix 'gpus' in the inventory, or check that every card is seated and powered",
			    "the inventory declares %d GPU%s but %zu NVIDIA GPU%s found", n->gpus,
			    n->gpus == 1 ? "" : "s", found, found == 1 ? " was" : "s were");
		if (facts_has_module(f, "nouveau"))
			add(pf, i, true,
			    "blacklist nouveau (/etc/modprobe.d/blacklist-nouveau.conf with "
			    "'blacklist nouveau' and 'options nouveau modeset=0'), update-initramfs -u, "
			    "reboot, then install the NVIDIA driver",
			    "the nouveau driver is loaded: the NVIDIA driver cannot bind the GPU");
		if (f->nr_nvidia_pci > 0 && (!f->nvidia_smi || f->nvidia_smi_rc != 0)) {
			bool sb_on = f->secure_boot && !strcmp(f->secure_boot, "on");
			if (sb_on && !facts_has_module(f, "nvidia"))
				add(pf, i, true,
				    "sign the NVIDIA kernel modules and enroll the key (mokutil --import, "
				    "then confirm at the next boot on the console), or turn Secure "
				    "Boot off in the firmware",
				    "Secure Boot is on and the NVIDIA kernel module is not loaded "
				    "(an unsigned driver is refused)");
			else if (!f->nvidia_smi)
				add(pf, i, true,
				    "install the NVIDIA driver (e.g. 'ubuntu-drivers install' on Ubuntu), "
				    "reboot, and check that nvidia-smi lists the GPU",
				    "%zu NVIDIA GPU%s on the PCI bus but no driver (nvidia-smi not found)",
				    f->nr_nvidia_pci, f->nr_nvidia_pci == 1 ? "" : "s");
			else
				add(pf, i, true,
				    "after a kernel update the driver module may need rebuilding (dkms "
				    "autoinstall) and a reboot",
				    "nvidia-smi fails (exit %d): %s", f->nvidia_smi_rc,
				    f->nvidia_smi_error ? f->nvidia_smi_error : "no message");
		}
		if (n->roles & NODE_ROLE_CONTROL_PLANE) {
			if (f->cpus < 2)
				add(pf, i, true, "kubeadm needs at least 2 CPUs on the control plane",
				    "the control plane has %u CPU%s", f->cpus, f->cpus == 1 ? "" : "s");
			if (f->mem_kib < 1782580) /* 1.7 GiB */
				add(pf, i, true, "kubeadm needs at least 1.7 GiB of memory on the control plane",
				    "the control plane has %.1f GiB of memory",
				    (double)f->mem_kib / 1048576.0);
			if (facts_port_busy(f, inv->cluster.api_port) && !f->kubelet_conf)
				add(pf, i, true, "stop what listens there ('ss -ltnp' shows it)",
				    "port %d (the Kubernetes API) is already in use", inv->cluster.api_port);
		}
		if (facts_port_busy(f, 10250) && !f->kubelet_conf)
			add(pf, i, true, "stop what listens there ('ss -ltnp' shows it)",
			    "port 10250 (the kubelet) is already in use");
		if (facts_port_busy(f, FLANNEL_HEALTHZ_PORT) && !f->kubelet_conf &&
		    (n->roles & (NODE_ROLE_CONTROL_PLANE | NODE_ROLE_WORKER)))
			add(pf, i, true,
			    "stop what listens there ('ss -ltnp' shows it): flanneld's health "
			    "endpoint needs it (roles/flannel, --healthz-port)",
			    "port %d (Flannel's health check) is already in use", FLANNEL_HEALTHZ_PORT);
		/* The inventory address must be the one this node uses to reach the others. */
		if (is_ipv4(n->address)) {
			for (k = 0; k < f->nr_routes; k++) {
				const struct route *r = &f->routes[k];
				if (!r->src[0] || !strcmp(r->src, n->address) || !strcmp(r->peer, n->address))
					continue;
				add(pf, i, true,
				    "use the node's address on the cluster network in the inventory, or "
				    "fix the routes",
				    "the node reaches %s from %s (%s), not from its inventory address %s",
				    r->peer, r->src, r->iface, n->address);
				break;
			}
		}
	}

	for (i = 0; i < nr; i++)
		vals[i] = facts[i] ? facts[i]->machine_id : NULL;
	unique(pf, nodes, nr, vals, "machine-id",
	       "give each machine its own id: rm /etc/machine-id && systemd-machine-id-setup");
	for (i = 0; i < nr; i++)
		vals[i] = facts[i] ? facts[i]->product_uuid : NULL;
	unique(pf, nodes, nr, vals, "product_uuid",
	       "kubeadm requires a unique product_uuid; for VMs set a new UUID in the hypervisor");
	check_control_planes(pf, inv, nodes, facts, nr);
	/* SSH host keys: two nodes with one key are one image cloned. */
	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		bool done = false;
		for (k = 0; f && k < f->nr_host_keys && !done; k++) {
			for (j = 0; j < nr && !done; j++) {
				size_t m;
				if (j == i || !facts[j])
					continue;
				for (m = 0; m < facts[j]->nr_host_keys; m++) {
					char fp[TRANSPORT_FINGERPRINT_LEN + 1];
					const char *key = f->host_keys[k], *blob = strchr(key, ' ');
					if (strcmp(facts[j]->host_keys[m], key))
						continue;
					if (!blob || transport_key_fingerprint(fp, blob + 1) < 0)
						snprintf(fp, sizeof(fp), "(not base64)");
					add(pf, i, true,
					    "give each machine its own SSH host keys: rm /etc/ssh/ssh_host_*; "
					    "ssh-keygen -A; systemctl restart ssh; then 'provision forget-host' "
					    "for the node whose key changed",
					    "SSH host key %.*s %s is the same as on node '%s' (a cloned disk "
					    "image?)",
					    blob ? (int)(blob - key) : (int)strlen(key), key, fp, nodes[j]->name);
					done = true;
					break;
				}
			}
		}
	}
	/* Physical MAC addresses. */
	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		bool done = false;
		for (k = 0; f && k < f->nr_macs && !done; k++) {
			if (!f->macs[k].physical)
				continue;
			for (j = 0; j < nr && !done; j++) {
				size_t m;
				if (j == i || !facts[j])
					continue;
				for (m = 0; m < facts[j]->nr_macs; m++) {
					if (facts[j]->macs[m].physical &&
					    !strcmp(facts[j]->macs[m].addr, f->macs[k].addr)) {
						add(pf, i, true,
						    "every node needs unique MAC addresses; for VMs let the "
						    "hypervisor generate new ones",
						    "MAC address %s (%s) is the same as on node '%s'",
						    f->macs[k].addr, f->macs[k].iface, nodes[j]->name);
						done = true;
						break;
					}
				}
			}
		}
	}
	free(vals);
}
