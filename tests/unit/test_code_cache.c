// SPDX-License-Identifier: GPL-2.0-only
/*
 * The code cache's byte budgets and the string table's rebuild, against code objects
 * laid out in a fake target memory: entries with big line tables stay within a cache's
 * own budget and the session's, a hot entry survives the eviction of cold ones, what
 * is freed is given back, a rebuilt string table keeps exactly the names the
 * caches hold, and a successor still being built at a freed object's address, which
 * bears the old version under its own name, is not taken for it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decode/code_cache.h"
#include "base/strtab.h"

#define BASE 0x10000000ull
#define OBJ_BYTES (80u * 1024)	/* one code object, its names and its line table */
#define NOBJ 64
#define LINETABLE 65536u
#define CODE_TYPE 0xc0de0000ull

static uint8_t *memory;

static int fake_read(struct mem_source *m, uint64_t addr, void *dst, size_t len)
{
	(void)m;
	if (addr < BASE || addr + len > BASE + (uint64_t)NOBJ * OBJ_BYTES)
		return -14;	/* -EFAULT */
	memcpy(dst, memory + (addr - BASE), len);
	return 0;
}

static const struct mem_ops fake_ops = { .read = fake_read };
static struct mem_source fake = { .ops = &fake_ops };

/* A layout of our own: what the cache reads, where it reads it. */
static struct py_offsets off;

static void set_offsets(void)
{
	memset(&off, 0xff, sizeof(off));
	off.ob_type = 8;
	off.co_filename = 24;
	off.co_name = 32;
	off.co_qualname = 40;
	off.co_firstlineno = 48;
	off.co_linetable = 56;
	off.co_version = 64;
	off.co_size = 128;
	off.unicode_length = 16;
	off.unicode_state = 32;
	off.unicode_ascii_data = 48;
	off.unicode_compact_data = 56;
	off.unicode_kind_shift = 2;
	off.unicode_compact_bit = 5;
	off.unicode_ascii_bit = 6;
	off.bytes_size = 16;
	off.bytes_sval = 32;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(memory + (addr - BASE), &v, 8);
}

/* A stand-in for the str's cached hash: only equality matters. */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static void put_str(uint64_t addr, const char *s)
{
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6;	/* kind 1, compact, ascii */

	put64(addr, 1);
	put64(addr + off.unicode_length, strlen(s));
	put64(addr + off.unicode_length + 8, str_hash(s));
	memcpy(memory + (addr - BASE) + off.unicode_state, &state, 4);
	memcpy(memory + (addr - BASE) + off.unicode_ascii_data, s, strlen(s));
}

static uint64_t code_addr(int i)
{
	return BASE + (uint64_t)i * OBJ_BYTES;
}

/* What BPF reads for code object @i (PBP_FP_U32_HASH): its version and the low half
 * of its qualname's hash. */
static uint64_t code_fp(uint32_t version, const char *qualname)
{
	return version | str_hash(qualname) << 32;
}

static uint64_t fp_of(int i)
{
	char name[32];

	snprintf(name, sizeof(name), "func_%d", i);
	return code_fp(i + 1, name);
}

/* Code object @i: "func_I" in "file_I.py", version i + 1, a 64 KiB line table. */
static void make_code(int i)
{
	uint64_t a = code_addr(i), qual = a + 256, file = a + 512, lt = a + 1024;
	char name[32];
	int32_t first = 10 + i;
	uint32_t version = i + 1;

	put64(a, 1);
	put64(a + off.ob_type, CODE_TYPE);
	put64(a + off.ob_type + 8, 100);	/* code units */
	put64(a + off.co_qualname, qual);
	put64(a + off.co_filename, file);
	memcpy(memory + (a - BASE) + off.co_firstlineno, &first, 4);
	put64(a + off.co_linetable, lt);
	memcpy(memory + (a - BASE) + off.co_version, &version, 4);
	snprintf(name, sizeof(name), "func_%d", i);
	put_str(qual, name);
	snprintf(name, sizeof(name), "file_%d.py", i);
	put_str(file, name);
	put64(lt, 1);
	put64(lt + off.bytes_size, LINETABLE);
}

static struct code_cache *new_cache(struct strtab *strs, struct code_budget *b)
{
	struct code_cache_cfg cfg = {
		.off = &off, .code_type = CODE_TYPE, .live = &fake, .strs = strs,
		.max_entries = 16384, .budget = b,
	};
	struct code_cache *c;

	CHECK(code_cache__new(&cfg, &c) == 0);
	return c;
}

static const struct code_info *get(struct code_cache *c, int i)
{
	const struct code_info *ci;

	CHECK(code_cache__get(c, NULL, code_addr(i), fp_of(i), &ci) == 0);
	CHECK(ci->linetable_len == LINETABLE);
	CHECK(ci->firstlineno == 10 + i);
	return ci;
}

static void check_name(struct strtab *strs, const struct code_info *ci, int i)
{
	char name[32];

	snprintf(name, sizeof(name), "func_%d", i);
	CHECK(!strcmp(strtab__get(strs, ci->qualname), name));
	snprintf(name, sizeof(name), "file_%d.py", i);
	CHECK(!strcmp(strtab__get(strs, ci->filename), name));
}

/* A cache's own budget: far more line tables than fit, the hot one stays. */
static void own_budget(void)
{
	struct code_budget b = { .per_cache = 1u << 20 };
	struct strtab *strs = strtab__new();
	struct code_cache *c = new_cache(strs, &b);
	uint64_t misses;

	get(c, 0);
	for (int i = 1; i < NOBJ; i++) {
		get(c, i);
		CHECK(b.bytes <= b.per_cache);
		/* The hot entry, looked up between every two new ones, stays cached. */
		misses = code_cache__stats(c)->misses;
		check_name(strs, get(c, 0), 0);
		CHECK(code_cache__stats(c)->misses == misses);
	}
	CHECK(code_cache__stats(c)->evictions >= NOBJ - 16);
	CHECK(b.entries < 16);
	CHECK(b.bytes > (b.entries * (size_t)LINETABLE));
	code_cache__free(c);
	CHECK(b.bytes == 0 && b.entries == 0 && !b.caches);
	strtab__free(strs);
}

/* The session's budget over two caches: the larger one gives way. */
static void shared_budget(void)
{
	struct code_budget b = { .total = 1u << 20 };
	struct strtab *strs = strtab__new();
	struct code_cache *a = new_cache(strs, &b), *z = new_cache(strs, &b);

	for (int i = 0; i < 12; i++)
		get(a, i);
	CHECK(b.bytes <= b.total);
	for (int i = 12; i < 18; i++) {
		get(z, i);
		CHECK(b.bytes <= b.total);
	}
	CHECK(code_cache__stats(a)->evictions > 0);
	CHECK(code_cache__stats(z)->evictions == 0);
	code_cache__free(a);
	code_cache__free(z);
	CHECK(b.bytes == 0 && b.entries == 0 && !b.caches);
	strtab__free(strs);
}

/* A rebuilt string table keeps what the cache holds, under the same names, and
 * nothing else. */
static void rebuild(void)
{
	struct code_budget b = { 0 };
	struct strtab *strs = strtab__new();
	struct code_cache *c;
	struct strtab_remap map;
	char junk[64];
	size_t before;

	for (int i = 0; i < 5000; i++) {
		snprintf(junk, sizeof(junk), "process %d gone long ago, with a long name", i);
		CHECK(strtab__intern(strs, junk, strlen(junk)) >= 0);
	}
	c = new_cache(strs, &b);
	for (int i = 0; i < 8; i++)
		get(c, i);
	before = strtab__bytes(strs);
	CHECK(strtab_remap__init(&map, strs) == 0);
	code_cache__remap_strings(c, &map);
	strtab_remap__finish(&map);
	CHECK(strtab__count(strs) == 16);
	CHECK(strtab__bytes(strs) < before / 10);
	for (int i = 0; i < 8; i++)
		check_name(strs, get(c, i), i);	/* hits, named through the new ids */
	CHECK(code_cache__stats(c)->misses == 8);
	/* The table still interns, and finds what it kept. */
	CHECK(strtab__intern(strs, "func_3", 6) == (int64_t)get(c, 3)->qualname);
	CHECK(strtab__intern(strs, "new", 3) == 16);
	code_cache__free(c);
	strtab__free(strs);
}

/*
 * The last code object is sampled, then freed, and a successor built in its memory:
 * its constructor has stored the new names but not yet the new version, so the old
 * version lingers. The sampled fingerprint must not name the successor.
 */
static void successor_under_construction(void)
{
	struct code_budget b = { 0 };
	struct strtab *strs = strtab__new();
	struct code_cache *c = new_cache(strs, &b);
	uint64_t a = code_addr(NOBJ - 1), name = a + 256, file = a + 512;
	uint32_t version = 9999;
	const struct code_info *ci;

	put_str(name, "successor");
	put_str(file, "successor.py");
	CHECK(code_cache__get(c, NULL, a, fp_of(NOBJ - 1), &ci) == -ESTALE);
	CHECK(code_cache__stats(c)->stale == 1);
	/* Once the successor is whole, its own fingerprint names it. */
	memcpy(memory + (a - BASE) + off.co_version, &version, 4);
	CHECK(code_cache__get(c, NULL, a, code_fp(version, "successor"), &ci) == 0);
	CHECK(!strcmp(strtab__get(strs, ci->qualname), "successor"));
	CHECK(!strcmp(strtab__get(strs, ci->filename), "successor.py"));
	code_cache__free(c);
	strtab__free(strs);
	make_code(NOBJ - 1);
}

int main(void)
{
	memory = calloc(NOBJ, OBJ_BYTES);
	CHECK(memory);
	set_offsets();
	for (int i = 0; i < NOBJ; i++)
		make_code(i);
	own_budget();
	shared_budget();
	rebuild();
	successor_under_construction();
	free(memory);
	printf("ok\n");
	return 0;
}
