// SPDX-License-Identifier: GPL-2.0-only
/* Wait classes from wait frames' names; see wait_class.h. */
#include <string.h>

#include "profile/wait_class.h"

static const char *const names[WAIT_CLASSES] = {
	[WAIT_ON_CPU] = "on-CPU", [WAIT_RUNNABLE] = "runnable", [WAIT_STOLEN] = "stolen",
	[WAIT_GIL] = "GIL",
	[WAIT_LOCK] = "lock", [WAIT_IO] = "I/O", [WAIT_SLEEP] = "sleep",
	[WAIT_OTHER] = "other",
};

const char *wait_class__name(enum wait_class c)
{
	return c < WAIT_CLASSES ? names[c] : "?";
}

/* The names session/offcpu_class.c gives wait frames, and session.h's stolen leaf, by
 * what they start with. */
static const struct {
	const char *prefix;
	enum wait_class c;
} prefixes[] = {
	{ "[runnable", WAIT_RUNNABLE },
	{ "[stolen", WAIT_STOLEN },
	{ "[off-CPU: GIL", WAIT_GIL },
	{ "[off-CPU: lock", WAIT_LOCK },
	{ "[off-CPU: read", WAIT_IO },
	{ "[off-CPU: write", WAIT_IO },
	{ "[off-CPU: poll", WAIT_IO },
	{ "[off-CPU: accept", WAIT_IO },
	{ "[off-CPU: sleep", WAIT_SLEEP },
};

enum wait_class wait_class__of(const struct profile *p, const struct agg_stack *st)
{
	const char *name;

	for (uint32_t i = st->depth; i-- > 0;) {
		if (st->frames[i].kind != AGG_WAIT)
			continue;
		name = strtab__get(p->strs, st->frames[i].name);
		for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
			if (!strncmp(name, prefixes[k].prefix, strlen(prefixes[k].prefix)))
				return prefixes[k].c;
		return WAIT_OTHER;
	}
	return WAIT_ON_CPU;
}
