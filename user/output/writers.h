/* SPDX-License-Identifier: GPL-2.0-only */
/* The output formats of `record -f`, and which one a file name implies. */
#ifndef PBP_WRITERS_H
#define PBP_WRITERS_H

#include <stdio.h>

#include "profile/profile.h"

struct writer {
	const char *name;	/* the -f value */
	const char *suffix;	/* of default output names; also implies the format */
	const char *also[3];	/* other suffixes that imply it */
	int timeline;		/* needs profile.timeline */
	int (*write)(FILE *f, const struct profile *p);
	int sources;		/* shows or keeps the source files' text (profile.sources) */
};

/* The writer called @name, or NULL. */
const struct writer *writers__find(const char *name);
/* The writer a file name implies by its suffix (in any case), or NULL. */
const struct writer *writers__for_path(const char *path);
/* Whether @path's last component has a suffix, known or not: letters after its last
 * '.', which does not start the name. "out.d/profile", "/dev/null" and "prof.1234"
 * have none. */
int writers__has_suffix(const char *path);
/* "collapsed, svg, ..." into @buf, for messages. */
void writers__names(char *buf, size_t len);
/* ".txt, .svg, ..." into @buf, for messages. */
void writers__suffixes(char *buf, size_t len);

#endif
