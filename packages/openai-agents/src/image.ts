// view_image: an image file of the workspace read through the session's file API (at most 10 MB) and
// recognised by its first bytes, as the tool output the SDK sends to the model.
import type { SandboxFiles } from '@aleph/sandbox';
import type { ToolOutputImage } from '@openai/agents';
import { UserError } from '@openai/agents';

/** The largest image view_image returns. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

/** Whether `bytes` begin (after white space, within 512 bytes) as an SVG document does. */
function looksLikeSvg(bytes: Uint8Array): boolean {
  const head = new TextDecoder().decode(bytes.subarray(0, 512)).trimStart().toLowerCase();
  return head.startsWith('<svg') || /^<\?xml[\s\S]*<svg/u.test(head);
}

/**
 * The media type of `bytes` by their signature (PNG, JPEG, GIF, WebP, BMP, TIFF, SVG by its text or, as
 * the SDK does, a `.svg`/`.svgz` name), or undefined when it is no image format the SDK sends.
 */
export function imageMediaType(bytes: Uint8Array, path = ''): string | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    bytes[8] === 0x57 &&
    bytes[9] === 0x45 &&
    bytes[10] === 0x42 &&
    bytes[11] === 0x50
  ) {
    return 'image/webp';
  }
  if (starts(0x42, 0x4d)) return 'image/bmp';
  if (starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return 'image/tiff';
  if (starts(0x49, 0x49, 0x2b, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2b)) return 'image/tiff';
  if (looksLikeSvg(bytes) || /\.svgz?$/i.test(path.trim())) return 'image/svg+xml';
  return undefined;
}

/**
 * The image at `at` (a path of the file API; `path` as the agent named it, for messages) as a tool output.
 *
 * @throws {UserError} worded as the SDK's view_image tool recognises: not found, not a file, over 10 MB,
 *   not a supported image; other refusals (a path outside the workspace) with Aleph's message.
 */
export async function readImage(files: SandboxFiles, at: string, path = at): Promise<ToolOutputImage> {
  let bytes: Uint8Array;
  try {
    bytes = await files.readFile(at, { maxBytes: MAX_IMAGE_BYTES });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ALEPH_FILE_NOT_FOUND') throw new UserError(`Image file not found: ${path}`);
    if (code === 'ALEPH_IS_A_DIRECTORY') throw new UserError(`Image path is not a file: ${path}`);
    if (code === 'ALEPH_FILE_TOO_LARGE') throw new UserError(`Image file exceeds the 10 MB limit: ${path}`);
    throw error;
  }
  const mediaType = imageMediaType(bytes, path);
  if (mediaType === undefined) {
    throw new UserError(
      `Unsupported image format: ${path} is not a supported image (PNG, JPEG, GIF, WebP, BMP, TIFF or SVG)`,
    );
  }
  return { type: 'image', image: { data: Buffer.from(bytes).toString('base64'), mediaType } };
}
