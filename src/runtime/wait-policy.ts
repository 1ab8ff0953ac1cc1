/**
 * How a node's threads wait, decided from how this host's cores are shared: the job's ranks on
 * it (NBC_HOST_RANKS) and its node engines (NBC_HOST_NODES; both set by nbc run). Two steps:
 * `hostCores` before the wire-up (the links' emulated wire needs the yield), `waitPolicy` once
 * the transport is known (on TCP the engines carry every message between nodes and need cores
 * too). The figures behind each number are in BENCHMARKS.md, under the names quoted.
 */
import { availableParallelism } from 'node:os';
import { openHostBoard } from './host-board.js';
import { NbcArgError } from '../errors.js';
import { nativeAddon } from './native.js';
import type { HostBoard } from '../shm/host-board.js';

/**
 * How long a waiting rank on an oversubscribed host calls sched_yield between polls before it
 * parks (with the native addon; BENCHMARKS.md, "Waits that yield").
 */
export const DEFAULT_YIELD_US = 1000;

/**
 * How long an engine with a core of its own polls after its last work before parking (us):
 * long enough to span the gaps inside a collective and between back-to-back calls, short
 * enough that an idle job leaves its cores within a millisecond.
 */
export const DEFAULT_ENGINE_SPIN_US = 1000;

/**
 * How long an engine that shares its core with ranks polls after its last work before parking,
 * yielding the core between turns (us): on 2 nodes of 1 rank on 2 cores, a TCP message of 8 B
 * then costs 50 us one way against 92 us for an engine that parks at once (medians of 5
 * interleaved rounds), a parked engine's event-loop wake-up on each side being most of the
 * difference (BENCHMARKS.md, "The pure-JS path: engines that yield").
 */
export const DEFAULT_ENGINE_YIELD_US = 200;

/** How this host's cores are shared, known before the wire-up. */
export interface HostCores {
  hostRanks: number;
  hostNodes: number;
  /** Every rank and engine of the host has a core of its own. */
  engineHasCore: boolean;
  /** Where the engines have no core of their own: gives the core away (the addon's sched_yield). */
  yieldCore: (() => void) | null;
  /** The job's host board (NBC_HOST_BOARD), where its nodes share this host and the engines yield. */
  boardPath: string | undefined;
  board: HostBoard | null;
}

export function hostCores(ranks: number): HostCores {
  const hostRanks = Number(process.env.NBC_HOST_RANKS ?? ranks);
  const hostNodes = Number(process.env.NBC_HOST_NODES ?? 1);
  const engineHasCore = hostRanks + hostNodes <= availableParallelism();
  // Where the engines have no core of their own, whatever in this process waits without work
  // gives its core away (sched_yield, with the native addon) rather than hold it.
  const yieldCore = engineHasCore ? null : nativeAddon().addon?.schedYield ?? null;
  // Where the job's other nodes share this host too (nbc run), their ranks must not compute
  // either: the host board says whether any rank of the host does (shm/host-board.ts).
  const boardPath = process.env.NBC_HOST_BOARD || undefined;
  const board = yieldCore === null ? null : openHostBoard(hostRanks, -1, boardPath);
  return { hostRanks, hostNodes, engineHasCore, yieldCore, boardPath, board };
}

/** How the node's ranks and engine wait (RankBoot's and EngineWait's numbers). */
export interface WaitPolicy {
  /** A waiting rank's spin before it parks (us). */
  spinUs: number;
  /** The yield phase of a rank's wait on a crowded host (us). */
  yieldUs: number;
  /** Waiting ranks yield from their first idle poll. */
  yieldFromIdle: boolean;
  /** More of the job's ranks on this host than cores. */
  oversubscribed: boolean;
  /** How long the engine polls on after its last work (us). */
  engineSpinUs: number;
  /** A rank's spin waiting for an offloaded collective, where the engine has a core; else unset. */
  offloadSpinUs: number | undefined;
}

/** What the options may override (NodeOptions). */
export interface WaitOverrides {
  spinUs?: number;
  yieldUs?: number;
  engineSpinUs?: number;
}

export function waitPolicy(o: WaitOverrides, cores: HostCores, nodes: number, useUcx: boolean): WaitPolicy {
  const cpus = availableParallelism();
  // Spin budget before parking. When the job's ranks on this host fit its cores, waiting ranks
  // poll for up to 2 ms, as MPI ranks busy-poll: a parked thread takes tens of microseconds to
  // wake here, which would otherwise dominate every round trip. On an oversubscribed host
  // (e.g. 16 ranks on 2 cores) they spin 20 us and park, so waiting never starves the ranks
  // that have work. Measured in BENCHMARKS.md ("Waiting"); NBC_SPIN_US overrides.
  const oversubscribed = cores.hostRanks > cpus;
  // On the TCP transport every message between nodes passes through both nodes' engines, so
  // the engines need cores too: a rank that spins 2 ms while its engine waits for a core
  // delays the very message it waits for. Counting the host's engines (NBC_HOST_NODES, set by
  // nbc run) decides how waits behave (BENCHMARKS.md, "The pure-JS path between nodes"). With
  // UCX the engines are off the data path.
  const hostEngines = nodes > 1 && !useUcx ? cores.hostNodes : 0;
  const crowded = cores.hostRanks + hostEngines > cpus;
  // Crowded, with the native addon, a waiting rank yields its core from its first idle poll
  // (BENCHMARKS.md, "Waits that yield": spinning first only delays the rank it waits for), for
  // NBC_YIELD_US before it parks.
  const yieldFromIdle = crowded && nativeAddon().addon !== null;
  const spinUs = o.spinUs ?? (crowded ? (yieldFromIdle ? 0 : 20) : 2000);
  // Where every rank and every engine of this host has a core of its own (seed 000's NIC
  // processor), the engine keeps polling for a while after it last had work instead of parking,
  // and a rank waiting for an offloaded collective spins as long as any wait: neither then pays
  // a thread wake-up per step (BENCHMARKS.md, "With a core for every engine"). Elsewhere both
  // park at once, since their spin would take the core that the other needs.
  // On a crowded host whose engines carry the TCP traffic, an engine that parks costs every
  // message between nodes an event-loop wake-up on each side; with the addon it polls on for a
  // while instead, while a rank of its node waits, handing its core to any thread with work
  // between turns.
  const engineSpinUs = o.engineSpinUs ??
    (cores.engineHasCore ? DEFAULT_ENGINE_SPIN_US : cores.yieldCore !== null && hostEngines > 0 ? DEFAULT_ENGINE_YIELD_US : 0);
  return {
    spinUs, yieldUs: o.yieldUs ?? DEFAULT_YIELD_US, yieldFromIdle, oversubscribed, engineSpinUs,
    offloadSpinUs: cores.engineHasCore ? spinUs : undefined,
  };
}

/**
 * Whether a thread of the job reads a rank's waits (its kWaiting count and its host-board
 * word): an engine that shares its core with the ranks and polls on only while one waits
 * (`engineSpinUs` with a yield function), and on a job of several nodes their threads that
 * yield (the engines between TCP turns, the emulated wires), which share this host's board.
 * Where none does, the ranks skip both writes: contended words at every idle step of a crowded
 * wait (docs/shm.md, "Waiting").
 */
export function waitsWatched(policy: Pick<WaitPolicy, 'engineSpinUs'>, cores: Pick<HostCores, 'yieldCore'>, nodes: number): boolean {
  return (policy.engineSpinUs > 0 && cores.yieldCore !== null) || nodes > 1;
}

/**
 * Whether a job's communicators of every rank run their blocking barrier and small allreduce
 * on the node's flag boards (coll/flat.ts), from NBC_FLAT: `auto` (the default) where the job has one
 * node and more ranks than the host has cores (BENCHMARKS.md, "Four ranks on two cores": a
 * third of the rings' time with the native addon's yield, two thirds without it), `1` on any
 * one-node job, `0` never. A job of several nodes keeps the rings.
 */
export function flatBoardWanted(env: Record<string, string | undefined>, policy: Pick<WaitPolicy, 'oversubscribed'>, nodes: number): boolean {
  const v = env.NBC_FLAT ?? 'auto';
  if (v !== 'auto' && v !== '0' && v !== '1') {
    throw new NbcArgError(`NBC_FLAT '${v}': expected auto (the flag board where a one-node job has more ranks than cores, the default), 1 (on any one-node job) or 0 (never)`);
  }
  return nodes === 1 && (v === '1' || (v === 'auto' && policy.oversubscribed));
}
