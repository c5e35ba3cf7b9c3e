/*
 * Unit tests for backup_snapshot_verify() (cli/cmd_backup.c): what an etcd
 * snapshot is as `etcdctl snapshot save` writes it -- a bbolt database
 * (meta page: 16-byte page header, then magic 0xED0CDAED, version 2, page
 * size) of whole pages, then the SHA-256 of the database (etcd's
 * snapshot/v3_snapshot.go appends it; `snapshot restore` checks it).  The
 * real files are tested in t0460 with Debian's etcd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cli/backup.h"
#include "transport.h"
#include "util.h"

/* A snapshot of `pages` pages of `page` bytes, etcd's hash appended; caller frees. */
static unsigned char *snapshot(uint32_t page, size_t pages, size_t *len)
{
	size_t db = (size_t)page * pages, i;
	unsigned char *p = xcalloc(1, db + 32);

	for (i = 0; i < 4; i++) {
		p[16 + i] = (unsigned char)(0xED0CDAEDu >> (8 * i));
		p[20 + i] = (unsigned char)(2u >> (8 * i));
		p[24 + i] = (unsigned char)(page >> (8 * i));
	}
	for (i = 64; i < db; i++)
		p[i] = (unsigned char)(i * 7);
	transport_sha256(p + db, p, db);
	*len = db + 32;
	return p;
}

static void expect_refused(const unsigned char *p, size_t len, const char *msg)
{
	struct error err = {0};

	assert_int_equal(backup_snapshot_verify(p, len, &err), -1);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' does not say '%s'", err.msg, msg);
}

static void test_whole(void **state)
{
	struct error err = {0};
	size_t len;
	unsigned char *p = snapshot(4096, 5, &len);

	(void)state;
	assert_int_equal(backup_snapshot_verify(p, len, &err), 0);
	free(p);
	p = snapshot(16384, 2, &len);
	assert_int_equal(backup_snapshot_verify(p, len, &err), 0);
	free(p);
}

static void test_truncated(void **state)
{
	size_t len;
	unsigned char *p = snapshot(4096, 5, &len);

	(void)state;
	expect_refused(p, len - 1, "not whole 4096-byte pages");
	expect_refused(p, len - 4096, "SHA-256 etcd appended does not match");
	expect_refused(p, len - 32, "not whole 4096-byte pages");
	expect_refused(p, 100, "too short");
	expect_refused(p, 0, "too short");
	free(p);
}

static void test_corrupt(void **state)
{
	size_t len;
	unsigned char *p = snapshot(4096, 5, &len);

	(void)state;
	p[9000] ^= 1;
	expect_refused(p, len, "corrupt or truncated");
	p[9000] ^= 1;
	p[len - 1] ^= 0x80;
	expect_refused(p, len, "corrupt or truncated");
	p[len - 1] ^= 0x80;
	p[16] = 0;
	expect_refused(p, len, "no bbolt database");
	free(p);
	p = snapshot(4096, 5, &len);
	p[24] = 1; /* page size 4097 */
	expect_refused(p, len, "page size 4097");
	free(p);
}

/*
 * Issue 31 F8: backup streams the snapshot to disk and checks it as it
 * comes: in pieces of any size, the same answers as on the whole file.
 */
static void check_in_pieces(const unsigned char *p, size_t len, size_t piece, int want,
			    const char *msg)
{
	struct backup_snapshot_check c;
	struct error err = {0};
	size_t off;

	backup_snapshot_check_init(&c);
	for (off = 0; off < len; off += piece)
		backup_snapshot_check_update(&c, p + off, len - off < piece ? len - off : piece);
	assert_int_equal(backup_snapshot_check_final(&c, &err), want);
	if (msg && !strstr(err.msg, msg))
		fail_msg("'%s' does not say '%s' (pieces of %zu)", err.msg, msg, piece);
}

static void test_streamed(void **state)
{
	static const size_t pieces[] = {1, 7, 31, 32, 33, 57, 4095, 4096, 70000};
	size_t len, k;
	unsigned char *p = snapshot(4096, 5, &len);

	(void)state;
	for (k = 0; k < ARRAY_SIZE(pieces); k++) {
		check_in_pieces(p, len, pieces[k], 0, NULL);
		p[len - 1] ^= 1; /* etcd's hash */
		check_in_pieces(p, len, pieces[k], -1, "does not match");
		p[len - 1] ^= 1;
		p[100] ^= 1; /* the database */
		check_in_pieces(p, len, pieces[k], -1, "does not match");
		p[100] ^= 1;
		check_in_pieces(p, len - 1, pieces[k], -1, "not whole");
	}
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_streamed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
