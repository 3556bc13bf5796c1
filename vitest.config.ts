import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Workspace packages import each other's src/ through the private `@aleph/source` export condition, so
// tests never need a build (the CLI e2e tests do, and `pnpm test` builds first).
const conditions = ['@aleph/source', ...defaultServerConditions];

const project = (name: string, extra: Record<string, unknown> = {}) => ({
  extends: true as const,
  test: { name, include: [`packages/${name}/test/**/*.test.ts`], ...extra },
});

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@aleph/source'] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      project('sandbox-core'),
      project('driver-conformance'),
      project('command-policy'),
      project('proxy'),
      project('driver-linux'),
      project('driver-macos'),
      project('driver-windows'),
      project('sandbox'),
      project('mcp'),
      project('ai-sdk'),
      project('deepagents'),
      project('openai-agents'),
      { extends: true as const, test: { name: 'e2e', include: ['e2e/**/*.test.ts'] } },
    ],
  },
});
