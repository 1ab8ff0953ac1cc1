/**
 * Every failure nbcoll reports is an `NbcError` with a stable `code`. Codes never change
 * meaning; new ones are only added. The list, with what each means, is in docs/errors.md.
 *
 * Messages follow one formula: what was attempted, on what, what was wrong, what was expected.
 *   "Cannot recv on communicator 0: source 9 is out of range; expected 0..3 or ANY_SOURCE"
 */

export const ErrorCode = {
  /** A message was longer than the receive buffer. */
  TRUNCATE: 'NBC_ERR_TRUNCATE',
  /** A rank argument (destination, source, peer) is out of range for the communicator. */
  RANK: 'NBC_ERR_RANK',
  /** A collective root is out of range. */
  ROOT: 'NBC_ERR_ROOT',
  /** An element count, count array or displacement array is invalid or inconsistent. */
  COUNT: 'NBC_ERR_COUNT',
  /** A buffer is not a supported typed array, or types of paired buffers differ. */
  TYPE: 'NBC_ERR_TYPE',
  /** A reduction operation is unknown or not defined for the buffer's element type. */
  OP: 'NBC_ERR_OP',
  /** A communicator is freed, not a member, or otherwise unusable for the call. */
  COMM: 'NBC_ERR_COMM',
  /** A tag is out of range (0..TAG_UB, or ANY_TAG on receives). */
  TAG: 'NBC_ERR_TAG',
  /** An argument other than the above is invalid (bad option, bad topology, bad size). */
  ARG: 'NBC_ERR_ARG',
  /** A rank, node or daemon this operation depends on has failed. */
  PEER_FAILED: 'NBC_ERR_PEER_FAILED',
  /** An operation did not complete within its deadline. */
  TIMEOUT: 'NBC_ERR_TIMEOUT',
  /** A connection failed authentication with the job secret. */
  AUTH: 'NBC_ERR_AUTH',
  /** The node's shared-memory arena has no room for the allocation. */
  NO_MEM: 'NBC_ERR_NO_MEM',
  /** A request was used in a state that does not allow it (e.g. started twice). */
  REQUEST: 'NBC_ERR_REQUEST',
  /** The launcher or wire-up could not start the job as asked. */
  LAUNCH: 'NBC_ERR_LAUNCH',
  /** A broken invariant inside nbcoll: a bug; please report it. */
  INTERNAL: 'NBC_ERR_INTERNAL',
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

export class NbcError extends Error {
  readonly code: ErrorCodeValue;
  constructor(code: ErrorCodeValue, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'NbcError';
  }
}

function subclass(code: ErrorCodeValue, name: string) {
  const C = class extends NbcError {
    constructor(message: string, options?: { cause?: unknown }) {
      super(code, message, options);
      this.name = name;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

export const NbcTruncateError = subclass(ErrorCode.TRUNCATE, 'NbcTruncateError');
export const NbcRankError = subclass(ErrorCode.RANK, 'NbcRankError');
export const NbcRootError = subclass(ErrorCode.ROOT, 'NbcRootError');
export const NbcCountError = subclass(ErrorCode.COUNT, 'NbcCountError');
export const NbcTypeError = subclass(ErrorCode.TYPE, 'NbcTypeError');
export const NbcOpError = subclass(ErrorCode.OP, 'NbcOpError');
export const NbcCommError = subclass(ErrorCode.COMM, 'NbcCommError');
export const NbcTagError = subclass(ErrorCode.TAG, 'NbcTagError');
export const NbcArgError = subclass(ErrorCode.ARG, 'NbcArgError');
export const NbcPeerFailedError = subclass(ErrorCode.PEER_FAILED, 'NbcPeerFailedError');
export const NbcTimeoutError = subclass(ErrorCode.TIMEOUT, 'NbcTimeoutError');
export const NbcAuthError = subclass(ErrorCode.AUTH, 'NbcAuthError');
export const NbcNoMemError = subclass(ErrorCode.NO_MEM, 'NbcNoMemError');
export const NbcRequestError = subclass(ErrorCode.REQUEST, 'NbcRequestError');
export const NbcLaunchError = subclass(ErrorCode.LAUNCH, 'NbcLaunchError');
export const NbcInternalError = subclass(ErrorCode.INTERNAL, 'NbcInternalError');
