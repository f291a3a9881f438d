/* GPU work in a worker process (runtime/worker.h): the caller's side (start, send a plan,
 * wait with a time limit, restart after a failure) and the worker's loop.
 *
 * Wire format (a socket pair; both ends are the same build, so structs go as they are):
 *   frame  = u32 magic, u32 type, u64 payload bytes, payload
 *   HELLO  (worker)  i32 ok; ok: tinyc_device_info; else diagnostics
 *   RUN    (caller)  i32 nbuf, i32 nkernel, u64 shared bytes; nbuf tinyc_wbuf; per kernel
 *                    tinyc_wkernel (pointers zero), nparam tinyc_wparam, u64 image bytes,
 *                    i32 is_cubin, the image; a new memfd rides along (SCM_RIGHTS) when
 *                    the shared memory was made or grown since the worker last saw it
 *   DONE   (worker)  i32 rc, i32 poisoned, diagnostics
 *   diagnostics = u32 count, per error: u32 bytes + kind, u32 bytes + message
 * Shared memory: a header (the kernel the worker is in, for the caller's reports), then the
 * inputs' and outputs' bytes at the offsets of the plan.  It is kept between runs (grown
 * when a run needs more), so its pages are touched once, not at every run.
 */
#define _GNU_SOURCE	/* memfd_create */
#include "runtime/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAGIC 0x4b575654u		/* "TVWK" */
#define FRAME_HELLO 1
#define FRAME_RUN 2
#define FRAME_DONE 3
#define SHM_HEADER 64			/* bytes before the first buffer */
#define WORKER_FD 3			/* the socket's number in the worker */
#define START_LIMIT_S 60.0		/* the worker's start-up (driver and context) */
#define STOP_GRACE_MS 5000		/* an idle worker's time to exit before it is killed */
#define NO_KERNEL 0xffffffffu		/* shared header: no kernel started yet */
#define SHM_GRAIN ((uint64_t)1 << 20)	/* shared memory grows in MiB steps */

/* The header of a frame. */
typedef struct frame {
	uint32_t magic;		/* MAGIC */
	uint32_t type;		/* FRAME_* */
	uint64_t len;		/* payload bytes */
} frame;

/* The shared memory's header. */
typedef struct shm_header {
	uint32_t kernel;	/* the launch the worker is in (NO_KERNEL before the first) */
} shm_header;

struct tinyc_worker {
	char *exe;		/* the worker executable (owned) */
	int fake;		/* run it with --fake */
	pid_t pid;		/* the process, 0 when none runs */
	int fd;			/* our end of the socket, -1 when none */
	tinyc_device_info dev;	/* what HELLO said */
	int mfd;		/* the shared memory's memfd, -1 when none */
	unsigned char *shm;	/* its mapping here (NULL when none) */
	uint64_t shm_bytes;	/* its size */
	int shm_sent;		/* the worker has this memfd mapped */
};

/* ------------------------------------------------------------------ wire ---- */

/* Send (out) or receive n bytes on a socket, whole (no SIGPIPE when the peer is gone).  0,
 * or -1 on an error or at the end of the stream. */
static int xfer_all(int fd, void *data, size_t n, int out)
{
	char *p = data;
	while (n) {
		ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k, n -= (size_t)k;
	}
	return 0;
}

static int send_all(int fd, const void *data, size_t n)
{
	return xfer_all(fd, (void *)data, n, 1);
}

static int recv_all(int fd, void *data, size_t n)
{
	return xfer_all(fd, data, n, 0);
}

/* A frame header as a socket message, with room for one passed descriptor. */
typedef struct wire_msg {
	frame h;		/* the header */
	struct iovec iov;	/* pointing at h */
	struct msghdr m;	/* the message */
	union {
		struct cmsghdr c;
		char bytes[CMSG_SPACE(sizeof(int))];
	} ctl;			/* the descriptor's control message */
} wire_msg;

/* Point w's message at its header and its control space. */
static void wire_msg_init(wire_msg *w)
{
	memset(w, 0, sizeof(*w));
	w->iov.iov_base = &w->h;
	w->iov.iov_len = sizeof(w->h);
	w->m.msg_iov = &w->iov;
	w->m.msg_iovlen = 1;
	w->m.msg_control = w->ctl.bytes;
	w->m.msg_controllen = sizeof(w->ctl.bytes);
}

/* Send one frame, with file descriptor pass_fd (>= 0) attached. */
static int send_frame(int fd, uint32_t type, const void *payload, size_t len, int pass_fd)
{
	wire_msg w;
	wire_msg_init(&w);
	w.h = (frame){MAGIC, type, len};
	if (pass_fd >= 0) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&w.m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	} else {
		w.m.msg_control = NULL;
		w.m.msg_controllen = 0;
	}
	ssize_t k;
	do
		k = sendmsg(fd, &w.m, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -1;
	if ((size_t)k < sizeof(w.h) && send_all(fd, (char *)&w.h + k, sizeof(w.h) - (size_t)k) < 0)
		return -1;
	return send_all(fd, payload, len);
}

/* Receive one frame: its type, its payload (malloc'd, NUL-terminated) and a passed file
 * descriptor (-1 when none).  0, or -1 at the end of the stream or on a bad frame. */
static int recv_frame(int fd, uint32_t *type, char **payload, uint64_t *len, int *passed)
{
	wire_msg w;
	wire_msg_init(&w);
	frame *h = &w.h;
	struct msghdr *m = &w.m;
	*payload = NULL;
	*passed = -1;
	ssize_t k;
	do
		k = recvmsg(fd, m, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(passed, CMSG_DATA(c), sizeof(int));
	if (((size_t)k < sizeof(*h) && recv_all(fd, (char *)h + k, sizeof(*h) - (size_t)k) < 0) ||
	    h->magic != MAGIC || h->len > ((uint64_t)1 << 40))
		goto bad;
	if (!(*payload = malloc(h->len + 1)) || recv_all(fd, *payload, h->len) < 0)
		goto bad;
	(*payload)[h->len] = 0;
	*type = h->type;
	*len = h->len;
	return 0;
bad:
	free(*payload);
	*payload = NULL;
	if (*passed >= 0)
		close(*passed);
	*passed = -1;
	return -1;
}

/* Append the error diagnostics of ctx to b (the wire's diagnostics). */
static void put_diags(tinyc_buf *b, const tinyc_ctx *ctx)
{
	uint32_t n = 0;
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		n += tinyc_ctx_diag(ctx, i)->severity == TINYC_ERROR;
	tinyc_buf_append(b, &n, sizeof(n));
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++) {
		const tinyc_diag *d = tinyc_ctx_diag(ctx, i);
		if (d->severity != TINYC_ERROR)
			continue;
		const char *parts[2] = {d->kind ? d->kind : "Error", d->msg ? d->msg : ""};
		for (int j = 0; j < 2; j++) {
			uint32_t len = (uint32_t)strlen(parts[j]);
			tinyc_buf_append(b, &len, sizeof(len));
			tinyc_buf_append(b, parts[j], len);
		}
	}
}

/* A cursor over a received payload. */
typedef struct reader {
	const char *p;		/* next byte */
	const char *end;	/* one past the last */
} reader;

/* Take n bytes into out; -1 when the payload is short. */
static int take(reader *r, void *out, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	memcpy(out, r->p, n);
	r->p += n;
	return 0;
}

/* Report the wire's diagnostics on ctx, `suffix` appended to the last one.  Returns how many
 * there were (-1 for a short payload). */
static int get_diags(tinyc_ctx *ctx, reader *r, const char *suffix)
{
	uint32_t n;
	if (take(r, &n, sizeof(n)) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len[2];
		const char *s[2];
		for (int j = 0; j < 2; j++) {
			if (take(r, &len[j], sizeof(len[j])) < 0 || (size_t)(r->end - r->p) < len[j])
				return -1;
			s[j] = r->p;
			r->p += len[j];
		}
		char kind[64];
		snprintf(kind, sizeof(kind), "%.*s", (int)len[0], s[0]);
		tinyc_error(ctx, kind, "%.*s%s", (int)len[1], s[1], i + 1 == n ? suffix : "");
	}
	return (int)n;
}

/* ---------------------------------------------------------------- caller ---- */

tinyc_worker *tinyc_worker_new(const char *exe, int fake)
{
	tinyc_worker *w = calloc(1, sizeof(*w));
	if (!w || !(w->exe = strdup(exe))) {
		free(w);
		return NULL;
	}
	w->fake = fake;
	w->fd = -1;
	w->mfd = -1;
	return w;
}

/* Milliseconds on the monotonic clock. */
static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Wait for the worker to exit, at most grace_ms (then kill it); its wait status, or -1 when
 * it cannot be known (SIGCHLD ignored by the application). */
static int reap(tinyc_worker *w, int grace_ms)
{
	int st = -1;
	double t0 = now_ms();
	for (;;) {
		pid_t r = waitpid(w->pid, &st, WNOHANG);
		if (r == w->pid || (r < 0 && errno != EINTR))
			break;
		if (now_ms() - t0 >= grace_ms) {
			kill(w->pid, SIGKILL);
			while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
				;
			break;
		}
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->pid = 0;
	return st;
}

/* Kill the worker now (a hang, a broken stream) and reap it. */
static int kill_worker(tinyc_worker *w)
{
	kill(w->pid, SIGKILL);
	return reap(w, STOP_GRACE_MS);
}

void tinyc_worker_free(tinyc_worker *w)
{
	if (!w)
		return;
	if (w->pid) {
		close(w->fd);	/* the end of the stream: an idle worker exits */
		w->fd = -1;
		reap(w, STOP_GRACE_MS);
	}
	if (w->shm)
		munmap(w->shm, w->shm_bytes);
	if (w->mfd >= 0)
		close(w->mfd);
	free(w->exe);
	free(w);
}

int tinyc_worker_pid(const tinyc_worker *w)
{
	return w ? (int)w->pid : 0;
}

/* How the worker ended, in words ("was killed by signal 9 (Killed)", "exited with status 1"). */
static void describe_exit(int st, char *out, size_t size)
{
	if (st != -1 && WIFSIGNALED(st))
		snprintf(out, size, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (st != -1 && WIFEXITED(st))
		snprintf(out, size, "exited with status %d", WEXITSTATUS(st));
	else
		snprintf(out, size, "ended");
}

/* Wait until fd is readable or the deadline (ms on the monotonic clock; 0: none) passes.
 * 1 readable (or closed), 0 timed out. */
static int wait_readable(int fd, double deadline)
{
	for (;;) {
		int ms = -1;
		if (deadline > 0) {
			double left = deadline - now_ms();
			if (left <= 0)
				return 0;
			ms = left > 1e9 ? 1000000000 : (int)left + 1;
		}
		struct pollfd p = {fd, POLLIN, 0};
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1;	/* let the read report it */
	}
}

/* Start the worker process and read its HELLO.  0, or -1 with a diagnostic. */
static int start(tinyc_ctx *ctx, tinyc_worker *w, double timeout_s)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return tinyc_error(ctx, "GpuWorkerError", "cannot create the GPU worker's socket: %s",
				   strerror(errno));
	if (sv[1] == WORKER_FD) {	/* dup2 onto itself would keep close-on-exec */
		int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, WORKER_FD + 1);
		close(sv[1]);
		sv[1] = moved;
	}
	char *argv[] = {w->exe, "--fd", "3", w->fake ? "--fake" : NULL, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	sigemptyset(&none);
	int err = sv[1] < 0 ? errno : posix_spawn_file_actions_init(&fa);
	if (!err && (err = posix_spawnattr_init(&at)) != 0)
		posix_spawn_file_actions_destroy(&fa);
	if (!err) {	/* the socket as fd 3; no signal blocked (the caller's thread may block some) */
		err = posix_spawn_file_actions_adddup2(&fa, sv[1], WORKER_FD);
		if (!err)
			err = posix_spawnattr_setsigmask(&at, &none);
		if (!err)
			err = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
		if (!err)
			err = posix_spawn(&w->pid, w->exe, &fa, &at, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
	}
	if (sv[1] >= 0)
		close(sv[1]);
	if (err) {
		close(sv[0]);
		w->pid = 0;
		return tinyc_error(ctx, "GpuWorkerError", "cannot start the GPU worker '%s': %s",
				   w->exe, strerror(err));
	}
	w->fd = sv[0];
	w->shm_sent = 0;	/* a new worker maps the shared memory afresh */
	double limit = timeout_s > START_LIMIT_S ? timeout_s : START_LIMIT_S;
	uint32_t type = 0;
	uint64_t len = 0;
	char *msg = NULL;
	int passed = -1, ok = 0;
	if (!wait_readable(w->fd, now_ms() + limit * 1e3)) {
		kill_worker(w);
		return tinyc_error(ctx, "GpuTimeout", "the GPU worker did not start within %g s", limit);
	}
	if (recv_frame(w->fd, &type, &msg, &len, &passed) < 0 || type != FRAME_HELLO) {
		char how[96];
		describe_exit(reap(w, STOP_GRACE_MS), how, sizeof(how));
		free(msg);
		return tinyc_error(ctx, "GpuWorkerError", "the GPU worker '%s' %s before it reported "
				   "its device", w->exe, how);
	}
	reader r = {msg, msg + len};
	int32_t good = 0;
	if (take(&r, &good, sizeof(good)) == 0 && good)
		ok = take(&r, &w->dev, sizeof(w->dev)) == 0;
	else if (get_diags(ctx, &r, "") <= 0)
		tinyc_error(ctx, "GpuWorkerError", "the GPU worker sent a bad report");
	free(msg);
	if (!ok) {
		reap(w, STOP_GRACE_MS);	/* it exits after a failed HELLO */
		return -1;
	}
	return 0;
}

const tinyc_device_info *tinyc_worker_device(tinyc_ctx *ctx, tinyc_worker *w)
{
	if (!w->pid && start(ctx, w, 0) < 0)
		return NULL;
	return &w->dev;
}

/* The plan as a RUN payload into b; the buffers' shared-memory offsets are assigned here and
 * *shm_bytes receives the size of the shared memory. */
static void put_plan(tinyc_buf *b, const tinyc_wplan *p, uint64_t *shm_bytes)
{
	uint64_t off = SHM_HEADER;
	int32_t n[2] = {p->nbuf, p->nkernel};
	tinyc_buf_append(b, n, sizeof(n));
	size_t at = b->len;
	tinyc_buf_append(b, &off, sizeof(off));	/* the size, known below */
	for (int i = 0; i < p->nbuf; i++) {
		tinyc_wbuf wb = p->bufs[i];
		wb.shm_off = 0;
		if (wb.role != TINYC_WB_TEMP) {
			wb.shm_off = off;
			off += (wb.io_bytes + 63) & ~(uint64_t)63;
		}
		tinyc_buf_append(b, &wb, sizeof(wb));
	}
	for (int i = 0; i < p->nkernel; i++) {
		tinyc_wkernel k = p->kernels[i];
		k.params = NULL;
		k.image = NULL;
		tinyc_buf_append(b, &k, sizeof(k));
		tinyc_buf_append(b, p->kernels[i].params, (size_t)k.nparam * sizeof(tinyc_wparam));
		uint64_t size = p->kernels[i].image->size;
		int32_t cubin = p->kernels[i].image->is_cubin;
		tinyc_buf_append(b, &size, sizeof(size));
		tinyc_buf_append(b, &cubin, sizeof(cubin));
		tinyc_buf_append(b, p->kernels[i].image->data, size);
	}
	if (!b->oom)
		memcpy(b->data + at, &off, sizeof(off));
	*shm_bytes = off;
}

/* Report a worker that is gone (died or killed) while running plan: with the kernel it was
 * in, from the shared header. */
static int gone(tinyc_ctx *ctx, tinyc_worker *w, const tinyc_wplan *plan, const shm_header *h,
		int timed_out, double timeout_s)
{
	uint32_t k = __atomic_load_n(&h->kernel, __ATOMIC_ACQUIRE);
	char where[200] = "before its first kernel";
	if (k != NO_KERNEL && (int)k < plan->nkernel)
		snprintf(where, sizeof(where), "in kernel '%s'", plan->kernels[k].name);
	if (timed_out) {
		kill_worker(w);
		if (k != NO_KERNEL && (int)k < plan->nkernel)
			return tinyc_error(ctx, "GpuTimeout", "kernel '%s' did not finish within %g s (the "
					   "GPU worker was restarted)", plan->kernels[k].name, timeout_s);
		return tinyc_error(ctx, "GpuTimeout", "the GPU run did not finish within %g s, %s (the "
				   "GPU worker was restarted)", timeout_s, where);
	}
	char how[96];
	describe_exit(reap(w, STOP_GRACE_MS), how, sizeof(how));
	return tinyc_error(ctx, "GpuWorkerError", "the GPU worker %s %s (the GPU worker was "
			   "restarted)", how, where);
}

/* Make the shared memory at least `need` bytes (a new memfd when it grows).  0, or -1 with
 * a diagnostic. */
static int ensure_shm(tinyc_ctx *ctx, tinyc_worker *w, uint64_t need)
{
	if (w->shm && w->shm_bytes >= need)
		return 0;
	if (w->shm)
		munmap(w->shm, w->shm_bytes);
	if (w->mfd >= 0)
		close(w->mfd);
	w->shm = NULL;
	w->shm_bytes = 0;
	w->shm_sent = 0;
	uint64_t size = (need + SHM_GRAIN - 1) / SHM_GRAIN * SHM_GRAIN;
	void *m = MAP_FAILED;
	if ((w->mfd = memfd_create("tinyc-gpu-io", MFD_CLOEXEC)) < 0 ||
	    ftruncate(w->mfd, (off_t)size) < 0 ||
	    (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, w->mfd, 0)) == MAP_FAILED) {
		int e = errno;
		if (w->mfd >= 0)
			close(w->mfd);
		w->mfd = -1;
		return tinyc_error(ctx, e == ENOMEM || e == ENOSPC ? "OutOfMemory" : "GpuWorkerError",
				   "cannot share %llu bytes with the GPU worker: %s",
				   (unsigned long long)size, strerror(e));
	}
	w->shm = m;
	w->shm_bytes = size;
	return 0;
}

int tinyc_worker_run(tinyc_ctx *ctx, tinyc_worker *w, const tinyc_wplan *plan,
		     const void *const *in, void *const *out, double timeout_s)
{
	int st;
	if (w->pid && waitpid(w->pid, &st, WNOHANG) == w->pid) {
		close(w->fd);	/* it ended while idle (killed from outside): no run lost */
		w->fd = -1;
		w->pid = 0;
	}
	if (!w->pid && start(ctx, w, timeout_s) < 0)
		return -1;
	tinyc_buf msg = {0};
	uint64_t need = 0;
	int rc = -1;
	put_plan(&msg, plan, &need);
	if (msg.oom) {
		tinyc_buf_free(&msg);
		return tinyc_error(ctx, "OutOfMemory", "the GPU worker's request");
	}
	if (ensure_shm(ctx, w, need) < 0)
		goto done;
	/* the request says the mapping's size (the worker maps all of it) */
	memcpy(msg.data + 2 * sizeof(int32_t), &w->shm_bytes, sizeof(w->shm_bytes));
	shm_header *h = (shm_header *)w->shm;
	h->kernel = NO_KERNEL;
	const tinyc_wbuf *wb = (const tinyc_wbuf *)(msg.data + 2 * sizeof(int32_t) + sizeof(uint64_t));
	for (int i = 0; i < plan->nbuf; i++)
		if (wb[i].role == TINYC_WB_INPUT && wb[i].io_bytes)
			memcpy(w->shm + wb[i].shm_off, in[i], wb[i].io_bytes);
	double deadline = timeout_s > 0 ? now_ms() + timeout_s * 1e3 : 0;
	if (send_frame(w->fd, FRAME_RUN, msg.data, msg.len, w->shm_sent ? -1 : w->mfd) < 0) {
		gone(ctx, w, plan, h, 0, timeout_s);
		goto done;
	}
	w->shm_sent = 1;
	uint32_t type = 0;
	uint64_t len = 0;
	char *reply = NULL;
	int passed = -1;
	if (!wait_readable(w->fd, deadline)) {
		gone(ctx, w, plan, h, 1, timeout_s);
		goto done;
	}
	if (recv_frame(w->fd, &type, &reply, &len, &passed) < 0 || type != FRAME_DONE) {
		free(reply);
		gone(ctx, w, plan, h, 0, timeout_s);
		goto done;
	}
	if (passed >= 0)
		close(passed);
	reader r = {reply, reply + len};
	int32_t res[2] = {-1, 0};	/* rc, poisoned */
	if (take(&r, res, sizeof(res)) < 0 ||
	    (res[0] < 0 && get_diags(ctx, &r, res[1] ? " (the GPU worker was restarted)" : "") <= 0))
		tinyc_error(ctx, "GpuWorkerError", "the GPU worker sent a bad reply");
	free(reply);
	if (res[1])
		reap(w, STOP_GRACE_MS);	/* a poisoned worker exits by itself */
	if (res[0] < 0)
		goto done;
	for (int i = 0; i < plan->nbuf; i++)
		if (wb[i].role == TINYC_WB_OUTPUT && wb[i].io_bytes)
			memcpy(out[i], w->shm + wb[i].shm_off, wb[i].io_bytes);
	rc = 0;
done:
	tinyc_buf_free(&msg);
	return rc;
}

/* ---------------------------------------------------------------- worker ---- */

/* The worker's device: CUDA, or the fake one (host memory, named host kernels). */
typedef struct device {
	tinyc_ctx *ctx;		/* diagnostics of the current run */
	tinyc_cuda *cu;		/* the CUDA device; NULL: fake */
	int fake_pending;	/* fake: a fault reported at the next synchronisation */
	int fake_faulted;	/* fake: the context is poisoned */
	unsigned char *shm;	/* the caller's shared memory, mapped (NULL until sent) */
	uint64_t shm_bytes;	/* its size */
} device;

/* A loaded kernel: CUDA's, or the fake op's name. */
typedef struct loaded {
	tinyc_kernel *k;	/* CUDA: the kernel (owned) */
	const char *op;		/* fake: the op, one of TINYC_WORKER_FAKE_OPS */
} loaded;

static int dev_faulted(const device *d)
{
	return d->cu ? tinyc_cuda_faulted(d->cu) : d->fake_faulted;
}

static int dev_alloc(device *d, uint64_t bytes, tinyc_devptr *p)
{
	if (d->cu)
		return tinyc_cuda_alloc(d->cu, bytes, p);
	void *m = calloc(1, bytes);
	*p = (tinyc_devptr)(uintptr_t)m;
	return m ? 0 : tinyc_error(d->ctx, "OutOfMemory", "fake device: %llu bytes",
				   (unsigned long long)bytes);
}

static void dev_free(device *d, tinyc_devptr p)
{
	if (d->cu)
		tinyc_cuda_free(d->cu, p);
	else
		free((void *)(uintptr_t)p);
}

static int dev_upload(device *d, tinyc_devptr dst, const void *src, uint64_t n)
{
	if (d->cu)
		return tinyc_cuda_upload(d->cu, dst, src, n);
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

static int dev_download(device *d, void *dst, tinyc_devptr src, uint64_t n)
{
	if (d->cu)
		return tinyc_cuda_download(d->cu, dst, src, n);
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}

static int dev_zero(device *d, tinyc_devptr p, uint64_t n)
{
	if (d->cu)
		return tinyc_cuda_memset8(d->cu, p, 0, n);
	memset((void *)(uintptr_t)p, 0, n);
	return 0;
}

/* Load kernel k's image: a CUDA module, or a fake op ("fake:OP"). */
static int dev_load(device *d, const tinyc_wkernel *k, const tinyc_blob *img, loaded *out)
{
	if (d->cu) {
		if (!(out->k = tinyc_cuda_kernel_load(d->cu, img, k->name)))
			return -1;
		tinyc_kernel_set_pdl(out->k, k->pdl);
		return 0;
	}
	static const char *const ops[] = {"fma", "fault", "crash", "hang"};
	for (int i = 0; i < 4; i++)
		if (img->size == 5 + strlen(ops[i]) && !memcmp(img->data, "fake:", 5) &&
		    !memcmp(img->data + 5, ops[i], img->size - 5))
			out->op = ops[i];
	return out->op ? 0 : tinyc_error(d->ctx, "CudaError", "fake device: kernel '%s' has no "
					 "fake op (one of: %s)", k->name, TINYC_WORKER_FAKE_OPS);
}

static void dev_unload(device *d, loaded *l)
{
	if (d->cu)
		tinyc_kernel_free(l->k);
}

/* Launch kernel k with its arguments (args: kernelParams; dptr: the buffers). */
static int dev_launch(device *d, const tinyc_wkernel *k, const tinyc_wparam *params, loaded *l,
		      void **args, const tinyc_devptr *dptr)
{
	if (d->cu) {
		tinyc_dim3 g = {k->grid[0], k->grid[1], k->grid[2]};
		tinyc_dim3 b = {k->block[0], k->block[1], k->block[2]};
		return tinyc_cuda_launch(d->cu, l->k, g, b, k->smem, args);
	}
	if (!strcmp(l->op, "crash"))
		raise(SIGKILL);
	if (!strcmp(l->op, "hang"))
		for (;;)
			pause();
	if (!strcmp(l->op, "fault")) {
		d->fake_pending = 1;
		return 0;
	}
	/* fma: y = x * w + x over n floats */
	if (k->nparam != 4 || params[0].kind != TINYC_WP_PTR || params[1].kind != TINYC_WP_PTR ||
	    params[2].kind != TINYC_WP_PTR || params[3].kind != TINYC_WP_I64)
		return tinyc_error(d->ctx, "LaunchError", "fake kernel '%s': fma takes x, w, y, n", k->name);
	const float *x = (const float *)(uintptr_t)dptr[params[0].buf];
	const float *wt = (const float *)(uintptr_t)dptr[params[1].buf];
	float *y = (float *)(uintptr_t)dptr[params[2].buf];
	for (int64_t i = 0; i < params[3].val; i++)
		y[i] = x[i] * wt[i] + x[i];
	return 0;
}

/* Wait for kernel `name` to finish; a fault is reported with its name. */
static int dev_sync(device *d, const char *name)
{
	if (d->cu)
		return tinyc_cuda_sync_kernel(d->cu, name);
	if (!d->fake_pending)
		return 0;
	d->fake_pending = 0;
	d->fake_faulted = 1;
	return tinyc_error(d->ctx, "CudaError", "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS: "
			   "an illegal memory access was encountered (fake device) in kernel '%s'", name);
}

/* A RUN payload decoded: the plan, its kernels' images (pointing into the payload). */
typedef struct run_req {
	tinyc_wplan plan;	/* buffers, kernels and their params (owned arrays) */
	tinyc_blob *images;	/* per kernel (data borrowed from the payload) */
	uint64_t shm_bytes;	/* size of the shared memory */
} run_req;

static void run_req_clear(run_req *q)
{
	for (int i = 0; q->plan.kernels && i < q->plan.nkernel; i++)
		free(q->plan.kernels[i].params);
	free(q->plan.bufs);
	free(q->plan.kernels);
	free(q->images);
}

/* Decode a RUN payload (the images point into it).  0 or -1. */
static int get_plan(reader *r, run_req *q)
{
	int32_t n[2];
	if (take(r, n, sizeof(n)) < 0 || take(r, &q->shm_bytes, sizeof(q->shm_bytes)) < 0 ||
	    n[0] < 0 || n[1] < 0 || n[0] > (1 << 20) || n[1] > (1 << 20))
		return -1;
	q->plan.nbuf = n[0];
	q->plan.nkernel = n[1];
	q->plan.bufs = calloc((size_t)n[0] + 1, sizeof(tinyc_wbuf));
	q->plan.kernels = calloc((size_t)n[1] + 1, sizeof(tinyc_wkernel));
	q->images = calloc((size_t)n[1] + 1, sizeof(tinyc_blob));
	if (!q->plan.bufs || !q->plan.kernels || !q->images ||
	    take(r, q->plan.bufs, (size_t)n[0] * sizeof(tinyc_wbuf)) < 0)
		return -1;
	for (int i = 0; i < n[0]; i++) {
		const tinyc_wbuf *b = &q->plan.bufs[i];
		if (b->role != TINYC_WB_TEMP && (b->shm_off > q->shm_bytes || b->io_bytes > b->bytes ||
						 b->io_bytes > q->shm_bytes - b->shm_off))
			return -1;
	}
	for (int i = 0; i < n[1]; i++) {
		tinyc_wkernel *k = &q->plan.kernels[i];
		uint64_t size;
		int32_t cubin;
		if (take(r, k, sizeof(*k)) < 0)
			return -1;
		k->params = NULL;
		if (k->nparam < 0 || k->nparam > 4096)
			return -1;
		k->name[sizeof(k->name) - 1] = 0;
		k->image = NULL;
		if (!(k->params = calloc((size_t)k->nparam + 1, sizeof(tinyc_wparam))) ||
		    take(r, k->params, (size_t)k->nparam * sizeof(tinyc_wparam)) < 0)
			return -1;	/* (copied: the payload has no alignment) */
		for (int p = 0; p < k->nparam; p++)
			if ((k->params[p].kind == TINYC_WP_PTR || k->params[p].kind == TINYC_WP_TMAP) &&
			    (k->params[p].buf < 0 || k->params[p].buf >= n[0]))
				return -1;
		if (take(r, &size, sizeof(size)) < 0 || take(r, &cubin, sizeof(cubin)) < 0 ||
		    (uint64_t)(r->end - r->p) < size)
			return -1;
		q->images[i].data = (unsigned char *)r->p;
		q->images[i].size = size;
		q->images[i].is_cubin = cubin;
		k->image = &q->images[i];
		r->p += size;
	}
	return 0;
}

/* A CUtensorMap's storage. */
typedef struct map_storage {
	_Alignas(64) unsigned char bytes[128];	/* the opaque map */
} map_storage;

/* Build kernel k's kernelParams (into args, over the storage given) for the buffers dptr. */
static int build_args(device *d, const tinyc_wkernel *k, const tinyc_devptr *dptr, void **args,
		      int32_t *v32, int64_t *v64, map_storage *maps)
{
	for (int p = 0; p < k->nparam; p++) {
		const tinyc_wparam *w = &k->params[p];
		if (w->kind == TINYC_WP_PTR) {
			args[p] = (void *)&dptr[w->buf];
		} else if (w->kind == TINYC_WP_I32) {
			v32[p] = (int32_t)w->val;
			args[p] = &v32[p];
		} else if (w->kind == TINYC_WP_I64) {
			v64[p] = w->val;
			args[p] = &v64[p];
		} else if (!d->cu) {
			return tinyc_error(d->ctx, "LaunchError", "fake device: kernel '%s' takes a tensor map",
					   k->name);
		} else {
			const tinyc_wtmap *t = &w->tmap;
			if (tinyc_cuda_tensor_map(d->cu, maps[p].bytes, (tinyc_tmap_elem)t->elem, t->rank,
						  dptr[w->buf] + t->offset_bytes, t->dims, t->strides,
						  t->box, t->swizzle) < 0)
				return -1;
			args[p] = maps[p].bytes;
		}
	}
	return 0;
}

/* Run kernel i of the plan: its arguments, the launch, the synchronisation. */
static int run_kernel(device *d, const tinyc_wkernel *k, loaded *l, const tinyc_devptr *dptr)
{
	size_t n = (size_t)k->nparam + 1;
	void **args = calloc(n, sizeof(void *));
	int32_t *v32 = calloc(n, sizeof(int32_t));
	int64_t *v64 = calloc(n, sizeof(int64_t));
	map_storage *maps = aligned_alloc(64, n * sizeof(map_storage));
	int rc = -1;
	if (!args || !v32 || !v64 || !maps)
		tinyc_error(d->ctx, "OutOfMemory", "kernel arguments");
	else if (build_args(d, k, dptr, args, v32, v64, maps) == 0 &&
		 dev_launch(d, k, k->params, l, args, dptr) == 0)
		rc = dev_sync(d, k->name);
	free(args), free(v32), free(v64), free(maps);
	return rc;
}

/* Execute a plan with the shared memory shm: buffers, uploads, kernels, downloads. */
static int execute(device *d, const run_req *q, unsigned char *shm)
{
	const tinyc_wplan *p = &q->plan;
	shm_header *h = (shm_header *)shm;
	int64_t need = 0;
	for (int i = 0; i < p->nbuf; i++)
		if (__builtin_add_overflow(need, (int64_t)p->bufs[i].bytes, &need))
			need = INT64_MAX;
	if (d->cu && tinyc_cuda_memory_check(d->ctx, d->cu, "running on the GPU (inputs, outputs "
					     "and intermediates)", need) < 0)
		return -1;
	int rc = -1;
	tinyc_devptr *dptr = calloc((size_t)p->nbuf + 1, sizeof(*dptr));
	loaded *ls = calloc((size_t)p->nkernel + 1, sizeof(*ls));
	if (!dptr || !ls) {
		tinyc_error(d->ctx, "OutOfMemory", "the plan's buffers");
		goto done;
	}
	for (int i = 0; i < p->nbuf; i++) {
		const tinyc_wbuf *b = &p->bufs[i];
		if (dev_alloc(d, b->bytes ? b->bytes : 1, &dptr[i]) < 0)
			goto done;
		if (b->role == TINYC_WB_INPUT ? dev_upload(d, dptr[i], shm + b->shm_off, b->io_bytes)
					      : dev_zero(d, dptr[i], b->bytes))
			goto done;
	}
	for (int i = 0; i < p->nkernel; i++)
		if (dev_load(d, &p->kernels[i], p->kernels[i].image, &ls[i]) < 0)
			goto done;
	for (int i = 0; i < p->nkernel; i++) {
		__atomic_store_n(&h->kernel, (uint32_t)i, __ATOMIC_RELEASE);
		if (run_kernel(d, &p->kernels[i], &ls[i], dptr) < 0)
			goto done;
	}
	for (int i = 0; i < p->nbuf; i++)
		if (p->bufs[i].role == TINYC_WB_OUTPUT &&
		    dev_download(d, shm + p->bufs[i].shm_off, dptr[i], p->bufs[i].io_bytes) < 0)
			goto done;
	rc = 0;
done:
	if (!dev_faulted(d)) {	/* a faulted context is left to the process's exit */
		for (int i = 0; ls && i < p->nkernel; i++)
			dev_unload(d, &ls[i]);
		for (int i = 0; dptr && i < p->nbuf; i++)
			if (dptr[i])
				dev_free(d, dptr[i]);
	} else if (!d->cu) {
		for (int i = 0; dptr && i < p->nbuf; i++)
			dev_free(d, dptr[i]);
	}
	free(dptr);
	free(ls);
	return rc;
}

/* Map a newly sent shared memory of `bytes` (replacing the old one).  0 or -1. */
static int map_shm(device *d, int mfd, uint64_t bytes)
{
	if (d->shm)
		munmap(d->shm, d->shm_bytes);
	d->shm = NULL;
	d->shm_bytes = 0;
	void *m = bytes >= SHM_HEADER ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)
				      : MAP_FAILED;
	if (m == MAP_FAILED)
		return tinyc_error(d->ctx, "GpuWorkerError", "the GPU worker cannot map the shared "
				   "memory: %s", strerror(errno));
	d->shm = m;
	d->shm_bytes = bytes;
	return 0;
}

/* Serve one RUN frame: decode, map a new shared memory (mfd >= 0), execute, reply DONE.  0,
 * or -1 when the stream is broken. */
static int serve(device *d, int fd, const char *payload, uint64_t len, int mfd)
{
	reader r = {payload, payload + len};
	run_req q = {{0}};
	int rc = -1;
	if (get_plan(&r, &q) < 0)
		tinyc_error(d->ctx, "GpuWorkerError", "the GPU worker got a bad request");
	else if (mfd >= 0 && map_shm(d, mfd, q.shm_bytes) < 0)
		;
	else if (!d->shm || q.shm_bytes != d->shm_bytes)
		tinyc_error(d->ctx, "GpuWorkerError", "the GPU worker has no shared memory of %llu bytes",
			    (unsigned long long)q.shm_bytes);
	else
		rc = execute(d, &q, d->shm);
	run_req_clear(&q);
	tinyc_buf out = {0};
	int32_t res[2] = {rc, dev_faulted(d)};
	tinyc_buf_append(&out, res, sizeof(res));
	if (rc < 0)
		put_diags(&out, d->ctx);
	int sent = out.oom ? -1 : send_frame(fd, FRAME_DONE, out.data, out.len, -1);
	tinyc_buf_free(&out);
	tinyc_ctx_clear_diags(d->ctx);
	return sent;
}

int tinyc_worker_main(int fd, int fake)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* the caller gone: so is the worker */
	signal(SIGPIPE, SIG_IGN);
	device d = {0};
	if (!(d.ctx = tinyc_ctx_alloc()))
		return 1;
	tinyc_buf hello = {0};
	int32_t ok = 1;
	if (!fake && !(d.cu = tinyc_cuda_open(d.ctx, 0)))
		ok = 0;
	if (d.cu)
		tinyc_cuda_set_contained(d.cu);
	tinyc_device_info info = {0};
	if (d.cu)
		info = *tinyc_cuda_device_info(d.cu);
	else if (fake)
		snprintf(info.name, sizeof(info.name), "fake device");
	tinyc_buf_append(&hello, &ok, sizeof(ok));
	if (ok)
		tinyc_buf_append(&hello, &info, sizeof(info));
	else
		put_diags(&hello, d.ctx);
	int status = send_frame(fd, FRAME_HELLO, hello.data, hello.len, -1) < 0 || !ok ? 1 : 0;
	tinyc_buf_free(&hello);
	tinyc_ctx_clear_diags(d.ctx);
	while (!status) {
		uint32_t type;
		uint64_t len;
		char *payload;
		int mfd;
		if (recv_frame(fd, &type, &payload, &len, &mfd) < 0)
			break;	/* the caller closed the stream: done */
		if (type != FRAME_RUN || serve(&d, fd, payload, len, mfd) < 0)
			status = 1;
		else if (dev_faulted(&d))
			status = 3;	/* poisoned: the caller starts a fresh worker */
		free(payload);
		if (mfd >= 0)
			close(mfd);
	}
	tinyc_cuda_close(d.cu);	/* after a fault its calls fail, harmlessly */
	if (d.shm)
		munmap(d.shm, d.shm_bytes);
	tinyc_ctx_free(d.ctx);
	close(fd);
	return status;
}
