// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metrics endpoint; see metrics_http.h. HTTP/1.0-style: one request per
 * connection, answered with Connection: close. Only the request line is looked at;
 * headers are read (to the blank line, within the buffer) and ignored.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metrics_http.h"

#define SERVE_BUDGET_MS 100
#define MAX_CONNS_PER_CALL 4
#define REQUEST_MAX 4096

struct metrics_http {
	int fd;
	int port;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_port(const char *s, int *port)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > 65535)
		return -EINVAL;
	*port = (int)v;
	return 0;
}

/* "1.2.3.4:P", "[::1]:P", ":P" -> a socket address. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len,
		      int *any)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char host[64];
	const char *colon;
	int port, err;

	memset(ss, 0, sizeof(*ss));
	*any = 0;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':' || (size_t)(close - addr - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr + 1, (size_t)(close - addr - 1));
		host[close - addr - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
	}
	err = parse_port(colon + 1, &port);
	if (err)
		return err;
	if (!host[0] && addr[0] != '[') {
		*any = 1;
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
	} else if (addr[0] == '[') {
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
	} else {
		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
			return -EINVAL;
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
	}
	return 0;
}

static int listen_on(struct sockaddr_storage *ss, socklen_t len, int any)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1, zero = 0, err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* ":PORT" means every address: IPv4 too, through the v6 socket. */
	if (any)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)ss, len) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int metrics_http__new(const char *listen_addr, struct metrics_http **out)
{
	struct sockaddr_storage ss, got;
	socklen_t len, glen = sizeof(got);
	struct metrics_http *m;
	int any, fd, err;

	*out = NULL;
	if (!listen_addr)
		listen_addr = METRICS_HTTP_DEFAULT_ADDR;
	err = parse_addr(listen_addr, &ss, &len, &any);
	if (err) {
		pr_warn("metrics address \"%s\": not HOST:PORT, [IPV6]:PORT or :PORT\n",
			listen_addr);
		return err;
	}
	fd = listen_on(&ss, len, any);
	if (fd == -EAFNOSUPPORT && any) {
		/* No IPv6 on this host: every IPv4 address, then. */
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
		uint16_t port = ((struct sockaddr_in6 *)&ss)->sin6_port;

		memset(&ss, 0, sizeof(ss));
		in4->sin_family = AF_INET;
		in4->sin_addr.s_addr = htonl(INADDR_ANY);
		in4->sin_port = port;
		fd = listen_on(&ss, sizeof(*in4), 0);
	}
	if (fd < 0) {
		pr_warn("metrics address %s: %s\n", listen_addr, strerror(-fd));
		return fd;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		return -ENOMEM;
	}
	m->fd = fd;
	if (!getsockname(fd, (struct sockaddr *)&got, &glen))
		m->port = ntohs(got.ss_family == AF_INET ?
				((struct sockaddr_in *)&got)->sin_port :
				((struct sockaddr_in6 *)&got)->sin6_port);
	*out = m;
	return 0;
}

void metrics_http__free(struct metrics_http *m)
{
	if (!m)
		return;
	close(m->fd);
	free(m);
}

int metrics_http__fd(const struct metrics_http *m)
{
	return m->fd;
}

int metrics_http__port(const struct metrics_http *m)
{
	return m->port;
}

void metrics_http__metric(FILE *f, const char *name, const char *type, const char *help,
			  uint64_t value)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
		(unsigned long long)value);
}

/* Reads the request head (to the blank line) before @deadline; its length or -1. */
static ssize_t read_request(int fd, char *buf, size_t cap, int64_t deadline)
{
	size_t len = 0;

	for (;;) {
		int64_t left = deadline - now_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (ssize_t)len;
		if (len == cap - 1)	/* headers too long: the request line is enough */
			return (ssize_t)len;
	}
}

static void write_all(int fd, const char *p, size_t len, int64_t deadline)
{
	while (len) {
		int64_t left = deadline - now_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return;
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void respond(int fd, int status, const char *reason, const char *type,
		    const char *body, size_t len, int head_only, int64_t deadline)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, reason, type, len);

	write_all(fd, head, (size_t)n, deadline);
	if (!head_only)
		write_all(fd, body, len, deadline);
}

static void answer(int fd, const char *req, metrics_render_fn render, void *ctx,
		   int64_t deadline)
{
	static const char text[] = "text/plain; charset=utf-8";
	char method[8], target[256];
	const char *q;
	int head_only;

	if (sscanf(req, "%7s %255s", method, target) != 2) {
		respond(fd, 400, "Bad Request", text, "bad request\n", 12, 0, deadline);
		return;
	}
	head_only = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head_only) {
		respond(fd, 405, "Method Not Allowed", text, "GET only\n", 9, 0, deadline);
		return;
	}
	q = strchr(target, '?');
	if (q)
		target[q - target] = '\0';
	if (!strcmp(target, "/metrics")) {
		char *body = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&body, &len);
		int err = f ? render(ctx, f) : -ENOMEM;

		if (f && fclose(f) && !err)
			err = -ENOMEM;
		if (err || !body)
			respond(fd, 500, "Internal Server Error", text, "render failed\n", 14, 0,
				deadline);
		else
			respond(fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body,
				len, head_only, deadline);
		free(body);
	} else if (!strcmp(target, "/healthz")) {
		respond(fd, 200, "OK", text, "ok\n", 3, head_only, deadline);
	} else {
		respond(fd, 404, "Not Found", text, "not found\n", 10, head_only, deadline);
	}
}

int metrics_http__serve(struct metrics_http *m, metrics_render_fn render, void *ctx)
{
	int64_t deadline = now_ms() + SERVE_BUDGET_MS;
	char req[REQUEST_MAX];
	int served = 0;

	for (int i = 0; i < MAX_CONNS_PER_CALL && now_ms() < deadline; i++) {
		int c = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
			    errno == ECONNABORTED)
				break;
			return served ? served : -errno;
		}
		if (read_request(c, req, sizeof(req), deadline) > 0) {
			answer(c, req, render, ctx, deadline);
			served++;
		}
		close(c);
	}
	return served;
}
