// What a model reads from a framework adapter: the sandbox's description (tier and its gaps, workspace,
// network, how to ask for more), the notes after a command's output (timeout, truncation, the sandbox's
// own refusals), a denial as text it can act on, and the exit code a shell would report.
import { constants } from 'node:os';
import {
  isAlephError,
  type ProbeResult,
  type SandboxCapabilities,
  type SandboxDenial,
  type SandboxOutput,
} from '@aleph/sandbox-core';
import { changeNote } from './adapter-changes.js';
import type { AlephConfig } from './config-shape.js';

/** What {@link describeAdapterSandbox} describes. */
export interface AdapterSandboxFacts {
  readonly config: AlephConfig;
  readonly workspace: string;
  readonly probe: ProbeResult | undefined;
  readonly baseline: SandboxCapabilities;
}

function networkText(baseline: SandboxCapabilities): string {
  const n = baseline.network;
  if (n.kind === 'none') return 'Network: none (no host can be reached).';
  if (n.kind === 'allowAll') return 'Network: unrestricted.';
  return `Network: only ${n.hosts.join(', ')}, through a filtering proxy (HTTP_PROXY/HTTPS_PROXY are set); every other host is refused.`;
}

/**
 * The sandbox in words, for a model's instructions: driver and tier, what is not enforced here, the
 * workspace and the paths granted, the network, subprocesses, the timeout, and that anything more needs
 * a person's approval.
 */
export function describeAdapterSandbox(facts: AdapterSandboxFacts): string {
  const { baseline, probe, workspace, config } = facts;
  const lines = [
    `Commands run in the Aleph sandbox (${probe?.driver ?? 'unknown'} driver${probe === undefined ? '' : `, ${probe.tier}`}), each with /bin/sh -c.`,
    `Workspace: ${workspace} (the working directory; relative paths resolve there; it is read-write).`,
    `Files: system directories are read-only${baseline.fsRead.length > 0 ? `; also readable: ${baseline.fsRead.join(', ')}` : ''}${baseline.fsWrite.length > 0 ? `; also writable: ${baseline.fsWrite.join(', ')}` : ''}; the rest of the host is not visible. Git hooks/config and agent settings stay read-only.`,
    networkText(baseline),
    `Subprocesses: ${baseline.spawnSubprocess ? 'allowed' : 'not allowed'}. Timeout: ${config.defaultTimeoutSeconds} s per command (the whole process tree is then killed, exit code 124).`,
    'Anything beyond this (another host, a path outside the workspace) must be asked for, and a person approves or denies it; a denial says what was refused.',
  ];
  const gaps = probe?.notEnforced ?? [];
  // Each gap is a clause without a full stop: one list, '; ' between them.
  if (gaps.length > 0) lines.push(`Not enforced here: ${gaps.map((g) => g.replace(/\.$/, '')).join('; ')}.`);
  return lines.join('\n');
}

/**
 * The exit code a shell would report: the command's own, 124 after the timeout, 128+N after signal N
 * (137 after a kill).
 */
export function shellExitCode(out: SandboxOutput): number {
  if (out.timedOut) return 124;
  if (out.exitCode !== null) return out.exitCode;
  const number = out.signal === null ? undefined : constants.signals[out.signal as NodeJS.Signals];
  return 128 + (number ?? 9);
}

/** The sandbox's own refusals during a run (`details.denials`), when there are any. */
export function denialsOf(out: SandboxOutput): SandboxDenial[] {
  const list = out.details?.denials;
  return Array.isArray(list) ? (list as SandboxDenial[]) : [];
}

/**
 * Lines to show after a command's output: the timeout, output beyond the budget, a kill, each of the
 * sandbox's refusals with what would allow it, and what the run changed with its run id (`changeNote`).
 */
export function outputNotes(out: SandboxOutput, timeoutSeconds?: number): string[] {
  const notes: string[] = [];
  if (out.timedOut) {
    notes.push(
      `aleph-sandbox: timed out${timeoutSeconds === undefined ? '' : ` after ${timeoutSeconds} s`}; every process of the command was killed`,
    );
  } else if (out.details?.killedBy === 'kill') {
    notes.push('aleph-sandbox: the command was killed');
  }
  if (out.stdoutTruncated || out.stderrTruncated) {
    notes.push('aleph-sandbox: output beyond the output budget was not kept');
  }
  for (const d of denialsOf(out)) {
    notes.push(`aleph-sandbox: denied ${d.kind} ${d.target} (${d.reason}); allowed with ${d.allowWith}`);
  }
  const changed = changeNote(out);
  if (changed !== undefined) notes.push(`aleph-sandbox: ${changed}`);
  return notes;
}

/** The codes of a refusal by the sandbox's pipeline (policy, rate limit, capabilities and approval). */
export const DENIAL_CODES = ['ALEPH_POLICY_DENIED', 'ALEPH_RATE_LIMITED', 'ALEPH_CAPABILITY_DENIED'] as const;

/**
 * A pipeline refusal as one line a model can act on (code, what was refused, what would allow it), or
 * undefined when `error` is not one.
 */
export function denialText(error: unknown, howToAsk?: string): string | undefined {
  if (!isAlephError(error) || !(DENIAL_CODES as readonly string[]).includes(error.code)) return undefined;
  let hint = '';
  if (error.code === 'ALEPH_POLICY_DENIED') {
    hint = ' The command policy refuses this kind of command whatever is approved; do it another way.';
  } else if (error.code === 'ALEPH_RATE_LIMITED') {
    hint = ' Too many commands too fast; wait a moment and retry.';
  } else if (howToAsk !== undefined) {
    hint = ` ${howToAsk}`;
  }
  const sentence = /[.!?]$/.test(error.message) ? error.message : `${error.message}.`;
  return `aleph-sandbox: ${error.code}: ${sentence}${hint}`;
}
