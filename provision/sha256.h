/*
 * sha256: SHA-256 (FIPS 180-4), defined in transport.c (the transport
 * hashes what it sends and receives); here so that a module hashing a
 * file need not include the transport.
 */
#ifndef PROVISION_SHA256_H
#define PROVISION_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* SHA-256 (FIPS 180-4) of data, as 64 lowercase hex digits and a NUL. */
void transport_sha256_hex(char out[65], const void *data, size_t len);
void transport_sha256(unsigned char out[32], const void *data, size_t len);
/* The same a piece at a time (a file read or received in pieces). */
struct transport_sha256 {
	uint32_t h[8];
	uint64_t total;
	unsigned char block[64];
	size_t used;
};
void transport_sha256_init(struct transport_sha256 *c);
void transport_sha256_update(struct transport_sha256 *c, const void *data, size_t len);
void transport_sha256_final(struct transport_sha256 *c, unsigned char out[32]);
/* 64 lowercase hex digits and a NUL of a 32-byte digest. */
void transport_hex32(char out[65], const unsigned char md[32]);

#endif
