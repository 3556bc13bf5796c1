import { describe, expect, it } from 'vitest';
import { ApprovalGate, type ApprovalRequest, strictCapabilities } from '../src/index.js';
import { FakeApprovalRequester } from '../src/testing.js';

const request: ApprovalRequest = {
  sessionId: 's',
  program: 'curl',
  args: [],
  cwd: '/w',
  requested: { ...strictCapabilities(), network: { kind: 'allowAll' } },
  baseline: strictCapabilities(),
  reasons: ['unrestricted network access'],
};

describe('ApprovalGate', () => {
  it('denies when no requester is configured', async () => {
    expect(await new ApprovalGate().request(request)).toEqual({
      outcome: 'denied',
      reason: 'no approval requester is configured',
    });
  });

  it('passes approvals through, defaulting the scope to session', async () => {
    const gate = new ApprovalGate({ requester: new FakeApprovalRequester({ outcome: 'approved' }) });
    expect(await gate.request(request)).toEqual({ outcome: 'approved', scope: 'session' });
  });

  it('enforces its own timeout and aborts the requester', async () => {
    const requester = new FakeApprovalRequester('hang');
    const gate = new ApprovalGate({ requester, timeoutMs: 20 });
    expect(await gate.request(request)).toEqual({ outcome: 'timeout' });
    expect(requester.requests).toHaveLength(1);
  });

  it('fails closed when the requester throws', async () => {
    const gate = new ApprovalGate({
      requester: {
        requestApproval: async () => {
          throw new Error('tty closed');
        },
      },
    });
    expect(await gate.request(request)).toEqual({
      outcome: 'denied',
      reason: 'approval requester failed: tty closed',
    });
  });

  it('fails closed on an unknown outcome', async () => {
    const gate = new ApprovalGate({
      requester: { requestApproval: async () => ({ outcome: 'yes' }) as never },
    });
    expect((await gate.request(request)).outcome).toBe('denied');
  });
});
