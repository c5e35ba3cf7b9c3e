/*
 * transport-cli: drive the SSH transport from shell tests and benchmarks.
 *
 *   transport-cli [options] HOST ACTION...
 *   transport-cli blackhole PORTFILE
 *
 * Options: -p PORT, -l USER, -i IDENTITY, -k KNOWN_HOSTS, -a (host keys
 * accept-new), -J JUMP, -t CONNECT_TIMEOUT_MS, -K KEEPALIVE_S, -c (one
 * channel per command), -N (Nagle on: no TCP_NODELAY), -s auto|always|never
 * (sudo; the password comes from $PROVISION_SUDO_PASSWORD), -T (tagged
 * output: every line on stdout as "out|err MS LINE", results as
 * "status N timed_out=B" or "error KIND: MESSAGE").
 *
 * Actions, run in order over one session:
 *   exec [-t MS] [-f INPUT_FILE] [-C MS] [-S 1] CMD   run CMD (-C: cancel after MS;
 *                                          -S 1: under a shell of its own)
 *   put [-o OWNER] [-m OCTAL_MODE] LOCAL REMOTE
 *   bench N CMD                                 N runs; prints median and p95
 *   stats
 *
 * Untagged, a command's stdout and stderr lines go to our stdout and
 * stderr.  Exit status: that of the last command, or 100 - code when the
 * last action failed with a transport error (e.g. 105 for a host key).
 * blackhole listens on 127.0.0.1 without ever answering (for connect
 * timeouts) and writes its port to PORTFILE.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport.h"

static bool tagged;
static uint64_t exec_start_us;

static void usage(void)
{
	fprintf(stderr, "usage: transport-cli [-p PORT] [-l USER] [-i KEY] [-k KNOWN_HOSTS] [-a] "
			"[-J JUMP] [-t MS] [-K S] [-c] [-N] [-s auto|always|never] [-T] HOST "
			"ACTION...\n       transport-cli blackhole PORTFILE\n");
	exit(2);
}

static void on_line(void *ctx, enum transport_stream stream, const char *line, size_t len,
		    unsigned flags)
{
	struct strbuf sb = STRBUF_INIT;

	if (tagged) {
		strbuf_addf(&sb, "%s %llu ", stream == TRANSPORT_STDERR ? "err" : "out",
			    (unsigned long long)((now_us() - exec_start_us) / 1000));
		strbuf_add(&sb, line, len);
		strbuf_addch(&sb, '\n');
		(void)write_all(STDOUT_FILENO, sb.buf, sb.len);
	} else {
		strbuf_add(&sb, line, len);
		if (!(flags & TRANSPORT_LINE_MORE))
			strbuf_addch(&sb, '\n');
		(void)write_all(stream == TRANSPORT_STDERR ? STDERR_FILENO : STDOUT_FILENO, sb.buf,
				sb.len);
	}
	strbuf_release(&sb);
}

static int report_error(int rc, const struct error *err)
{
	if (tagged)
		printf("error %s: %s\n", transport_err_kind(rc), err->msg);
	fprintf(stderr, "transport-cli: %s: %s%s%s%s\n", transport_err_kind(rc), err->msg,
		err->hint[0] ? " (" : "", err->hint, err->hint[0] ? ")" : "");
	fflush(stdout);
	return 100 - rc;
}

static uint64_t cancel_at_ms;
static bool cancel_cb(void *ctx)
{
	return cancel_at_ms && now_ms() >= cancel_at_ms;
}

static int blackhole(const char *portfile)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	FILE *f;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("blackhole");
		return 1;
	}
	f = fopen(portfile, "w");
	if (!f) {
		perror(portfile);
		return 1;
	}
	fprintf(f, "%d\n", ntohs(a.sin_port));
	fclose(f);
	/* Connections complete in the kernel's backlog; nobody ever speaks. */
	for (;;)
		pause();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void discard_line(void *ctx, enum transport_stream s, const char *l, size_t n,
			 unsigned flags)
{
}

int main(int argc, char **argv)
{
	struct transport_target tg = {.port = 22, .connect_timeout_ms = 10000};
	const struct transport_ops *ops = &transport_ssh_ops;
	struct transport *t = NULL;
	struct error err = {0};
	int opt, rc, last = 0;
	uint64_t t0;

	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(argv[1], "blackhole"))
		return blackhole(argv[2]);
	while ((opt = getopt(argc, argv, "+p:l:i:k:aJ:t:K:cNs:T")) != -1) {
		switch (opt) {
		case 'p':
			tg.port = atoi(optarg);
			break;
		case 'l':
			tg.user = optarg;
			break;
		case 'i':
			tg.identity = optarg;
			break;
		case 'k':
			tg.known_hosts = optarg;
			break;
		case 'a':
			tg.host_keys = TRANSPORT_HOST_KEYS_ACCEPT_NEW;
			break;
		case 'J':
			tg.jump = optarg;
			break;
		case 't':
			tg.connect_timeout_ms = atoi(optarg);
			break;
		case 'K':
			tg.keepalive_s = atoi(optarg);
			break;
		case 'c':
			tg.per_command_channels = true;
			break;
		case 'N':
			tg.tcp_nodelay_off = true;
			break;
		case 's':
			tg.sudo = !strcmp(optarg, "always")  ? TRANSPORT_SUDO_ALWAYS
				  : !strcmp(optarg, "never") ? TRANSPORT_SUDO_NEVER
							     : TRANSPORT_SUDO_AUTO;
			break;
		case 'T':
			tagged = true;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	tg.host = tg.name = argv[optind++];
	tg.sudo_password = getenv("PROVISION_SUDO_PASSWORD");
	transport_global_init();

	t0 = now_us();
	rc = ops->connect(&t, &tg, &err);
	if (rc < 0)
		return report_error(rc, &err);
	if (tagged)
		printf("connected %llu\n", (unsigned long long)((now_us() - t0) / 1000));

	while (optind < argc) {
		const char *action = argv[optind++];
		struct transport_result res = {0};
		error_clear(&err);
		if (!strcmp(action, "exec")) {
			struct transport_exec req = {.on_line = on_line, .cancelled = cancel_cb};
			struct strbuf input = STRBUF_INIT;
			bool have_input = false;
			cancel_at_ms = 0;
			while (optind < argc && argv[optind][0] == '-' && optind + 1 < argc) {
				const char *o = argv[optind++], *v = argv[optind++];
				if (!strcmp(o, "-t")) {
					req.timeout_ms = atoi(v);
				} else if (!strcmp(o, "-S")) {
					req.own_shell = atoi(v) != 0;
				} else if (!strcmp(o, "-C")) {
					cancel_at_ms = now_ms() + (uint64_t)atoi(v);
				} else if (!strcmp(o, "-f")) {
					if (read_file(v, &input) < 0) {
						perror(v);
						return 2;
					}
					have_input = true;
				} else {
					usage();
				}
			}
			if (optind >= argc)
				usage();
			req.command = argv[optind++];
			if (have_input) {
				req.input = input.buf;
				req.input_len = input.len;
			}
			exec_start_us = now_us();
			fflush(stdout);
			rc = ops->exec(t, &req, &res, &err);
			strbuf_release(&input);
			if (rc < 0) {
				last = report_error(rc, &err);
				continue;
			}
			if (tagged)
				printf("status %d timed_out=%d\n", res.exit_status, res.timed_out);
			fflush(stdout);
			last = res.exit_status;
		} else if (!strcmp(action, "put")) {
			const char *owner = NULL;
			unsigned mode = 0644;
			struct strbuf data = STRBUF_INIT;
			bool skipped = false;
			while (optind + 2 < argc && argv[optind][0] == '-') {
				const char *o = argv[optind++], *v = argv[optind++];
				if (!strcmp(o, "-o"))
					owner = v;
				else if (!strcmp(o, "-m"))
					mode = (unsigned)strtoul(v, NULL, 8);
				else
					usage();
			}
			if (optind + 2 > argc)
				usage();
			if (read_file(argv[optind], &data) < 0) {
				perror(argv[optind]);
				return 2;
			}
			rc = ops->put_file(t, argv[optind + 1], data.buf, data.len, mode, owner,
					   &skipped, &err);
			optind += 2;
			strbuf_release(&data);
			if (rc < 0) {
				last = report_error(rc, &err);
				continue;
			}
			printf("put %s\n", skipped ? "skipped" : "sent");
			fflush(stdout);
			last = 0;
		} else if (!strcmp(action, "bench")) {
			struct transport_exec req = {.on_line = discard_line};
			uint64_t *us, sum = 0;
			int n, i;
			if (optind + 2 > argc)
				usage();
			n = atoi(argv[optind++]);
			req.command = argv[optind++];
			if (n <= 0)
				usage();
			us = xcalloc((size_t)n, sizeof(*us));
			for (i = 0; i < n; i++) {
				uint64_t s = now_us();
				rc = ops->exec(t, &req, &res, &err);
				if (rc < 0) {
					free(us);
					return report_error(rc, &err);
				}
				us[i] = now_us() - s;
				sum += us[i];
			}
			qsort(us, (size_t)n, sizeof(*us), cmp_u64);
			printf("bench n=%d median_ms=%.3f p95_ms=%.3f mean_ms=%.3f\n", n,
			       (double)us[n / 2] / 1000.0,
			       (double)us[(n * 95 + 99) / 100 - 1] / 1000.0,
			       (double)sum / n / 1000.0);
			fflush(stdout);
			free(us);
			last = 0;
		} else if (!strcmp(action, "stats")) {
			struct transport_stats st;
			ops->get_stats(t, &st);
			printf("stats mode=%s connect_ms=%.3f agent_ms=%.3f is_root=%d commands=%u "
			       "sent=%u skipped=%u\n",
			       st.mode, (double)st.connect_us / 1000.0,
			       (double)st.agent_us / 1000.0, st.is_root, st.commands, st.files_sent,
			       st.files_skipped);
			fflush(stdout);
		} else {
			usage();
		}
	}
	ops->close(t);
	return last;
}
