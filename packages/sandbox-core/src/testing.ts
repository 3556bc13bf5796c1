/**
 * Test doubles for code that uses the sandbox: a fake OS driver (with a host-path file mechanism and
 * streamed output), a fake approval requester, a `MockSandbox` (with sessions whose files live in
 * memory). Import from `@aleph/sandbox-core/testing`.
 *
 * @packageDocumentation
 */
export { FakeApprovalRequester, type FakeApprovalScript } from './testing/fake-approval.js';
export { FakeChangeStore, type FakeChangesOptions } from './testing/fake-changes.js';
export {
  createFakeDriver,
  type FakeDriver,
  type FakeDriverOptions,
  type FakeOutput,
} from './testing/fake-driver.js';
export { createFakeFiles } from './testing/fake-files.js';
export { type MemoryFileCall, MemoryFiles } from './testing/memory-files.js';
export { MockSandbox, type MockUndo } from './testing/mock-sandbox.js';
