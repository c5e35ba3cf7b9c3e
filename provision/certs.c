/* certs: see certs.h. */
#include "certs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 512

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a proleptic Gregorian date (no time zone involved). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_of(const char *s)
{
	int i;

	for (i = 0; i < 12; i++)
		if (!strncmp(s, months[i], 3))
			return i + 1;
	return 0;
}

static bool digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int num(const char *s, size_t n)
{
	int v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool valid_date(int y, int mo, int d, int h, int mi, int s)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return y >= 1970 && y <= 9999 && mo >= 1 && mo <= 12 && d >= 1 && d <= mdays[mo - 1] &&
	       h <= 23 && mi <= 59 && s <= 60;
}

/* kubeadm's "Jan 02, 2006 15:04 UTC" (Go's layout), exactly 22 bytes. */
static int parse_kubeadm_date(int64_t *t, const char *s, size_t len)
{
	int mo, d, y, h, mi;

	if (len != 22 || !(mo = month_of(s)) || s[3] != ' ' || !digits(s + 4, 2) || s[6] != ',' ||
	    s[7] != ' ' || !digits(s + 8, 4) || s[12] != ' ' || !digits(s + 13, 2) || s[15] != ':' ||
	    !digits(s + 16, 2) || strncmp(s + 18, " UTC", 4))
		return -1;
	d = num(s + 4, 2);
	y = num(s + 8, 4);
	h = num(s + 13, 2);
	mi = num(s + 16, 2);
	if (!valid_date(y, mo, d, h, mi, 0))
		return -1;
	*t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
	return 0;
}

int certs_parse_enddate(int64_t *not_after, const char *text, size_t len, struct error *err)
{
	/* "notAfter=Jun  1 12:00:00 2026 GMT" (ASN1_TIME_print: day padded to 2) */
	char s[64];
	int mo, d, y, h, mi, sec;

	while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	if (len >= sizeof(s) || memchr(text, '\n', len)) {
		error_set(err, -1, "not one line of 'openssl x509 -enddate'");
		return -1;
	}
	memcpy(s, text, len);
	s[len] = '\0';
	if (len != 33 || strncmp(s, "notAfter=", 9) || !(mo = month_of(s + 9)) || s[12] != ' ' ||
	    !(s[13] == ' ' || digits(s + 13, 1)) || !digits(s + 14, 1) || s[15] != ' ' ||
	    !digits(s + 16, 2) || s[18] != ':' || !digits(s + 19, 2) || s[21] != ':' ||
	    !digits(s + 22, 2) || s[24] != ' ' || !digits(s + 25, 4) || strcmp(s + 29, " GMT")) {
		error_set(err, -1, "not openssl's 'notAfter=Mon DD HH:MM:SS YYYY GMT'");
		return -1;
	}
	d = s[13] == ' ' ? num(s + 14, 1) : num(s + 13, 2);
	h = num(s + 16, 2);
	mi = num(s + 19, 2);
	sec = num(s + 22, 2);
	y = num(s + 25, 4);
	if (!valid_date(y, mo, d, h, mi, sec)) {
		error_set(err, -1, "no such date in openssl's notAfter");
		return -1;
	}
	*not_after = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	return 0;
}

/* Split a tabwriter row into cells separated by two or more spaces. */
static size_t cells(const char *line, size_t len, const char **cell, size_t *clen, size_t max)
{
	size_t i = 0, n = 0;

	while (i < len) {
		size_t start;
		while (i < len && line[i] == ' ')
			i++;
		if (i >= len)
			break;
		start = i;
		while (i < len && !(line[i] == ' ' && (i + 1 >= len || line[i + 1] == ' ')))
			i++;
		if (n == max)
			return max + 1;
		cell[n] = line + start;
		clen[n++] = i - start;
	}
	return n;
}

static bool cell_is(const char *c, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(c, want, len);
}

static bool good_name(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= CERTS_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* The residual time column: Go's ShortHumanDuration ("364d", "9y", "23h") or "<invalid>". */
static bool good_residual(const char *s, size_t len)
{
	if (cell_is(s, len, "<invalid>"))
		return true;
	return len >= 2 && len <= 8 && digits(s, len - 1) && strchr("smhdy", s[len - 1]);
}

static int add_row(struct cert_list *out, const char *name, size_t nlen, bool ca, bool missing,
		   int64_t t, unsigned line, struct error *err)
{
	struct cert_expiry *e;
	size_t i;

	if (!good_name(name, nlen)) {
		error_set(err, -1, "line %u: not a certificate name", line);
		return -1;
	}
	for (i = 0; i < out->nr; i++)
		if (out->items[i].ca == ca && strlen(out->items[i].name) == nlen &&
		    !memcmp(out->items[i].name, name, nlen)) {
			error_set(err, -1, "line %u: '%.*s' listed twice", line, (int)nlen, name);
			return -1;
		}
	if (out->nr == CERTS_MAX) {
		error_set(err, -1, "line %u: more than %d certificates", line, CERTS_MAX);
		return -1;
	}
	e = &out->items[out->nr++];
	memcpy(e->name, name, nlen);
	e->name[nlen] = '\0';
	e->ca = ca;
	e->missing = missing;
	e->not_after = t;
	return 0;
}

int certs_parse_kubeadm(struct cert_list *out, const char *text, size_t len, struct error *err)
{
	static const char *const h1[] = {"CERTIFICATE", "EXPIRES", "RESIDUAL TIME",
					 "CERTIFICATE AUTHORITY", "EXTERNALLY MANAGED"};
	static const char *const h2[] = {"CERTIFICATE AUTHORITY", "EXPIRES", "RESIDUAL TIME",
					 "EXTERNALLY MANAGED"};
	enum { BEFORE, CERTS, BETWEEN, CAS, AFTER } st = BEFORE;
	const char *p = text, *end = text + len;
	unsigned line = 0;
	size_t ncerts = 0;

	memset(out, 0, sizeof(*out));
	if (len > CERTS_TEXT_MAX) {
		error_set(err, -1, "more than %u bytes of output", CERTS_TEXT_MAX);
		return -1;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *cell[6];
		size_t clen[6], n, k;
		int64_t t;

		line++;
		if (l && p[l - 1] == '\r')
			l--;
		if (l > LINE_MAX_LEN) {
			error_set(err, -1, "line %u: longer than %d bytes", line, LINE_MAX_LEN);
			return -1;
		}
		n = cells(p, l, cell, clen, 6);
		p = nl ? nl + 1 : end;
		switch (st) {
		case BEFORE: /* kubeadm's own lines until the first table */
			if (n == 5) {
				for (k = 0; k < 5 && cell_is(cell[k], clen[k], h1[k]); k++)
					;
				if (k == 5)
					st = CERTS;
			}
			continue;
		case CERTS:
			if (n == 0) {
				st = BETWEEN;
				continue;
			}
			if (n == 1 && clen[0] > 10 && !memcmp(cell[0], "!MISSING! ", 10)) {
				if (add_row(out, cell[0] + 10, clen[0] - 10, false, true, 0, line, err) < 0)
					return -1;
				ncerts++;
				continue;
			}
			if (n != 5 || parse_kubeadm_date(&t, cell[1], clen[1]) < 0 ||
			    !good_residual(cell[2], clen[2]) || !good_name(cell[3], clen[3]) ||
			    !(cell_is(cell[4], clen[4], "yes") || cell_is(cell[4], clen[4], "no"))) {
				error_set(err, -1,
					  "line %u: not a row of kubeadm's certificate table "
					  "(NAME, 'Jan 02, 2006 15:04 UTC', residual time, CA, yes|no)",
					  line);
				return -1;
			}
			if (add_row(out, cell[0], clen[0], false, false, t, line, err) < 0)
				return -1;
			ncerts++;
			continue;
		case BETWEEN:
			if (n == 0)
				continue;
			for (k = 0; n == 4 && k < 4 && cell_is(cell[k], clen[k], h2[k]); k++)
				;
			if (k != 4 || n != 4) {
				error_set(err, -1, "line %u: expected the CERTIFICATE AUTHORITY table",
					  line);
				return -1;
			}
			st = CAS;
			continue;
		case CAS:
			if (n == 0) {
				st = AFTER;
				continue;
			}
			if (n == 1 && clen[0] > 10 && !memcmp(cell[0], "!MISSING! ", 10)) {
				if (add_row(out, cell[0] + 10, clen[0] - 10, true, true, 0, line, err) < 0)
					return -1;
				continue;
			}
			if (n != 4 || parse_kubeadm_date(&t, cell[1], clen[1]) < 0 ||
			    !good_residual(cell[2], clen[2]) ||
			    !(cell_is(cell[3], clen[3], "yes") || cell_is(cell[3], clen[3], "no"))) {
				error_set(err, -1,
					  "line %u: not a row of kubeadm's CA table "
					  "(NAME, 'Jan 02, 2006 15:04 UTC', residual time, yes|no)",
					  line);
				return -1;
			}
			if (add_row(out, cell[0], clen[0], true, false, t, line, err) < 0)
				return -1;
			continue;
		case AFTER:
			if (n) {
				error_set(err, -1, "line %u: unexpected text after the tables", line);
				return -1;
			}
			continue;
		}
	}
	if (st == BEFORE) {
		error_set(err, -1, "no CERTIFICATE table in kubeadm's output");
		return -1;
	}
	if (st == CERTS || st == BETWEEN) {
		error_set(err, -1, "no CERTIFICATE AUTHORITY table in kubeadm's output");
		return -1;
	}
	if (!ncerts) {
		error_set(err, -1, "kubeadm listed no certificate");
		return -1;
	}
	return 0;
}

long certs_days_left(int64_t t, int64_t now)
{
	int64_t d = t - now;

	return (long)(d >= 0 ? d / 86400 : -((-d + 86399) / 86400));
}

static void ymd(char *buf, size_t size, int64_t t)
{
	/* civil_from_days: the inverse of days_from_civil */
	int64_t z = (t >= 0 ? t : t - 86399) / 86400 + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp;
	int m, d;

	mp = (5 * doy + 2) / 153;
	d = (int)(doy - (153 * mp + 2) / 5 + 1);
	m = (int)(mp < 10 ? mp + 3 : mp - 9);
	y += m <= 2;
	snprintf(buf, size, "%04d-%02d-%02d", (int)y, m, d);
}

static void days_text(struct strbuf *sb, long days)
{
	if (days >= 0)
		strbuf_addf(sb, "%ld day%s left", days, days == 1 ? "" : "s");
	else
		strbuf_addf(sb, "expired %ld day%s ago", -days, days == -1 ? "" : "s");
}

void validate_certs(struct validation *v, size_t node, const struct cert_list *l, int64_t now,
		    int warn_days)
{
	struct strbuf bad = STRBUF_INIT, soon = STRBUF_INIT, obs = STRBUF_INIT;
	struct strbuf fix = STRBUF_INIT;
	const struct cert_expiry *first = NULL;
	bool ca_due = false, leaf_due = false;
	size_t i, nca = 0;
	char exp[160], date[16];

	snprintf(exp, sizeof(exp),
		 "every certificate kubeadm manages valid for more than %d days", warn_days);
	for (i = 0; i < l->nr; i++) {
		const struct cert_expiry *e = &l->items[i];
		long days = certs_days_left(e->not_after, now);

		nca += e->ca;
		if (e->missing) {
			strbuf_addf(&bad, "%s%s missing", bad.len ? ", " : "", e->name);
			leaf_due = leaf_due || !e->ca;
			ca_due = ca_due || e->ca;
			continue;
		}
		if (!first || e->not_after < first->not_after)
			first = e;
		if (e->not_after > now && days >= warn_days)
			continue;
		ca_due = ca_due || e->ca;
		leaf_due = leaf_due || !e->ca;
		ymd(date, sizeof(date), e->not_after);
		if (e->not_after <= now) {
			strbuf_addf(&bad, "%s%s%s expired on %s", bad.len ? ", " : "", e->name,
				    e->ca ? " (CA)" : "", date);
		} else {
			strbuf_addf(&soon, "%s%s%s ", soon.len ? ", " : "", e->name,
				    e->ca ? " (CA)" : "");
			days_text(&soon, days);
		}
	}
	if (leaf_due)
		strbuf_addstr(&fix, "run 'provision renew-certs -i INVENTORY' (kubeadm certs renew all, "
				    "then the control-plane pods restarted one at a time)");
	if (ca_due)
		strbuf_addf(&fix, "%skubeadm does not renew CAs: see 'Manual rotation of CA "
				  "certificates' in kubeadm's documentation",
			    fix.len ? "; " : "");
	if (bad.len) {
		strbuf_addf(&obs, "%s", bad.buf);
		if (soon.len)
			strbuf_addf(&obs, "; less than %d days: %s", warn_days, soon.buf);
		validation_add(v, "certificates", node, CHECK_FAIL, exp, obs.buf, fix.buf);
	} else if (soon.len) {
		strbuf_addf(&obs, "less than %d days: %s", warn_days, soon.buf);
		validation_add(v, "certificates", node, CHECK_WARN, exp, obs.buf, fix.buf);
	} else {
		strbuf_addf(&obs, "%zu certificates and %zu CAs", l->nr - nca, nca);
		if (first) {
			ymd(date, sizeof(date), first->not_after);
			strbuf_addf(&obs, "; the first to expire: %s, %s (", first->name, date);
			days_text(&obs, certs_days_left(first->not_after, now));
			strbuf_addch(&obs, ')');
		}
		validation_add(v, "certificates", node, CHECK_PASS, exp, obs.buf, NULL);
	}
	strbuf_release(&bad);
	strbuf_release(&soon);
	strbuf_release(&obs);
	strbuf_release(&fix);
}

void validate_kubelet_cert(struct validation *v, size_t node, bool absent, int64_t not_after,
			   const char *error, int64_t now, int warn_days)
{
	struct strbuf obs = STRBUF_INIT;
	char exp[160], date[16];
	long days = certs_days_left(not_after, now);
	static const char *const fix =
		"the kubelet renews its client certificate itself while the API answers: "
		"'journalctl -u kubelet' on the node; once expired, kubeadm's documentation "
		"('Kubelet client certificate rotation fails') says how to make a new one";

	snprintf(exp, sizeof(exp),
		 "/var/lib/kubelet/pki/kubelet-client-current.pem valid for more than %d days",
		 warn_days);
	if (absent) {
		validation_add(v, "kubelet-client-cert", node, CHECK_SKIP, exp, "no such file",
			       "the node has not joined the cluster yet");
		return;
	}
	if (error) {
		strbuf_addf(&obs, "unreadable: %s", error);
		validation_add(v, "kubelet-client-cert", node, CHECK_FAIL, exp, obs.buf,
			       "look at the file with 'openssl x509 -noout -enddate -in' on the node");
		strbuf_release(&obs);
		return;
	}
	ymd(date, sizeof(date), not_after);
	strbuf_addf(&obs, "expires %s (", date);
	days_text(&obs, days);
	strbuf_addch(&obs, ')');
	validation_add(v, "kubelet-client-cert", node,
		       not_after <= now		  ? CHECK_FAIL
		       : days < warn_days ? CHECK_WARN
					  : CHECK_PASS,
		       exp, obs.buf, not_after <= now || days < warn_days ? fix : NULL);
	strbuf_release(&obs);
}

bool certs_is_check(const char *id)
{
	return !strcmp(id, "certificates") || !strcmp(id, "kubelet-client-cert");
}
