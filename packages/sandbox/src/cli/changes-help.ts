/** The `--help` texts of `undo` and `changes`. */

export const UNDO_HELP = `aleph-sandbox undo RUN_ID [--force] [--dry-run] [--json] [--config FILE]
aleph-sandbox undo --last N --workspace DIR [--force] [--dry-run] [--json] [--config FILE]

Takes back what a run changed in its writable roots: every file, directory and link it modified or
deleted is put back as it was before the run (bytes, mode, owner, link target), and what it created is
removed. RUN_ID is the run's id: details.runId of its --json output, or the one in the "changes:" line
run prints on stderr, or from aleph-sandbox changes. --last N undoes the N newest runs of the workspace
DIR that changed something and are not undone yet, newest first, stopping at the first one refused.

Undo refuses, touching nothing and naming each path, when anything it would touch changed after the run
(a later run, you, an editor), or when a later run that is not undone changed the same paths (undo that
one first).

Flags:
  --force              undo anyway; the changes made after the run to those paths are lost
  --dry-run            say what undo would restore and remove, and its conflicts; touch nothing
  --last N             the N newest runs of --workspace DIR (1 to 10000)
  --workspace DIR      the workspace of --last
  --json               print the result as JSON (for --last: the list of results, newest first; a run
                       that could not be undone at all as { runId, error: { code, message } })
  --config FILE        config file (default ~/.aleph/config.toml)

Exit codes: 0 undone (--dry-run: would be undone); 1 not undone (paths changed after the run, already
undone, the run's pre-run copies were not kept, or changes are not recorded here); 2 usage error or
unknown run id; 125 the sandbox failed.`;

export const CHANGES_HELP = `aleph-sandbox changes [RUN_ID] [--workspace DIR | --session ID] [--limit N] [--json] [--config FILE]

Without RUN_ID: the runs of a workspace whose change sets are kept (default: the workspace of run's
default session "cli"), newest first, one line each: run id, end time, what it changed, whether it can
be undone, the command. With RUN_ID: that run's change list, one path a line (created, modified with
what changed, deleted, renamed with where from; [set aside] for what the check after the run moved to the
quarantine).

Change sets are kept under ~/.aleph/run/changes, per session, within [sandbox.changes] max_mb (the oldest
runs' copies are dropped first).

Flags:
  --workspace DIR      list the runs of DIR
  --session ID         list the runs of session ID's workspace
  --limit N            at most N runs
  --json               print the kept run (or the list) as JSON
  --config FILE        config file (default ~/.aleph/config.toml)

Exit codes: 0; 1 changes are not recorded here; 2 usage error or unknown run id; 125 the sandbox failed.`;
