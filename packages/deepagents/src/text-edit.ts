// Two pieces of deepagents' file-tool contract the host-side tools (file-tools.ts) keep: which files its
// read tool treats as media (sent to the model as bytes) rather than text, by extension; and the edit
// tool's string replacement (an exact, unique match unless `replaceAll`; an empty `oldString` only fills
// an empty file).
import { extname } from 'node:path';

/** The media types deepagents 1.14's read tool sends as bytes (image, audio, video, documents). */
const MEDIA: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.heic': 'image/heic',
  '.heif': 'image/heif',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.aiff': 'audio/aiff',
  '.aac': 'audio/aac',
  '.ogg': 'audio/ogg',
  '.flac': 'audio/flac',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mpeg': 'video/mpeg',
  '.mpg': 'video/mpeg',
  '.mov': 'video/quicktime',
  '.avi': 'video/x-msvideo',
  '.flv': 'video/x-flv',
  '.wmv': 'video/x-ms-wmv',
  '.3gpp': 'video/3gpp',
  '.pdf': 'application/pdf',
  '.ppt': 'application/vnd.ms-powerpoint',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** The media type deepagents gives `path` and whether it is text (SVG is text). */
export function mimeTypeOf(path: string): { readonly type: string; readonly text: boolean } {
  const ext = extname(path).toLowerCase();
  const media = MEDIA[ext];
  if (media !== undefined) return { type: media, text: false };
  return { type: ext === '.svg' ? 'image/svg+xml' : 'text/plain', text: true };
}

/** `text` with `oldString` replaced, and how many times; or the error deepagents' edit tool reports. */
export function replaceIn(
  text: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
  path: string,
): { text: string; occurrences: number } | string {
  if (oldString === '') {
    if (text !== '') return 'oldString must not be empty unless the file is empty';
    return { text: newString, occurrences: newString === '' ? 0 : 1 };
  }
  const parts = text.split(oldString);
  const occurrences = parts.length - 1;
  if (occurrences === 0) return `String not found in file '${path}'`;
  if (occurrences > 1 && !replaceAll) {
    return `Multiple occurrences found in '${path}'. Use replaceAll=true to replace all.`;
  }
  return { text: parts.join(newString), occurrences };
}
