import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { mutants, type Findings, type Transport } from '../../fixtures/servers/mutants.mjs';
import { packageRoot } from '../../harness/paths.js';
import { allChecks, allScenarios, transportsOf } from '../../suites/index.js';
import { DEFAULT_SLOW_COMMAND_MS, residentScenario } from '../../suites/server/lifetime.js';
import { casePlan, matrix } from '../matrix-cases.js';

// What each mutant must find is declared with its defect (fixtures/servers/mutants.mjs); the
// matrix is derived from those declarations. These checks need no server.
const declared = Object.entries(mutants);
const listed = (findings: Findings | undefined) => Object.entries(findings ?? {}) as [Transport, readonly string[]][];

test('every mutant declares what it must find, or names the test that runs it instead', () => {
  const neither = declared.filter(([, m]) => !m.fails && !m.warns && !m.testedBy).map(([name]) => name);
  expect(neither).toEqual([]);
  const both = declared.filter(([, m]) => (m.fails || m.warns) && m.testedBy).map(([name]) => name);
  expect(both).toEqual([]);
  // The test named runs it.
  const elsewhere = declared.flatMap(([name, m]) => (m.testedBy ? [[name, m.testedBy] as const] : []));
  const missing = elsewhere.filter(
    ([name, file]) => !existsSync(join(packageRoot(), file)) || !readFileSync(join(packageRoot(), file), 'utf8').includes(`'${name}'`),
  );
  expect(missing).toEqual([]);
});

test('each declared finding is a check, listed under a transport that check runs over', () => {
  const ids = new Set(allChecks.map((c) => c.id));
  const wrong = declared.flatMap(([name, m]) =>
    [...listed(m.fails), ...listed(m.warns), ...listed(m.onTimer?.fails), ...listed(m.onTimer?.warns)].flatMap(([transport, found]) =>
      found.filter((id) => !ids.has(id) || !transportsOf(id).includes(transport)).map((id) => `${name}: ${transport} ${id}`),
    ),
  );
  expect(wrong).toEqual([]);
});

test('fails names every transport a mutant runs over; a mutant no fixed scenario finds fails only checks servers with a history charge', () => {
  const warnsElsewhere = declared.filter(([, m]) => listed(m.warns).some(([transport]) => m.fails?.[transport] === undefined)).map(([name]) => name);
  expect(warnsElsewhere).toEqual([]);
  const explorationOnly = declared.filter(([, m]) => m.foundBy === 'exploration');
  expect(explorationOnly.length).toBeGreaterThan(0);
  // The resident server's, and those of the scenarios taking turns on the shared server (after the others' calls).
  const charged = new Set([
    ...residentScenario.resident!.charges,
    ...allScenarios.filter((s) => s.shares === 'calls').flatMap((s) => s.checks.map((c) => c.id)),
  ]);
  expect(
    explorationOnly.filter(([, m]) => [...listed(m.fails), ...listed(m.warns)].some(([, found]) => found.some((id) => !charged.has(id)))).map(([name]) => name),
  ).toEqual([]);
});

test('the matrix holds every mutant that declares findings, and runs only mutants that exist', () => {
  const inMatrix = declared.filter(([, m]) => m.fails || m.warns).map(([name]) => name);
  expect(inMatrix.filter((name) => !(name in matrix))).toEqual([]);
  expect(Object.entries(matrix).filter(([name, c]) => !((c.mutant ?? name) in mutants))).toEqual([]);
});

test('alsoRuns names only areas that exist, and only for a mutant in the matrix', () => {
  const areas = new Set(allChecks.map((c) => c.id.split('/')[0]!));
  const wrong = declared.filter(([, m]) => m.alsoRuns && (!(m.fails || m.warns) || m.alsoRuns.some((area) => !areas.has(area))));
  expect(wrong.map(([name]) => name)).toEqual([]);
});

test('every matrix case runs some checks: a case that runs none would assert nothing', () => {
  const empty = Object.entries(matrix).filter(([name, c]) => !allChecks.some((check) => casePlan(name, c).variant.select!(check.id)));
  expect(empty.map(([name]) => name)).toEqual([]);
});

test('slowCommand only on a mutant the matrix runs with the resident server, whose long commands it sets, and longer than a default run sends', () => {
  const wrong = declared.filter(([, m]) => m.slowCommand !== undefined && (m.resident !== true || !(m.slowCommand * 1000 > DEFAULT_SLOW_COMMAND_MS)));
  expect(wrong.map(([name]) => name)).toEqual([]);
});
