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

/**
 * Internal: the sign bit of a message's tag marks data sent by a collective that had already
 * failed on its sender (MPICH's error bit in the tag). Schedules "check and continue": a rank
 * whose receive failed still sends what its peers wait for, so nobody hangs, but the data is
 * not valid, and the receive that takes it fails with NBC_ERR_PEER_FAILED instead of
 * completing with it. User tags are 0..TAG_UB, so the bit is never theirs; matching ignores it.
 */
export const TAG_INVALID = -0x80000000;
/** The tag bits that matching compares. */
export const TAG_BITS = 0x7fffffff;

/**
 * Ends the message of an error that only follows from another one elsewhere (data flagged
 * invalid by a collective that had already failed on its sender, or the job aborting): the
 * node reports such an error a moment late, so that the first error, where it happened, names
 * the cause (runtime/node-main.ts).
 */
export const REPORTED_ELSEWHERE = 'the first error is reported where it happened';
