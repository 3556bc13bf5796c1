import { describe, expect, it } from 'vitest';
import { cloneSource, GitRepoError } from '../src/git-repo.js';

describe('git_repo clone sources', () => {
  it("makes the SDK's URL of owner/name, and allows exactly the repository's host", () => {
    expect(cloneSource({ type: 'git_repo', repo: 'openai/codex' })).toEqual({
      url: 'https://github.com/openai/codex.git',
      allowHost: 'github.com',
    });
    expect(cloneSource({ type: 'git_repo', repo: 'a/b', host: 'gitlab.example' }).url).toBe(
      'https://gitlab.example/a/b.git',
    );
    expect(cloneSource({ type: 'git_repo', repo: 'http://git.test:8080/r.git' })).toEqual({
      url: 'http://git.test:8080/r.git',
      allowHost: 'git.test:8080',
    });
  });

  it('refuses what the egress proxy does not carry, and credentials, saying what to use', () => {
    const cases: [string, RegExp][] = [
      ['git@github.com:a/b.git', /is not an https:\/\/ or http:\/\/ URL .*use its https:\/\/ URL/],
      ['ssh://git@github.com/a/b.git', /uses ssh:\/\/, which the sandbox's egress proxy does not carry/],
      ['git://git.test/r.git', /uses git:\/\//],
      ['file:///srv/r.git', /uses file:\/\/.*local_dir entry/],
      ['https://u:p@github.com/a/b.git', /carries credentials/],
    ];
    for (const [repo, message] of cases) {
      expect(() => cloneSource({ type: 'git_repo', repo })).toThrow(GitRepoError);
      expect(() => cloneSource({ type: 'git_repo', repo })).toThrow(message);
    }
  });
});
