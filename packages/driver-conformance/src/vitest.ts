import { describe, it } from 'vitest';
import type { ConformanceCase } from './cases.js';
import { conformanceSkipReason, type DriverFactory, runConformanceCase } from './context.js';
import { conformanceCases } from './suite.js';

/** Options of {@link describeDriverConformance}. */
export interface DescribeConformanceOptions {
  /** The cases to run. Default: the whole suite. */
  readonly cases?: readonly ConformanceCase[];
  /**
   * Fail (instead of skip) cases that cannot run because the driver is unavailable here. CI sets this for
   * the drivers its machines must support.
   */
  readonly requireAvailable?: boolean;
  /** Per-case timeout in ms. Default 60 s. */
  readonly timeoutMs?: number;
  /**
   * Platforms whose paths the driver can plan with (a POSIX driver cannot form a profile from Windows
   * paths). Elsewhere the suite is one skipped test that says so. Default: every platform.
   */
  readonly platforms?: readonly NodeJS.Platform[];
}

/**
 * Registers the conformance suite for a driver with vitest. Each case gets a fresh driver from `factory`.
 * A case the driver cannot run is skipped with the reason in its name.
 *
 * @example
 * ```ts
 * import { describeDriverConformance } from '@aleph/driver-conformance/vitest'
 * import { createLinuxDriver } from '@aleph/driver-linux'
 * describeDriverConformance('linux', () => createLinuxDriver())
 * ```
 */
export function describeDriverConformance(
  name: string,
  factory: DriverFactory,
  options: DescribeConformanceOptions = {},
): void {
  // A driver that plans with another platform's paths is not even constructed here; every case says why.
  const platformReason =
    options.platforms === undefined || options.platforms.includes(process.platform)
      ? undefined
      : `driver ${name} plans with ${options.platforms.join('/')} paths, this is ${process.platform}`;
  describe(`driver conformance: ${name}`, async () => {
    let probeDriver: Awaited<ReturnType<DriverFactory>> | undefined;
    let probe: Awaited<ReturnType<Awaited<ReturnType<DriverFactory>>['probe']>> | undefined;
    if (platformReason === undefined) {
      probeDriver = await factory();
      probe = await probeDriver.probe();
      await probeDriver.dispose?.();
    }
    for (const testCase of options.cases ?? conformanceCases) {
      const reason =
        platformReason ??
        conformanceSkipReason(testCase, probeDriver as NonNullable<typeof probeDriver>, probe);
      const label = `${testCase.id}: ${testCase.title}`;
      if (reason !== undefined && options.requireAvailable && reason.includes('unavailable here')) {
        it(label, () => {
          throw new Error(`required but ${reason}`);
        });
        continue;
      }
      it.skipIf(reason !== undefined)(
        reason === undefined ? label : `${label} [skipped: ${reason}]`,
        () => runConformanceCase(testCase, factory),
        options.timeoutMs ?? 60_000,
      );
    }
  });
}
