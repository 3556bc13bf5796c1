// The `[sandbox.changes]` table of the config file: each run's change set and undo (the Linux driver's
// `changes` option), in a module of its own.
import { z } from 'zod';

const mib = (example: number) =>
  z
    .number({ error: `must be a number of MiB; e.g. ${example}` })
    .int({ message: `must be a whole number of MiB; e.g. ${example}` })
    .positive({ message: `must be a positive number of MiB; e.g. ${example}` });

/** `[sandbox.changes]`: what each run changed, kept so that `aleph-sandbox undo RUN_ID` can take it back. */
export const ChangesTableSchema = z
  .object({
    enabled: z
      .boolean({ error: 'must be true or false' })
      .default(true)
      .describe(
        'Record what each run creates, modifies and deletes in its writable roots (details.changes) and keep pre-run copies so undo can take it back. false: no change sets, undo unavailable, and the check after the run walks every writable root.',
      ),
    max_mb: mib(2048)
      .default(2048)
      .describe(
        "Pre-run copies kept per session, in MiB of disk actually allocated; the oldest runs' copies are dropped first (those runs are then no longer undoable).",
      ),
    max_file_mb: mib(512)
      .default(512)
      .describe(
        'Largest file whose pre-run copy is kept, in MiB; a run changing a larger file says undoable: false, with the reason.',
      ),
    keep_on_dispose: z
      .boolean({ error: 'must be true or false' })
      .default(true)
      .describe(
        "Keep a session's change sets when its sandbox is disposed (until pruned by the budget), so aleph-sandbox undo still works after the agent exits; false drops them at dispose.",
      ),
  })
  .strict()
  .prefault({})
  .describe("Each run's change set (details.changes) and undo (aleph-sandbox undo RUN_ID).");
