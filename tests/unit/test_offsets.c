/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host-only negative tests for user/cpython/py_offsets.c: no interpreter needed.
 *
 * Wrong cookies, versions without a known layout (3.10, 3.12 tables, 3.16,
 * pre-releases), truncated and random tables must be refused with the documented
 * errno, never crash and never touch *out. Buffers are placed so that they end at
 * a PROT_NONE page: reading one byte past @len faults. The real tables of 3.13+
 * are proven by offsets_check, which reads them from live interpreters; here they
 * are the seeds of hostile ones. Whatever is accepted must keep every field that a
 * reader takes out of a bounded copy (thread state, frame header, code object)
 * inside that copy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../user/cpython/py_offsets.h"
#include "debug_tables.h"

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

/* Calls py_offsets__from_debug() and checks *out is untouched on failure. */
static int from_debug(const uint8_t *buf, size_t len)
{
	struct py_offsets o, before;
	int ret;

	memset(&o, 0x5a, sizeof(o));
	before = o;
	ret = py_offsets__from_debug(buf, len, &o);
	if (ret && memcmp(&o, &before, sizeof(o)))
		touched++;
	return ret;
}

/* [@off, @off + @width) inside @size bytes, without wrapping around. */
static int inside(uint64_t off, uint64_t width, uint64_t size)
{
	return off < size && width <= size - off;
}

/*
 * Every field a reader takes out of a bounded copy lies inside that copy: the thread
 * state (py_threads, BPF), the frame header (decoder, BPF), the code object up to
 * co_size (code_cache, where ob_size follows ob_type). Absent fields need no room.
 */
static int fits_readers(const struct py_offsets *o)
{
	const uint64_t ts[] = {
		o->ts_next, o->ts_interp, o->ts_thread_id, o->ts_native_thread_id, o->ts_cframe,
		o->ts_current_frame, o->ts_datastack_chunk, o->ts_datastack_top,
		o->ts_datastack_limit, o->ts_base_frame, o->ts_last_profiled_frame,
		o->ts_last_profiled_frame_seq,
	};
	const uint64_t fr[] = { o->fr_code, o->fr_previous, o->fr_instr };
	const uint64_t co[] = { o->co_filename, o->co_name, o->co_qualname, o->co_linetable };

	if (o->ts_size > PBP_TSTATE_COPY_MAX || o->fr_size > PBP_FRAME_COPY_MAX ||
	    o->co_size > PBP_CODE_COPY_MAX)
		return 0;
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		if (ts[i] != PBP_OFF_NONE && !inside(ts[i], 8, o->ts_size))
			return 0;
	for (size_t i = 0; i < sizeof(fr) / sizeof(fr[0]); i++)
		if (!inside(fr[i], 8, o->fr_size))
			return 0;
	for (size_t i = 0; i < sizeof(co) / sizeof(co[0]); i++)
		if (!inside(co[i], 8, o->co_size))
			return 0;
	return inside(o->fr_owner, 1, o->fr_size) && inside(o->ob_type, 16, o->co_size) &&
	       inside(o->co_firstlineno, 4, o->co_size) &&
	       (o->co_version == PBP_OFF_NONE || inside(o->co_version, 4, o->co_size));
}

/* @t's slots as a table of @len bytes (zero past the layout), in @buf. */
static size_t put_table(uint8_t *buf, size_t len, const struct debug_table *t)
{
	memset(buf, 0, len);
	memcpy(buf, t->slots, t->nslots * sizeof(uint64_t));
	return t->nslots * sizeof(uint64_t);
}

static void set_slot(uint8_t *buf, unsigned int slot, uint64_t v)
{
	memcpy(buf + slot * sizeof(v), &v, sizeof(v));
}

static void test_builtin(void)
{
	struct py_offsets o, before;
	int ret;

	ret = py_offsets__builtin(HEX(3, 11, 2, FINAL, 0), &o);
	expect(ret == 0, "3.11.2 built in", ret);
	expect(o.version_hex == HEX(3, 11, 2, FINAL, 0), "3.11 version kept", o.version_hex);
	expect(o.tested == 1, "3.11 tested", o.tested);
	expect(o.ts_current_frame == PBP_OFF_NONE && o.ts_cframe != PBP_OFF_NONE,
	       "3.11 reaches frames through cframe", (long)o.ts_cframe);
	expect(o.owner_cstack == 0xff && o.owner_interpreter == 0xff,
	       "3.11 has no shim or base frames", o.owner_cstack);

	ret = py_offsets__builtin(HEX(3, 12, 7, FINAL, 0), &o);
	expect(ret == 0, "3.12.7 built in", ret);
	expect(o.tested == 1, "3.12 run live", o.tested);
	expect(o.owner_cstack == 3, "3.12 shim owner", o.owner_cstack);
	expect(o.ts_size <= 2048 && o.ts_datastack_limit + 8 <= o.ts_size,
	       "3.12 ts_size covers fields", (long)o.ts_size);
	expect(fits_readers(&o), "3.12 fits the readers' copies", (long)o.co_size);
	py_offsets__builtin(HEX(3, 11, 2, FINAL, 0), &o);
	expect(fits_readers(&o), "3.11 fits the readers' copies", (long)o.co_size);

	const uint32_t refused[] = {
		HEX(3, 10, 13, FINAL, 0), HEX(3, 11, 0, BETA, 1), HEX(3, 12, 0, RC, 3),
		HEX(3, 13, 0, FINAL, 0), HEX(3, 14, 2, FINAL, 0), HEX(3, 16, 0, FINAL, 0),
		HEX(2, 11, 0, FINAL, 0), 0, 0xffffffffu,
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(&o, 0x5a, sizeof(o));
		before = o;
		ret = py_offsets__builtin(refused[i], &o);
		expect(ret == -ENOTSUP, "builtin refuses", refused[i]);
		expect(!memcmp(&o, &before, sizeof(o)), "builtin leaves out alone", refused[i]);
	}
	expect(py_offsets__builtin(HEX(3, 11, 2, FINAL, 0), NULL) == -EINVAL, "NULL out", 0);
}

static void test_debug_refusals(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	struct py_offsets o;
	int ret;

	expect(py_offsets__from_debug(NULL, sizeof(buf), &o) == -EINVAL, "NULL buf", 0);
	make_table(buf, sizeof(buf), "xdebugpy", HEX(3, 14, 10, FINAL, 0));
	expect(py_offsets__from_debug(buf, sizeof(buf), NULL) == -EINVAL, "NULL out", 0);

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

/* The real tables are accepted, and fit the readers' copies. */
static void test_real_tables(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];

	for (size_t i = 0; i < DEBUG_TABLES; i++) {
		size_t len = put_table(buf, sizeof(buf), &debug_tables[i]);
		struct py_offsets o;
		int ret;

		ret = py_offsets__from_debug(at_guard(buf, len), len, &o);
		expect(ret == 0, "real table accepted", (long)debug_tables[i].slots[1]);
		if (ret)
			continue;
		expect(o.version_hex == debug_tables[i].slots[1], "real table's version",
		       (long)o.version_hex);
		expect(fits_readers(&o), "real table fits the readers' copies", (long)o.co_size);
	}
}

/*
 * Code-object and frame fields that lie inside the structs as the table sizes them but
 * outside what the readers copy (512 bytes of code object, 128 of frame header). The
 * first is a measured out-of-bounds read: a "3.13.0 final" table whose fields point
 * 3000 bytes into a code object made read_code() read past its 512-byte stack buffer.
 */
static void test_outside_copies(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	const struct {
		const char *what;
		unsigned int slot[4];
		uint64_t value[4];
	} cases[] = {
		{ "co_filename=3000 co_qualname=3016 co_code_adaptive=3900 ob_type=2000",
		  { SLOT_313_CO_FILENAME, SLOT_313_CO_QUALNAME, SLOT_313_CO_CODE_ADAPTIVE,
		    SLOT_313_OB_TYPE },
		  { 3000, 3016, 3900, 2000 } },
		{ "co_code_adaptive=600", { SLOT_313_CO_CODE_ADAPTIVE }, { 600 } },
		{ "ob_type=520", { SLOT_313_OB_TYPE, SLOT_313_CO_CODE_ADAPTIVE }, { 520, 600 } },
		{ "ob_size past co_size", { SLOT_313_OB_TYPE }, { 192 } },
		{ "co_qualname=508 co_code_adaptive=520", { SLOT_313_CO_QUALNAME,
		  SLOT_313_CO_CODE_ADAPTIVE }, { 508, 520 } },
		{ "frame header of 200 bytes", { SLOT_313_FR_LOCALSPLUS }, { 200 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = put_table(buf, sizeof(buf), &debug_tables[0]);
		int ret;

		set_slot(buf, 1, HEX(3, 13, 0, FINAL, 0));
		/* Structs large enough by the table's own account, so that only the
		 * readers' copies are too small. */
		set_slot(buf, SLOT_313_CODE_SIZE, 4096);
		set_slot(buf, SLOT_313_UNI_ASCII_SIZE, 4000);
		set_slot(buf, SLOT_313_FRAME_SIZE, 4096);
		ret = from_debug(at_guard(buf, len), len);
		expect(ret == 0, "3.13.0 table with room accepted", ret);
		for (size_t k = 0; k < 4 && cases[i].slot[k]; k++)
			set_slot(buf, cases[i].slot[k], cases[i].value[k]);
		ret = from_debug(at_guard(buf, len), len);
		if (ret != -EINVAL)
			printf("accepted: %s\n", cases[i].what);
		expect(ret == -EINVAL, "field outside the reader's copy refused", (long)i);
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
		ret = py_offsets__from_debug(at_guard(buf, len), len, &o);
		if (ret && ret != -EINVAL && ret != -ENOTSUP)
			badret++;
		if (ret)
			continue;
		accepted++;
		if (o.ts_size > 2048 || o.ts_current_frame + 8 > o.ts_size ||
		    o.ts_datastack_limit + 8 > o.ts_size || o.fr_owner >= o.fr_size ||
		    o.free_threaded > 1 || !fits_readers(&o))
			inconsistent++;
	}
	expect(badret == 0, "random tables: only -EINVAL/-ENOTSUP", badret);
	expect(inconsistent == 0, "random tables: accepted ones consistent", inconsistent);
	printf("random tables: %u of 200000 accepted\n", accepted);
}

/* A value for a mutated slot: near the old one, small, within a struct, or anything. */
static uint64_t mutate(uint64_t old)
{
	switch (rnd() % 5) {
	case 0:
		return old + rnd() % 33 - 16;
	case 1:
		return rnd() % 600;
	case 2:
		return rnd() % 4200;
	case 3:
		return UINT64_MAX - rnd() % 16;
	default:
		return rnd();
	}
}

/*
 * Real tables with one to four slots changed: close enough to pass most checks, so
 * that many are accepted, and every accepted one must still fit the readers.
 */
static void test_mutated(void)
{
	static uint8_t buf[PBP_DEBUG_OFFSETS_MAX];
	unsigned int accepted = 0, changed = 0, unfit = 0, badret = 0;

	for (int i = 0; i < 200000; i++) {
		const struct debug_table *t = &debug_tables[rnd() % DEBUG_TABLES];
		size_t len = put_table(buf, sizeof(buf), t);
		unsigned int n = 1 + rnd() % 4;
		struct py_offsets o;
		int ret;

		for (unsigned int k = 0; k < n; k++) {
			unsigned int slot = 2 + rnd() % (t->nslots - 2);

			set_slot(buf, slot, mutate(t->slots[slot]));
		}
		ret = py_offsets__from_debug(at_guard(buf, len), len, &o);
		if (ret && ret != -EINVAL && ret != -ENOTSUP)
			badret++;
		if (ret)
			continue;
		accepted++;
		changed += memcmp(buf, t->slots, len) != 0;
		if (!fits_readers(&o))
			unfit++;
	}
	expect(badret == 0, "mutated tables: only -EINVAL/-ENOTSUP", badret);
	expect(unfit == 0, "mutated tables: accepted ones fit the readers", unfit);
	/* Not vacuous: many mutations are harmless (unused slots, sizes) and pass. */
	expect(changed > 1000, "mutated tables: changed ones accepted", changed);
	printf("mutated tables: %u of 200000 accepted, %u of them changed\n", accepted, changed);
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
	test_real_tables();
	test_outside_copies();
	test_truncated();
	test_random();
	test_mutated();
	expect(touched == 0, "failed calls leave *out untouched", touched);

	printf("test_offsets: %u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
