// SPDX-License-Identifier: GPL-2.0-only
/* Helper threads; see worker.h. */
#include <signal.h>

#include "agent/worker.h"

int worker__start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	/* The new thread inherits the mask: block first, so no signal lands in between. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}
