// SPDX-License-Identifier: GPL-2.0-only
/*
 * The export side against real HTTP peers that tests/agent/test_agent_export.py provides:
 *
 *   test_export_http push URL PPROF_FILE
 *	one export_pyroscope__push() of PPROF_FILE with labels that need sanitising; prints
 *	"status=S err=E"; the server side checks what arrived.
 *   test_export_http outage URL ITEMS QUEUE_MAX
 *	an exporter while nothing listens at URL: ITEMS profiles (label seq=1..ITEMS)
 *	are submitted, pushes fail, the queue stays at QUEUE_MAX and the oldest are
 *	dropped and counted; prints "down" and waits for a line on stdin (the server is
 *	up then), flushes, and checks every queued profile went out.
 *   test_export_http flush-timeout URL
 *	nothing listens: a flush gives up in time and counts what it dropped.
 *   test_export_http metrics ADDR
 *	serves metrics_http on ADDR, prints "port=P", publishes the metrics again for
 *	each line read from stdin (then prints "published N"), until stdin closes; a
 *	line "stall MS" sets the stall limit instead (then prints "stall set").
 *
 * Exit status 0 when every check held; the reason is printed otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/export_pyroscope.h"
#include "agent/export.h"
#include "agent/metrics_http.h"
#include "check.h"


static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&d, NULL);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(1 << 20);

	CHECK(f && buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static int push(const char *url, const char *file)
{
	static const struct profile_label labels[] = {
		{ "hostname", "node-1" },
		{ "command", "  python3 app.py --opt={a=1,b=2} \"q\"\\x\t " },
		{ "pod uid", "8d1a2f5c-7b1e-4c3a-9f00-1234567890ab" },
		{ "__name__", "evil" },
		{ "empty", "" },
		{ "container_id", "" },
	};
	const char *headers[] = { "X-Scope-OrgID: tenant-1" };
	struct pyroscope_cfg cfg = { .url = url, .token = "tok123", .headers = headers,
				     .nheaders = 1, .app_name = "my app/x" };
	struct export_profile p = { .labels = labels, .nlabels = 6,
				    .start_unix_ns = 1700000000123456789LL,
				    .end_unix_ns = 1700000010123456789LL,
				    .rate_hz = 99, .pid = 42 };
	struct export_item *it;
	struct pyroscope *py;
	long status;
	int err;

	p.data = read_file(file, &p.len);
	it = export_queue__item_new(&p);
	CHECK(it);
	CHECK(!export_pyroscope__new(&cfg, &py));
	err = export_pyroscope__push(py, it, 5000, &status);
	printf("status=%ld err=%d\n", status, err);
	export_pyroscope__free(py);
	export_queue__item_free(it);
	free((void *)p.data);
	CHECK(export_pyroscope__new(&(struct pyroscope_cfg){ .url = "ftp://x" }, &py) == -EINVAL);
	return err ? 1 : 0;
}

static void submit_seq(struct export *e, uint32_t seq)
{
	char value[16];
	struct profile_label labels[] = { { "seq", value } };
	uint8_t data[64];

	snprintf(value, sizeof(value), "%u", seq);
	memset(data, (int)seq, sizeof(data));
	CHECK(!export__submit(e, &(struct export_profile){
		.data = data, .len = sizeof(data), .labels = labels, .nlabels = 1,
		.start_unix_ns = 1700000000000000000LL + seq * 10000000000LL,
		.end_unix_ns = 1700000010000000000LL + seq * 10000000000LL,
		.rate_hz = 100, .pid = seq, .app_name = "outage" }));
}

static void wait_failures(struct export *e, uint64_t n)
{
	struct export_metrics m;
	double t0 = now_s();

	for (;;) {
		export__metrics(e, &m);
		if (m.push_failures >= n)
			return;
		CHECK(now_s() - t0 < 30);
		sleep_ms(20);
	}
}

static int outage(const char *url, uint32_t items, uint32_t qmax)
{
	struct export_cfg cfg = { .app_name = "outage", .pyroscope_url = url,
				    .queue_max_items = qmax, .backoff_initial_ms = 50,
				    .backoff_max_ms = 200 };
	struct export_metrics m;
	struct export *e;
	char line[16];
	double t0;

	CHECK(!export__new(&cfg, &e));
	submit_seq(e, 1);
	wait_failures(e, 3);	/* the first one, retried with backoff */
	for (uint32_t i = 2; i <= items; i++)
		submit_seq(e, i);
	wait_failures(e, 5);
	export__metrics(e, &m);
	printf("down: submitted=%llu failures=%llu dropped=%llu depth=%llu status=%ld err=%d\n",
	       (unsigned long long)m.submitted, (unsigned long long)m.push_failures,
	       (unsigned long long)m.dropped, (unsigned long long)m.queue_depth,
	       m.last_http_status, m.last_error);
	CHECK(m.submitted == items && m.pushed == 0);
	CHECK(m.queue_depth == qmax);
	CHECK(m.dropped == items - qmax);
	CHECK(m.last_error == -ECONNREFUSED);
	fflush(stdout);
	CHECK(fgets(line, sizeof(line), stdin));
	t0 = now_s();
	CHECK(export__flush(e, 20000) == 0);
	export__metrics(e, &m);
	printf("up: pushed=%llu dropped=%llu depth=%llu flush=%.2fs\n",
	       (unsigned long long)m.pushed, (unsigned long long)m.dropped,
	       (unsigned long long)m.queue_depth, now_s() - t0);
	CHECK(m.pushed == qmax && m.queue_depth == 0 && m.dropped == items - qmax);
	CHECK(m.last_http_status == 200);
	export__print_metrics(&m, stdout);
	export__free(e);
	return 0;
}

static int flush_timeout(const char *url)
{
	struct export_cfg cfg = { .pyroscope_url = url, .backoff_initial_ms = 50 };
	struct export_metrics m;
	struct export *e;
	double t0;

	CHECK(!export__new(&cfg, &e));
	for (uint32_t i = 1; i <= 3; i++)
		submit_seq(e, i);
	t0 = now_s();
	CHECK(export__flush(e, 1000) == -ETIMEDOUT);
	export__free(e);
	printf("flush gave up after %.2fs\n", now_s() - t0);
	CHECK(now_s() - t0 < 5);
	/* A bad URL is refused up front; the old configuration stays. */
	CHECK(!export__new(&cfg, &e));
	CHECK(export__reconfigure(e, &(struct export_cfg){ .pyroscope_url = "nope" }) ==
	      -EINVAL);
	export__metrics(e, &m);
	CHECK(m.dropped == 0);
	export__free(e);
	return 0;
}

struct render_ctx {
	uint64_t renders;
};

static int render(void *arg, FILE *f)
{
	struct render_ctx *ctx = arg;
	struct export_metrics m = { .pushed = 7, .dropped = 2, .queue_depth = 3 };

	ctx->renders++;
	metrics_http__metric(f, "pybpfprof_renders_total", "counter", "Scrapes answered.",
			     ctx->renders);
	export__print_metrics(&m, f);
	return 0;
}

static int metrics(const char *addr)
{
	struct render_ctx ctx = { 0 };
	struct metrics_http *m;
	char line[64];

	CHECK(!metrics_http__new(addr, &m));
	CHECK(!metrics_http__publish(m, render, &ctx));
	printf("port=%d\n", metrics_http__port(m));
	fflush(stdout);
	/* The server has a thread of its own: this one only publishes, once a line. */
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "stall ", 6)) {
			metrics_http__set_stall(m, (uint32_t)atoi(line + 6));
			printf("stall set\n");
			fflush(stdout);
			continue;
		}
		CHECK(!metrics_http__publish(m, render, &ctx));
		printf("published %llu\n", (unsigned long long)ctx.renders);
		fflush(stdout);
	}
	metrics_http__free(m);
	CHECK(metrics_http__new("nonsense", &m) == -EINVAL);
	CHECK(metrics_http__new("1.2.3.4:99999", &m) == -EINVAL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "push"))
		return push(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "outage"))
		return outage(argv[2], (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "flush-timeout"))
		return flush_timeout(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "metrics"))
		return metrics(argv[2]);
	fprintf(stderr, "usage: see the top of tests/unit/test_export_http.c\n");
	return 2;
}
