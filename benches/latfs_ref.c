/*
 * latfs_ref: a C reference of fsbench's lat_fs loops, for the fidelity benchmark.
 *
 * Same process model and system calls as fsbench's workers (src/workload/latfs):
 * one forked child per task, untimed setup in the task's directory (per-task
 * ids, quota references, the test file), one start barrier, an untimed warm-up
 * with a clock read per iteration, then a window timed with one clock read per
 * batch of iterations sized to about 100 us at the warm-up rate.
 *
 * usage: latfs_ref -t TEST [-U] [-L REFS] [-w] [-W WARMUP_MS] [-D WINDOW_MS] [-R REPS] DIR...
 *   one task per DIR; TEST is open_close, create_unlink, chown or write_truncate.
 * Prints one line per repetition:
 *   rep <r> total_loops <loops per ms summed over tasks> latency_us <mean over tasks>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum test { OPEN_CLOSE, CREATE_UNLINK, CHOWN, WRITE_TRUNCATE };

static const char *test_file = "test";
static const uint64_t batch_target_ns = 100000;

struct opts {
	enum test test;
	int per_task_uid;
	int quota_refs;
	int open_for_write;
	uint64_t warmup_ns;
	uint64_t window_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(int task, const char *what)
{
	fprintf(stderr, "latfs_ref: task %d: %s: %s\n", task, what, strerror(errno));
	_exit(1);
}

static void take_quota_refs(int task, int n, uid_t uid, gid_t gid)
{
	for (int i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof name, ".quota-ref-%u-%d", (unsigned)uid, i);
		int fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			die(task, "create quota reference");
		if (fchown(fd, uid, gid))
			die(task, "fchown quota reference");
		if (unlink(name))
			die(task, "unlink quota reference");
		/* the descriptor stays open until the child exits */
	}
}

/* State of one task's loop, set up before the barrier. */
struct body {
	enum test test;
	int flags;
	int fd;
	uid_t uid;
	gid_t gid;
	char buf[4096];
};

/* One iteration; returns 0, or -1 with errno set. Inlined into both loops. */
static inline __attribute__((always_inline)) int iteration(struct body *b)
{
	int fd;
	switch (b->test) {
	case OPEN_CLOSE:
		fd = open(test_file, b->flags);
		if (fd < 0)
			return -1;
		return close(fd);
	case CREATE_UNLINK:
		fd = open(test_file, b->flags, 0666);
		if (fd < 0)
			return -1;
		if (close(fd))
			return -1;
		return unlink(test_file);
	case CHOWN:
		if (fchown(b->fd, b->uid, b->gid))
			return -1;
		return fchown(b->fd, b->uid + 1, b->gid + 1);
	case WRITE_TRUNCATE:
		if (pwrite(b->fd, b->buf, 4096, 40960) != 4096)
			return -1;
		return ftruncate(b->fd, 8192);
	}
	return -1;
}

/* The test is a constant inside each instantiation, so the switch folds away. */
#define TIMED(T)                                                                   \
	static void timed_##T(struct body *b, const struct opts *o, int task,          \
			      uint64_t *iters, uint64_t *window)                        \
	{                                                                              \
		b->test = T;                                                           \
		uint64_t start = now_ns(), now, warm = 0;                              \
		for (;;) {                                                             \
			if (iteration(b))                                              \
				die(task, "warm-up iteration");                        \
			warm++;                                                        \
			now = now_ns();                                                \
			if (now - start >= o->warmup_ns)                               \
				break;                                                 \
		}                                                                      \
		uint64_t el = now - start ? now - start : 1;                           \
		uint64_t batch = warm * batch_target_ns / el;                          \
		if (batch < 1)                                                         \
			batch = 1;                                                     \
		if (batch > (1u << 20))                                                \
			batch = 1u << 20;                                              \
		uint64_t t0 = now, n = 0;                                              \
		for (;;) {                                                             \
			for (uint64_t i = 0; i < batch; i++)                           \
				if (iteration(b))                                      \
					die(task, "timed iteration");                  \
			n += batch;                                                    \
			uint64_t e = now_ns() - t0;                                    \
			if (e >= o->window_ns) {                                       \
				*iters = n;                                            \
				*window = e;                                           \
				return;                                                \
			}                                                              \
		}                                                                      \
	}
TIMED(OPEN_CLOSE)
TIMED(CREATE_UNLINK)
TIMED(CHOWN)
TIMED(WRITE_TRUNCATE)

static void child(int task, const char *dir, const struct opts *o, int ready_w, int start_r, int result_w)
{
	if (chdir(dir))
		die(task, "chdir");
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (o->per_task_uid) {
		uid = gid = ((uid_t)task << 3) + 100;
		if (o->test != CHOWN) {
			if (setegid(gid))
				die(task, "setegid");
			if (seteuid(uid))
				die(task, "seteuid");
		}
	}
	take_quota_refs(task, o->quota_refs, uid, gid);
	if (o->test == CHOWN)
		take_quota_refs(task, o->quota_refs, uid + 1, gid + 1);

	static struct body b;
	memset(&b, 0, sizeof b);
	b.uid = uid;
	b.gid = gid;
	b.fd = -1;
	int rw = o->open_for_write ? O_WRONLY : O_RDONLY;
	if (unlink(test_file) && errno != ENOENT)
		die(task, "remove stale test file");
	switch (o->test) {
	case OPEN_CLOSE: {
		int fd = open(test_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			die(task, "create test file");
		close(fd);
		b.flags = rw;
		break;
	}
	case CREATE_UNLINK:
		b.flags = rw | O_CREAT;
		break;
	case CHOWN:
	case WRITE_TRUNCATE:
		b.fd = open(test_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (b.fd < 0)
			die(task, "create test file");
		if (o->test == CHOWN && fchown(b.fd, uid, gid))
			die(task, "fchown test file");
		break;
	}

	char c = 'r';
	if (write(ready_w, &c, 1) != 1)
		die(task, "report ready");
	if (read(start_r, &c, 1) != 1)
		die(task, "wait for the start");

	uint64_t v[2];
	switch (o->test) {
	case OPEN_CLOSE: timed_OPEN_CLOSE(&b, o, task, &v[0], &v[1]); break;
	case CREATE_UNLINK: timed_CREATE_UNLINK(&b, o, task, &v[0], &v[1]); break;
	case CHOWN: timed_CHOWN(&b, o, task, &v[0], &v[1]); break;
	case WRITE_TRUNCATE: timed_WRITE_TRUNCATE(&b, o, task, &v[0], &v[1]); break;
	}
	if (b.fd >= 0)
		close(b.fd);
	if (write(result_w, v, sizeof v) != sizeof v)
		die(task, "report result");
	_exit(0);
}

static void usage(void)
{
	fprintf(stderr, "usage: latfs_ref -t TEST [-U] [-L REFS] [-w] [-W WARMUP_MS] [-D WINDOW_MS] [-R REPS] DIR...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .test = OPEN_CLOSE, .warmup_ns = 300000000ull, .window_ns = 1000000000ull };
	int reps = 1, opt, have_test = 0;
	while ((opt = getopt(argc, argv, "t:UL:wW:D:R:")) != -1) {
		switch (opt) {
		case 't':
			have_test = 1;
			if (!strcmp(optarg, "open_close")) o.test = OPEN_CLOSE;
			else if (!strcmp(optarg, "create_unlink")) o.test = CREATE_UNLINK;
			else if (!strcmp(optarg, "chown")) o.test = CHOWN;
			else if (!strcmp(optarg, "write_truncate")) o.test = WRITE_TRUNCATE;
			else usage();
			break;
		case 'U': o.per_task_uid = 1; break;
		case 'L': o.quota_refs = atoi(optarg); break;
		case 'w': o.open_for_write = 1; break;
		case 'W': o.warmup_ns = strtoull(optarg, NULL, 10) * 1000000ull; break;
		case 'D': o.window_ns = strtoull(optarg, NULL, 10) * 1000000ull; break;
		case 'R': reps = atoi(optarg); break;
		default: usage();
		}
	}
	int ntask = argc - optind;
	if (!have_test || ntask < 1 || reps < 1)
		usage();

	for (int r = 0; r < reps; r++) {
		int ready[2], start[2], result[2];
		if (pipe(ready) || pipe(start) || pipe(result)) {
			perror("latfs_ref: pipe");
			return 1;
		}
		pid_t *pids = calloc(ntask, sizeof *pids);
		for (int t = 0; t < ntask; t++) {
			pids[t] = fork();
			if (pids[t] < 0) {
				perror("latfs_ref: fork");
				return 1;
			}
			if (pids[t] == 0) {
				close(ready[0]);
				close(start[1]);
				close(result[0]);
				child(t, argv[optind + t], &o, ready[1], start[0], result[1]);
			}
		}
		close(ready[1]);
		close(start[0]);
		close(result[1]);
		char c;
		for (int t = 0; t < ntask; t++)
			if (read(ready[0], &c, 1) != 1) {
				fprintf(stderr, "latfs_ref: a task failed during setup\n");
				for (int k = 0; k < ntask; k++)
					kill(pids[k], SIGKILL);
				while (wait(NULL) > 0)
					;
				return 1;
			}
		/* The barrier: one byte per child on the shared start pipe. */
		char *go = calloc(ntask, 1);
		if (write(start[1], go, ntask) != ntask) {
			perror("latfs_ref: release");
			return 1;
		}
		double total = 0, latency = 0;
		int failed = 0;
		for (int t = 0; t < ntask; t++) {
			uint64_t v[2];
			if (read(result[0], v, sizeof v) != sizeof v) {
				failed = 1;
				break;
			}
			total += (double)v[0] / ((double)v[1] / 1e6);
			latency += (double)v[1] / 1e3 / (double)v[0];
		}
		int status;
		while (wait(&status) > 0)
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				failed = 1;
		if (failed) {
			fprintf(stderr, "latfs_ref: a task failed\n");
			return 1;
		}
		printf("rep %d total_loops %.4f latency_us %.4f\n", r, total, latency / ntask);
		fflush(stdout);
		close(ready[0]);
		close(start[1]);
		close(result[0]);
		free(pids);
		free(go);
	}
	return 0;
}
