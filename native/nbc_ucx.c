/*
 * UCX primitives for nbcoll's optional addon (compiled only where libucx-dev is installed,
 * NBC_HAVE_UCX): a context and a worker per rank thread, endpoints from worker addresses,
 * tagged sends and receives tracked as operation ids, a poll that receives the next message
 * header, and the waiting primitives that let a parked rank wake on UCX events as well as on
 * its node doorbell (an eventfd per rank, poll(2) on both, and a libuv watch for async waits).
 * JavaScript does the rest: wire-up, matching, protocol, waiting policy (src/p2p/ucx.ts).
 *
 * Threads: every rank is a worker thread of one process, each with its own napi_env. All
 * state lives in per-env instance data, never in globals, and every worker is
 * UCS_THREAD_MODE_SINGLE: used only by the thread that made it.
 *
 * Memory: an operation is a heap op_t whose index goes to JS; the JS buffer of a pending
 * operation is kept alive by a napi reference until ucxTest sees it finished. ArrayBuffer and
 * SharedArrayBuffer memory does not move in V8, so UCX reads and writes it in place.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll: sleeps of a fraction of a millisecond (pollFds) */
#endif
#ifdef NBC_HAVE_UCX
#include <node_api.h>
#include <uv.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#define CHECK(call) do { if ((call) != napi_ok) return NULL; } while (0)
/* Unpacks up to n JS arguments into argv (argc: how many were passed). */
#define ARGS(n) size_t argc = (n); napi_value argv[(n)]; CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL))

/* Header messages carry tag bit 63 clear; payloads of large messages carry it set. */
#define DATA_BIT (1ULL << 63)

enum { OP_FREE = 0, OP_PENDING = 1, OP_DONE = 2, OP_FAILED = 3 };

typedef struct state state_t;

typedef struct {
  int state;
  state_t *owner;       /* whose completion count the callbacks bump */
  ucs_status_t status;
  size_t length;        /* received bytes */
  ucp_tag_t sender_tag;
  void *request;        /* UCX request while pending */
  napi_ref buffer;      /* keeps the JS buffer alive */
} op_t;

/* An endpoint and what its error handler saw. */
typedef struct {
  ucp_ep_h ep;
  ucs_status_t failed;  /* UCS_OK while healthy */
} endpoint_t;

/* A one-shot libuv watch of a file descriptor on this thread's loop (ucxWatch). */
typedef struct watch {
  uv_poll_t poll;
  int fd;
  int active;
  napi_env env;
  napi_ref callback;
  napi_async_cleanup_hook_handle cleanup;
  struct watch *next;
} watch_t;

/* The receive kept posted for a worker's next header message (ucxPoll). */
typedef struct {
  ucp_worker_h worker;
  int posted;
  op_t op;
  ucp_tag_recv_info_t now;
  void *req;
  napi_ref stage_ref;   /* keeps the stage posted into alive ... */
  void *stage_data;     /* ... whose memory this is: a poll with the same stage keeps the ref */
  /* The stage and out array of the last ucxPoll that passed them, for the short form
     ucxPoll(worker, progress): kept alive by their refs, their memory at these addresses. */
  napi_ref cur_stage_ref, cur_out_ref;
  void *cur_stage;
  size_t cur_cap;
  uint64_t *cur_out;
  size_t cur_n;
} header_rx_t;

/* Workers one thread polls: a rank has one, a node's main thread one (its engine's). */
#define MAX_WORKERS 8

struct state {
  op_t **ops;           /* ops[i] is the op with id i, or NULL */
  int cap;
  watch_t *watches;
  header_rx_t rx[MAX_WORKERS];
  int nrx;
  uint64_t completions; /* operations finished by UCX callbacks so far (ucxPoll reports it) */
};

static state_t *state_of(napi_env env) {
  void *data = NULL;
  napi_get_instance_data(env, &data);
  return data;
}

static void free_state(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  state_t *s = data;
  for (int i = 0; i < s->cap; i++) free(s->ops[i]);
  free(s->ops);
  /* watches are closed and freed by their async cleanup hooks */
  free(s);
}

static int op_alloc(state_t *s) {
  for (int i = 0; i < s->cap; i++) {
    if (s->ops[i] == NULL) s->ops[i] = calloc(1, sizeof(op_t));
    if (s->ops[i] == NULL) return -1;
    if (s->ops[i]->state == OP_FREE) {
      s->ops[i]->owner = s;
      return i;
    }
  }
  int cap = s->cap == 0 ? 64 : s->cap * 2;
  op_t **grown = realloc(s->ops, sizeof(op_t *) * cap);
  if (grown == NULL) return -1;
  memset(grown + s->cap, 0, sizeof(op_t *) * (cap - s->cap));
  s->ops = grown;
  int at = s->cap;
  s->cap = cap;
  s->ops[at] = calloc(1, sizeof(op_t));
  if (s->ops[at] == NULL) return -1;
  s->ops[at]->owner = s;
  return at;
}

static napi_value throw_ucx(napi_env env, const char *what, ucs_status_t st) {
  char msg[256];
  snprintf(msg, sizeof msg, "UCX %s failed: %s", what, ucs_status_string(st));
  napi_throw_error(env, "NBC_ERR_INTERNAL", msg);
  return NULL;
}

static void send_done(void *request, ucs_status_t status, void *user_data) {
  op_t *op = user_data;
  (void)request;
  if (op->owner != NULL) op->owner->completions++;
  op->status = status;
  op->state = status == UCS_OK ? OP_DONE : OP_FAILED;
}

static void recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user_data) {
  op_t *op = user_data;
  (void)request;
  if (op->owner != NULL) op->owner->completions++;
  op->status = status;
  if (status == UCS_OK) {
    op->length = info->length;
    op->sender_tag = info->sender_tag;
  }
  op->state = status == UCS_OK ? OP_DONE : OP_FAILED;
}

static void *external_of(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

/*
 * What a call answers when its handle argument names no UCX object: NULL, with an exception.
 * A thread being terminated (a job stopping while a rank sends) has one pending already, and
 * N-API then answers nothing: the handle reads as NULL, which must not reach UCX.
 */
static napi_value no_handle(napi_env env) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_error(env, "NBC_ERR_INTERNAL", "a UCX call got no valid handle");
  return NULL;
}

/* Declares `name`, the UCX object behind argv[i]; returns from the call when there is none. */
#define HANDLE(type, name, i) type name = external_of(env, argv[(i)]); if (name == NULL) return no_handle(env)

/* A UCX object as an opaque JS handle; `fin` frees what is ours of it when the handle goes. */
static napi_value handle(napi_env env, void *p, napi_finalize fin) {
  napi_value out;
  CHECK(napi_create_external(env, p, fin, NULL, &out));
  return out;
}

static napi_value int_value(napi_env env, int64_t n) {
  napi_value out;
  CHECK(napi_create_int64(env, n, &out));
  return out;
}

/* ucxInit(): a context with tag matching and wake-up events, for this thread. */
static napi_value Init(napi_env env, napi_callback_info info) {
  (void)info;
  ucp_config_t *config;
  ucs_status_t st = ucp_config_read(NULL, NULL, &config);
  if (st != UCS_OK) return throw_ucx(env, "config", st);
  ucp_params_t params = { .field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP };
  ucp_context_h ctx;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) return throw_ucx(env, "init", st);
  return handle(env, ctx, NULL);
}

/* ucxWorker(context): a worker for this thread. */
static napi_value Worker(napi_env env, napi_callback_info info) {
  ARGS(1);
  HANDLE(ucp_context_h, ctx, 0);
  ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE };
  ucp_worker_h worker;
  ucs_status_t st = ucp_worker_create(ctx, &wp, &worker);
  if (st != UCS_OK) return throw_ucx(env, "worker", st);
  return handle(env, worker, NULL);
}

/* ucxAddress(worker): the worker's address, to hand to peers (an ArrayBuffer copy). */
static napi_value Address(napi_env env, napi_callback_info info) {
  ARGS(1);
  HANDLE(ucp_worker_h, worker, 0);
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

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
  (void)ep;
  endpoint_t *e = arg;
  e->failed = status;
}

static void free_endpoint(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  free(data); /* the ucp_ep itself goes with its worker at exit */
}

/* Argument i when the caller passed a boolean there, else `fallback`. */
static bool optional_bool(napi_env env, size_t argc, napi_value *argv, size_t i, bool fallback) {
  napi_valuetype t;
  bool value;
  if (i >= argc || napi_typeof(env, argv[i], &t) != napi_ok || t != napi_boolean) return fallback;
  return napi_get_value_bool(env, argv[i], &value) == napi_ok ? value : fallback;
}

/*
 * ucxConnect(worker, address, handleErrors = true): an endpoint to the worker at `address` (a
 * Uint8Array). With handleErrors, peer errors are handled (UCP_ERR_HANDLING_MODE_PEER): when
 * the peer dies or its link breaks, pending operations on the endpoint fail instead of
 * hanging, and ucxFailed(ep) says why. Without (UCP_ERR_HANDLING_MODE_NONE, as MPI libraries
 * run UCX by default), UCX 1.13 may move rendezvous payloads over tcp with put_zcopy straight
 * into the receive buffer instead of as active messages copied on arrival, at the price that
 * a failed link is fatal to the process or goes unnoticed (docs/p2p.md, "Between
 * nodes over UCX").
 */
static napi_value Connect(napi_env env, napi_callback_info info) {
  ARGS(3);
  bool handle_errors = optional_bool(env, argc, argv, 2, true);
  HANDLE(ucp_worker_h, worker, 0);
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[1], NULL, &len, &data, NULL, NULL));
  endpoint_t *e = calloc(1, sizeof *e);
  if (e == NULL) return throw_ucx(env, "ep_create (no memory)", UCS_ERR_NO_MEMORY);
  ucp_ep_params_t ep = {
    .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
    .address = data, .err_mode = UCP_ERR_HANDLING_MODE_PEER, .err_handler = { .cb = ep_error, .arg = e },
  };
  if (!handle_errors) {
    ep.field_mask &= ~(uint64_t)(UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER);
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  }
  ucs_status_t st = ucp_ep_create(worker, &ep, &e->ep);
  if (st != UCS_OK) {
    free(e);
    return throw_ucx(env, "ep_create", st);
  }
  return handle(env, e, free_endpoint);
}

/* ucxFailed(ep) -> null while healthy, else the UCX error that broke it. */
static napi_value Failed(napi_env env, napi_callback_info info) {
  ARGS(1);
  endpoint_t *e = external_of(env, argv[0]); /* none: healthy, as a peer never connected */
  napi_value out;
  if (e == NULL || e->failed == UCS_OK) {
    CHECK(napi_get_null(env, &out));
  } else {
    CHECK(napi_create_string_utf8(env, ucs_status_string(e->failed), NAPI_AUTO_LENGTH, &out));
  }
  return out;
}

static uint64_t tag_of(napi_env env, napi_value v) {
  uint64_t t = 0;
  bool lossless;
  napi_get_value_bigint_uint64(env, v, &t, &lossless);
  return t;
}

/* Starts an operation's bookkeeping: a slot holding a reference to the JS buffer. */
static int begin(napi_env env, state_t *s, napi_value buffer) {
  int id = op_alloc(s);
  if (id < 0) return -1;
  op_t *op = s->ops[id];
  op->state = OP_PENDING;
  op->length = 0;
  op->sender_tag = 0;
  op->request = NULL;
  napi_create_reference(env, buffer, 1, &op->buffer);
  return id;
}

/* The result of an nbx call: done at once, failed at once, or pending on a request. */
static napi_value finish_start(napi_env env, op_t *op, int id, ucs_status_ptr_t r) {
  if (r == NULL) {
    op->state = OP_DONE;
    op->owner->completions++; /* finished without a callback: still counts */
  } else if (UCS_PTR_IS_ERR(r)) {
    op->state = OP_FAILED;
    op->status = UCS_PTR_STATUS(r);
    op->owner->completions++;
  } else if (op->state == OP_PENDING) {
    op->request = r;
  } else {
    ucp_request_free(r); /* completed inside the call: the callback already ran */
  }
  return int_value(env, id);
}

/*
 * ucxSend(ep, tag: bigint, data: Uint8Array, length?) -> operation id, or -1 when the send
 * completed inside the call (UCX copied the data; no id to test). `length` sends only the
 * first bytes of `data`. A send that fails at once (a broken endpoint) gets an id that tests
 * as failed.
 */
static napi_value Send(napi_env env, napi_callback_info info) {
  ARGS(4);
  HANDLE(endpoint_t *, e, 0);
  uint64_t tag = tag_of(env, argv[1]);
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[2], NULL, &len, &data, NULL, NULL));
  if (argc >= 4) {
    napi_valuetype t;
    CHECK(napi_typeof(env, argv[3], &t));
    if (t == napi_number) {
      uint32_t n;
      CHECK(napi_get_value_uint32(env, argv[3], &n));
      if (n < len) len = n;
    }
  }
  state_t *s = state_of(env);
  int id = op_alloc(s);
  if (id < 0) return throw_ucx(env, "send (no memory)", UCS_ERR_NO_MEMORY);
  op_t *op = s->ops[id];
  op->state = OP_PENDING;
  op->request = NULL;
  ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                            .cb.send = send_done, .user_data = op };
  ucs_status_ptr_t r = ucp_tag_send_nbx(e->ep, data, len, tag, &p);
  if (r == NULL) {
    op->state = OP_FREE;
    return int_value(env, -1);
  }
  napi_create_reference(env, argv[2], 1, &op->buffer);
  return finish_start(env, op, id, r);
}

/* ucxRecv(worker, tag: bigint, mask: bigint, buffer: Uint8Array) -> operation id. */
static napi_value Recv(napi_env env, napi_callback_info info) {
  ARGS(4);
  HANDLE(ucp_worker_h, worker, 0);
  uint64_t tag = tag_of(env, argv[1]);
  uint64_t mask = tag_of(env, argv[2]);
  void *data;
  size_t len;
  CHECK(napi_get_typedarray_info(env, argv[3], NULL, &len, &data, NULL, NULL));
  state_t *s = state_of(env);
  int id = begin(env, s, argv[3]);
  if (id < 0) return throw_ucx(env, "recv (no memory)", UCS_ERR_NO_MEMORY);
  op_t *op = s->ops[id];
  ucp_tag_recv_info_t now = { 0, 0 };
  ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                              UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                            .cb.recv = recv_done, .user_data = op, .recv_info.tag_info = &now };
  ucs_status_ptr_t r = ucp_tag_recv_nbx(worker, data, len, tag, mask, &p);
  if (r == NULL) { /* completed at once: no callback, the info is in `now` */
    op->length = now.length;
    op->sender_tag = now.sender_tag;
  }
  return finish_start(env, op, id, r);
}

/*
 * ucxPoll(worker, stage: Uint8Array, out: BigUint64Array(3), progress = true) -> the length of
 * the next header message (tag bit 63 clear), received into `stage`, with out = [length,
 * sender tag, operations completed so far]; -1 when none has arrived yet (out[2] is still set,
 * so the caller tests its operations only when some finished); -2 for a message longer than
 * `stage` (a peer that breaks the protocol; the message is consumed). With progress false
 * the worker is not progressed: only a header UCX has already received is returned, which
 * lets a caller drain a burst after one progress without paying another (an idle
 * ucp_worker_progress over tcp is an epoll_wait system call, about 1.5 us on the reference VM,
 * and was on the critical path of every receive).
 *
 * A receive for the next header stays posted into `stage` between calls, so a header that
 * arrives while the worker progresses is matched and copied on arrival (UCX's expected path)
 * rather than queued as unexpected. It is posted again by the call after the one that
 * returned it: until then `stage` holds the returned header and nothing writes it. One
 * worker, one `stage`, for as long as the worker is polled.
 */
static header_rx_t *rx_of(state_t *s, ucp_worker_h worker) {
  for (int i = 0; i < s->nrx; i++) if (s->rx[i].worker == worker) return &s->rx[i];
  if (s->nrx == MAX_WORKERS) return NULL;
  header_rx_t *rx = &s->rx[s->nrx++];
  memset(rx, 0, sizeof *rx);
  rx->worker = worker;
  return rx;
}

/* Keeps `value` (a typed array whose memory is `data`) in `*ref`, replacing what it held unless
   it is the same memory. */
static bool keep(napi_env env, napi_ref *ref, void **held, void *data, napi_value value) {
  if (*ref != NULL && *held == data) return true;
  if (*ref != NULL) napi_delete_reference(env, *ref);
  *ref = NULL;
  if (napi_create_reference(env, value, 1, ref) != napi_ok) return false;
  *held = data;
  return true;
}

/* ucxPoll(worker, stage, out[, progress]), or ucxPoll(worker[, progress]) with the stage and out
   of the worker's last long call: the short form spares a poll the two typed-array lookups. */
static napi_value Poll(napi_env env, napi_callback_info info) {
  ARGS(4);
  HANDLE(ucp_worker_h, worker, 0);
  state_t *s = state_of(env);
  header_rx_t *rx = rx_of(s, worker);
  if (rx == NULL) return throw_ucx(env, "poll (too many workers on one thread)", UCS_ERR_EXCEEDS_LIMIT);
  bool progress;
  if (argc >= 3) {
    progress = optional_bool(env, argc, argv, 3, true);
    void *stage, *outp;
    size_t cap, n;
    CHECK(napi_get_typedarray_info(env, argv[1], NULL, &cap, &stage, NULL, NULL));
    CHECK(napi_get_typedarray_info(env, argv[2], NULL, &n, &outp, NULL, NULL));
    void *held_out = rx->cur_out;
    if (!keep(env, &rx->cur_stage_ref, &rx->cur_stage, stage, argv[1])) return NULL;
    if (!keep(env, &rx->cur_out_ref, &held_out, outp, argv[2])) return NULL;
    rx->cur_out = held_out;
    rx->cur_cap = cap;
    rx->cur_n = n;
  } else {
    if (rx->cur_stage_ref == NULL) {
      napi_throw_error(env, "NBC_ERR_INTERNAL", "ucxPoll(worker, progress) before ucxPoll(worker, stage, out) gave the stage");
      return NULL;
    }
    progress = optional_bool(env, argc, argv, 1, true);
  }
  void *stage = rx->cur_stage;
  size_t cap = rx->cur_cap;
  uint64_t *out = rx->cur_out;
  size_t n = rx->cur_n;
  if (!rx->posted) {
    if (rx->stage_ref == NULL || rx->stage_data != stage) { /* posted into: keep it alive */
      napi_value v;
      CHECK(napi_get_reference_value(env, rx->cur_stage_ref, &v));
      if (!keep(env, &rx->stage_ref, &rx->stage_data, stage, v)) return NULL;
    }
    memset(&rx->op, 0, sizeof rx->op);
    rx->op.state = OP_PENDING;
    rx->now.length = 0;
    rx->now.sender_tag = 0;
    /* NO_IMM_CMPL: UCX 1.13 completes a receive that matches an unexpected message inside
       the call without filling recv_info; with a request the callback reports the length. */
    ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                                UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                              .cb.recv = recv_done, .user_data = &rx->op, .recv_info.tag_info = &rx->now };
    ucs_status_ptr_t r = ucp_tag_recv_nbx(worker, stage, cap, 0, DATA_BIT, &p);
    rx->posted = 1;
    rx->req = NULL;
    if (r == NULL) {
      rx->op.state = OP_DONE;
      rx->op.length = rx->now.length;
      rx->op.sender_tag = rx->now.sender_tag;
    } else if (UCS_PTR_IS_ERR(r)) {
      rx->op.state = OP_FAILED;
      rx->op.status = UCS_PTR_STATUS(r);
    } else if (rx->op.state == OP_PENDING) {
      rx->req = r;
    } else {
      ucp_request_free(r);
    }
  }
  if (rx->op.state == OP_PENDING && progress) ucp_worker_progress(worker);
  if (n >= 3) out[2] = s->completions;
  if (rx->op.state == OP_PENDING) return int_value(env, -1);
  if (rx->req != NULL) ucp_request_free(rx->req);
  rx->req = NULL;
  rx->posted = 0;
  if (rx->op.state == OP_FAILED) {
    if (rx->op.status == UCS_ERR_MESSAGE_TRUNCATED) return int_value(env, -2);
    return throw_ucx(env, "receive of a header", rx->op.status);
  }
  if (n >= 2) {
    out[0] = rx->op.length;
    out[1] = rx->op.sender_tag;
  }
  return int_value(env, (int64_t)rx->op.length);
}

/*
 * ucxFlush(worker) -> operation id, or -1 when nothing was in flight: completes once every
 * send of the worker has left it (called before a rank's thread ends).
 */
static napi_value Flush(napi_env env, napi_callback_info info) {
  ARGS(1);
  HANDLE(ucp_worker_h, worker, 0);
  state_t *s = state_of(env);
  int id = op_alloc(s);
  if (id < 0) return throw_ucx(env, "flush (no memory)", UCS_ERR_NO_MEMORY);
  op_t *op = s->ops[id];
  op->state = OP_PENDING;
  op->request = NULL;
  ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                            .cb.send = send_done, .user_data = op };
  ucs_status_ptr_t r = ucp_worker_flush_nbx(worker, &p);
  if (r == NULL) {
    op->state = OP_FREE;
    return int_value(env, -1);
  }
  op->buffer = NULL; /* nothing to keep alive */
  return finish_start(env, op, id, r);
}

/* ucxProgress(worker) -> events processed. */
static napi_value Progress(napi_env env, napi_callback_info info) {
  ARGS(1);
  HANDLE(ucp_worker_h, worker, 0);
  return int_value(env, ucp_worker_progress(worker));
}

/*
 * ucxTest(id, out: BigUint64Array(2)) -> 1 pending, 2 done, 3 failed; when done, out = [bytes
 * received, sender tag]. A finished operation's slot is freed by this call.
 */
static napi_value Test(napi_env env, napi_callback_info info) {
  ARGS(2);
  int32_t id;
  CHECK(napi_get_value_int32(env, argv[0], &id));
  state_t *s = state_of(env);
  if (id < 0 || id >= s->cap || s->ops[id] == NULL || s->ops[id]->state == OP_FREE) {
    napi_throw_range_error(env, "NBC_ERR_INTERNAL", "ucxTest: no such UCX operation");
    return NULL;
  }
  op_t *op = s->ops[id];
  int state = op->state;
  if (state != OP_PENDING) {
    uint64_t *res;
    size_t n;
    if (napi_get_typedarray_info(env, argv[1], NULL, &n, (void **)&res, NULL, NULL) == napi_ok && n >= 2) {
      res[0] = op->length;
      res[1] = op->sender_tag;
    }
    if (op->request != NULL) ucp_request_free(op->request);
    if (op->buffer != NULL) napi_delete_reference(env, op->buffer);
    memset(op, 0, sizeof *op);
  }
  return int_value(env, state);
}

/* ucxEventFd(worker) -> the fd that becomes readable on the worker's events once armed. */
static napi_value EventFd(napi_env env, napi_callback_info info) {
  ARGS(1);
  int fd;
  HANDLE(ucp_worker_h, worker, 0);
  ucs_status_t st = ucp_worker_get_efd(worker, &fd);
  if (st != UCS_OK) return throw_ucx(env, "get_efd", st);
  return int_value(env, fd);
}

/*
 * ucxArm(worker) -> true when armed (nothing pending: the event fd will signal the next
 * event), false when events are waiting (progress instead of sleeping).
 */
static napi_value Arm(napi_env env, napi_callback_info info) {
  ARGS(1);
  HANDLE(ucp_worker_h, worker, 0);
  ucs_status_t st = ucp_worker_arm(worker);
  if (st != UCS_OK && st != UCS_ERR_BUSY) return throw_ucx(env, "arm", st);
  napi_value out;
  CHECK(napi_get_boolean(env, st == UCS_OK, &out));
  return out;
}

/* wakeFd() -> a new non-blocking eventfd: the doorbell of a rank that sleeps in pollFds. */
static napi_value WakeFd(napi_env env, napi_callback_info info) {
  (void)info;
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    napi_throw_error(env, "NBC_ERR_INTERNAL", strerror(errno));
    return NULL;
  }
  return int_value(env, fd);
}

/* signalFd(fd): rings an eventfd (any thread of the process may). */
static napi_value SignalFd(napi_env env, napi_callback_info info) {
  ARGS(1);
  int32_t fd;
  CHECK(napi_get_value_int32(env, argv[0], &fd));
  uint64_t one = 1;
  ssize_t w = write(fd, &one, sizeof one); /* EAGAIN only when the counter is saturated: still readable */
  (void)w;
  return NULL;
}

/*
 * pollFds(eventFd, wakeFd, timeoutMs) -> true when either became readable. Sleeps until the
 * UCX worker's event fd or the rank's eventfd is readable, or timeoutMs passed (a fraction of
 * a millisecond too: ppoll, so the emulated wire's waits of 0.05-1 ms neither spin on a
 * timeout truncated to 0 nor sleep a whole millisecond; negative: no timeout), then empties
 * the eventfd.
 */
static napi_value PollFds(napi_env env, napi_callback_info info) {
  ARGS(3);
  int32_t efd, wfd;
  double ms;
  CHECK(napi_get_value_int32(env, argv[0], &efd));
  CHECK(napi_get_value_int32(env, argv[1], &wfd));
  CHECK(napi_get_value_double(env, argv[2], &ms));
  struct pollfd fds[2] = { { .fd = efd, .events = POLLIN }, { .fd = wfd, .events = POLLIN } };
  struct timespec ts;
  struct timespec *timeout = NULL;
  if (ms >= 0) {
    if (ms > 1e9) ms = 1e9; /* about 11 days: keeps tv_sec in range */
    long long ns = (long long)(ms * 1e6);
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    timeout = &ts;
  }
  int n = ppoll(fds, 2, timeout, NULL);
  uint64_t count;
  if (fds[1].revents & POLLIN) {
    ssize_t r = read(wfd, &count, sizeof count);
    (void)r;
  }
  napi_value out;
  CHECK(napi_get_boolean(env, n > 0, &out));
  return out;
}

static void watch_closed(uv_handle_t *handle) {
  watch_t *w = handle->data;
  napi_remove_async_cleanup_hook(w->cleanup);
  free(w);
}

/* At thread (env) teardown: the loop must not close with the poll handle open. */
static void watch_teardown(napi_async_cleanup_hook_handle hook, void *arg) {
  (void)hook;
  watch_t *w = arg;
  uv_poll_stop(&w->poll);
  uv_close((uv_handle_t *)&w->poll, watch_closed);
}

static void watch_fired(uv_poll_t *handle, int status, int events) {
  (void)status;
  (void)events;
  watch_t *w = handle->data;
  uv_poll_stop(handle);
  w->active = 0;
  napi_env env = w->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value cb, global, result;
  if (napi_get_reference_value(env, w->callback, &cb) == napi_ok && napi_get_global(env, &global) == napi_ok) {
    napi_call_function(env, global, cb, 0, NULL, &result);
  }
  napi_close_handle_scope(env, scope);
}

/*
 * watchFd(fd, callback): calls `callback` once, from this thread's event loop, when `fd`
 * becomes readable (async waits: `await req` sleeps in the loop, not in poll). One handle per
 * fd, reused; it does not keep the loop alive.
 */
static napi_value WatchFd(napi_env env, napi_callback_info info) {
  ARGS(2);
  int32_t fd;
  CHECK(napi_get_value_int32(env, argv[0], &fd));
  state_t *s = state_of(env);
  watch_t *w = s->watches;
  while (w != NULL && w->fd != fd) w = w->next;
  if (w == NULL) {
    uv_loop_t *loop;
    CHECK(napi_get_uv_event_loop(env, &loop));
    w = calloc(1, sizeof *w);
    if (w == NULL) return throw_ucx(env, "watch (no memory)", UCS_ERR_NO_MEMORY);
    if (uv_poll_init(loop, &w->poll, fd) != 0) {
      free(w);
      napi_throw_error(env, "NBC_ERR_INTERNAL", "uv_poll_init failed");
      return NULL;
    }
    uv_unref((uv_handle_t *)&w->poll);
    w->fd = fd;
    w->env = env;
    w->poll.data = w;
    w->next = s->watches;
    s->watches = w;
    napi_add_async_cleanup_hook(env, watch_teardown, w, &w->cleanup);
  }
  if (w->callback != NULL) napi_delete_reference(env, w->callback);
  CHECK(napi_create_reference(env, argv[1], 1, &w->callback));
  if (!w->active) {
    w->active = 1;
    uv_poll_start(&w->poll, UV_READABLE, watch_fired);
  }
  return NULL;
}

/* Adds the UCX functions to the addon's exports and this thread's state. */
napi_value nbc_ucx_init(napi_env env, napi_value exports) {
  state_t *s = calloc(1, sizeof *s);
  if (s == NULL || napi_set_instance_data(env, s, free_state, NULL) != napi_ok) return NULL;
  const struct { const char *name; napi_callback fn; } fns[] = {
    { "ucxInit", Init }, { "ucxWorker", Worker }, { "ucxAddress", Address }, { "ucxConnect", Connect },
    { "ucxFailed", Failed }, { "ucxSend", Send }, { "ucxRecv", Recv }, { "ucxPoll", Poll },
    { "ucxFlush", Flush }, { "ucxProgress", Progress }, { "ucxTest", Test }, { "ucxEventFd", EventFd }, { "ucxArm", Arm },
    { "wakeFd", WakeFd }, { "signalFd", SignalFd }, { "pollFds", PollFds }, { "watchFd", WatchFd },
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    CHECK(napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f));
    CHECK(napi_set_named_property(env, exports, fns[i].name, f));
  }
  return exports;
}
#endif
