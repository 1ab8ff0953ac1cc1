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
  /** A request was used in a state that does not allow it (e.g. a persistent one started twice). */
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

export class NbcTruncateError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.TRUNCATE, message, options);
    this.name = 'NbcTruncateError';
  }
}

export class NbcRankError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.RANK, message, options);
    this.name = 'NbcRankError';
  }
}

export class NbcRootError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.ROOT, message, options);
    this.name = 'NbcRootError';
  }
}

export class NbcCountError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.COUNT, message, options);
    this.name = 'NbcCountError';
  }
}

export class NbcTypeError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.TYPE, message, options);
    this.name = 'NbcTypeError';
  }
}

export class NbcOpError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.OP, message, options);
    this.name = 'NbcOpError';
  }
}

export class NbcCommError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.COMM, message, options);
    this.name = 'NbcCommError';
  }
}

export class NbcTagError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.TAG, message, options);
    this.name = 'NbcTagError';
  }
}

export class NbcArgError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.ARG, message, options);
    this.name = 'NbcArgError';
  }
}

export class NbcPeerFailedError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.PEER_FAILED, message, options);
    this.name = 'NbcPeerFailedError';
  }
}

export class NbcTimeoutError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.TIMEOUT, message, options);
    this.name = 'NbcTimeoutError';
  }
}

export class NbcAuthError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.AUTH, message, options);
    this.name = 'NbcAuthError';
  }
}

export class NbcNoMemError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.NO_MEM, message, options);
    this.name = 'NbcNoMemError';
  }
}

export class NbcRequestError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.REQUEST, message, options);
    this.name = 'NbcRequestError';
  }
}

export class NbcLaunchError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.LAUNCH, message, options);
    this.name = 'NbcLaunchError';
  }
}

export class NbcInternalError extends NbcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.INTERNAL, message, options);
    this.name = 'NbcInternalError';
  }
}
