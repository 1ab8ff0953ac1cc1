/*
 * nbcoll's optional native addon (N-API). Only what JavaScript cannot do:
 *
 *   schedYield()  sched_yield(2): give this thread's core to another runnable thread at once.
 *                 A rank waiting on a host with more ranks than cores calls it while it spins,
 *                 so the rank it waits for runs now instead of after a futex round trip
 *                 (Open MPI's mpi_yield_when_idle). Returns nothing; cannot fail.
 *
 * Where libucx-dev is installed it also carries UCX primitives (nbc_ucx.c, NBC_HAVE_UCX).
 *
 * Built by scripts/build-native.mjs (node-gyp, against the installed Node headers). Every
 * feature works without it: src/runtime/native.ts loads it when present and says why not.
 */
#include <node_api.h>
#include <sched.h>

static napi_value SchedYield(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  sched_yield();
  return NULL;
}

#ifdef NBC_HAVE_UCX
napi_value nbc_ucx_init(napi_env env, napi_value exports); /* nbc_ucx.c */
#endif

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "schedYield", NAPI_AUTO_LENGTH, SchedYield, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "schedYield", fn) != napi_ok) return NULL;
#ifdef NBC_HAVE_UCX
  if (nbc_ucx_init(env, exports) == NULL) return NULL;
#endif
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
