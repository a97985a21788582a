/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Whose code a Python frame runs, judged by its file name alone: the user's own, the
 * standard library, or an installed third-party package. Writers colour frames by it.
 */
#ifndef PBP_FRAME_CLASS_H
#define PBP_FRAME_CLASS_H

enum frame_class {
	FRAME_USER,		/* anything not recognised below: the user's code, <string> */
	FRAME_STDLIB,		/* <frozen ...>, .../lib/pythonX.Y/... */
	FRAME_THIRD_PARTY,	/* .../site-packages/..., .../dist-packages/... */
	FRAME_OTHER,		/* not a Python frame: process, thread, marker (file NULL) */
	FRAME_WAIT,		/* off the CPU: why a thread waited (AGG_WAIT; by kind, not file) */
	FRAME_TASK,		/* an asyncio task (AGG_TASK; by kind) */
	FRAME_NATIVE,		/* C code (AGG_NATIVE, --native; by kind) */
};

/* The class of a frame whose co_filename is @file; NULL means not a Python frame. */
enum frame_class frame_class__of(const char *file);

#endif
