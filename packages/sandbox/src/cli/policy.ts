/** `aleph-sandbox policy …`: the command filter's CLI (`aleph-policy`), with the same arguments. */
import { delegate } from './delegate.js';

export function policy(argv: string[]): Promise<number> {
  return delegate('@aleph/command-policy', argv);
}
