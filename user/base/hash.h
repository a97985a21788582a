/* SPDX-License-Identifier: GPL-2.0-only */
/* Small non-cryptographic hashes for the in-memory tables. */
#ifndef PBP_HASH_H
#define PBP_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a: tables are keyed by short strings and id arrays; speed over quality. */
static inline uint64_t hash_bytes(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Finaliser of splitmix64: spreads addresses whose low bits are always zero. */
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
