/**
 * The sandbox sessions of one MCP connection: the connection's own (one connection is one session), and
 * those the client names with a tool's `session` argument. Handles are opened once and closed with the
 * connection. The connection's own session without `--session` has a random id, so nothing can use it
 * again: it leaves nothing behind (on Linux its HOME is removed, and its workspace too unless it is the
 * user's `--workspace`).
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AlephSandbox, SandboxSession } from '@aleph/sandbox';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** At most this many sessions per connection (its own included). */
export const MAX_SESSIONS = 32;

/** What a client may name a session: letters, digits and `._:@-`, 1 to 128 of them. */
export const SESSION_NAME = /^[A-Za-z0-9._:@-]{1,128}$/;

export class SessionRegistry {
  readonly #sandbox: AlephSandbox;
  readonly #handles = new Map<string, SandboxSession>();
  /** The connection's session id is random (nothing can come back to it). */
  readonly #random: boolean;
  /** Its workspace is the sandbox's (under `workspace_root`), not the user's directory. */
  readonly #ownWorkspace: boolean;
  /** The connection's own session id. */
  readonly defaultId: string;

  /**
   * `sessionId` is the connection's session (default: a new random id). When it is random, its HOME is
   * removed by {@link removeScratch}, and its workspace too when the sandbox keeps workspaces under its
   * root (`ownWorkspace`: no `--workspace`).
   */
  constructor(sandbox: AlephSandbox, sessionId: string | undefined, ownWorkspace: boolean) {
    this.#sandbox = sandbox;
    this.defaultId = sessionId ?? `mcp-${randomUUID()}`;
    this.#random = sessionId === undefined;
    this.#ownWorkspace = ownWorkspace;
  }

  /** The handle of `name` (a session the client named), or of the connection's own session. */
  get(name: string | undefined): SandboxSession {
    const id = name ?? this.defaultId;
    let handle = this.#handles.get(id);
    if (handle === undefined) {
      if (this.#handles.size >= MAX_SESSIONS) {
        throw new McpError(
          ErrorCode.InvalidParams,
          `session: this connection already uses ${MAX_SESSIONS} sessions; reuse one of them (or omit session for the connection's own)`,
        );
      }
      handle = this.#sandbox.session(id);
      this.#handles.set(id, handle);
    }
    return handle;
  }

  /** True when `id` is a session this connection used. */
  has(id: unknown): boolean {
    return typeof id === 'string' && this.#handles.has(id);
  }

  /** Closes every handle (killing what they run). */
  async close(): Promise<void> {
    await Promise.all([...this.#handles.values()].map((h) => h.close()));
  }

  /**
   * After the sandbox is disposed, when the connection's session id was random: removes its HOME (the
   * Linux driver's `<homeRoot>/<session key>`) and, unless it was the user's `--workspace`, its workspace.
   */
  async removeScratch(): Promise<void> {
    if (!this.#random) return;
    const dirs = this.#ownWorkspace ? [this.#sandbox.workspacePath(this.defaultId)] : [];
    if (this.#sandbox.driver?.name === 'linux') {
      const homes = this.#sandbox.config.linux.homeRoot ?? path.join(os.homedir(), '.aleph', 'homes');
      dirs.push(path.join(homes, sessionKeyToFilename(this.defaultId)));
    }
    // Nothing runs any more (the sandbox was disposed), so no command can swap a directory under rm,
    // and rm never follows links.
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
}
