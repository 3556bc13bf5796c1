import type { SandboxCommand } from './command.js';
import { monotonicMs } from './internal/clock.js';
import { canonicalJson, type SessionId } from './session.js';

/** A before-hook's answer. `warn` lets the command run and records the reason in the audit. */
export type HookVerdict =
  | { readonly action: 'allow' }
  | { readonly action: 'warn'; readonly reason: string; readonly rules?: readonly string[] }
  | {
      readonly action: 'deny';
      readonly reason: string;
      /** The error code the pipeline throws; default `ALEPH_POLICY_DENIED`. */
      readonly code?: 'ALEPH_POLICY_DENIED' | 'ALEPH_RATE_LIMITED';
      readonly rules?: readonly string[];
    };

/** What a before-hook knows of a command besides the command itself. */
export interface HookContext {
  /**
   * The caller's own operation (an adapter's file helper or manifest step: a fixed program whose
   * arguments are data), not a command a model wrote. The rate limit lets it through; the policy and the
   * capability check apply as to any command.
   */
  readonly derived: boolean;
}

const OWN_COMMAND: HookContext = Object.freeze({ derived: false });

/**
 * Runs before anything else in `execute` (step 0). A `deny` stops the command before any directory is
 * created or process spawned. Hooks must not throw for a verdict; a throwing hook denies (fail closed).
 */
export interface SandboxBeforeHook {
  readonly name: string;
  before(command: SandboxCommand, context: HookContext): HookVerdict | Promise<HookVerdict>;
}

/** What {@link HookChain.runBefore} found. */
export interface HookChainResult {
  /** The first denial, if any (later hooks are not run). */
  readonly denied?: { readonly hook: string; readonly verdict: Extract<HookVerdict, { action: 'deny' }> };
  readonly warnings: readonly {
    readonly hook: string;
    readonly reason: string;
    readonly rules?: readonly string[];
  }[];
}

const ALLOW_ALL: HookChainResult = Object.freeze({ warnings: Object.freeze([]) });

/**
 * An ordered chain of before-hooks. `@aleph/sandbox` installs the command policy first, then the rate
 * limit.
 */
export class HookChain {
  readonly #hooks: SandboxBeforeHook[];

  constructor(hooks: readonly SandboxBeforeHook[] = []) {
    this.#hooks = [...hooks];
  }

  /** Appends a hook at the end of the chain. */
  add(hook: SandboxBeforeHook): this {
    this.#hooks.push(hook);
    return this;
  }

  /** The hooks, in order. */
  get hooks(): readonly SandboxBeforeHook[] {
    return this.#hooks;
  }

  /** Runs every hook in order until one denies. */
  async runBefore(command: SandboxCommand, context: HookContext = OWN_COMMAND): Promise<HookChainResult> {
    if (this.#hooks.length === 0) return ALLOW_ALL;
    let warnings: { hook: string; reason: string; rules?: readonly string[] }[] | undefined;
    for (const hook of this.#hooks) {
      let verdict: HookVerdict;
      try {
        const v = hook.before(command, context);
        verdict = isPromiseLike(v) ? await v : v;
      } catch (error) {
        verdict = {
          action: 'deny',
          reason: `hook failed: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
      if (verdict.action === 'deny')
        return { denied: { hook: hook.name, verdict }, warnings: warnings ?? [] };
      if (verdict.action === 'warn') {
        warnings ??= [];
        warnings.push(
          verdict.rules === undefined
            ? { hook: hook.name, reason: verdict.reason }
            : { hook: hook.name, reason: verdict.reason, rules: verdict.rules },
        );
      }
    }
    return warnings === undefined ? ALLOW_ALL : { warnings };
  }
}

function isPromiseLike<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown }).then === 'function';
}

/** Options of {@link RateLimitHook}. */
export interface RateLimitOptions {
  /** Bucket size: how many executions a session may burst. Default 30. */
  readonly capacity?: number;
  /** Tokens added per second. Default 2. */
  readonly refillPerSecond?: number;
  /** Most sessions tracked at once; the least recently used is forgotten first. Default 10,000. */
  readonly maxSessions?: number;
  /** Clock in milliseconds (tests inject a fake). Default: a monotonic clock. */
  readonly now?: () => number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

/**
 * A token bucket per session: each execution takes one token; an empty bucket denies with
 * `ALEPH_RATE_LIMITED`. A derived operation (see {@link HookContext}) takes none. Memory is bounded by
 * `maxSessions`.
 *
 * @example
 * ```ts
 * new HookChain([policyHook, new RateLimitHook({ capacity: 10, refillPerSecond: 1 })])
 * ```
 */
export class RateLimitHook implements SandboxBeforeHook {
  readonly name = 'rate-limit';
  readonly #capacity: number;
  readonly #refillPerMs: number;
  readonly #maxSessions: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: RateLimitOptions = {}) {
    this.#capacity = options.capacity ?? 30;
    this.#refillPerMs = (options.refillPerSecond ?? 2) / 1000;
    this.#maxSessions = options.maxSessions ?? 10_000;
    this.#now = options.now ?? monotonicMs;
    if (!(this.#capacity >= 1)) throw new RangeError('RateLimitHook capacity must be at least 1');
    if (!(this.#refillPerMs >= 0)) throw new RangeError('RateLimitHook refillPerSecond must be >= 0');
  }

  before(command: SandboxCommand, context?: HookContext): HookVerdict {
    if (context?.derived === true) return { action: 'allow' };
    return this.take(command.sessionId);
  }

  /** Takes one token for `sessionId`. */
  take(sessionId: SessionId): HookVerdict {
    const key = typeof sessionId === 'string' ? sessionId : canonicalJson(sessionId);
    const now = this.#now();
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.#capacity, updated: now };
      if (this.#buckets.size >= this.#maxSessions) {
        const oldest = this.#buckets.keys().next();
        if (!oldest.done) this.#buckets.delete(oldest.value);
      }
    } else {
      this.#buckets.delete(key);
      bucket.tokens = Math.min(this.#capacity, bucket.tokens + (now - bucket.updated) * this.#refillPerMs);
      bucket.updated = now;
    }
    this.#buckets.set(key, bucket);
    if (bucket.tokens < 1) {
      const waitMs =
        this.#refillPerMs > 0 ? Math.ceil((1 - bucket.tokens) / this.#refillPerMs) : Number.POSITIVE_INFINITY;
      return {
        action: 'deny',
        code: 'ALEPH_RATE_LIMITED',
        reason: `session exceeded ${this.#capacity} executions per burst; retry in ${
          Number.isFinite(waitMs) ? `${waitMs} ms` : 'a new session'
        }`,
      };
    }
    bucket.tokens -= 1;
    return { action: 'allow' };
  }
}
