import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { InvalidInputError } from '@aleph/sandbox-core';
import type { TomlError } from 'smol-toml';
import { type AlephConfig, DEFAULT_CONFIG_PATH, type FileConfig, toConfig } from './config-shape.js';

/**
 * The config with no file: what an empty file parses to (config-defaults.json, generated from the schema
 * at build time and checked against it by the tests), so a run without a config file never builds the
 * schema.
 */
function defaultConfig(): AlephConfig {
  // The file sits at the package root: one level above dist/, two above the CLI bundle in
  // dist/cli-bundle/ (resolving the package by name costs a CLI start about 2 ms).
  let text: string | undefined;
  for (const up of ['../config-defaults.json', '../../config-defaults.json']) {
    try {
      text = readFileSync(new URL(up, import.meta.url), 'utf8');
      break;
    } catch {
      // not at this depth
    }
  }
  if (text === undefined) {
    text = readFileSync(
      createRequire(import.meta.url).resolve('@aleph/sandbox/config-defaults.json'),
      'utf8',
    );
  }
  const defaults = JSON.parse(text) as { sandbox: FileConfig };
  return toConfig(defaults.sandbox, os.homedir());
}

/**
 * Loads the config file: `file`, or `~/.aleph/config.toml` when absent. A missing default file means all
 * defaults; a missing explicit file is an error.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` for unreadable files, TOML syntax errors (with line and
 *   column) and invalid values.
 */
export async function loadConfig(file?: string): Promise<AlephConfig> {
  const target = file ?? DEFAULT_CONFIG_PATH;
  let text: string;
  try {
    text = readFileSync(target, 'utf8');
  } catch (error) {
    if (file === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') return defaultConfig();
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      'config file',
      target,
      `cannot be read (${(error as Error).message})`,
      'check the path',
    );
  }
  // The TOML parser, like the schema, is loaded only when there is a file to read.
  const { parse } = await import('smol-toml');
  let data: unknown;
  try {
    data = parse(text);
  } catch (error) {
    const e = error as TomlError;
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      `${target}:${e.line ?? '?'}:${e.column ?? '?'}`,
      text.split('\n')[(e.line ?? 1) - 1]?.trim() ?? '',
      'is not valid TOML',
      (e.message ?? '').split('\n')[0] ?? 'fix the syntax',
    );
  }
  const { parseConfig } = await import('./config.js');
  return parseConfig(data, { text, source: target });
}
