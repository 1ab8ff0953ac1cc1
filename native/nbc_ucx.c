/*
 * UCX primitives for nbcoll's optional addon (compiled only where libucx-dev is installed,
 * NBC_HAVE_UCX): a context, one worker per thread, endpoints from worker addresses, tagged
 * sends and receives tracked in a small table, and explicit progress. JavaScript does the
 * rest (wire-up, matching policy, waiting). Issue 12 builds the UCX transport on these; they
 * are exercised on their own by test/native.test.ts.
 *
 * Conventions: handles are napi externals; an operation is a slot in `ops` (its index goes to
 * JS); the JS buffer of a pending operation is kept alive by a napi reference until the slot is
 * released. ArrayBuffer and SharedArrayBuffer memory does not move in V8, so UCX may read and
 * write it in place. Every worker is UCS_THREAD_MODE_SINGLE: used only by the thread that made it.
 */
#ifdef NBC_HAVE_UCX
#include <node_api.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#define CHECK(call) do { if ((call) != napi_ok) return NULL; } while (0)

typedef struct {
  int state;            /* 0 free, 1 pending, 2 done, 3 failed */
  ucs_status_t status;
  size_t length;        /* received bytes */
  ucp_tag_t sender_tag;
  void *request;        /* UCX request while pending */
  napi_ref buffer;      /* keeps the JS buffer alive */
} op_t;

static op_t *ops = NULL;
static int ops_cap = 0;

static int op_alloc(void) {
  for (int i = 0; i < ops_cap; i++) if (ops[i].state == 0) return i;
  int cap = ops_cap == 0 ? 64 : ops_cap * 2;
  op_t *grown = realloc(ops, sizeof(op_t) * cap);
  if (grown == NULL) return -1;
  memset(grown + ops_cap, 0, sizeof(op_t) * (cap - ops_cap));
  ops = grown;
  int at = ops_cap;
  ops_cap = cap;
  return at;
}

static napi_value throw_ucx(napi_env env, const char *what, ucs_status_t st) {
  char msg[256];
  snprintf(msg, sizeof msg, "UCX %s failed: %s", what, ucs_status_string(st));
  napi_throw_error(env, "NBC_ERR_INTERNAL", msg);
  return NULL;
}

static void send_done(void *request, ucs_status_t status, void *user_data) {
  op_t *op = &ops[(intptr_t)user_data];
  (void)request;
  op->status = status;
  op->state = status == UCS_OK ? 2 : 3;
}

static void recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user_data) {
  op_t *op = &ops[(intptr_t)user_data];
  (void)request;
  op->status = status;
  if (status == UCS_OK) {
    op->length = info->length;
    op->sender_tag = info->sender_tag;
  }
  op->state = status == UCS_OK ? 2 : 3;
}

static void *external_of(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

/* ucxInit(): a context with tag matching. */
static napi_value Init(napi_env env, napi_callback_info info) {
  (void)info;
  ucp_config_t *config;
  ucs_status_t st = ucp_config_read(NULL, NULL, &config);
  if (st != UCS_OK) return throw_ucx(env, "config", st);
  ucp_params_t params = { .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                          .features = UCP_FEATURE_TAG, .mt_workers_shared = 1 };
  ucp_context_h ctx;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) return throw_ucx(env, "init", st);
  napi_value out;
  CHECK(napi_create_external(env, ctx, NULL, NULL, &out));
  return out;
}

/* ucxWorker(context): a worker for this thread. */
static napi_value Worker(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  ucp_context_h ctx = external_of(env, argv[0]);
  ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE };
  ucp_worker_h worker;
  ucs_status_t st = ucp_worker_create(ctx, &wp, &worker);
  if (st != UCS_OK) return throw_ucx(env, "worker", st);
  napi_value out;
  CHECK(napi_create_external(env, worker, NULL, NULL, &out));
  return out;
}

/* ucxAddress(worker): the worker's address, to hand to peers (an ArrayBuffer copy). */
static napi_value Address(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  ucp_worker_h worker = external_of(env, argv[0]);
  ucp_address_t *addr;
  size_t len;
  ucs_status_t st = ucp_worker_get_address(worker, &addr, &len);
  if (st != UCS_OK) return throw_ucx(env, "get_address", st);
  void *data;
  napi_value out;
  if (napi_create_arraybuffer(env, len, &data, &out) != napi_ok) {
    ucp_worker_release_address(worker, addr);
    return NULL;
  }
  memcpy(data, addr, len);
  ucp_worker_release_address(worker, addr);
  return out;
}

/* ucxConnect(worker, address): an endpoint to the worker at `address` (a Uint8Array). */
static napi_value Connect(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  ucp_worker_h worker = external_of(env, argv[0]);
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[1], NULL, &len, &data, NULL, NULL));
  ucp_ep_params_t ep = { .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = data };
  ucp_ep_h h;
  ucs_status_t st = ucp_ep_create(worker, &ep, &h);
  if (st != UCS_OK) return throw_ucx(env, "ep_create", st);
  napi_value out;
  CHECK(napi_create_external(env, h, NULL, NULL, &out));
  return out;
}

static uint64_t tag_of(napi_env env, napi_value v) {
  uint64_t t = 0;
  bool lossless;
  napi_get_value_bigint_uint64(env, v, &t, &lossless);
  return t;
}

/* Starts an operation's bookkeeping: a slot holding a reference to the JS buffer. */
static int begin(napi_env env, napi_value buffer) {
  int id = op_alloc();
  if (id < 0) return -1;
  ops[id].state = 1;
  ops[id].length = 0;
  ops[id].sender_tag = 0;
  ops[id].request = NULL;
  napi_create_reference(env, buffer, 1, &ops[id].buffer);
  return id;
}

/* The result of an nbx call: done at once, failed at once, or pending on a request. */
static napi_value finish_start(napi_env env, int id, ucs_status_ptr_t r) {
  if (r == NULL) {
    ops[id].state = 2;
  } else if (UCS_PTR_IS_ERR(r)) {
    ops[id].state = 3;
    ops[id].status = UCS_PTR_STATUS(r);
  } else if (ops[id].state == 1) {
    ops[id].request = r;
  } else {
    ucp_request_free(r); /* completed inside the call: the callback already ran */
  }
  napi_value out;
  CHECK(napi_create_int32(env, id, &out));
  return out;
}

/* ucxSend(ep, tag: bigint, data: Uint8Array) -> operation id. */
static napi_value Send(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  ucp_ep_h ep = external_of(env, argv[0]);
  uint64_t tag = tag_of(env, argv[1]);
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[2], NULL, &len, &data, NULL, NULL));
  int id = begin(env, argv[2]);
  if (id < 0) return throw_ucx(env, "send (no memory)", UCS_ERR_NO_MEMORY);
  ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                            .cb.send = send_done, .user_data = (void *)(intptr_t)id };
  return finish_start(env, id, ucp_tag_send_nbx(ep, data, len, tag, &p));
}

/* ucxRecv(worker, tag: bigint, mask: bigint, buffer: Uint8Array) -> operation id. */
static napi_value Recv(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  ucp_worker_h worker = external_of(env, argv[0]);
  uint64_t tag = tag_of(env, argv[1]);
  uint64_t mask = tag_of(env, argv[2]);
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[3], NULL, &len, &data, NULL, NULL));
  int id = begin(env, argv[3]);
  if (id < 0) return throw_ucx(env, "recv (no memory)", UCS_ERR_NO_MEMORY);
  ucp_tag_recv_info_t now = { 0, 0 };
  ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO,
                            .cb.recv = recv_done, .user_data = (void *)(intptr_t)id, .recv_info.tag_info = &now };
  ucs_status_ptr_t r = ucp_tag_recv_nbx(worker, data, len, tag, mask, &p);
  if (r == NULL) { /* completed at once: no callback, the info is in `now` */
    ops[id].length = now.length;
    ops[id].sender_tag = now.sender_tag;
  }
  return finish_start(env, id, r);
}

/* ucxProgress(worker) -> events processed. */
static napi_value Progress(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  unsigned n = ucp_worker_progress(external_of(env, argv[0]));
  napi_value out;
  CHECK(napi_create_uint32(env, n, &out));
  return out;
}

/*
 * ucxTest(id, out: BigUint64Array(2)) -> 1 pending, 2 done, 3 failed; when done, out = [bytes
 * received, sender tag]. A finished operation's slot is freed by this call.
 */
static napi_value Test(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t id;
  CHECK(napi_get_value_int32(env, argv[0], &id));
  napi_value out;
  if (id < 0 || id >= ops_cap || ops[id].state == 0) {
    napi_throw_range_error(env, "NBC_ERR_INTERNAL", "ucxTest: no such UCX operation");
    return NULL;
  }
  op_t *op = &ops[id];
  int state = op->state;
  if (state != 1) {
    uint64_t *res;
    size_t n;
    if (napi_get_typedarray_info(env, argv[1], NULL, &n, (void **)&res, NULL, NULL) == napi_ok && n >= 2) {
      res[0] = op->length;
      res[1] = op->sender_tag;
    }
    if (op->request != NULL) ucp_request_free(op->request);
    napi_delete_reference(env, op->buffer);
    memset(op, 0, sizeof *op);
  }
  CHECK(napi_create_int32(env, state, &out));
  return out;
}

/* Adds the UCX functions to the addon's exports. */
napi_value nbc_ucx_init(napi_env env, napi_value exports) {
  const struct { const char *name; napi_callback fn; } fns[] = {
    { "ucxInit", Init }, { "ucxWorker", Worker }, { "ucxAddress", Address }, { "ucxConnect", Connect },
    { "ucxSend", Send }, { "ucxRecv", Recv }, { "ucxProgress", Progress }, { "ucxTest", Test },
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    CHECK(napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f));
    CHECK(napi_set_named_property(env, exports, fns[i].name, f));
  }
  return exports;
}
#endif
