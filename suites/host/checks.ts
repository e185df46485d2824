import type { CheckDef } from '../engine/model.js';
import { host1Checks } from './host-1-state-keys-and-launcher.js';
import { host2Checks } from './host-2-current-sandbox-entries.js';
import { host3Checks } from './host-3-resource-read.js';
import { host4Checks } from './host-4-direct-tool-call.js';
import type { HostCheck } from './host-check.js';

/** Every host check, in report order (HOST-4's direct calls before HOST-3's resource reads). */
export const hostChecks: HostCheck[] = [...host1Checks, ...host2Checks, ...host4Checks, ...host3Checks];

/** The checks as `list`/`explain` know them (one entry per id). */
export const hostCheckDefs: CheckDef[] = hostChecks.map(({ transports: _t, scenario: _s, judge: _j, ...def }) => def);
