/** Receive from any source. */
export const ANY_SOURCE = -2;
/** Receive with any tag. */
export const ANY_TAG = -1;
/** The null process: sends to it and receives from it complete at once, moving nothing. */
export const PROC_NULL = -1;
/** Largest tag a user may send with. */
export const TAG_UB = 0x7fffffff;
/**
 * Stands for "the other buffer" in collectives, as MPI_IN_PLACE does: allreduce(IN_PLACE, buf)
 * reduces buf in place (and so does allreduce(buf, IN_PLACE)); see each collective.
 */
export const IN_PLACE: unique symbol = Symbol.for('nbcoll.IN_PLACE');
export type InPlace = typeof IN_PLACE;
