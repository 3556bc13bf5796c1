#!/usr/bin/env node
// The aleph-sandbox command. Copied next to the CLI bundle by scripts/bundle.mjs.
//
// A CLI start spends most of its time compiling JavaScript. Node 20 has no compile cache for modules,
// but V8 can cache classic scripts, so the bundle is CommonJS and this file compiles its chunks itself
// with `vm.Script` and cached data kept per user:
//   ~/.aleph/cache/v8-<node version>-<arch>/<chunk>.<file identity>.v8
// Cached code is code: it lives in ~/.aleph, which every driver protects from sandboxed commands even
// when they may write to the home directory, so a command cannot plant code that the next start runs
// outside its sandbox (a cache in ~/.cache could be written by a command granted write access to ~).
// V8 checks its own version, its flags and the source's *length* before using a cache, not the source
// itself: a cache of other code of the same length would be run as if it were this chunk. So a cache is
// named after the chunk file's identity (device, inode, size, mtime and ctime): a new install is a new
// file, and writing to a file changes its ctime, so a cache is only ever used for the file it was compiled
// from. The directory is used only when it is this user's and nobody else can write to it.
// ALEPH_COMPILE_CACHE=0 turns the cache off.
'use strict';
const fs = require('node:fs');
const Module = require('node:module');
const os = require('node:os');
const path = require('node:path');
const vm = require('node:vm');

const bundleDir = __dirname;

function cacheDirectory() {
  if (process.env.ALEPH_COMPILE_CACHE === '0') return undefined;
  const home = os.homedir();
  if (!path.isAbsolute(home)) return undefined;
  return path.join(home, '.aleph', 'cache', `v8-${process.version}-${process.arch}`);
}

/**
 * True when `dir` exists, is a real directory owned by us, and only we can write to it. On Windows the
 * user's profile directory is protected by its ACL, and mode bits say nothing, so a directory is enough.
 */
function trusted(dir) {
  try {
    const st = fs.lstatSync(dir);
    if (process.platform === 'win32') return st.isDirectory();
    return st.isDirectory() && st.uid === process.getuid() && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** `<chunk>.<identity>.v8`: the cache of exactly this file, as it is now (see the top of this file). */
function cacheName(filename) {
  const st = fs.statSync(filename, { bigint: true });
  const identity = [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].map((n) => n.toString(36));
  return `${path.basename(filename)}.${identity.join('-')}.v8`;
}

const cacheDir = cacheDirectory();
const readable = cacheDir !== undefined && trusted(cacheDir);
/** Scripts compiled without a usable cache, written out when the process exits. */
const fresh = [];

const compile = Module.prototype._compile;
Module.prototype._compile = function compileWithCache(content, filename) {
  if (cacheDir === undefined || path.dirname(filename) !== bundleDir) {
    return compile.call(this, content, filename);
  }
  const cacheFile = path.join(cacheDir, cacheName(filename));
  let cachedData;
  if (readable) {
    try {
      cachedData = fs.readFileSync(cacheFile);
    } catch {
      cachedData = undefined;
    }
  }
  const source = content.startsWith('#!') ? `//${content.slice(2)}` : content;
  const script = new vm.Script(Module.wrap(source), {
    filename,
    ...(cachedData === undefined ? {} : { cachedData }),
  });
  if (cachedData === undefined || script.cachedDataRejected) fresh.push([cacheFile, script]);
  const wrapper = script.runInThisContext({ displayErrors: true });
  const require = Module.createRequire(filename);
  return wrapper.call(this.exports, this.exports, require, this, filename, bundleDir);
};

/**
 * Caches written longer ago than this are removed whenever new ones are written: every upgrade leaves the
 * old chunks' caches behind. One still in use is simply written again on the next start.
 */
const MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;

/** Removes caches (and leftovers of interrupted writes) written more than MAX_AGE_MS ago. */
function prune(dir) {
  const now = Date.now();
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.v8') && !name.endsWith('.tmp')) continue;
    const file = path.join(dir, name);
    try {
      if (now - fs.lstatSync(file).mtimeMs > MAX_AGE_MS) fs.unlinkSync(file);
    } catch {
      // gone already
    }
  }
}

process.once('exit', () => {
  if (fresh.length === 0 || cacheDir === undefined) return;
  try {
    fs.mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    if (!trusted(cacheDir)) return;
    for (const [file, script] of fresh) {
      // Written whole under a temporary name, then renamed: a concurrent start never reads half a cache.
      const temp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(temp, script.createCachedData(), { mode: 0o600 });
      fs.renameSync(temp, file);
    }
    prune(cacheDir);
  } catch {
    // A read-only or full home only means the next start compiles again.
  }
});

require('./cli.cjs');
