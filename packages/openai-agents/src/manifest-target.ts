// Where a manifest is applied (at `create` and by `applyManifest`): the session's files, and its
// directories' permission bits set by one `chmod` per mode in the sandbox (the file API writes a file
// with a mode, but has no call to change a directory's). Both refuse what the Aleph sandbox does not
// provide (users, groups, extra path grants) before anything is written.
import { shellExitCode } from '@aleph/sandbox';
import { type Manifest, SandboxUnsupportedFeatureError } from '@openai/agents/sandbox';
import type { MaterializeTarget } from './materialize.js';
import type { OpenedSandbox } from './open-sandbox.js';

/**
 * Refuses the manifest features the Aleph sandbox does not provide, naming the alternative.
 *
 * @throws {SandboxUnsupportedFeatureError} `manifest.users`, `manifest.groups`, `manifest.extraPathGrants`.
 */
export function checkManifest(manifest: Manifest): void {
  for (const key of ['users', 'groups', 'extraPathGrants'] as const) {
    if (manifest[key].length > 0) {
      const fix =
        key === 'extraPathGrants'
          ? 'grant paths with options.capabilities (fsRead/fsWrite) instead'
          : "drop them (and runAs): commands run as the sandbox's own unprivileged user";
      throw new SandboxUnsupportedFeatureError(
        `manifest.${key} is not supported by the Aleph sandbox; ${fix}`,
        {
          provider: 'aleph',
          feature: `manifest.${key}`,
        },
      );
    }
  }
}

/** The target a manifest is written to in `opened`'s workspace. */
export function manifestTarget(opened: OpenedSandbox): MaterializeTarget {
  return {
    files: opened.session.files,
    writable: [opened.workspace, ...opened.baseline.fsWrite],
    async chmodDirs(mode, paths) {
      const out = await opened.session.execute({
        program: 'chmod',
        args: [mode.toString(8), '--', ...paths],
        capabilities: opened.baseline,
      });
      if (shellExitCode(out) !== 0)
        throw new Error(out.stderrText.trim() || `chmod exited ${shellExitCode(out)}`);
    },
  };
}
