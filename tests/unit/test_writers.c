// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes one fixed profile in the format named by argv[1] to standard output, for the
 * golden-file tests (tests/test_writers_golden.py). The profile has what writers must
 * get right: two processes, threads with and without names, markers, a line-less
 * frame, and names that need escaping in every format (quotes, <&>, ';', non-ASCII).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "writers.h"

#define MAX_FRAMES 8

struct fixed_stack {
	uint32_t pid, tid;
	uint64_t count;
	const char *frames[MAX_FRAMES];	/* root first: "kind|name|file|line" */
};

static const struct fixed_stack fixed[] = {
	{ 100, 100, 50, { "P|process 100 python3 app.py", "Y|<module>|/srv/app.py|40",
			  "Y|main|/srv/app.py|31", "Y|work|/srv/app.py|12" } },
	{ 100, 100, 30, { "P|process 100 python3 app.py", "Y|<module>|/srv/app.py|40",
			  "Y|main|/srv/app.py|32",
			  "Y|dumps|/usr/lib/python3.11/json/__init__.py|231" } },
	{ 100, 101, 15, { "P|process 100 python3 app.py", "T|thread 101",
			  "Y|Worker.run|/srv/app.py|20",
			  "Y|get|/srv/venv/lib/python3.11/site-packages/requests/api.py|73" } },
	{ 100, 101, 5, { "P|process 100 python3 app.py", "T|thread 101", "M|[incomplete]",
			 "Y|<lambda>|/srv/app.py|-1" } },
	{ 200, 200, 20, { "P|process 200 python3 -c \"x<y & z\"",
			  "Y|<module>|<string>|1", "Y|f\xc3\xa9;\"q\"|<frozen a;b>|7" } },
	{ 200, 200, 4, { "P|process 200 python3 -c \"x<y & z\"", "M|[no Python frame]" } },
};

/* Which fixed stack each timeline sample added to, in time order, 10 ms apart. */
static const uint32_t timeline[] = { 0, 0, 1, 4, 0, 2, 2, 3, 1, 0, 5, 4, 0 };

static uint32_t intern(struct strtab *strs, const char *s, size_t len)
{
	int64_t id = strtab__intern(strs, s, len);

	if (id < 0)
		exit(1);
	return (uint32_t)id;
}

static void parse_frame(struct strtab *strs, const char *spec, struct agg_frame *fr)
{
	const char *name = spec + 2, *bar = strchr(name, '|');
	static const char kinds[] = "YTMP";

	fr->kind = (uint32_t)(strchr(kinds, spec[0]) - kinds);
	fr->name = intern(strs, name, bar ? (size_t)(bar - name) : strlen(name));
	fr->line = -1;
	fr->file = 0;
	if (!bar)
		return;
	name = bar + 1;
	bar = strchr(name, '|');
	fr->file = intern(strs, name, (size_t)(bar - name));
	fr->line = atoi(bar + 1);
}

int main(int argc, char **argv)
{
	static const struct { uint32_t pid, tid; const char *name; } threads[] = {
		{ 100, 100, "python3" }, { 100, 101, "worker-1" }, { 200, 200, NULL },
	};
	struct profile_thread pt[3];
	struct profile_sample samples[sizeof(timeline) / sizeof(timeline[0])];
	struct agg_frame frames[MAX_FRAMES];
	struct strtab *strs = strtab__new();
	struct aggregate *agg = aggregate__new();
	const struct writer *w = argc == 2 ? writer__find(argv[1]) : NULL;
	struct profile p = {
		.agg = agg,
		.strs = strs,
		.threads = pt,
		.nthreads = 3,
		.timeline = samples,
		.ntimeline = sizeof(timeline) / sizeof(timeline[0]),
		.target = "pid 100 (python3 app.py)",
		.start_unix_ns = 1700000000123456789ll,
		.duration_ns = 1500000000ull,
		.rate_hz = 100,
		.period_ns = 10000000ull,
	};
	int err;

	if (!w || !strs || !agg) {
		fprintf(stderr, "usage: test_writers FORMAT\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		uint32_t n = 0;

		while (n < MAX_FRAMES && fixed[i].frames[n]) {
			parse_frame(strs, fixed[i].frames[n], &frames[n]);
			n++;
		}
		if (aggregate__add(agg, fixed[i].pid, fixed[i].tid, frames, n, fixed[i].count,
				   NULL))
			return 1;
	}
	for (size_t i = 0; i < 3; i++) {
		pt[i].pid = threads[i].pid;
		pt[i].tid = threads[i].tid;
		pt[i].name = threads[i].name ? intern(strs, threads[i].name,
						      strlen(threads[i].name)) : PROFILE_NO_NAME;
	}
	for (size_t i = 0; i < p.ntimeline; i++)
		samples[i] = (struct profile_sample){ .t_ns = i * 10000000ull,
						      .stack = timeline[i] };
	err = w->write(stdout, &p);
	aggregate__free(agg);
	strtab__free(strs);
	return err ? 1 : 0;
}
