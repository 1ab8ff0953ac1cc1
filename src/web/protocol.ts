/**
 * What the page's launcher (index.ts) and its rank workers (rank.ts) say to each other.
 * Core code only: no node:* imports.
 */
import type { Placement } from '../p2p/messages.js';
import type { NodeShared } from '../shm/node-shared.js';

/** Launcher to rank: everything it needs to start (once). */
export interface WebRankBoot {
  type: 'boot';
  shared: NodeShared;
  placement: Placement;
  /** The job module's absolute URL. */
  entry: string;
  args: string[];
  eagerLimit: number;
  /** More ranks than the machine's cores (CoreConfig.oversubscribed). */
  oversubscribed: boolean;
  /** How long a blocking wait polls before it parks (us). */
  spinUs: number;
  /** Wait asynchronously through a helper worker even where Atomics.waitAsync exists. */
  waitAsyncHelper: boolean;
}

/** Rank to launcher. */
export type WebRankReport =
  | { type: 'ready'; rank: number }
  | { type: 'log'; rank: number; stream: 'out' | 'err'; text: string }
  | { type: 'result'; rank: number; result: unknown }
  | { type: 'error'; rank: number; name: string; code: string | null; message: string; stack: string | null };
