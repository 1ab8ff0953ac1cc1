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
 * Where libucx-dev is installed it also carries UCX primitives (nbc_ucx.c, NBC_HAVE_UCX).
 *
 * Built by scripts/build-native.mjs (node-gyp, against the installed Node headers). Every
 * feature works without it: src/runtime/native.ts loads it when present and says why not.
 */
#include <node_api.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

static napi_value SchedYield(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  sched_yield();
  return NULL;
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

#ifdef NBC_HAVE_UCX
napi_value nbc_ucx_init(napi_env env, napi_value exports); /* nbc_ucx.c */
#endif

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "schedYield", NAPI_AUTO_LENGTH, SchedYield, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "schedYield", fn) != napi_ok) return NULL;
  if (napi_create_function(env, "copy", NAPI_AUTO_LENGTH, Copy, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "copy", fn) != napi_ok) return NULL;
#ifdef NBC_HAVE_UCX
  if (nbc_ucx_init(env, exports) == NULL) return NULL;
#endif
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
