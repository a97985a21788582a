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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "agent/metrics_http.h"
#include "agent/worker.h"

/* The whole request head must arrive within this long of connecting, and the answer
 * must be taken within this long of the request: generous, as no client waits on
 * another. */
#define READ_MS 10000
#define WRITE_MS 10000
#define REQUEST_MAX 4096
/* After accept() fails for want of descriptors or memory, the listening socket stays
 * readable: leave it alone this long rather than spin. */
#define ACCEPT_PAUSE_MS 100

struct client {
	int fd;			/* -1: a free slot */
	uint64_t seq;		/* order of acceptance */
	int64_t deadline;
	size_t len;		/* bytes of the request read so far */
	char *out;		/* the answer; NULL while the request is being read */
	size_t out_len, out_off;
	char req[REQUEST_MAX];
};

struct metrics_http {
	int fd;
	int port;
	int wake;		/* eventfd: the server thread stops when it is readable */
	pthread_t thread;
	int thread_started;
	pthread_mutex_t lock;	/* guards text, text_len, published_ms and stall_ms */
	char *text;		/* the /metrics body last published; NULL: none yet */
	size_t text_len;
	int64_t published_ms;	/* when it was published (CLOCK_MONOTONIC) */
	uint32_t stall_ms;	/* metrics_http__set_stall()'s, 0: none */
	int64_t accept_paused_until;	/* the server thread's own, like the clients */
	uint64_t accepted;
	struct client clients[METRICS_HTTP_MAX_CLIENTS];
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
	if (bind(fd, (struct sockaddr *)ss, len) || listen(fd, METRICS_HTTP_MAX_CLIENTS)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void *serve(void *arg);

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
	for (int i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++)
		m->clients[i].fd = -1;
	pthread_mutex_init(&m->lock, NULL);
	if (!getsockname(fd, (struct sockaddr *)&got, &glen))
		m->port = ntohs(got.ss_family == AF_INET ?
				((struct sockaddr_in *)&got)->sin_port :
				((struct sockaddr_in6 *)&got)->sin6_port);
	m->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake < 0) {
		err = -errno;
		goto fail;
	}
	err = worker__start(&m->thread, serve, m);
	if (err)
		goto fail;
	m->thread_started = 1;
	*out = m;
	return 0;
fail:
	pr_warn("metrics server: %s\n", strerror(-err));
	metrics_http__free(m);
	return err;
}

static void client_close(struct client *c)
{
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->len = c->out_len = c->out_off = 0;
}

void metrics_http__free(struct metrics_http *m)
{
	if (!m)
		return;
	if (m->thread_started) {
		uint64_t one = 1;

		if (write(m->wake, &one, sizeof(one)) != sizeof(one))
			pr_warn("metrics server: cannot stop it: %s\n", strerror(errno));
		else
			pthread_join(m->thread, NULL);
	}
	for (int i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++)
		if (m->clients[i].fd >= 0)
			client_close(&m->clients[i]);
	if (m->wake >= 0)
		close(m->wake);
	close(m->fd);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}

int metrics_http__port(const struct metrics_http *m)
{
	return m->port;
}

int metrics_http__publish(struct metrics_http *m, metrics_render_fn render, void *ctx)
{
	char *body = NULL, *old;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	int err = f ? render(ctx, f) : -ENOMEM;

	if (f && fclose(f) && !err)
		err = -ENOMEM;
	if (!err && !body)
		err = -ENOMEM;
	if (err) {
		free(body);
		return err;
	}
	pthread_mutex_lock(&m->lock);
	old = m->text;
	m->text = body;
	m->text_len = len;
	m->published_ms = now_ms();
	pthread_mutex_unlock(&m->lock);
	free(old);
	return 0;
}

void metrics_http__set_stall(struct metrics_http *m, uint32_t ms)
{
	pthread_mutex_lock(&m->lock);
	m->stall_ms = ms;
	if (!m->text)
		m->published_ms = now_ms();
	pthread_mutex_unlock(&m->lock);
}

void metrics_http__metric(FILE *f, const char *name, const char *type, const char *help,
			  uint64_t value)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
		(unsigned long long)value);
}

void metrics_http__metrics(FILE *f, const struct metric *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		metrics_http__metric(f, m[i].name, m[i].type, m[i].help, m[i].value);
}

/* ---- the server thread ----------------------------------------------------------- */

/* The whole answer into c->out (left NULL when out of memory). */
static void respond(struct client *c, int status, const char *reason, const char *type,
		    const char *body, size_t len, int head_only)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, reason, type, len);

	if (head_only)
		len = 0;
	c->out = malloc((size_t)n + len);
	if (!c->out)
		return;
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, len);
	c->out_len = (size_t)n + len;
	c->out_off = 0;
}

static void answer(struct metrics_http *m, struct client *c)
{
	static const char text[] = "text/plain; charset=utf-8";
	char method[8], target[256];
	const char *q;
	int head_only;

	if (sscanf(c->req, "%7s %255s", method, target) != 2) {
		respond(c, 400, "Bad Request", text, "bad request\n", 12, 0);
		return;
	}
	head_only = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head_only) {
		respond(c, 405, "Method Not Allowed", text, "GET only\n", 9, 0);
		return;
	}
	q = strchr(target, '?');
	if (q)
		target[q - target] = '\0';
	if (!strcmp(target, "/metrics")) {
		/* A copy of the text last published, never a call into the caller. */
		pthread_mutex_lock(&m->lock);
		if (m->text)
			respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", m->text,
				m->text_len, head_only);
		else
			respond(c, 503, "Service Unavailable", text, "starting\n", 9, head_only);
		pthread_mutex_unlock(&m->lock);
	} else if (!strcmp(target, "/healthz")) {
		char body[96];
		int64_t since;
		int n;

		pthread_mutex_lock(&m->lock);
		since = now_ms() - m->published_ms;
		if (m->stall_ms && since > m->stall_ms) {
			n = snprintf(body, sizeof(body), "stalled: nothing published for %lld ms\n",
				     (long long)since);
			respond(c, 503, "Service Unavailable", text, body, (size_t)n, head_only);
		} else {
			respond(c, 200, "OK", text, "ok\n", 3, head_only);
		}
		pthread_mutex_unlock(&m->lock);
	} else {
		respond(c, 404, "Not Found", text, "not found\n", 10, head_only);
	}
}

/* Sends what the socket takes; closes the connection once all is sent or on error. */
static void client_write(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	client_close(c);
}

/* Reads what has arrived; once the head is complete (or the buffer full: the request
 * line is enough), makes the answer and starts sending it. */
static void client_read(struct metrics_http *m, struct client *c, int64_t now)
{
	for (;;) {
		ssize_t n = recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len,
				 MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			client_close(c);
			return;
		}
		c->len += (size_t)n;
		c->req[c->len] = '\0';
		if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n") ||
		    c->len == sizeof(c->req) - 1)
			break;
	}
	answer(m, c);
	if (!c->out) {
		client_close(c);
		return;
	}
	c->deadline = now + WRITE_MS;
	client_write(c);
}

/* A slot for a new connection: a free one, else that of the oldest connection still
 * sending its request (a silent client gives way to the next), else none. */
static struct client *free_slot(struct metrics_http *m)
{
	struct client *oldest = NULL;

	for (int i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++) {
		struct client *c = &m->clients[i];

		if (c->fd < 0)
			return c;
		if (!c->out && (!oldest || c->seq < oldest->seq))
			oldest = c;
	}
	if (oldest) {
		pr_debug("metrics: %d connections open: dropping the oldest silent one\n",
			 METRICS_HTTP_MAX_CLIENTS);
		client_close(oldest);
	}
	return oldest;
}

static void accept_all(struct metrics_http *m, int64_t now)
{
	for (;;) {
		int fd = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				pr_warn("metrics: accept: %s\n", strerror(errno));
				m->accept_paused_until = now + ACCEPT_PAUSE_MS;
			}
			return;
		}
		c = free_slot(m);
		if (!c) {
			close(fd);	/* every slot is answering: try again later */
			continue;
		}
		c->fd = fd;
		c->seq = ++m->accepted;
		c->deadline = now + READ_MS;
		c->len = 0;
		c->req[0] = '\0';
	}
}

static void *serve(void *arg)
{
	struct metrics_http *m = arg;
	struct pollfd pfd[2 + METRICS_HTTP_MAX_CLIENTS];
	struct client *of[2 + METRICS_HTTP_MAX_CLIENTS];

	for (;;) {
		int64_t now = now_ms(), timeout = -1;
		int n = 0, listening = now >= m->accept_paused_until;

		pfd[n++] = (struct pollfd){ .fd = m->wake, .events = POLLIN };
		if (listening)
			pfd[n++] = (struct pollfd){ .fd = m->fd, .events = POLLIN };
		else
			timeout = m->accept_paused_until - now;
		for (int i = 0; i < METRICS_HTTP_MAX_CLIENTS; i++) {
			struct client *c = &m->clients[i];

			if (c->fd < 0)
				continue;
			if (now >= c->deadline) {
				client_close(c);
				continue;
			}
			if (timeout < 0 || c->deadline - now < timeout)
				timeout = c->deadline - now;
			of[n] = c;
			pfd[n++] = (struct pollfd){ .fd = c->fd,
						    .events = c->out ? POLLOUT : POLLIN };
		}
		if (poll(pfd, (nfds_t)n, (int)timeout) < 0) {
			if (errno == EINTR)
				continue;
			pr_warn("metrics: poll: %s\n", strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		now = now_ms();
		for (int i = listening + 1; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (of[i]->out)
				client_write(of[i]);
			else
				client_read(m, of[i], now);
		}
		/* Last: accepting may close a client polled above. */
		if (listening && pfd[1].revents)
			accept_all(m, now);
	}
	return NULL;
}
