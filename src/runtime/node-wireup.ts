/**
 * A node's wire-up: the job's secret, the engine's links (listening), the rendezvous with node
 * 0 (which hosts the server), the table of every node's link address and ranks, and the
 * job-wide transport decision taken from every node's HELLO. With UCX, the ranks' and engines'
 * worker addresses are traded afterwards through the rendezvous's BROADCAST (UcxWireup), so
 * only members of the job learn them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { NbcArgError, NbcLaunchError } from '../errors.js';
import { wireModeFromEnv } from './wire-clock.js';
import { LinkManager } from '../net/link.js';
import type { Wireup } from './env.js';
import { log, rawLog, toParent, type NodeLife } from './node-life.js';
import type { NodeOptions, TransportChoice } from './node-main.js';
import { isWildcard, RendezvousClient, RendezvousServer } from './rendezvous.js';

/** The job's secret: NBC_SECRET, else derived from the job id (said once, by node 0). */
export function jobSecret(w: Wireup): Buffer {
  if (w.secret !== null) return w.secret;
  // Said once for the job (by node 0), not once per node of an mpirun.
  if (w.nodes > 1 && w.nodeRank === 0) {
    log('warning: NBC_SECRET is not set; using a secret derived from the job id, which does not ' +
      'keep other local users out. Set NBC_SECRET to 64 hex digits (e.g. from `nbc secret`) on every node.');
  }
  return w.nodes > 1 ? createHash('sha256').update(`nbcoll-derived|${w.jobId}`).digest() : randomBytes(32);
}

/** Refuses what this node's options cannot run: links emulated by the engines' queue over UCX, UCX where it is missing. */
export function checkTransport(o: NodeOptions, noUcx: string | null): TransportChoice {
  const choice = o.transport ?? 'auto';
  const { nodeRank, nodes } = o.wireup;
  if (choice === 'ucx' && o.link !== undefined && wireModeFromEnv() === 'queue') {
    throw new NbcArgError(`Cannot emulate links (--link) with --transport ucx under NBC_WIRE=queue: the queue emulates the engines' TCP links only; expected --transport tcp, or NBC_WIRE=stamp`);
  }
  if (choice === 'ucx' && noUcx !== null && nodes > 1) {
    throw new NbcLaunchError(`Cannot use --transport ucx on node ${nodeRank}: ${noUcx}; expected --transport tcp or auto`);
  }
  return choice;
}

/** What the wire-up learnt: ranks per node, and whether the job runs over UCX. */
export interface Wired {
  counts: number[];
  useUcx: boolean;
}

/**
 * Listens, meets the other nodes through the rendezvous, and dials nothing yet (links connect
 * on first use). What it opens goes into `life` at once, so a failure meanwhile closes it.
 * `broadcast` hears the rendezvous's BROADCASTs, from before the table arrives.
 */
export async function wireUp(o: NodeOptions, life: NodeLife, secret: Buffer, choice: TransportChoice, noUcx: string | null,
  wireYield: (() => void) | null, broadcast: (payload: unknown) => void): Promise<Wired> {
  const { nodeRank, nodes } = o.wireup;
  // The engines' timer queue (net/emulate.ts) emulates the link only where NBC_WIRE=queue asks
  // for the earlier instrument; otherwise the wire's stamps do (p2p/wire.ts).
  const emulate = wireModeFromEnv() === 'queue' ? o.link : undefined;
  const links = new LinkManager({ nodeId: nodeRank, secret, host: o.bindHost, log: rawLog, emulate, yieldCore: wireYield });
  life.links = links;
  const addr = await links.listen();
  let masterPort = o.wireup.masterPort;
  if (nodeRank === 0) {
    const server = new RendezvousServer({ secret, nodes, host: o.bindHost ?? '127.0.0.1', port: masterPort, log: rawLog, silenceMs: o.silenceMs });
    life.server = server;
    // A node that stopped answering: the server aborted the job; this node says why.
    server.on('silent', (m) => life.fail(m.reason, m.exitCode));
    masterPort = await server.listen();
    toParent({ type: 'master', port: masterPort });
  }
  const client = new RendezvousClient();
  life.client = client;
  client.on('abort', (m) => life.follow(m.exitCode));
  // Listening before connect: a BROADCAST may arrive in the same read as the table.
  client.on('broadcast', broadcast);
  client.on('lost', (err: Error) => life.fail(`node ${nodeRank}: lost contact with the rendezvous master (node 0): ${err.message}`, 1));
  // Node 0 reaches its own server where it listens. Links that listen on every interface are
  // dialled, by node 0's peers, at the master address, and, for the others, where the server
  // sees their connection (rendezvous.ts).
  const serverHost = o.bindHost !== undefined && !isWildcard(o.bindHost) ? o.bindHost : '127.0.0.1';
  const advertised = nodeRank === 0 && isWildcard(addr.host) ? o.wireup.masterAddr : addr.host;
  const table = await client.connect({
    secret, nodeId: nodeRank, host: nodeRank === 0 ? serverHost : o.wireup.masterAddr, port: masterPort,
    hello: { host: advertised, port: addr.port, nranks: o.ranks, extra: { ucx: noUcx === null && (o.link === undefined || wireModeFromEnv() === 'stamp'), transport: choice } },
    timeoutMs: 30_000,
    silenceMs: o.silenceMs,
  });
  client.on('shutdown', () => life.follow(0));
  links.on('peer-lost', (peer: number, err: Error) => {
    if (!life.ending) life.fail(`node ${nodeRank}: lost the link to node ${peer}: ${err.message}`, 1);
  });
  links.setPeers(table.nodes.map((n) => ({ nodeId: n.nodeId, host: n.host, port: n.port })));
  // The transport is a job-wide decision, taken from every node's HELLO: UCX when any node
  // asks for it (and then every node must have it), or 'auto' everywhere and every node can.
  const extras = table.nodes.map((n) => (typeof n.extra === 'object' && n.extra !== null ? n.extra : {}) as { ucx?: unknown; transport?: unknown });
  const wantsUcx = extras.findIndex((e) => e.transport === 'ucx');
  const wantsTcp = extras.some((e) => e.transport === 'tcp');
  const lacking = extras.findIndex((e) => e.ucx !== true);
  if (wantsUcx >= 0 && lacking >= 0) {
    throw new NbcLaunchError(`Cannot use the UCX transport that node ${wantsUcx} asked for: node ${lacking} cannot (no UCX in its native addon, or --link set there under NBC_WIRE=queue); expected --transport tcp or auto`);
  }
  return { counts: table.nodes.map((n) => n.nranks), useUcx: wantsUcx >= 0 || (!wantsTcp && lacking < 0) };
}

/** Most bytes of one UCX worker address accepted from the wire-up. */
const MAX_UCX_ADDRESS_BYTES = 16 * 1024;

/**
 * The UCX wire-up: this node's ranks' worker addresses (and its engine's) go to every node,
 * and once every node's are in, `onComplete`'s callback gets the table (world rank -> address, null
 * for this node's ranks) and the engines' (node -> address, null for this one).
 */
export class UcxWireup {
  private readonly remote = new Map<number, { addresses: string[]; engine: string }>();
  private readonly local: Uint8Array[] = [];
  private localCount = 0;
  private complete: (table: Array<Uint8Array | null>, engines: Array<Uint8Array | null>) => void = () => {};

  constructor(private readonly nodes: number, private readonly nodeRank: number, private readonly ranks: number) {}

  /** Where the tables go (the node sets it where the job runs over UCX). */
  onComplete(fn: (table: Array<Uint8Array | null>, engines: Array<Uint8Array | null>) => void): void {
    this.complete = fn;
  }

  /** A node's addresses, from a rendezvous BROADCAST (the first for each node counts). */
  heard(payload: unknown): void {
    const got = parseUcxAddresses(payload, this.nodes);
    if (got === null || this.remote.has(got.node)) return;
    this.remote.set(got.node, got);
    if (this.remote.size < this.nodes) return;
    const decode = (a: string): Uint8Array => new Uint8Array(Buffer.from(a, 'base64'));
    const table: Array<Uint8Array | null> = [];
    for (let n = 0; n < this.nodes; n++) {
      for (const a of this.remote.get(n)!.addresses) table.push(n === this.nodeRank ? null : decode(a));
    }
    this.complete(table, Array.from({ length: this.nodes }, (_, n) => (n === this.nodeRank ? null : decode(this.remote.get(n)!.engine))));
  }

  /** Local rank `i`'s worker address; once every local rank has one, the node's go to every node. */
  localAddress(i: number, address: Uint8Array, client: RendezvousClient, engine: Uint8Array): void {
    this.local[i] = address;
    if (++this.localCount < this.ranks) return;
    client.broadcast({ ucx: {
      node: this.nodeRank,
      addresses: this.local.map((a) => Buffer.from(a).toString('base64')),
      engine: Buffer.from(engine).toString('base64'),
    } });
  }
}

/** A relayed KIND_FIN (engine.ts relayFinished): rank `rank` has finished; for `nodes`. */
export function parseFinished(payload: unknown, nodes: number): { rank: number; nodes: number[] } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const f = (payload as { fin?: unknown }).fin;
  if (typeof f !== 'object' || f === null) return null;
  const { rank, nodes: to } = f as { rank?: unknown; nodes?: unknown };
  const isNode = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < nodes;
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 0 || !Array.isArray(to) || !to.every(isNode)) return null;
  return { rank, nodes: to };
}

/**
 * A node's UCX worker addresses from a rendezvous BROADCAST ({ ucx: { node, addresses } }),
 * checked; null for any other payload.
 */
function parseUcxAddresses(payload: unknown, nodes: number): { node: number; addresses: string[]; engine: string } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const u = (payload as { ucx?: unknown }).ucx;
  if (typeof u !== 'object' || u === null) return null;
  const { node, addresses, engine } = u as { node?: unknown; addresses?: unknown; engine?: unknown };
  const isAddress = (a: unknown): a is string => typeof a === 'string' && a.length > 0 && a.length <= MAX_UCX_ADDRESS_BYTES * 4 / 3 + 4;
  if (typeof node !== 'number' || !Number.isInteger(node) || node < 0 || node >= nodes) return null;
  if (!Array.isArray(addresses) || !addresses.every(isAddress) || !isAddress(engine)) return null;
  return { node, addresses: addresses as string[], engine };
}
