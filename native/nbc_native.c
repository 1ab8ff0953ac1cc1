/*
 * nbcoll's optional native addon (N-API). Only what JavaScript cannot do:
 *
 *   schedYield()  sched_yield(2): give this thread's core to another runnable thread at once.
 *                 A rank waiting on a host with more ranks than cores calls it while it spins,
 *                 so the rank it waits for runs now instead of after a futex round trip
 *                 (Open MPI's mpi_yield_when_idle). Returns nothing; cannot fail.
 *
 *   copy(dst, dstAt, src, srcAt, bytes)
 *                 memmove(3) between two Uint8Arrays. V8 copies a typed array backed by a
 *                 SharedArrayBuffer (a node's arena and rings) word by word with relaxed
 *                 atomics, about 4x slower than memmove at 64 KiB; the transport's large
 *                 payload copies come here instead. Throws a RangeError where a range does not
 *                 fit its array; nbcoll's protocol, not this call, keeps the threads off each
 *                 other's bytes.
 *
 *   mapShared(path, bytes)
 *                 An ArrayBuffer over `bytes` bytes of the existing file at `path`, mapped
 *                 shared (extended with zeros where shorter): memory that the processes
 *                 of one host see together, which JavaScript cannot have (a SharedArrayBuffer
 *                 stays within its process). nbc run's node processes keep their host board
 *                 there (src/shm/host-board.ts). Unmapped when the buffer is collected; throws
 *                 an Error naming the call that failed.
 *
 *   timerSlack(ns)
 *                 prctl(PR_SET_TIMERSLACK): how far the kernel may defer this thread's timed
 *                 sleeps (futex, poll) to batch wake-ups; 50 us by default. A rank waiting
 *                 out an emulated wire (src/p2p/wire.ts) sleeps until a stamp and sets it to
 *                 1 us: a 0.85 ms sleep then wakes 40 us late here instead of 91 (median), so
 *                 the rank spins less of the wait away. Per thread; returns whether it took.
 *
 * Where libucx-dev is installed it also carries UCX primitives (nbc_ucx.c, NBC_HAVE_UCX).
 *
 * Built by scripts/build-native.mjs (node-gyp, against the installed Node headers). Every
 * feature works without it: src/runtime/native.ts loads it when present and says why not.
 */
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static napi_value SchedYield(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  sched_yield();
  return NULL;
}

static napi_value TimerSlack(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int64_t ns = 0;
  napi_value out;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int64(env, argv[0], &ns) != napi_ok || ns < 1) {
    napi_throw_type_error(env, NULL, "timerSlack: expected a positive number of nanoseconds");
    return NULL;
  }
  napi_get_boolean(env, prctl(PR_SET_TIMERSLACK, (unsigned long)ns, 0, 0, 0) == 0, &out);
  return out;
}

/* The bytes of Uint8Array `v`; false (with a pending TypeError) where it is not one. */
static int bytes_of(napi_env env, napi_value v, uint8_t **data, size_t *length) {
  napi_typedarray_type type;
  void *p;
  if (napi_get_typedarray_info(env, v, &type, length, &p, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    napi_throw_type_error(env, NULL, "copy: expected Uint8Arrays");
    return 0;
  }
  *data = p;
  return 1;
}

static napi_value Copy(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  uint8_t *dst, *src;
  size_t dst_len, src_len;
  int64_t dst_at, src_at, bytes;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) {
    napi_throw_type_error(env, NULL, "copy: expected (dst, dstAt, src, srcAt, bytes)");
    return NULL;
  }
  if (!bytes_of(env, argv[0], &dst, &dst_len) || !bytes_of(env, argv[2], &src, &src_len)) return NULL;
  if (napi_get_value_int64(env, argv[1], &dst_at) != napi_ok || napi_get_value_int64(env, argv[3], &src_at) != napi_ok ||
      napi_get_value_int64(env, argv[4], &bytes) != napi_ok) {
    napi_throw_type_error(env, NULL, "copy: expected integer offsets and length");
    return NULL;
  }
  if (dst_at < 0 || src_at < 0 || bytes < 0 || (uint64_t)dst_at + (uint64_t)bytes > dst_len || (uint64_t)src_at + (uint64_t)bytes > src_len) {
    napi_throw_range_error(env, NULL, "copy: a range does not fit its array");
    return NULL;
  }
  memmove(dst + dst_at, src + src_at, (size_t)bytes);
  return NULL;
}

static void Unmap(napi_env env, void *data, void *hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value MapShared(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  char path[4096];
  size_t path_len;
  int64_t bytes;
  char why[4200];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_string_utf8(env, argv[0], path, sizeof path, &path_len) != napi_ok ||
      napi_get_value_int64(env, argv[1], &bytes) != napi_ok || bytes <= 0 || path_len + 1 >= sizeof path) {
    napi_throw_type_error(env, NULL, "mapShared: expected (path, bytes > 0)");
    return NULL;
  }
  int fd = open(path, O_RDWR | O_CLOEXEC);
  struct stat st;
  const char *call = "open";
  void *p = MAP_FAILED;
  if (fd >= 0) {
    call = "fstat";
    if (fstat(fd, &st) == 0) {
      call = "ftruncate";
      if (st.st_size >= bytes || ftruncate(fd, (off_t)bytes) == 0) {
        call = "mmap";
        p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      }
    }
  }
  int err = errno;
  if (fd >= 0) close(fd);
  if (p == MAP_FAILED) {
    snprintf(why, sizeof why, "mapShared: %s(%s) failed: %s", call, path, strerror(err));
    napi_throw_error(env, NULL, why);
    return NULL;
  }
  napi_value ab;
  if (napi_create_external_arraybuffer(env, p, (size_t)bytes, Unmap, (void *)(uintptr_t)bytes, &ab) != napi_ok) {
    munmap(p, (size_t)bytes);
    napi_throw_error(env, NULL, "mapShared: this Node cannot wrap external memory in an ArrayBuffer");
    return NULL;
  }
  return ab;
}

#ifdef NBC_HAVE_UCX
napi_value nbc_ucx_init(napi_env env, napi_value exports); /* nbc_ucx.c */
#endif

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "schedYield", NAPI_AUTO_LENGTH, SchedYield, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "schedYield", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "timerSlack", NAPI_AUTO_LENGTH, TimerSlack, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "timerSlack", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "copy", NAPI_AUTO_LENGTH, Copy, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "copy", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "mapShared", NAPI_AUTO_LENGTH, MapShared, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "mapShared", fn) != napi_ok) return NULL;
#ifdef NBC_HAVE_UCX
  if (nbc_ucx_init(env, exports) == NULL) return NULL;
#endif
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
