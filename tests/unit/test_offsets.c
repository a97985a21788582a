/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host-only negative tests for user/offsets.c: no interpreter needed.
 *
 * Wrong cookies, versions without a known layout (3.10, 3.12 tables, 3.16,
 * pre-releases), truncated and random tables must be refused with the documented
 * errno, never crash and never touch *out. Buffers are placed so that they end at
 * a PROT_NONE page: reading one byte past @len faults. The real tables of 3.13+
 * are proven by offsets_check, which reads them from live interpreters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../user/offsets.h"

#define HEX(maj, min, mic, lvl, ser) \
	((uint32_t)(maj) << 24 | (uint32_t)(min) << 16 | (uint32_t)(mic) << 8 | \
	 (uint32_t)(lvl) << 4 | (uint32_t)(ser))
#define FINAL	0xf
#define ALPHA	0xa
#define BETA	0xb
#define RC	0xc

static unsigned int passed;
static unsigned int failed;
static unsigned int touched;	/* failed calls that wrote *out anyway */

static void expect(int ok, const char *what, long arg)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAILED %s (0x%lx)\n", what, arg);
}

static uint8_t *area;		/* two pages, the second PROT_NONE */
static size_t page;

/* @len bytes of @src, ending right at the guard page */
static const uint8_t *at_guard(const uint8_t *src, size_t len)
{
	uint8_t *dst = area + page - len;

	if (len)
		memcpy(dst, src, len);
	return dst;
}

/* A table of @len bytes: cookie, @version, the rest zero. */
static void make_table(uint8_t *buf, size_t len, const char *cookie, uint64_t version)
{
	memset(buf, 0, len);
	memcpy(buf, cookie, 8);
	memcpy(buf + 8, &version, sizeof(version));
}

/* Calls offsets__from_debug() and checks *out is untouched on failure. */
static int from_debug(const uint8_t *buf, size_t len)
{
	struct py_offsets o, before;
	int ret;

	memset(&o, 0x5a, sizeof(o));
	before = o;
	ret = offsets__from_debug(buf, len, &o);
	if (ret && memcmp(&o, &before, sizeof(o)))
		touched++;
	return ret;
}

static void test_builtin(void)
{
	struct py_offsets o, before;
	int ret;

	ret = offsets__builtin(HEX(3, 11, 2, FINAL, 0), &o);
	expect(ret == 0, "3.11.2 built in", ret);
	expect(o.version_hex == HEX(3, 11, 2, FINAL, 0), "3.11 version kept", o.version_hex);
	expect(o.tested == 1, "3.11 tested", o.tested);
	expect(o.ts_current_frame == PBP_OFF_NONE && o.ts_cframe != PBP_OFF_NONE,
	       "3.11 reaches frames through cframe", (long)o.ts_cframe);
	expect(o.owner_cstack == 0xff && o.owner_interpreter == 0xff,
	       "3.11 has no shim or base frames", o.owner_cstack);

	ret = offsets__builtin(HEX(3, 12, 7, FINAL, 0), &o);
	expect(ret == 0, "3.12.7 built in", ret);
	expect(o.tested == 0, "3.12 never run live", o.tested);
	expect(o.owner_cstack == 3, "3.12 shim owner", o.owner_cstack);
	expect(o.ts_size <= 2048 && o.ts_datastack_limit + 8 <= o.ts_size,
	       "3.12 ts_size covers fields", (long)o.ts_size);

	const uint32_t refused[] = {
		HEX(3, 10, 13, FINAL, 0), HEX(3, 11, 0, BETA, 1), HEX(3, 12, 0, RC, 3),
		HEX(3, 13, 0, FINAL, 0), HEX(3, 14, 2, FINAL, 0), HEX(3, 16, 0, FINAL, 0),
		HEX(2, 11, 0, FINAL, 0), 0, 0xffffffffu,
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(&o, 0x5a, sizeof(o));
		before = o;
		ret = offsets__builtin(refused[i], &o);
		expect(ret == -ENOTSUP, "builtin refuses", refused[i]);
		expect(!memcmp(&o, &before, sizeof(o)), "builtin leaves out alone", refused[i]);
	}
	expect(offsets__builtin(HEX(3, 11, 2, FINAL, 0), NULL) == -EINVAL, "NULL out", 0);
}

static void test_debug_refusals(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	struct py_offsets o;
	int ret;

	expect(offsets__from_debug(NULL, sizeof(buf), &o) == -EINVAL, "NULL buf", 0);
	make_table(buf, sizeof(buf), "xdebugpy", HEX(3, 14, 10, FINAL, 0));
	expect(offsets__from_debug(buf, sizeof(buf), NULL) == -EINVAL, "NULL out", 0);

	/* cookies: wrong, other case, truncated */
	const char *cookies[] = { "xdebugpz", "XDEBUGPY", "\0debugpy", "ydebugpy" };
	for (size_t i = 0; i < sizeof(cookies) / sizeof(cookies[0]); i++) {
		make_table(buf, sizeof(buf), cookies[i], HEX(3, 14, 10, FINAL, 0));
		ret = from_debug(at_guard(buf, sizeof(buf)), sizeof(buf));
		expect(ret == -EINVAL, "bad cookie -> -EINVAL", (long)i);
	}

	/* versions with no known layout */
	const uint64_t versions[] = {
		HEX(3, 16, 0, FINAL, 0), HEX(3, 16, 0, ALPHA, 1), HEX(3, 10, 0, FINAL, 0),
		HEX(3, 10, 14, FINAL, 0), HEX(3, 11, 2, FINAL, 0), HEX(3, 12, 7, FINAL, 0),
		HEX(4, 13, 0, FINAL, 0), HEX(3, 13, 0, RC, 1), HEX(3, 13, 0, BETA, 4),
		HEX(3, 14, 0, ALPHA, 1), HEX(3, 14, 0, RC, 3), HEX(3, 15, 0, ALPHA, 1),
		HEX(3, 15, 0, BETA, 3), HEX(3, 15, 0, BETA, 4), HEX(3, 15, 0, RC, 2),
		(uint64_t)1 << 32 | HEX(3, 14, 10, FINAL, 0), 0, UINT64_MAX,
	};
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		make_table(buf, sizeof(buf), "xdebugpy", versions[i]);
		ret = from_debug(at_guard(buf, sizeof(buf)), sizeof(buf));
		expect(ret == -ENOTSUP, "unknown version -> -ENOTSUP", (long)versions[i]);
	}

	/* a known version whose contents are all zero points nowhere: refused */
	const uint64_t known[] = {
		HEX(3, 13, 18, FINAL, 0), HEX(3, 14, 10, FINAL, 0), HEX(3, 15, 2, FINAL, 0),
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		make_table(buf, sizeof(buf), "xdebugpy", known[i]);
		ret = from_debug(at_guard(buf, sizeof(buf)), sizeof(buf));
		expect(ret == -EINVAL, "empty table -> -EINVAL", (long)known[i]);
	}
}

/* Every length of every known and unknown version: an error, never a fault. */
static void test_truncated(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	const uint64_t versions[] = {
		HEX(3, 13, 18, FINAL, 0), HEX(3, 14, 10, FINAL, 0), HEX(3, 15, 2, FINAL, 0),
		HEX(3, 16, 0, FINAL, 0),
	};
	unsigned int bad = 0;

	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		make_table(buf, sizeof(buf), "xdebugpy", versions[v]);
		for (size_t len = 0; len <= sizeof(buf); len++) {
			int ret = from_debug(at_guard(buf, len), len);

			if (ret >= 0 || (len < 16 && ret != -EINVAL))
				bad++;
		}
	}
	expect(bad == 0, "truncated tables refused", bad);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * Random tables with a valid cookie and a known version: a small value in each
 * slot so that some pass the first checks. Whatever is accepted must still be
 * self-consistent.
 */
static void test_random(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	const uint64_t versions[] = {
		HEX(3, 13, 18, FINAL, 0), HEX(3, 14, 10, FINAL, 0), HEX(3, 15, 2, FINAL, 0),
	};
	unsigned int accepted = 0, inconsistent = 0, badret = 0;

	for (int i = 0; i < 200000; i++) {
		uint64_t v = versions[rnd() % 3];
		size_t len = rnd() % (sizeof(buf) + 1);
		struct py_offsets o;
		int ret;

		for (size_t s = 2; s < sizeof(buf) / 8; s++) {
			uint64_t x = (rnd() & 7) ? rnd() % 1024 : rnd();

			memcpy(buf + s * 8, &x, 8);
		}
		memcpy(buf, "xdebugpy", 8);
		memcpy(buf + 8, &v, 8);
		ret = offsets__from_debug(at_guard(buf, len), len, &o);
		if (ret && ret != -EINVAL && ret != -ENOTSUP)
			badret++;
		if (ret)
			continue;
		accepted++;
		if (o.ts_size > 2048 || o.ts_current_frame + 8 > o.ts_size ||
		    o.ts_datastack_limit + 8 > o.ts_size || o.fr_owner >= o.fr_size ||
		    o.free_threaded > 1)
			inconsistent++;
	}
	expect(badret == 0, "random tables: only -EINVAL/-ENOTSUP", badret);
	expect(inconsistent == 0, "random tables: accepted ones consistent", inconsistent);
	printf("random tables: %u of 200000 accepted\n", accepted);
}

int main(void)
{
	size_t sys_page = (size_t)sysconf(_SC_PAGESIZE);

	for (page = sys_page; page < PBP_DEBUG_OFFSETS_MAX; page += sys_page)
		;
	area = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (area == MAP_FAILED || mprotect(area + page, page, PROT_NONE)) {
		perror("guard page");
		return 2;
	}

	test_builtin();
	test_debug_refusals();
	test_truncated();
	test_random();
	expect(touched == 0, "failed calls leave *out untouched", touched);

	printf("test_offsets: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
