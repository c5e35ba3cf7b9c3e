/*
 * libFuzzer harness: what a control plane prints for the certificate checks
 * and what a backup holds -- node output and files from this machine's
 * state folder, untrusted alike: kubeadm certs check-expiration's tables,
 * openssl's notAfter line, and an etcd snapshot's pages and appended hash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "certs.h"
#include "cli/backup.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cert_list *l = xcalloc(1, sizeof(*l));
	struct error err = {0};
	int64_t t;

	if (certs_parse_kubeadm(l, (const char *)data, size, &err) == 0) {
		struct validation v = {0};

		validate_certs(&v, 0, l, 1767225600, 30);
		validation_release(&v);
	}
	err.msg[0] = '\0';
	if (certs_parse_enddate(&t, (const char *)data, size, &err) == 0)
		(void)certs_days_left(t, 1767225600);
	err.msg[0] = '\0';
	(void)backup_snapshot_verify(data, size, &err);
	free(l);
	return 0;
}
