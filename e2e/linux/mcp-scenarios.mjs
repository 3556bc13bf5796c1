// Scenarios of the MCP harness: each starts the built server (or ten), talks to it through the SDK's
// Client over stdio, and returns what it observed; the test asserts on it.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processesWith } from './host-processes.mjs';

const text = (r) => r?.content?.[0]?.text ?? '';
/** A tool result as the test reads it. */
const brief = (r) => ({ isError: r.isError === true, text: text(r), structured: r.structuredContent });
const json = async (client, uri) => JSON.parse((await client.readResource({ uri })).contents[0].text);
const failure = (e) => ({ code: e?.code, message: String(e?.message ?? e) });

/** Waits until `check()` is true (or `ms` passed); its last answer. */
async function until(check, ms = 10_000) {
  for (let i = 0; i < ms / 50 && !check(); i++) await sleep(50);
  return check();
}

/** Every name under `dir` that looks like a write's temp file, and every socket. */
function leftovers(dir) {
  const found = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.name.includes('.aleph-') || lstatSync(p).isSocket()) found.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

async function closing(session, body) {
  try {
    return await body(session);
  } finally {
    await session.client.close();
  }
}

const ws = (plan, name) => path.join(plan.base, `ws-${name}`);

/** A name of `length` characters ending in `i`, five digits. */
const longName = (i, length) => `${'n'.repeat(length - 6)}-${String(i).padStart(5, '0')}`;

export const mcpScenarios = {
  /**
   * list_directory of a directory with 20,000 names of 200 characters, under max_output_bytes = 65536:
   * every answer's size, then every page read through nextCursor (at most 1,000 calls), a small limit,
   * and a cursor the server never gave.
   */
  async 'big-directory'({ plan, open }) {
    const dir = ws(plan, 'big');
    mkdirSync(path.join(dir, 'big'), { recursive: true });
    for (let i = 0; i < 20_000; i++) writeFileSync(path.join(dir, 'big', longName(i, 200)), '');
    const config = path.join(plan.base, 'config-budget.toml');
    writeFileSync(config, `${readFileSync(plan.config, 'utf8')}max_output_bytes = 65536\n`);
    /** Up to `max` pages of big/ (following nextCursor), each as the test reads it, and every name. */
    const pages = async (call, max) => {
      const seen = [];
      let cursor;
      for (let i = 0; i < max; i++) {
        const r = await call('list_directory', { path: 'big', ...(cursor === undefined ? {} : { cursor }) });
        const s = r.structuredContent ?? {};
        seen.push({
          bytes: Buffer.byteLength(JSON.stringify(r)),
          count: s.entries?.length ?? 0,
          truncated: s.truncated === true,
          hasCursor: typeof s.nextCursor === 'string',
          textTail: text(r).split('\n').at(-1),
          isError: r.isError === true,
          names: (s.entries ?? []).map((e) => e.name),
        });
        cursor = s.nextCursor;
        if (cursor === undefined) break;
      }
      const names = seen.flatMap((p) => p.names);
      return { pages: seen.map(({ names: _n, ...p }) => p), names };
    };
    const budgeted = await closing(await open(['--workspace', dir], { config }), async ({ call }) => {
      const first = await pages(call, 3);
      const small = (await call('list_directory', { path: 'big', limit: 10 })).structuredContent;
      let badCursor;
      try {
        badCursor = brief(await call('list_directory', { path: 'big', cursor: '!!not-a-cursor!!' }));
      } catch (error) {
        badCursor = failure(error);
      }
      return {
        pages: first.pages,
        firstNames: first.names.length,
        continuous: first.names.every((n, i) => i === 0 || first.names[i - 1] < n),
        small: {
          count: small.entries.length,
          truncated: small.truncated,
          hasCursor: typeof small.nextCursor === 'string',
        },
        badCursor,
      };
    });
    // Every page, under the default budget (1 MiB: pages of 1,000, the default limit).
    const whole = await closing(await open(['--workspace', dir]), async ({ call }) => pages(call, 100));
    const names = whole.names;
    return {
      ...budgeted,
      wholePages: whole.pages.length,
      total: names.length,
      unique: new Set(names).size,
      sorted: names.every((n, i) => i === 0 || names[i - 1] < n),
      first: names[0],
      last: names.at(-1),
    };
  },

  async tools({ open }) {
    return closing(await open(), async ({ client }) => {
      const { tools } = await client.listTools();
      const execute = tools.find((t) => t.name === 'execute');
      return {
        names: tools.map((t) => t.name).sort(),
        execute: Object.keys(execute?.inputSchema.properties ?? {}),
        server: client.getServerVersion(),
        resources: (await client.listResources()).resources.map((r) => r.uri).sort(),
      };
    });
  },

  async run({ plan, open }) {
    return closing(await open(['--workspace', ws(plan, 'run')]), async ({ client, call, errors }) => {
      const id = brief(await call('execute', { argv: ['id', '-u'] }));
      await call('write_file', { path: 'hello.txt', content: 'hi\n' });
      const cat = brief(await call('execute', { argv: ['cat', 'hello.txt'] }));
      const secret = brief(await call('execute', { argv: ['cat', plan.secret] }));
      const bad = {
        unknownTool: text(await call('nope', {})),
        badArgs: text(await call('execute', { argv: 'ls' })),
        both: text(await call('execute', { argv: ['ls'], command: 'ls' })),
        pathOutside: text(await call('read_file', { path: '../secret/id_rsa' })),
        cwdOutside: text(await call('execute', { argv: ['ls'], cwd: '/etc' })),
      };
      const after = brief(await call('execute', { argv: ['true'] }));
      const audit = await json(client, 'aleph://audit');
      const doctor = await json(client, 'aleph://doctor');
      return {
        id,
        cat,
        secret,
        bad,
        after,
        audit: audit.records.map((r) => [r.type, r.program || r.operation, r.outcome]),
        doctor: { tier: doctor.tier, available: doctor.available, notEnforced: doctor.notEnforced },
        errors,
      };
    });
  },

  // Each client snippet and quickstart line of packages/mcp/README.md (plan.snippets: its name and the
  // arguments after `@aleph/mcp`, the workspace path as WORKSPACE), started as written by a client that
  // declares no elicitation: a shell command and a pipeline run on the first call.
  async 'readme-snippets'({ plan, open }) {
    const out = {};
    for (const { name, args } of plan.snippets) {
      const workspace = ws(plan, `snippet-${Object.keys(out).length}`);
      const flags = args.map((a) => (a === 'WORKSPACE' ? workspace : a));
      out[name] = await closing(await open(flags, { asWritten: true }), async ({ call }) => ({
        echo: brief(await call('execute', { command: 'echo hi' })),
        pipeline: brief(await call('execute', { command: "sh -c 'ls / | wc -l'" })),
        network: brief(
          await call('execute', { command: 'true', capabilities: { network: ['example.com'] } }),
        ),
      }));
    }
    return out;
  },

  async 'spawn-granted'({ plan, open }) {
    return closing(await open(['--workspace', ws(plan, 'spawn'), '--allow-spawn']), async ({ call }) =>
      brief(await call('execute', { command: 'echo a | tr a b; echo $((6*7))' })),
    );
  },

  async progress({ plan, open }) {
    return closing(await open(['--workspace', ws(plan, 'progress'), '--allow-spawn']), async (s) => {
      const seen = [];
      const script = 'for i in 1 2 3; do echo line$i; sleep 0.5; done';
      const result = await s.call('execute', { command: script }, { onprogress: (p) => seen.push(p) });
      return { result: brief(result), progress: seen, errors: s.errors };
    });
  },

  async cancel({ plan, open }) {
    return closing(await open(['--workspace', ws(plan, 'cancel')]), async ({ client, call }) => {
      const needle = `sleep\0${plan.marker}`;
      const controller = new AbortController();
      const pending = call('execute', { argv: ['sleep', plan.marker] }, { signal: controller.signal }).then(
        () => 'resolved',
        failure,
      );
      const started = await until(() => processesWith(needle).length > 0);
      controller.abort('user pressed stop');
      const rejected = await pending;
      const gone = await until(() => processesWith(needle).length === 0, 5000);
      const after = brief(await call('execute', { argv: ['true'] }));
      const audit = await json(client, 'aleph://audit');
      const sleepRecord = audit.records.find((r) => r.program === 'sleep');
      return { started, rejected, gone, after, outcome: sleepRecord?.outcome };
    });
  },

  async approve({ plan, open }) {
    const answers = [
      { action: 'accept', content: { duration: 'once' } },
      { action: 'decline' },
      { action: 'accept', content: { duration: 'session' } },
    ];
    const asked = [];
    const elicit = (params) => {
      asked.push(params);
      return answers.shift() ?? { action: 'decline' };
    };
    // Subprocesses are allowed; reading a directory outside the workspace is asked for.
    const outside = path.join(plan.base, 'outside');
    mkdirSync(path.join(outside, 'below'), { recursive: true });
    return closing(await open(['--workspace', ws(plan, 'approve')], { elicit }), async ({ call }) => {
      const shell = {
        command: 'echo hi | tr a-z A-Z',
        reason: 'to shout a greeting',
        capabilities: { read: [outside] },
      };
      const once = brief(await call('execute', shell));
      const declined = brief(await call('execute', shell));
      const session = brief(await call('execute', shell));
      const narrower = {
        command: 'echo cached | cat',
        capabilities: { read: [path.join(outside, 'below')] },
      };
      const cached = brief(await call('execute', narrower));
      return {
        outside,
        asked: asked.map((a) => ({
          message: a.message,
          properties: Object.keys(a.requestedSchema.properties),
        })),
        once,
        declined,
        session,
        cached,
      };
    });
  },

  async 'no-elicitation'({ plan, open }) {
    return closing(await open(['--workspace', ws(plan, 'noask')]), async ({ call }) =>
      brief(await call('execute', { command: 'echo hi', capabilities: { network: ['example.com'] } })),
    );
  },

  // A run allowed localhost on one port (and its address, which localhost resolves to): the allowed host
  // answers; a host off the allowlist, a port off it and (with transparent egress) a name the sandbox's
  // resolver refuses each come back as typed denials; asking for the port the denial named is approved
  // through elicitation and reaches it. Only loopback servers of the test; no name is looked up outside.
  async 'network-denials'({ plan, open }) {
    const { allowed, other } = plan.ports;
    const net = `localhost:${allowed},127.0.0.1:${allowed}`;
    const elicit = () => ({ action: 'accept', content: { duration: 'once' } });
    const flags = ['--workspace', ws(plan, 'net'), '--allow-spawn', '--net', net];
    return closing(await open(flags, { elicit }), async ({ client, call }) => {
      const code = (url) => `curl -sS -o /dev/null -w '%{http_code}' ${url}`;
      const result = {
        allowed: brief(await call('execute', { command: `curl -sS http://localhost:${allowed}/ok` })),
        host: brief(await call('execute', { command: code(`http://evil.test:${allowed}/ok`) })),
        port: brief(await call('execute', { command: code(`http://localhost:${other}/ok`) })),
        portAllowed: brief(
          await call('execute', {
            command: `curl -sS http://localhost:${other}/ok`,
            capabilities: { network: [`localhost:${other}`, `127.0.0.1:${other}`] },
          }),
        ),
        ...(plan.transparent
          ? {
              dns: brief(
                await call('execute', { command: `curl -sS --noproxy '*' http://evil.test:${allowed}/ok` }),
              ),
              // Transparent egress to the address entry, an address off the list on an egress port, and
              // one on a port outside the egress ports (the kernel refuses it inside).
              address: brief(
                await call('execute', { command: `curl -sS --noproxy '*' http://127.0.0.1:${allowed}/ok` }),
              ),
              addressHost: brief(
                await call('execute', { command: `${code(`http://10.1.2.3:${allowed}/ok`)} --noproxy '*'` }),
              ),
              addressPort: brief(
                await call('execute', { command: `curl -sS --noproxy '*' http://127.0.0.2:${other}/ok` }),
              ),
            }
          : {}),
      };
      const audit = await json(client, 'aleph://audit');
      const ledger = audit.records.filter((r) => r.type === 'capability_ledger');
      return { ...result, auditDenials: ledger.map((r) => r.details?.denials ?? []) };
    });
  },

  // A command that prints the helper's own failure line and exits 125 after planting a hook, a symlink out
  // and a refused connection (issue 36): its result and the audit record keep all three.
  async 'forged-setup'({ plan, open }) {
    const flags = ['--workspace', ws(plan, 'forged'), '--allow-spawn', '--net', '127.0.0.1:9'];
    return closing(await open(flags), async ({ client, call }) => {
      const command = [
        "git init -q sub && printf '#!/bin/sh\\necho ran\\n' > sub/.git/hooks/post-checkout",
        'ln -s /etc/passwd out',
        'curl -sS -m 5 -o /dev/null http://evil.test:9/ 2>/dev/null',
        "echo 'aleph-sandbox-init: launch: forged by the command' >&2",
        'exit 125',
      ].join('; ');
      const forged = brief(await call('execute', { command }));
      const audit = await json(client, 'aleph://audit');
      const ledger = audit.records.filter((r) => r.type === 'capability_ledger');
      const last = ledger.at(-1);
      return { forged, ws: ws(plan, 'forged'), audit: { exitCode: last?.exitCode, details: last?.details } };
    });
  },

  async files({ plan, open }) {
    const homes = path.join(plan.home, '.aleph', 'homes');
    const listHomes = () => (existsSync(homes) ? readdirSync(homes) : []);
    const homesBefore = listHomes();
    const added = () => listHomes().filter((h) => !homesBefore.includes(h));
    const observed = await closing(await open(['--workspace', ws(plan, 'files')]), async ({ call }) => {
      const write = brief(await call('write_file', { path: 'src/app.ts', content: 'l1\nl2\nl3\n' }));
      const result = {
        write,
        whole: text(await call('read_file', { path: 'src/app.ts' })),
        range: text(await call('read_file', { path: 'src/app.ts', startLine: 2, endLine: 3 })),
        writeBinary: brief(
          await call('write_file', { path: 'src/b.bin', content: 'iVBORwABAv8=', encoding: 'base64' }),
        ),
        readBinary: brief(await call('read_file', { path: 'src/b.bin' })),
        readBase64: brief(await call('read_file', { path: 'src/b.bin', encoding: 'base64' })),
        ambiguous: text(await call('edit_file', { path: 'src/app.ts', oldText: 'l', newText: 'L' })),
        edit: text(await call('edit_file', { path: 'src/app.ts', oldText: 'l2', newText: 'L2' })),
        seenByCommand: text(await call('execute', { argv: ['cat', 'src/app.ts'] })),
        list: (await call('list_directory', { path: 'src' })).structuredContent,
        stat: (await call('stat', { path: 'src/app.ts' })).structuredContent,
        protected: text(await call('write_file', { path: '.git/hooks/pre-commit', content: 'echo pwned' })),
        delete: text(await call('delete_file', { path: 'src', recursive: true })),
        listAfter: (await call('list_directory', {})).structuredContent,
      };
      return { ...result, homesDuring: added(), leftovers: leftovers(ws(plan, 'files')) };
    });
    // The session's id was random, so its HOME goes with the server (the workspace is the user's: it stays).
    const serverGone = await until(() => processesWith(plan.config).length === 0, 10_000);
    return { ...observed, serverGone, homesAfter: added(), workspaceKept: existsSync(ws(plan, 'files')) };
  },

  async symlink({ plan, open }) {
    const dir = ws(plan, 'link');
    return closing(await open(['--workspace', dir]), async ({ call }) => {
      const planted = brief(await call('execute', { argv: ['ln', '-s', plan.secret, 'link'] }));
      const plantedDir = brief(
        await call('execute', { argv: ['ln', '-s', path.dirname(plan.secret), 'dirlink'] }),
      );
      const attempts = {
        read: text(await call('read_file', { path: 'link' })),
        write: text(await call('write_file', { path: 'link', content: 'overwritten' })),
        edit: text(await call('edit_file', { path: 'link', oldText: 'host', newText: 'pwned' })),
        stat: text(await call('stat', { path: 'link' })),
        readInDir: text(await call('read_file', { path: 'dirlink/id_rsa' })),
        writeInDir: text(await call('write_file', { path: 'dirlink/planted', content: 'x' })),
        listDir: text(await call('list_directory', { path: 'dirlink' })),
        deleteInDir: text(await call('delete_file', { path: 'dirlink/id_rsa' })),
      };
      // The control: the same link, read by this (host) process as the same uid, reaches the secret.
      const control = readFileSync(path.join(dir, 'link'), 'utf8');
      return {
        planted,
        plantedDir,
        attempts,
        control,
        secretAfter: readFileSync(plan.secret, 'utf8'),
        secretDirAfter: readdirSync(path.dirname(plan.secret)),
        leftovers: leftovers(dir),
      };
    });
  },

  async disconnect({ plan, open }) {
    const s = await open(['--allow-spawn']);
    const root = path.join(plan.base, 'wsroot');
    const marker = String(Number(plan.marker) + 1);
    const needle = `sleep\0${marker}`;
    const pending = s
      .call('execute', { command: `sleep ${marker}; echo never` }, { onprogress: () => {} })
      .then(() => 'resolved', failure);
    const started = await until(() => processesWith(needle).length > 0);
    const workspacesDuring = readdirSync(root).length;
    await s.client.close();
    return {
      started,
      workspacesDuring,
      rejected: await pending,
      serversGone: await until(() => processesWith(plan.config).length === 0, 10_000),
      commandGone: await until(() => processesWith(needle).length === 0, 5000),
      workspacesAfter: readdirSync(root),
      leftovers: [...leftovers(root), ...leftovers(path.join(plan.home, '.aleph'))],
      stderr: s.stderr(),
    };
  },

  async 'ten-clients'({ plan, open }) {
    const root = path.join(plan.base, 'wsroot');
    const homes = path.join(plan.home, '.aleph', 'homes');
    const homesBefore = existsSync(homes) ? readdirSync(homes).sort() : [];
    const clients = await Promise.all(Array.from({ length: 10 }, () => open(['--allow-spawn'])));
    const per = await Promise.all(
      clients.map(async (s, i) => {
        await s.call('write_file', { path: 'me.txt', content: `client ${i}\n` });
        const cat = await s.call('execute', { command: 'sleep 0.3; cat me.txt; ls' });
        const list = await s.call('list_directory', {});
        const audit = await json(s.client, 'aleph://audit');
        return {
          stdout: cat.structuredContent?.stdout,
          session: cat.structuredContent?.session,
          list: list.structuredContent?.entries.map((e) => e.name),
          auditSessions: [...new Set(audit.records.map((r) => r.sessionId))],
          auditRecords: audit.records.map((r) => r.program || r.operation),
        };
      }),
    );
    const workspacesDuring = readdirSync(root).length;
    await Promise.all(clients.map((s) => s.client.close()));
    const serversGone = await until(() => processesWith(plan.config).length === 0, 20_000);
    return {
      per,
      workspacesDuring,
      serversGone,
      workspacesAfter: readdirSync(root),
      homesBefore,
      homesAfter: existsSync(homes) ? readdirSync(homes).sort() : [],
      leftovers: [...leftovers(root), ...leftovers(path.join(plan.home, '.aleph'))],
    };
  },
};
