/**
 * Job wire-up and control channel.
 *
 * Node 0 runs a RendezvousServer; every node (node 0 included) connects to it with a
 * RendezvousClient. Each connection is authenticated with the job secret (net/auth.ts; the node
 * id is the one proven in the handshake) and then carries frames (net/frame.ts) whose bodies are
 * JSON: the control path, a few messages per job, so readability wins over compactness.
 *
 *   node -> server  HELLO      { nodeId, host, port, nranks, pid, hostname, extra? }
 *   server -> node  TABLE      { nodes: [HELLO of every node, sorted by nodeId] }   once all joined
 *   node -> server  ABORT      { reason, exitCode, origin }   -> server sends ABORT to every node
 *   node -> server  DONE       { nodeId }                     -> when all are done: SHUTDOWN to all
 *   node -> server  BROADCAST  { payload }                    -> server sends BROADCAST to all
 *   server -> node  REJECT     { reason }                     then closes (bad id, duplicate, late)
 *   both            BEAT       {}                             every silence/4 (at most 1 s) once wired up
 *
 * Every node sees the server's messages in one order. A node whose connection closes before its
 * DONE (a killed process closes its sockets at once) makes the server send ABORT with reason
 * "node N (pid P) lost: connection closed"; only the first ABORT of a job is sent. A node that
 * is stopped (SIGSTOP) or hung keeps its sockets open, so both sides also listen for silence:
 * nothing from a node for `silenceMs` (default 10 s, NBC_NODE_SILENCE_MS) aborts the job naming
 * it, and nothing from the server for as long is 'lost' on the node.
 *
 * The rooms: rendezvous-wire.ts (messages, their checks, the silence watch),
 * rendezvous-server.ts, rendezvous-client.ts. Connections are net/conn.ts AuthConns; the
 * server accepts them through a net/listener.ts AuthListener.
 */
export {
  decodeControlBody, DEFAULT_SILENCE_MS, isWildcard, parseAbort, parseHello, parseTable, RendezvousMsg,
  type AbortMessage, type NodeHello, type RendezvousTable,
} from './rendezvous-wire.js';
export {
  RendezvousServer, type RendezvousServerEvents, type RendezvousServerOptions,
} from './rendezvous-server.js';
export {
  DEFAULT_RENDEZVOUS_TIMEOUT_MS, RendezvousClient, type RendezvousClientEvents, type RendezvousConnectOptions,
} from './rendezvous-client.js';
