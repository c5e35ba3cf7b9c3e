/*
 * certs: how long the cluster's certificates have left.
 *
 * Two sources, both read on the node and parsed here as untrusted text:
 *   - `kubeadm certs check-expiration` on the control plane: kubeadm's own
 *     list of what it manages (the PKI certificates, the certificates
 *     embedded in admin.conf, super-admin.conf, controller-manager.conf and
 *     scheduler.conf) and the CAs that signed them, as its two tables;
 *   - `openssl x509 -noout -enddate` of the kubelet's client certificate
 *     (/var/lib/kubelet/pki/kubelet-client-current.pem) on every node:
 *     kubeadm does not list it (the kubelet rotates it itself).
 *
 * The parsers are pure functions of the text (unit-tested with the tables
 * real kubeadm prints); validate_certs() turns a list into checks: pass,
 * warn (less than the warning period left) or fail (expired or missing).
 *
 * Ownership: a struct cert_list is a plain value (fixed arrays, bounded).
 */
#ifndef PROVISION_CERTS_H
#define PROVISION_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "validate.h"

#define CERTS_MAX 64	       /* rows kept from kubeadm's tables */
#define CERTS_NAME_MAX 64      /* a certificate's name, with its NUL */
#define CERTS_TEXT_MAX (64u << 10) /* more output than this is refused */
#define CERTS_WARN_DAYS 30     /* the default warning period (cluster.cert_warning_days) */

struct cert_expiry {
	char name[CERTS_NAME_MAX]; /* "apiserver", "admin.conf", "etcd-ca", ... */
	bool ca;		   /* a row of the CERTIFICATE AUTHORITY table */
	bool missing;		   /* kubeadm's "!MISSING! NAME" */
	int64_t not_after;	   /* seconds since the epoch (UTC); 0 when missing */
};

struct cert_list {
	struct cert_expiry items[CERTS_MAX];
	size_t nr;
};

/*
 * The two tables of `kubeadm certs check-expiration` (text output), after
 * whatever kubeadm says first ("[check-expiration] Reading configuration
 * ...").  Returns 0, or -1 with err set ("line N: ...") when the text is not
 * those tables: a wrong header, a malformed row or date, a name that is not
 * [a-z0-9.-], more than CERTS_MAX rows, or more than CERTS_TEXT_MAX bytes.
 */
int certs_parse_kubeadm(struct cert_list *out, const char *text, size_t len, struct error *err);

/*
 * `openssl x509 -noout -enddate`: "notAfter=Jun  1 12:00:00 2026 GMT".
 * Returns 0 with *not_after set, or -1 with err set.
 */
int certs_parse_enddate(int64_t *not_after, const char *text, size_t len, struct error *err);

/* Whole days from now until t, rounded down (negative once expired). */
long certs_days_left(int64_t t, int64_t now);

/*
 * Check "certificates" of node `node` (the control plane) from kubeadm's
 * list: fail when any is expired or missing, warn when any has less than
 * warn_days left (each named with its days left), pass otherwise.
 */
void validate_certs(struct validation *v, size_t node, const struct cert_list *l, int64_t now,
		    int warn_days);

/*
 * Check "kubelet-client-cert" of node `node`: not_after as parsed; absent
 * when the node has no such file (skipped); error: why it could not be
 * read (failed), else NULL.
 */
void validate_kubelet_cert(struct validation *v, size_t node, bool absent, int64_t not_after,
			   const char *error, int64_t now, int warn_days);

/* Whether check `id` is one of the certificate checks above. */
bool certs_is_check(const char *id);

#endif
