/*
 * transport: the parts of the SSH transport that need no network -- error
 * kinds, shell quoting, SHA-256, the agent's request and command lines,
 * and the parser of command output frames.  See transport.h.
 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

const char *transport_err_kind(int code)
{
	switch (code) {
	case 0:
		return "ok";
	case TRANSPORT_ERR_RESOLVE:
		return "dns";
	case TRANSPORT_ERR_REFUSED:
		return "refused";
	case TRANSPORT_ERR_TIMEOUT:
		return "timeout";
	case TRANSPORT_ERR_HOSTKEY:
		return "host key";
	case TRANSPORT_ERR_AUTH:
		return "auth";
	case TRANSPORT_ERR_SUDO:
		return "sudo";
	case TRANSPORT_ERR_CMD_TIMEOUT:
		return "command timeout";
	case TRANSPORT_ERR_LOST:
		return "connection lost";
	case TRANSPORT_ERR_IO:
		return "io";
	case TRANSPORT_ERR_CANCELLED:
		return "cancelled";
	default:
		return "error";
	}
}

static bool sh_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("_./:=@%+,-", c)))
			return false;
	}
	return true;
}

void sh_quote(struct strbuf *sb, const char *s)
{
	/* Words made only of characters no shell treats specially stay bare,
	 * so logged command lines read naturally. */
	if (sh_safe(s) && *s != '=') {
		strbuf_addstr(sb, s);
		return;
	}
	strbuf_addch(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			strbuf_addstr(sb, "'\\''");
		else
			strbuf_addch(sb, *s);
	}
	strbuf_addch(sb, '\'');
}

/* SHA-256 as specified by FIPS 180-4. */

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror32(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct transport_sha256 *c, const unsigned char *p)
{
	uint32_t w[64], a, b, d, e, f, g, h, cc, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3];
	e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) +
		     sha256_k[i] + w[i];
		t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
		h = g, g = f, f = e, e = d + t1;
		d = cc, cc = b, b = a, a = t1 + t2;
	}
	c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d;
	c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static void sha256_init(struct transport_sha256 *c)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(c->h, iv, sizeof(iv));
	c->total = 0;
	c->used = 0;
}

static void sha256_update(struct transport_sha256 *c, const unsigned char *p, size_t len)
{
	c->total += len;
	if (c->used) {
		size_t k = 64 - c->used < len ? 64 - c->used : len;
		memcpy(c->block + c->used, p, k);
		c->used += k, p += k, len -= k;
		if (c->used < 64)
			return;
		sha256_block(c, c->block);
		c->used = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		sha256_block(c, p);
	memcpy(c->block, p, len);
	c->used = len;
}

static void sha256_final(struct transport_sha256 *c, unsigned char out[32])
{
	uint64_t bits = c->total * 8;
	unsigned char pad[72] = {0x80};
	size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
	int i;

	for (i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(c, pad, padlen + 8);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(c->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)c->h[i];
	}
}

static void hex_encode(char *out, const unsigned char *in, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

void transport_sha256_init(struct transport_sha256 *c)
{
	sha256_init(c);
}

void transport_sha256_update(struct transport_sha256 *c, const void *data, size_t len)
{
	sha256_update(c, data, len);
}

void transport_sha256_final(struct transport_sha256 *c, unsigned char out[32])
{
	sha256_final(c, out);
}

void transport_hex32(char out[65], const unsigned char md[32])
{
	hex_encode(out, md, 32);
}

void transport_sha256(unsigned char out[32], const void *data, size_t len)
{
	struct transport_sha256 c;

	sha256_init(&c);
	sha256_update(&c, data, len);
	sha256_final(&c, out);
}

void transport_sha256_hex(char out[65], const void *data, size_t len)
{
	unsigned char md[32];

	transport_sha256(md, data, len);
	hex_encode(out, md, sizeof(md));
}

/* ---- get_file over exec ---- */

struct get_ctx {
	uint64_t max, len;
	int (*on_data)(void *ctx, const void *data, size_t len);
	void *ctx;
	struct transport_sha256 hash;
	char node_sha[65];
	unsigned long long size;
	unsigned lines;
	bool bad, too_big, stopped;
};

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* One line of base64 (a multiple of 4 characters, padded at the end only) into out. */
static int b64_line(const char *s, size_t len, unsigned char *out, size_t *n)
{
	size_t i;

	*n = 0;
	if (len % 4)
		return -1;
	for (i = 0; i < len; i += 4) {
		int v[4], k, pad = 0;
		for (k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == len && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad || (v[k] = b64_value((unsigned char)s[i + k])) < 0)
				return -1;
		}
		out[(*n)++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			out[(*n)++] = (unsigned char)(v[1] << 4 | v[2] >> 2);
		if (pad < 1)
			out[(*n)++] = (unsigned char)(v[2] << 6 | v[3]);
	}
	return 0;
}

static void get_line(void *ctx, enum transport_stream stream, const char *line, size_t len,
		     unsigned flags)
{
	struct get_ctx *g = ctx;

	if (stream != TRANSPORT_STDOUT || g->bad)
		return;
	if (flags) { /* a piece of a line longer than 64 KiB: not what the node should send */
		g->bad = true;
		return;
	}
	if (g->lines == 0) {
		if (len != 64 || strspn(line, "0123456789abcdef") < 64)
			g->bad = true;
		else
			memcpy(g->node_sha, line, 64);
	} else if (g->lines == 1) {
		char buf[32], *end;
		if (len == 0 || len >= sizeof(buf) || !strchr("0123456789", line[0])) {
			g->bad = true;
		} else {
			memcpy(buf, line, len);
			buf[len] = '\0';
			errno = 0;
			g->size = strtoull(buf, &end, 10);
			g->bad = *end != '\0' || errno;
			if (g->size > g->max) /* said before a byte is sent: not read at all */
				g->bad = g->too_big = true;
		}
	} else {
		unsigned char piece[57];
		size_t n;

		/* A line of at most 76 base64 characters: at most 57 bytes. */
		if (len > 76 || b64_line(line, len, piece, &n) < 0) {
			g->bad = true;
		} else if (g->len + n > g->max) {
			g->bad = g->too_big = true;
		} else if (g->on_data(g->ctx, piece, n)) {
			g->bad = g->stopped = true;
		} else {
			transport_sha256_update(&g->hash, piece, n);
			g->len += n;
		}
		explicit_bzero(piece, sizeof(piece));
	}
	g->lines++;
}

int transport_get_file_exec(struct transport *t,
			    int (*exec)(struct transport *t, const struct transport_exec *req,
					struct transport_result *res, struct error *err),
			    const char *path, uint64_t max,
			    int (*on_data)(void *ctx, const void *data, size_t len), void *ctx,
			    char sha_hex[65], uint64_t *size, int timeout_ms, struct error *err)
{
	struct get_ctx g = {.max = max, .on_data = on_data, .ctx = ctx};
	struct strbuf cmd = STRBUF_INIT;
	struct transport_exec ex = {.timeout_ms = timeout_ms, .on_line = get_line, .ctx = &g};
	struct transport_result r = {0};
	unsigned char md[32];
	int rc;

	transport_sha256_init(&g.hash);
	strbuf_addstr(&cmd, "f=");
	sh_quote(&cmd, path);
	strbuf_addstr(&cmd, "; sha256sum < \"$f\" | cut -c1-64 && wc -c < \"$f\" && "
			    "base64 -w 76 < \"$f\"");
	ex.command = cmd.buf;
	rc = exec(t, &ex, &r, err);
	strbuf_release(&cmd);
	if (rc < 0)
		return rc;
	if (g.stopped)
		return error_set(err, TRANSPORT_ERR_IO, "'%s': the bytes could not be kept here",
				 path);
	if (r.exit_status)
		return error_set(err, TRANSPORT_ERR_IO, "cannot read '%s' on the node (exit %d)",
				 path, r.exit_status);
	if (g.bad || g.lines < 2)
		return error_set(err, TRANSPORT_ERR_IO,
				 "'%s': the node sent something that is not the file%s", path,
				 g.too_big ? " (larger than provision accepts)" : "");
	transport_sha256_final(&g.hash, md);
	transport_hex32(sha_hex, md);
	*size = g.len;
	if (g.size != g.len || memcmp(sha_hex, g.node_sha, 64))
		return error_set(err, TRANSPORT_ERR_IO,
				 "'%s': %llu bytes arrived with SHA-256 %.12s…, the node said %llu "
				 "bytes, %.12s…",
				 path, (unsigned long long)g.len, sha_hex, g.size, g.node_sha);
	return 0;
}

int transport_key_fingerprint(char out[TRANSPORT_FINGERPRINT_LEN + 1], const char *b64)
{
	static const char digits[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char blob[4096], md[32];
	size_t n = 0, i;
	unsigned acc = 0;
	int bits = 0;
	char *o = out;

	/* The key blob, from the base64 of a known_hosts or .pub line. */
	for (; *b64 && *b64 != '='; b64++) {
		const char *d = strchr(digits, *b64);
		if (!d)
			return -1;
		acc = (acc << 6) | (unsigned)(d - digits);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == sizeof(blob))
				return -1;
			blob[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (!n)
		return -1;
	transport_sha256(md, blob, n);
	/* OpenSSH's form: "SHA256:" and the digest in base64 without padding. */
	o += sprintf(o, "SHA256:");
	for (i = 0; i < 30; i += 3) {
		unsigned v = (unsigned)md[i] << 16 | (unsigned)md[i + 1] << 8 | md[i + 2];
		*o++ = digits[v >> 18 & 63];
		*o++ = digits[v >> 12 & 63];
		*o++ = digits[v >> 6 & 63];
		*o++ = digits[v & 63];
	}
	/* The last two bytes: three digits. */
	{
		unsigned v = (unsigned)md[30] << 16 | (unsigned)md[31] << 8;
		*o++ = digits[v >> 18 & 63];
		*o++ = digits[v >> 12 & 63];
		*o++ = digits[v >> 6 & 63];
	}
	*o = '\0';
	return 0;
}

void transport_make_token(char token[TRANSPORT_TOKEN_LEN + 1])
{
	unsigned char raw[TRANSPORT_TOKEN_LEN / 2];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(raw)) {
		/* No getrandom (old kernel): tokens only need to be unguessable
		 * by accident, so the clock and pid are an acceptable last resort. */
		uint64_t x = now_us() ^ ((uint64_t)getpid() << 32);
		size_t i;
		for (i = 0; i < sizeof(raw); i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			raw[i] = (unsigned char)(x >> 56);
		}
	}
	hex_encode(token, raw, sizeof(raw));
}

void transport_agent_request(struct strbuf *out, const char *token, const char *command,
			     const void *input, size_t input_len, bool own_shell)
{
	size_t lines = 0, len = strlen(command);
	bool whole = len > TRANSPORT_AGENT_LONG_COMMAND, unended = len && command[len - 1] != '\n';
	const char *p;

	/* A long command as LEN bytes (one head -c), not lines (one read(2) per byte). */
	if (whole) {
		strbuf_addf(out, "%s c%zu", token, len);
	} else {
		for (p = command; (p = memchr(p, '\n', len - (size_t)(p - command))); p++)
			lines++;
		strbuf_addf(out, "%s %zu", token, lines + unended);
	}
	strbuf_addf(out, " %zu%s\n", input ? input_len : 0, own_shell ? " sh" : "");
	strbuf_add(out, command, len);
	if (!whole && unended)
		strbuf_addch(out, '\n');
	if (input && input_len)
		strbuf_add(out, input, input_len);
}

enum transport_priv transport_priv_for(const struct transport_target *target)
{
	bool root = target->user && !strcmp(target->user, "root");

	if (target->sudo == TRANSPORT_SUDO_NEVER || (target->sudo == TRANSPORT_SUDO_AUTO && root))
		return TRANSPORT_PRIV_NONE;
	return target->sudo_password ? TRANSPORT_PRIV_SUDO_PASSWORD : TRANSPORT_PRIV_SUDO;
}

static void add_priv(struct strbuf *out, enum transport_priv priv)
{
	strbuf_addstr(out, "exec ");
	if (priv == TRANSPORT_PRIV_SUDO)
		strbuf_addstr(out, "sudo -n ");
	else if (priv == TRANSPORT_PRIV_SUDO_PASSWORD)
		strbuf_addstr(out, "sudo -S -p '' ");
}

/* Shell text that drops stdin lines up to and including the begin marker. */
static void add_skip_to_marker(struct strbuf *out, const char *token)
{
	strbuf_addf(out,
		    "while IFS= read -r l; do [ \"$l\" = .provision-begin-%s ] && break; done; ",
		    token);
}

void transport_agent_command(struct strbuf *out, enum transport_priv priv, const char *token,
			     const char *const *args, size_t nargs)
{
	struct strbuf boot = STRBUF_INIT;
	size_t i;

	/*
	 * One line, no single quotes, only sh syntax every Bourne-style login
	 * shell passes through untouched once quoted.  `read` reads one byte
	 * at a time from a pipe, so nothing after ".provision-end" is taken
	 * from the requests that follow.
	 */
	strbuf_addstr(&boot, "n=$(printf \"\\n.\"); n=${n%.}; s=; ");
	add_skip_to_marker(&boot, token);
	strbuf_addstr(&boot, "while IFS= read -r l; do [ \"$l\" = .provision-end ] && break; "
			     "s=$s$l$n; done; eval \"$s\"");
	add_priv(out, priv);
	strbuf_addstr(out, "/bin/sh -c ");
	sh_quote(out, boot.buf);
	strbuf_addstr(out, " provision-agent");
	for (i = 0; i < nargs; i++) {
		strbuf_addch(out, ' ');
		sh_quote(out, args[i]);
	}
	strbuf_release(&boot);
}

int transport_stdin_preamble(struct strbuf *out, enum transport_priv priv, const char *password,
			     const char *token)
{
	if (priv == TRANSPORT_PRIV_SUDO_PASSWORD) {
		if (!password || strchr(password, '\n'))
			return -1;
		strbuf_addstr(out, password);
		strbuf_addch(out, '\n');
	}
	strbuf_addf(out, ".provision-begin-%s\n", token);
	return 0;
}

void transport_channel_command(struct strbuf *out, enum transport_priv priv, const char *token,
			       const char *command)
{
	struct strbuf inner = STRBUF_INIT;

	if (priv == TRANSPORT_PRIV_NONE) {
		strbuf_addf(out, "PROVISION_CMD=%s exec /bin/sh -c ", token);
		sh_quote(out, command);
		return;
	}
	if (priv == TRANSPORT_PRIV_SUDO_PASSWORD)
		add_skip_to_marker(&inner, token);
	strbuf_addf(&inner, "PROVISION_CMD=%s exec /bin/sh -c \"$1\"", token);
	add_priv(out, priv);
	strbuf_addstr(out, "/bin/sh -c ");
	sh_quote(out, inner.buf);
	strbuf_addstr(out, " provision-cmd ");
	sh_quote(out, command);
	strbuf_release(&inner);
}

int transport_parse_jump(const char *spec, char **user, char **host, int *port)
{
	const char *at = strrchr(spec, '@'), *h = at ? at + 1 : spec, *end, *colon = NULL;
	char *stop;
	long p = 0;

	*user = NULL, *host = NULL, *port = 0;
	if (at == spec)
		return -1;
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end || end == h + 1 || (end[1] && end[1] != ':'))
			return -1;
		colon = end[1] ? end + 1 : NULL;
		h++;
	} else {
		colon = strchr(h, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* a bare IPv6 address: no port */
		end = colon ? colon : h + strlen(h);
	}
	if (end == h)
		return -1;
	if (colon) {
		errno = 0;
		p = strtol(colon + 1, &stop, 10);
		if (!colon[1] || *stop || errno || p < 1 || p > 65535)
			return -1;
	}
	if (at)
		*user = xstrndup(spec, (size_t)(at - spec));
	*host = xstrndup(h, (size_t)(end - h));
	*port = (int)p;
	return 0;
}

/* Output frames. */

void transport_frame_init(struct transport_frame *f, enum transport_stream stream,
			  const char *token, transport_line_fn on_line, void *ctx)
{
	memset(f, 0, sizeof(*f));
	f->stream = stream;
	if (token) {
		size_t n = strlen(token);
		if (n > TRANSPORT_TOKEN_LEN)
			n = TRANSPORT_TOKEN_LEN;
		memcpy(f->token, token, n);
		f->token[n] = '\0';
	}
	f->on_line = on_line;
	f->ctx = ctx;
	strbuf_init(&f->line, 0);
	f->status = -1;
}

static void deliver(struct transport_frame *f, const char *s, size_t n, unsigned flags)
{
	if (f->on_line)
		f->on_line(f->ctx, f->stream, s, n, flags);
}

/*
 * A full buffer goes out as a piece only when the line goes on past it (a
 * byte more arrives): a line of exactly TRANSPORT_LINE_MAX bytes stays whole,
 * and the last piece of a long line is never empty.
 */
static void line_add(struct transport_frame *f, const char *s, size_t n)
{
	f->bytes += n;
	while (n) {
		size_t room, k;
		if (f->line.len == TRANSPORT_LINE_MAX) {
			deliver(f, f->line.buf, f->line.len,
				TRANSPORT_LINE_MORE | (f->split ? TRANSPORT_LINE_CONT : 0));
			strbuf_reset(&f->line);
			f->split = true;
		}
		room = TRANSPORT_LINE_MAX - f->line.len;
		k = n < room ? n : room;
		strbuf_add(&f->line, s, k);
		s += k, n -= k;
	}
}

static void line_end(struct transport_frame *f)
{
	bool empty = !f->line.len && !f->split;

	f->bytes++;
	if (f->line.len)
		deliver(f, f->line.buf, f->line.len, f->split ? TRANSPORT_LINE_CONT : 0);
	strbuf_reset(&f->line);
	f->split = false;
	if (!f->token[0]) {
		if (empty)
			deliver(f, "", 0, 0);
		return;
	}
	/*
	 * This newline may be the one the agent writes before the end frame.
	 * A line before it is complete either way and was delivered; an empty
	 * line waits until we know the newline was not the frame's.
	 */
	f->holding = true;
	f->hold_empty = empty;
	f->hold_len = 0;
}

/* The held bytes were output after all. */
static void release_hold(struct transport_frame *f)
{
	f->holding = false;
	if (f->hold_empty)
		deliver(f, "", 0, 0);
	line_add(f, f->hold, f->hold_len);
	f->hold_len = 0;
}

/* One byte while holding; returns true when the end frame is complete. */
static bool hold_byte(struct transport_frame *f, char c)
{
	size_t tlen = strlen(f->token);

	if (f->hold_len < tlen + 1) {
		char want = f->hold_len < tlen ? f->token[f->hold_len] : ' ';
		if (c == want) {
			f->hold[f->hold_len++] = c;
			return false;
		}
	} else if (c >= '0' && c <= '9' && f->hold_len < sizeof(f->hold) - 1 &&
		   f->hold_len < tlen + 6) {
		f->hold[f->hold_len++] = c;
		return false;
	} else if (c == '\n' && f->hold_len > tlen + 1) {
		f->hold[f->hold_len] = '\0';
		f->status = atoi(f->hold + tlen + 1);
		f->holding = false;
		f->done = true;
		return true;
	}
	release_hold(f);
	if (c == '\n')
		line_end(f);
	else
		line_add(f, &c, 1);
	return false;
}

size_t transport_frame_feed(struct transport_frame *f, const char *data, size_t len)
{
	size_t i = 0;

	while (i < len && !f->done) {
		const char *nl;
		size_t seg;

		if (f->holding) {
			hold_byte(f, data[i++]);
			continue;
		}
		nl = memchr(data + i, '\n', len - i);
		seg = nl ? (size_t)(nl - (data + i)) : len - i;
		line_add(f, data + i, seg);
		i += seg;
		if (nl) {
			i++;
			line_end(f);
		}
	}
	return i;
}

void transport_frame_finish(struct transport_frame *f)
{
	if (f->done)
		return;
	if (f->holding)
		release_hold(f);
	if (f->line.len)
		deliver(f, f->line.buf, f->line.len, f->split ? TRANSPORT_LINE_CONT : 0);
	strbuf_reset(&f->line);
	f->split = false;
}

void transport_frame_release(struct transport_frame *f)
{
	strbuf_release(&f->line);
}
