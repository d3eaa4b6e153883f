/* A client that looks one name up at a steady rate for a while, and says how each lookup
 * went: what the real-node operations (a rollout, a lost pod, a restarted API server or
 * kube-proxy) cost the pods that keep resolving through them. Built against glibc and musl
 * (tests/real_node/, bench: cargo xtask operations).
 *
 *   load libc RATE SECONDS NAME          getaddrinfo(NAME), a new socket each time (as every
 *                                        C library does)
 *   load udp RATE SECONDS SERVER NAME    one UDP socket, one source port for every query, as
 *                                        c-ares, dnsmasq and systemd-resolved keep theirs:
 *                                        an A query; no reply in 1 s: asked again once on the
 *                                        same socket, then failed
 *   load tcp RATE SECONDS SERVER NAME    one TCP connection kept for every query; a query
 *                                        with no reply in 1 s, or a connection that breaks,
 *                                        is asked again once on a new connection
 *
 * SERVER is an IPv4 address, with :PORT when not 53. Every lookup starts on its tick (RATE a second) unless the one before it is still going;
 * each prints "at MS took US ok|fail" (MS from the start, US how long it took), and at the
 * end "lookups N failed F slow S" (slow: over 1 s). Exit 0. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* An A query for name with id into buf (a TCP one has its length first): its length. */
static int query(unsigned char *buf, const char *name, unsigned id, int tcp)
{
	unsigned char *p = buf + (tcp ? 2 : 0);
	unsigned char *start = p;
	const char *label = name;
	int len;

	*p++ = id >> 8;
	*p++ = id & 0xff;
	*p++ = 0x01; /* RD */
	*p++ = 0;
	*p++ = 0, *p++ = 1; /* QDCOUNT */
	memset(p, 0, 6);
	p += 6;
	while (*label) {
		const char *dot = strchr(label, '.');
		int n = dot ? (int)(dot - label) : (int)strlen(label);

		if (n == 0)
			break;
		*p++ = n;
		memcpy(p, label, n);
		p += n;
		label += n + (dot ? 1 : 0);
	}
	*p++ = 0;
	*p++ = 0, *p++ = 1; /* A */
	*p++ = 0, *p++ = 1; /* IN */
	len = (int)(p - start);
	if (tcp) {
		buf[0] = len >> 8;
		buf[1] = len & 0xff;
		len += 2;
	}
	return len;
}

/* Whether reply is a NOERROR answer to id with at least one record. */
static int answered(const unsigned char *reply, int n, unsigned id)
{
	return n >= 12 && (unsigned)(reply[0] << 8 | reply[1]) == id && (reply[3] & 0x0f) == 0 &&
	       (reply[6] << 8 | reply[7]) > 0;
}

static struct sockaddr_in server;
static int udp_socket = -1, tcp_socket = -1;

static int udp_lookup(const char *name, unsigned id)
{
	unsigned char q[512], r[4096];
	int len = query(q, name, id, 0), tries, n;
	struct pollfd pfd;

	if (udp_socket < 0) {
		udp_socket = socket(AF_INET, SOCK_DGRAM, 0);
		if (udp_socket < 0 || connect(udp_socket, (struct sockaddr *)&server, sizeof server) < 0)
			return 0;
	}
	for (tries = 0; tries < 2; tries++) {
		long long deadline = now_us() + 1000000;

		if (send(udp_socket, q, len, 0) != len && errno != ECONNREFUSED)
			continue;
		for (;;) {
			long long left = deadline - now_us();

			if (left <= 0)
				break;
			pfd.fd = udp_socket;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, (int)(left / 1000) + 1) <= 0)
				break;
			n = recv(udp_socket, r, sizeof r, 0);
			if (n < 0)
				break; /* ICMP unreachable: wait no more for this try */
			if (answered(r, n, id))
				return 1;
		}
	}
	return 0;
}

static int tcp_read(unsigned char *r, int want, long long deadline)
{
	int got = 0, n;
	struct pollfd pfd;

	while (got < want) {
		long long left = deadline - now_us();

		if (left <= 0)
			return -1;
		pfd.fd = tcp_socket;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(left / 1000) + 1) <= 0)
			return -1;
		n = read(tcp_socket, r + got, want - got);
		if (n <= 0)
			return -1;
		got += n;
	}
	return got;
}

static int tcp_lookup(const char *name, unsigned id)
{
	unsigned char q[512], r[65536];
	int len = query(q, name, id, 1), tries, n;

	for (tries = 0; tries < 2; tries++) {
		long long deadline = now_us() + 1000000;

		if (tcp_socket < 0) {
			tcp_socket = socket(AF_INET, SOCK_STREAM, 0);
			if (tcp_socket < 0)
				return 0;
			if (connect(tcp_socket, (struct sockaddr *)&server, sizeof server) < 0)
				goto again;
		}
		if (write(tcp_socket, q, len) != len || tcp_read(r, 2, deadline) != 2)
			goto again;
		n = r[0] << 8 | r[1];
		if (tcp_read(r, n, deadline) != n)
			goto again;
		if (answered(r, n, id))
			return 1;
		return 0;
	again:
		close(tcp_socket);
		tcp_socket = -1;
	}
	return 0;
}

static int libc_lookup(const char *name, unsigned id)
{
	struct addrinfo hints, *res;

	(void)id;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return 0;
	freeaddrinfo(res);
	return 1;
}

int main(int argc, char **argv)
{
	int (*lookup)(const char *, unsigned);
	double rate;
	long long start, end, tick;
	int seconds, lookups = 0, failed = 0, slow = 0;
	const char *name;

	if (argc == 5 && strcmp(argv[1], "libc") == 0) {
		lookup = libc_lookup;
		name = argv[4];
	} else if (argc == 6 && (strcmp(argv[1], "udp") == 0 || strcmp(argv[1], "tcp") == 0)) {
		char address[64], *port;

		lookup = argv[1][0] == 'u' ? udp_lookup : tcp_lookup;
		snprintf(address, sizeof address, "%s", argv[4]);
		port = strchr(address, ':');
		if (port)
			*port++ = 0;
		server.sin_family = AF_INET;
		server.sin_port = htons(port ? atoi(port) : 53);
		if (inet_pton(AF_INET, address, &server.sin_addr) != 1) {
			fprintf(stderr, "not an IPv4 address[:port]: %s\n", argv[4]);
			return 64;
		}
		name = argv[5];
	} else {
		fprintf(stderr, "usage: %s libc RATE SECONDS NAME | udp|tcp RATE SECONDS SERVER NAME\n",
			argv[0]);
		return 64;
	}
	rate = atof(argv[2]);
	seconds = atoi(argv[3]);
	if (rate <= 0 || seconds <= 0) {
		fprintf(stderr, "RATE and SECONDS must be positive\n");
		return 64;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	start = now_us();
	end = start + (long long)seconds * 1000000LL;
	for (tick = start; tick < end; tick += (long long)(1000000.0 / rate)) {
		long long began, took;
		int ok;

		/* The time left read once: read twice, it could be negative at the second read,
		 * and as a useconds_t that is over an hour of sleep. */
		for (long long left = tick - now_us(); left > 0; left = tick - now_us())
			usleep((useconds_t)left);
		began = now_us();
		ok = lookup(name, (unsigned)(lookups & 0xffff));
		took = now_us() - began;
		lookups++;
		failed += !ok;
		slow += took > 1000000;
		printf("at %lld took %lld %s\n", (began - start) / 1000, took, ok ? "ok" : "fail");
		if (now_us() > tick + 1000000)
			tick = now_us(); /* behind by over a second: start again from now */
	}
	printf("lookups %d failed %d slow %d\n", lookups, failed, slow);
	return 0;
}
