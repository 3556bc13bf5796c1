/**
 * `read_file`'s reading: as UTF-8 text (the default; whole or a line range, cut at the output budget), or
 * as base64 (the whole file, refused above the output budget). Text that is not valid UTF-8 is refused,
 * naming the path and `encoding: "base64"`, never returned with replacement characters.
 */
import type { SandboxFiles } from '@aleph/sandbox';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** The largest file `read_file` reads (a line range of a larger one is refused too: use a command). */
const MAX_READ_BYTES = 64 * 1024 * 1024;

/** What `read_file` was asked for. */
export interface ReadRequest {
  readonly path: string;
  readonly encoding: 'utf-8' | 'base64';
  readonly startLine?: number | undefined;
  readonly endLine?: number | undefined;
  /** The output budget in bytes (`max_output_bytes`). */
  readonly budget: number;
}

/** Cuts `t` to `budget` bytes of UTF-8, saying so. */
function withinBudget(t: string, budget: number): string {
  const bytes = Buffer.from(t, 'utf8');
  if (bytes.byteLength <= budget) return t;
  const kept = new TextDecoder().decode(bytes.subarray(0, budget));
  return `${kept}\n[truncated at ${budget} bytes of ${bytes.byteLength}: read a line range with startLine and endLine]`;
}

function isUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

async function readText(files: SandboxFiles, request: ReadRequest): Promise<string> {
  const content = await files.readTextFile(request.path, {
    maxBytes: MAX_READ_BYTES,
    ...(request.startLine === undefined ? {} : { startLine: request.startLine }),
    ...(request.endLine === undefined ? {} : { endLine: request.endLine }),
  });
  // readTextFile decodes leniently: a replacement character is either in the file (valid UTF-8, kept)
  // or stands for bytes that are not UTF-8 (refused). Only then are the bytes read again to tell which.
  if (
    content.includes('\uFFFD') &&
    !isUtf8(await files.readFile(request.path, { maxBytes: MAX_READ_BYTES }))
  ) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `path: ${JSON.stringify(request.path)} is not UTF-8 text; read it with encoding: "base64" (the whole file, as base64)`,
    );
  }
  return withinBudget(content, request.budget);
}

async function readBase64(files: SandboxFiles, request: ReadRequest): Promise<string> {
  const range =
    request.startLine !== undefined ? 'startLine' : request.endLine !== undefined ? 'endLine' : '';
  if (range !== '') {
    throw new McpError(
      ErrorCode.InvalidParams,
      `${range}: a line range is for text; with encoding: "base64" read_file returns the whole file (drop ${range}, or read it with encoding: "utf-8")`,
    );
  }
  const bytes = await files.readFile(request.path, { maxBytes: MAX_READ_BYTES });
  const encoded = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  if (encoded.length > request.budget) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `path: ${JSON.stringify(request.path)} is ${bytes.byteLength} bytes, ${encoded.length} in base64, over the output budget of ${request.budget} bytes (max_output_bytes); copy or inspect it with a command (execute) instead`,
    );
  }
  return encoded;
}

/** Reads what `request` asks for from `files`, as the text `read_file` returns. */
export function readForTool(files: SandboxFiles, request: ReadRequest): Promise<string> {
  return request.encoding === 'base64' ? readBase64(files, request) : readText(files, request);
}
