/** `aleph-sandbox proxy …`: the egress proxy's CLI (`aleph-proxy`), with the same arguments. */
import { delegate } from './delegate.js';

export function proxy(argv: string[]): Promise<number> {
  return delegate('@aleph/proxy', argv);
}
