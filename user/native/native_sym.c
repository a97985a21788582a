// SPDX-License-Identifier: GPL-2.0-only
/*
 * Symbolisation of native PCs through libdwfl, with a cache; see native_sym.h. The
 * cache is keyed by what identifies the code, not the process: the object's build-id
 * and the address as the object's vaddr, so that libc's frames in 200 processes are
 * named once. An object without a build-id (rare: every Debian object and most
 * wheels have one) is named without the cache: no key would tell it apart from
 * another file at the same address in a process seen before; with DWARF it pays a
 * line lookup (native_line.c) per frame.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/hashmap.h"
#include "native/native_demangle.h"
#include "native/native_ehhdr.h"
#include "native/native_line.h"
#include "native/native_sym.h"
#include "base/strtab.h"
#include "base/vec.h"

#define NO_STRING UINT32_MAX

struct sym_key {
	uint8_t id[NATIVE_BUILD_ID_MAX]; /* the object's build-id */
	uint8_t id_len;
	uint64_t rel;
};

struct sym_entry {
	struct sym_key key;
	uint32_t module, function, source; /* strtab ids; the last two NO_STRING if none */
	int32_t line, func_line;
	uint64_t offset;
	uint64_t func_rel;
};

struct native_sym {
	struct sym_entry *e;
	size_t n, cap;
	struct hashmap index;
	struct strtab *strs;
	size_t max_bytes;
	struct native_sym_stats st;
	struct native_demangle demangle;
	int keep_mangled;	/* native_sym__keep_mangled() */
	char scratch[3][1024]; /* module, function, source of an uncached answer */
};

static uint64_t key_hash(const struct sym_key *k)
{
	return hash_bytes(k->id, k->id_len) ^ hash_u64(k->rel);
}

static uint64_t entry_hash(uint32_t idx, const void *ctx)
{
	const struct native_sym *c = ctx;

	return key_hash(&c->e[idx].key);
}

static bool entry_equal(uint32_t idx, const void *key, const void *ctx)
{
	const struct native_sym *c = ctx;
	const struct sym_key *a = &c->e[idx].key, *b = key;

	return a->rel == b->rel && a->id_len == b->id_len && !memcmp(a->id, b->id, a->id_len);
}

int native_sym__new(size_t max_bytes, struct native_sym **out)
{
	struct native_sym *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->strs = strtab__new();
	if (!c->strs) {
		free(c);
		return -ENOMEM;
	}
	c->max_bytes = max_bytes;
	*out = c;
	return 0;
}

void native_sym__keep_mangled(struct native_sym *c)
{
	c->keep_mangled = 1;
}

void native_sym__free(struct native_sym *c)
{
	if (!c)
		return;
	hashmap__free(&c->index);
	strtab__free(c->strs);
	native_demangle__close(&c->demangle);
	free(c->e);
	free(c);
}

static size_t sym_bytes(const struct native_sym *c)
{
	return c->cap * sizeof(*c->e) + hashmap__bytes(&c->index) + strtab__bytes(c->strs);
}

void native_sym__stats(const struct native_sym *c, struct native_sym_stats *st)
{
	*st = c->st;
	st->demangle_given_up = c->demangle.given_up;
	st->bytes = sym_bytes(c);
}

/* What the entries in use cost: their slot in the array, two hash slots (the index
 * is kept at most half full) and their strings. Capacity is left out on purpose: the
 * array and index keep theirs when emptied, and counting it would empty the cache
 * at every miss once they had grown to the budget. */
static size_t used_bytes(const struct native_sym *c)
{
	return c->n * (sizeof(*c->e) + 2 * sizeof(uint32_t)) + strtab__bytes(c->strs);
}

/* Empties the cache once it holds its budget: names are cheap to find again from
 * libdwfl's own tables, and a cache emptied now and then is bounded without the
 * bookkeeping of an LRU. */
static int make_room(struct native_sym *c)
{
	struct strtab *fresh;

	if (used_bytes(c) < c->max_bytes)
		return 0;
	fresh = strtab__new();
	if (!fresh)
		return -ENOMEM;
	c->st.evictions += c->n;
	strtab__free(c->strs);
	c->strs = fresh;
	c->n = 0;
	hashmap__clear(&c->index);
	return 0;
}

static void fill(const struct native_sym *c, const struct sym_entry *e, struct native_symbol *out)
{
	out->module = strtab__get(c->strs, e->module);
	out->function = e->function == NO_STRING ? NULL : strtab__get(c->strs, e->function);
	out->offset = e->offset;
	out->rel = e->key.rel;
	out->func_rel = e->func_rel;
	out->source = e->source == NO_STRING ? NULL : strtab__get(c->strs, e->source);
	out->line = e->line;
	out->func_line = e->func_line;
}

/* The .eh_frame_hdr section of @elf: its bytes and vaddr. Through the section table
 * (strip keeps it), whose data libelf caches per section. */
static int ehhdr_of(Elf *elf, const uint8_t **bytes, size_t *len, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, nscn = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn)) && nscn++ < 65536) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return -ENOENT;
		*bytes = d->d_buf;
		*len = d->d_size;
		*vaddr = sh.sh_addr;
		return 0;
	}
	return -ENOENT;
}

/* Where the function around @addr (@rel in the object) starts, from CFI: only where an
 * FDE covers it (else the nearest start in the table is another function's); 0 if
 * unknown. */
static uint64_t cfi_func_start(Dwfl_Module *mod, uint64_t addr, uint64_t rel)
{
	const uint8_t *hdr;
	Dwarf_Frame *frame;
	Dwarf_Addr cbias, b;
	Dwarf_CFI *cfi;
	uint64_t hdr_vaddr, start;
	size_t len;
	Elf *elf;

	cfi = dwfl_module_eh_cfi(mod, &cbias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - cbias, &frame))
		return 0;
	free(frame);
	elf = dwfl_module_getelf(mod, &b);
	if (!elf || ehhdr_of(elf, &hdr, &len, &hdr_vaddr) ||
	    native_ehhdr__find(hdr, len, hdr_vaddr, rel, &start) || start > rel)
		return 0;
	return start;
}

/* What libdwfl and libdw say of one address, before it is cached or copied. The strings
 * are libdwfl's, valid while the module lives, but @demangled, which is malloc'd. */
struct answer {
	const char *function;	/* NULL: no symbol */
	size_t function_len;	/* without a symbol version */
	char *demangled;	/* the C++ name of @function, NULL if not one */
	uint64_t offset, func_rel;
	struct native_line src;	/* src.file NULL: no line info */
};

/* @function's C++ name into a->demangled, if it is one. 0 or -ENOMEM. */
static int demangle(struct native_sym *c, struct answer *a)
{
	char *plain;
	int err;

	if (c->keep_mangled || a->function_len < 2 || strncmp(a->function, "_Z", 2))
		return 0;	/* not mangled: no copy needed to find out */
	plain = strndup(a->function, a->function_len);
	if (!plain)
		return -ENOMEM;
	err = native_demangle__name(&c->demangle, plain, &a->demangled);
	free(plain);
	return err == -ENOMEM ? err : 0;
}

static int ask(struct native_sym *c, Dwfl_Module *mod, uint64_t addr, uint64_t rel,
	       struct answer *a)
{
	GElf_Addr off = 0;
	GElf_Sym sym;
	const char *name;

	*a = (struct answer){ 0 };
	name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (!name || !*name) {
		a->func_rel = cfi_func_start(mod, addr, rel);
		return 0;
	}
	/* A versioned definition's .symtab name carries its version
	 * ("__libc_start_main@@GLIBC_2.34"); no C or mangled C++ name has an '@'. */
	a->function = name;
	a->function_len = strcspn(name, "@") ? strcspn(name, "@") : strlen(name);
	a->offset = off;
	a->func_rel = rel - off;
	/* No line info is the common case (Debian's objects without their -dbgsym). */
	native_line__find(mod, addr, &a->src);
	return demangle(c, a);
}

static int64_t intern(struct strtab *t, const char *s)
{
	return strtab__intern(t, s, strlen(s));
}

/* @a in the scratch buffers, for an object that cannot be cached. */
static void answer_uncached(struct native_sym *c, const char *modname, const struct answer *a,
			    uint64_t rel, struct native_symbol *out)
{
	snprintf(c->scratch[0], sizeof(c->scratch[0]), "%s", modname);
	out->module = c->scratch[0];
	out->rel = rel;
	out->func_rel = a->func_rel;
	if (!a->function)
		return;
	if (a->demangled)
		snprintf(c->scratch[1], sizeof(c->scratch[1]), "%s", a->demangled);
	else
		snprintf(c->scratch[1], sizeof(c->scratch[1]), "%.*s", (int)a->function_len,
			 a->function);
	out->function = c->scratch[1];
	out->offset = a->offset;
	if (!a->src.file)
		return;
	snprintf(c->scratch[2], sizeof(c->scratch[2]), "%s", a->src.file);
	out->source = c->scratch[2];
	out->line = a->src.line;
	out->func_line = a->src.func_line;
}

/* @a as a cache entry's strings and numbers. 0 or -ENOMEM. */
static int entry_of(struct native_sym *c, const char *modname, const struct answer *a,
		    struct sym_entry *ent)
{
	int64_t id;

	ent->function = ent->source = NO_STRING;
	ent->func_rel = a->func_rel;
	id = intern(c->strs, modname);
	if (id < 0)
		return (int)id;
	ent->module = (uint32_t)id;
	if (!a->function)
		return 0;
	id = a->demangled ? intern(c->strs, a->demangled) :
			    strtab__intern(c->strs, a->function, a->function_len);
	if (id < 0)
		return (int)id;
	ent->function = (uint32_t)id;
	ent->offset = a->offset;
	if (!a->src.file)
		return 0;
	id = intern(c->strs, a->src.file);
	if (id < 0)
		return (int)id;
	ent->source = (uint32_t)id;
	ent->line = a->src.line;
	ent->func_line = a->src.func_line;
	return 0;
}

int native_sym__lookup(struct native_sym *c, const struct native_unwind *u, uint64_t addr,
		       struct native_symbol *out)
{
	Dwfl *dwfl = native_unwind__dwfl(u);
	Dwfl_Module *mod = dwfl ? dwfl_addrmodule(dwfl, addr) : NULL;
	const unsigned char *bits;
	struct sym_key key = { 0 };
	struct sym_entry ent = { 0 };
	struct answer a = { 0 };
	const char *modname;
	Dwarf_Addr bias;
	GElf_Addr vaddr;
	uint32_t idx;
	size_t slot;
	int len, err;

	memset(out, 0, sizeof(*out));
	out->module = "[unknown]";
	if (!mod || !dwfl_module_getelf(mod, &bias)) {
		c->st.unknown++;
		return -ENOENT;
	}
	modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!modname || !*modname)
		modname = "[unknown]";
	key.rel = addr - bias;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len <= 0 || len > NATIVE_BUILD_ID_MAX) {
		c->st.uncached++;
		err = ask(c, mod, addr, key.rel, &a);
		if (!err)
			answer_uncached(c, modname, &a, key.rel, out);
		goto cleanup;
	}
	memcpy(key.id, bits, (size_t)len);
	key.id_len = (uint8_t)len;
	if (c->n && !hashmap__find(&c->index, key_hash(&key), entry_equal, &key, c, &idx)) {
		c->st.hits++;
		fill(c, &c->e[idx], out);
		return 0;
	}
	c->st.misses++;
	err = make_room(c);
	if (!err)
		err = ask(c, mod, addr, key.rel, &a);
	if (err)
		goto cleanup;
	ent.key = key;
	err = entry_of(c, modname, &a, &ent);
	if (!err)
		err = vec__reserve((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e), 64);
	if (!err)
		err = hashmap__grow(&c->index, 128, entry_hash, c);
	if (err)
		goto cleanup;
	c->e[c->n] = ent;
	slot = hashmap__probe(&c->index, key_hash(&key), entry_equal, &key, c);
	hashmap__set(&c->index, slot, (uint32_t)c->n);
	c->n++;
	fill(c, &ent, out);
cleanup:
	free(a.demangled);
	return err;
}

int native_sym__format(const struct native_symbol *s, char *buf, size_t len)
{
	if (s->function)
		return snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", s->function, s->offset,
				s->module);
	return snprintf(buf, len, "%s+0x%" PRIx64, s->module, s->func_rel ? s->func_rel : s->rel);
}
