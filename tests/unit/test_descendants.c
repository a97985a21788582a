// SPDX-License-Identifier: GPL-2.0-only
/*
 * descendants: the watch set under churn. Thousands of PIDs that do not exist (as
 * after an exec storm of short-lived programs) are watched among a few live ones
 * (children of this test, sleeping); a step forgets the gone ones and keeps the live
 * ones, a PID watched twice is watched once, and looks for an interpreter are spread
 * out by the budget instead of all made at once. Exits non-zero on the first mismatch.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "session/descendants.h"

#define LIVE 8
#define GONE 5000

static unsigned adopt_calls;


static int known(pid_t pid, void *arg)
{
	(void)pid;
	(void)arg;
	return 0;
}

static int adopt(pid_t pid, void *arg)
{
	(void)pid;
	(void)arg;
	adopt_calls++;
	return 0;	/* never Python */
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (!pid) {
		pause();
		_exit(0);
	}
	return pid;
}

int main(void)
{
	struct descendants *d = descendants__new(known, adopt, NULL, 0);
	pid_t live[LIVE];
	uint64_t looks, deferred;
	struct timespec ms = { 0, 1000000 };
	double t0;

	if (!d)
		return 1;
	for (int i = 0; i < LIVE; i++)
		live[i] = sleeper();
	/* PIDs above pid_max cannot exist: they are found gone at the first look. */
	for (int i = 0; i < GONE; i++) {
		CHECK_MSG(!descendants__watch(d, 5000000 + i * 7), "watch gone %d", i);
		if (i % 625 == 0)
			CHECK_MSG(!descendants__watch(d, live[i / 625]), "watch live %d", i / 625);
	}
	for (int i = 0; i < LIVE; i++)
		CHECK_MSG(!descendants__watch(d, live[i]), "watch live %d again", i);
	CHECK_MSG(descendants__pending(d) == GONE + LIVE, "pending before a step: %zu",
	      descendants__pending(d));
	/* A program not named python is first looked at after 50 ms: step until all
	 * are due (bounded; a slow machine only takes more turns). */
	for (int i = 0; i < 5000 && descendants__pending(d) > LIVE; i++) {
		nanosleep(&ms, NULL);
		CHECK_MSG(!descendants__step(d), "step");
	}
	CHECK_MSG(descendants__pending(d) == LIVE, "pending after the gone were seen: %zu "
	      "(want %d live)", descendants__pending(d), LIVE);
	/* Watched again, and gone ones again: still each live one once. */
	for (int i = 0; i < LIVE; i++)
		CHECK_MSG(!descendants__watch(d, live[i]), "rewatch %d", i);
	for (int i = 0; i < 100; i++)
		CHECK_MSG(!descendants__watch(d, 6000000 + i), "watch gone again %d", i);
	for (int i = 0; i < 5000 && descendants__pending(d) > LIVE; i++) {
		nanosleep(&ms, NULL);
		CHECK_MSG(!descendants__step(d), "second step");
	}
	CHECK_MSG(descendants__pending(d) == LIVE, "pending after rewatch: %zu",
	      descendants__pending(d));
	/* The live ones are sleepers, not named python: looked at 50 ms after they
	 * were first watched, then 250 ms later, then at most once a second. */
	t0 = now_s();
	for (int i = 0; i < 300; i++) {
		nanosleep(&ms, NULL);
		CHECK_MSG(!descendants__step(d), "step %d", i);
	}
	descendants__counts(d, &looks, &deferred);
	CHECK_MSG(adopt_calls >= LIVE && adopt_calls <= LIVE * (3 + (now_s() - t0 + 1)),
	      "%u looks at %d live processes in %.1f s", adopt_calls, LIVE, now_s() - t0);
	for (int i = 0; i < LIVE; i++) {
		kill(live[i], SIGKILL);
		waitpid(live[i], NULL, 0);
	}
	for (int i = 0; i < 5000 && descendants__pending(d); i++) {
		nanosleep(&ms, NULL);
		CHECK_MSG(!descendants__step(d), "last steps");
	}
	CHECK_MSG(descendants__pending(d) == 0, "pending after the sleepers died: %zu",
	      descendants__pending(d));
	descendants__free(d);
	if (check_failures)
		return 1;
	printf("descendants: ok (%llu looks, %llu put off)\n", (unsigned long long)looks,
	       (unsigned long long)deferred);
	return 0;
}
