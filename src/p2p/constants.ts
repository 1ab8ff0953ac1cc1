/** Receive from any source. */
export const ANY_SOURCE = -2;
/** Receive with any tag. */
export const ANY_TAG = -1;
/** The null process: sends to it and receives from it complete at once, moving nothing. */
export const PROC_NULL = -1;
/** Largest tag a user may send with. */
export const TAG_UB = 0x7fffffff;
