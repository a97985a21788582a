// SPDX-License-Identifier: GPL-2.0-only
/*
 * user/sample/thread_hold.c on a real process: a thread that runs is held (State: t) and let
 * go (runs on); one in an uninterruptible wait (a vfork's parent) is not waited for,
 * stays seized, blocks further holds, and once its wait ends is let go at a poll and
 * runs on rather than staying stopped.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sample/thread_hold.h"

#define CHECK(c)                                                                  \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,    \
				__LINE__, #c);                                    \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

#define VFORK_CHILD_S 2

static int report_fd;

static void say(char what, pid_t tid)
{
	char msg[16];
	int n = snprintf(msg, sizeof(msg), "%c%d\n", what, (int)tid);

	CHECK(write(report_fd, msg, (size_t)n) == n);
}

static void *spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	say('s', (pid_t)syscall(SYS_gettid));
	for (;;)
		n++;
	return NULL;
}

/* The target: one thread spinning, the main thread waiting on a vfork child. */
static void target(void)
{
	struct timespec ts = { .tv_sec = VFORK_CHILD_S };
	pthread_t th;
	pid_t child;

	CHECK(!pthread_create(&th, NULL, spin, NULL));
	say('m', getpid());
	child = vfork();
	if (child == 0) {
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 0);
	}
	CHECK(child > 0);
	waitpid(child, NULL, 0);
	say('r', getpid());	/* ran on after the wait */
	for (;;)
		pause();
}

static char state_of(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static void nap_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Waits up to @ms for @tid's state to be (@is) or not be (!@is) @want. */
static int state_within(pid_t pid, pid_t tid, char want, int is, long ms)
{
	for (long i = 0; i < ms; i++) {
		char s = state_of(pid, tid);

		if ((s == want) == is)
			return 1;
		nap_ms(1);
	}
	return 0;
}

static pid_t read_report(FILE *f, char what)
{
	char c;
	int tid;

	CHECK(fscanf(f, " %c%d", &c, &tid) == 2);
	CHECK(c == what);
	return (pid_t)tid;
}

int main(void)
{
	struct thread_hold h = { 0 };
	int fds[2];
	pid_t pid, spinner, main_tid;
	FILE *reports;
	uint64_t t0;

	CHECK(!pipe(fds));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		report_fd = fds[1];
		target();
	}
	close(fds[1]);
	reports = fdopen(fds[0], "r");
	CHECK(reports);
	/* The spinner reports first or second: take both in either order. */
	{
		char c1, c2;
		int t1, t2;

		CHECK(fscanf(reports, " %c%d %c%d", &c1, &t1, &c2, &t2) == 4);
		CHECK((c1 == 's' && c2 == 'm') || (c1 == 'm' && c2 == 's'));
		spinner = (pid_t)(c1 == 's' ? t1 : t2);
		main_tid = (pid_t)(c1 == 'm' ? t1 : t2);
	}

	/* A running thread: held, stopped, let go, runs on. Given a loaded machine's
	 * time to stop, not the sampler's 10 ms: what is tested is the hold. */
	CHECK(thread_hold__take(&h, spinner, 5000 * 1000000ull) == 0);
	CHECK(state_of(pid, spinner) == 't');
	thread_hold__let_go(&h);
	CHECK(state_within(pid, spinner, 't', 0, 1000));
	CHECK(h.state == THREAD_HOLD_NONE && h.taken == 1);

	/* A thread in an uninterruptible wait: not waited for, kept seized. */
	CHECK(state_within(pid, main_tid, 'D', 1, 1000));
	t0 = clock__mono_ns();
	CHECK(thread_hold__take(&h, main_tid, 20 * 1000000ull) == -EINPROGRESS);
	CHECK(clock__mono_ns() - t0 < 1000000000ull);
	CHECK(h.state == THREAD_HOLD_LATE && h.late == 1);
	CHECK(thread_hold__poll(&h) == 1);
	/* ... and no other hold meanwhile. */
	CHECK(thread_hold__take(&h, spinner, THREAD_HOLD_WAIT_NS) == -EBUSY);
	/* Once the wait ends it stops, is let go at a poll, and runs on. */
	for (int i = 0; i < 10 * 1000 && thread_hold__poll(&h); i++)
		nap_ms(1);
	CHECK(h.state == THREAD_HOLD_NONE);
	CHECK(read_report(reports, 'r') == main_tid);
	CHECK(state_within(pid, main_tid, 't', 0, 1000));
	CHECK(state_within(pid, spinner, 't', 0, 1000));

	/* A thread that is gone. */
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, NULL, __WALL) == pid);
	CHECK(thread_hold__take(&h, spinner, THREAD_HOLD_WAIT_NS) == -ESRCH);
	fclose(reports);
	printf("thread_hold: ok\n");
	return 0;
}
