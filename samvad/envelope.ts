/**
 * SAMVAD v1.2 envelopes (spec section 5): the request and response shapes,
 * the standard error codes with their HTTP statuses, and checks of both
 * envelopes with ajv.
 *
 * @module
 */

import { Ajv, type ValidateFunction } from "npm:ajv@^8.20.0";
import { errorText } from "../wire/error_text.ts";

/** The three communication modes. */
export type SamvadMode = "sync" | "async" | "stream";

/** A request envelope (the signed POST body). */
export interface RequestEnvelope {
  /** The caller's `agent://` id. */
  from: string;
  /** The callee's `agent://` id. */
  to: string;
  /** The SAMVAD skill id to call. */
  skill: string;
  /** The communication mode. */
  mode: SamvadMode;
  /** A unique value, against replay. */
  nonce: string;
  /** When the request was made (ISO 8601). */
  timestamp: string;
  /** The trace id. */
  traceId: string;
  /** This request's span id. */
  spanId: string;
  /** The caller's span, if any. */
  parentSpanId?: string | null;
  /** A delegation token, if acting for another agent. */
  delegationToken?: string | null;
  /** The auth scheme and token, for `authenticated` skills. */
  auth?: { scheme: string; token?: string } | null;
  /** Async only: where to POST the signed result. */
  callbackUrl?: string | null;
  /** The skill's input. */
  payload?: Record<string, unknown> | null;
}

/** An error as envelopes and task records carry it. */
export interface SamvadErrorBody {
  /** The standard code. */
  code: SamvadErrorCode;
  /** What went wrong. */
  message: string;
}

/** A response envelope. */
export interface ResponseEnvelope {
  /** The request's trace id, echoed. */
  traceId?: string;
  /** The responder's span id. */
  spanId?: string;
  /** Whether the call succeeded. */
  status: "ok" | "error";
  /** The skill's output, when ok. */
  result?: Record<string, unknown>;
  /** The error, when not. */
  error?: SamvadErrorBody;
}

/**
 * The standard error codes and their HTTP statuses (spec 5.3).
 *
 * @example
 * ```ts
 * import { ERROR_STATUS } from "./envelope.ts";
 * console.log(ERROR_STATUS.REPLAY_DETECTED); // 401
 * ```
 */
export const ERROR_STATUS = {
  AUTH_FAILED: 401,
  REPLAY_DETECTED: 401,
  SKILL_NOT_FOUND: 404,
  SCHEMA_INVALID: 400,
  INJECTION_DETECTED: 400,
  DELEGATION_EXCEEDED: 400,
  RATE_LIMITED: 429,
  TOKEN_BUDGET_EXCEEDED: 429,
  AGENT_UNAVAILABLE: 500,
} as const;

/** One of SAMVAD's standard error codes. */
export type SamvadErrorCode = keyof typeof ERROR_STATUS;

/**
 * A failure with a SAMVAD error code: thrown by checks, turned into an
 * error envelope with the code's HTTP status.
 *
 * @example
 * ```ts
 * import { SamvadError } from "./envelope.ts";
 * const e = new SamvadError("SKILL_NOT_FOUND", "no skill x");
 * console.log(e.status, e.toJSON().code); // 404 SKILL_NOT_FOUND
 * ```
 */
export class SamvadError extends Error {
  /** The standard code. */
  readonly code: SamvadErrorCode;

  /** An error with the standard `code` and a one-line `message`. */
  constructor(code: SamvadErrorCode, message: string) {
    super(message);
    this.name = "SamvadError";
    this.code = code;
  }

  /** The HTTP status of the code. */
  get status(): number {
    return ERROR_STATUS[this.code];
  }

  /** The `error` member of an envelope. */
  toJSON(): SamvadErrorBody {
    return { code: this.code, message: this.message };
  }
}

/**
 * The error body of anything thrown: a {@link SamvadError} keeps its code,
 * anything else is AGENT_UNAVAILABLE.
 *
 * @example
 * ```ts
 * import { errorBodyOf } from "./envelope.ts";
 * console.log(errorBodyOf(new Error("boom")).code); // AGENT_UNAVAILABLE
 * ```
 */
export function errorBodyOf(error: unknown): SamvadErrorBody {
  if (error instanceof SamvadError) return error.toJSON();
  return {
    code: "AGENT_UNAVAILABLE",
    message: errorText(error),
  };
}

const AGENT_ID = { type: "string", pattern: "^agent://[^/\\s]+$" };
const NULLABLE_STRING = { type: ["string", "null"] };

const REQUEST_SCHEMA = {
  type: "object",
  required: [
    "from",
    "to",
    "skill",
    "mode",
    "nonce",
    "timestamp",
    "traceId",
    "spanId",
  ],
  properties: {
    from: AGENT_ID,
    to: AGENT_ID,
    skill: { type: "string", minLength: 1, maxLength: 64 },
    mode: { enum: ["sync", "async", "stream"] },
    nonce: { type: "string", minLength: 8, maxLength: 64 },
    timestamp: { type: "string", minLength: 1 },
    traceId: { type: "string", minLength: 1 },
    spanId: { type: "string", minLength: 1 },
    parentSpanId: NULLABLE_STRING,
    delegationToken: NULLABLE_STRING,
    auth: {
      type: ["object", "null"],
      properties: { scheme: { type: "string" }, token: { type: "string" } },
    },
    callbackUrl: { type: ["string", "null"] },
    payload: { type: ["object", "null"] },
  },
};

const ERROR_SCHEMA = {
  type: "object",
  required: ["code", "message"],
  properties: {
    code: { enum: Object.keys(ERROR_STATUS) },
    message: { type: "string" },
  },
};

const RESPONSE_SCHEMA = {
  type: "object",
  required: ["status"],
  properties: {
    traceId: { type: "string" },
    spanId: { type: "string" },
    status: { enum: ["ok", "error"] },
    result: { type: "object" },
    error: ERROR_SCHEMA,
  },
  if: { properties: { status: { const: "error" } } },
  then: { required: ["error"] },
  else: { required: ["result"] },
};

let checks:
  | { request: ValidateFunction; response: ValidateFunction; ajv: Ajv }
  | undefined;

function compiled() {
  if (!checks) {
    const ajv = new Ajv({ allErrors: false, strict: false });
    checks = {
      ajv,
      request: ajv.compile(REQUEST_SCHEMA),
      response: ajv.compile(RESPONSE_SCHEMA),
    };
  }
  return checks;
}

function firstError(v: ValidateFunction, what: string): string {
  const e = v.errors?.[0];
  if (!e) return `${what} is not valid`;
  return `${what}${e.instancePath || ""} ${e.message ?? "is not valid"}`;
}

/**
 * Checks a request envelope; undefined when valid, else one line.
 *
 * @example
 * ```ts
 * import { checkRequestEnvelope } from "./envelope.ts";
 * console.log(checkRequestEnvelope({})); // envelope must have required property 'from'
 * ```
 */
export function checkRequestEnvelope(value: unknown): string | undefined {
  const { request } = compiled();
  if (request(value)) {
    const t = Date.parse((value as RequestEnvelope).timestamp);
    return Number.isNaN(t) ? "envelope/timestamp is not ISO 8601" : undefined;
  }
  return firstError(request, "envelope");
}

/**
 * Checks a response envelope; undefined when valid, else one line.
 *
 * @example
 * ```ts
 * import { checkResponseEnvelope } from "./envelope.ts";
 * console.log(checkResponseEnvelope({ status: "ok", result: {} })); // undefined
 * ```
 */
export function checkResponseEnvelope(value: unknown): string | undefined {
  const { response } = compiled();
  return response(value) ? undefined : firstError(response, "response");
}
