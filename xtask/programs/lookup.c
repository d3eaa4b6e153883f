/* A pod's name lookups, as an application makes them through its C library: built twice for
 * the real-node tests (tests/real_node/), against glibc (dynamically, as Debian's programs
 * are) and against musl (statically, as Alpine's and many distroless images' programs are).
 *
 *   lookup addr NAME   getaddrinfo(NAME), any family, with the canonical name:
 *                      "canonical NAME", then "address ADDR" for each address, in order
 *   lookup ptr ADDR    getnameinfo(ADDR, NI_NAMEREQD): "name NAME"
 *   lookup srv NAME    res_search(NAME, IN, SRV), the answers as
 *                      "srv PRIORITY WEIGHT PORT TARGET" (the search list as the C library
 *                      applies it to res_search: glibc does, musl does not)
 *   lookup time N NAME getaddrinfo(NAME) N times in a row: "us MICROSECONDS" for each, then
 *                      "failed COUNT"
 *
 * Exit 0 when found (for time: every time); 2 with "error WHAT" when not (gai_strerror, or
 * the h_errno). */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

static int addr(const char *name)
{
	struct addrinfo hints, *res, *p;
	char text[INET6_ADDRSTRLEN];
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_CANONNAME;
	rc = getaddrinfo(name, NULL, &hints, &res);
	if (rc != 0) {
		printf("error %s\n", gai_strerror(rc));
		return 2;
	}
	if (res->ai_canonname)
		printf("canonical %s\n", res->ai_canonname);
	for (p = res; p; p = p->ai_next) {
		const void *a = p->ai_family == AF_INET
			? (const void *)&((struct sockaddr_in *)p->ai_addr)->sin_addr
			: (const void *)&((struct sockaddr_in6 *)p->ai_addr)->sin6_addr;
		printf("address %s\n", inet_ntop(p->ai_family, a, text, sizeof text));
	}
	freeaddrinfo(res);
	return 0;
}

static int ptr(const char *text)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char host[NI_MAXHOST];
	int rc;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		len = sizeof(struct sockaddr_in6);
	} else {
		printf("error not an address: %s\n", text);
		return 64;
	}
	rc = getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, NULL, 0, NI_NAMEREQD);
	if (rc != 0) {
		printf("error %s\n", gai_strerror(rc));
		return 2;
	}
	printf("name %s\n", host);
	return 0;
}

static unsigned get16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static int srv(const char *name)
{
	unsigned char answer[8192];
	char target[NS_MAXDNAME];
	const unsigned char *p, *end;
	int n, count, i, skip;

	n = res_search(name, 1 /* IN */, 33 /* SRV */, answer, sizeof answer);
	if (n < 0) {
		printf("error h_errno %d\n", h_errno);
		return 2;
	}
	if (n > (int)sizeof answer)
		n = sizeof answer;
	end = answer + n;
	p = answer + 12;
	for (i = get16(answer + 4); i > 0; i--) {
		skip = dn_skipname(p, end);
		if (skip < 0)
			goto bad;
		p += skip + 4;
	}
	count = get16(answer + 6);
	for (i = 0; i < count; i++) {
		unsigned type, length;

		skip = dn_skipname(p, end);
		if (skip < 0 || p + skip + 10 > end)
			goto bad;
		p += skip;
		type = get16(p);
		length = get16(p + 8);
		p += 10;
		if (p + length > end)
			goto bad;
		if (type == 33 && length >= 7) {
			if (dn_expand(answer, end, p + 6, target, sizeof target) < 0)
				goto bad;
			printf("srv %u %u %u %s\n", get16(p), get16(p + 2), get16(p + 4), target);
		}
		p += length;
	}
	return 0;
bad:
	printf("error malformed answer\n");
	return 3;
}

static int timed(const char *count, const char *name)
{
	struct addrinfo hints, *res;
	struct timespec start, end;
	int i, n = atoi(count), failed = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &start);
		if (getaddrinfo(name, NULL, &hints, &res) == 0)
			freeaddrinfo(res);
		else
			failed++;
		clock_gettime(CLOCK_MONOTONIC, &end);
		printf("us %ld\n", (long)((end.tv_sec - start.tv_sec) * 1000000L +
					 (end.tv_nsec - start.tv_nsec) / 1000));
	}
	printf("failed %d\n", failed);
	return failed ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "addr") == 0)
		return addr(argv[2]);
	if (argc == 3 && strcmp(argv[1], "ptr") == 0)
		return ptr(argv[2]);
	if (argc == 3 && strcmp(argv[1], "srv") == 0)
		return srv(argv[2]);
	if (argc == 4 && strcmp(argv[1], "time") == 0)
		return timed(argv[2], argv[3]);
	fprintf(stderr, "usage: %s addr|ptr|srv NAME | time COUNT NAME\n", argv[0]);
	return 64;
}
