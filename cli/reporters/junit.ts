import { createRequire } from 'node:module';
import type { Builder, TestCase } from 'junit-report-builder';
import type { ScenarioRecord } from '../../suites/engine/model.js';
import { areaOf, asText, CONTRACT, hasBothTransports, scenarioOf, transcriptFileOf, truncate, type ReportData } from './index.js';
import type { ReportedResult } from '../baseline.js';
import { blockedNote } from './human.js';
import { neutralizeMultiline } from '../sanitize.js';

/** Text for XML: no escape sequence or control character (XML 1.0 cannot carry most C0 ones; C1 ones are legal but as raw in a terminal). */
const clean = (text: string): string => neutralizeMultiline(text);

/**
 * JUnit XML, built with junit-report-builder (it escapes attributes, splits CDATA and strips the
 * characters XML cannot hold). One <testsuite> per area, one <testcase> per check, classname = the
 * area. How each status maps onto JUnit's four outcomes:
 *   fail, xpass  -> <failure> (message; diff, expected, actual and the transcript file as its text)
 *   error        -> <error>
 *   skip, xfail  -> <skipped message="..."> (an expected failure is a skip with the baseline reason; a
 *                   could-not-run names the check that blocked it, also as the blockedBy property)
 *   warn         -> a passing case with the finding in <system-out>: a SHOULD finding does not fail
 *                   the run unless --fail-on should, and then it is reported as fail, not warn
 */

const MAX_VALUE = 20_000;

// The package is CommonJS (`module.exports = builder`) but its typings declare an ES default export,
// which TypeScript's NodeNext resolution then nests one level too deep; require() matches both.
const builder = createRequire(import.meta.url)('junit-report-builder') as Builder;

type Element = ReturnType<TestCase['build']>;

/**
 * Runs `edit` on the <testcase> element junit-report-builder builds. Two gaps of the builder are
 * filled this way: <skipped/> gets no message, and its CDATA sections (failure content, system-out)
 * come from xmlbuilder 15, which splits only the first "]]>" of a text and so writes broken XML for
 * a second one. Text nodes are escaped fully, so details go in as text.
 */
function decorate(testCase: TestCase, edit: (element: Element) => void): void {
  const build = testCase.build.bind(testCase);
  testCase.build = (parent) => {
    const element = build(parent);
    edit(element);
    return element;
  };
}

const child = (element: Element, name: string): Element | undefined =>
  element.children.find((node) => (node as unknown as { name?: string }).name === name) as Element | undefined;

function withSkipMessage(testCase: TestCase, message: string): void {
  testCase.skipped();
  decorate(testCase, (element) => child(element, 'skipped')?.att('message', clean(message)));
}

/** Text inside the <failure> or <error> element, after the message attribute. */
function withContent(testCase: TestCase, name: 'failure' | 'error', text: string): void {
  decorate(testCase, (element) => child(element, name)?.txt(clean(text)));
}

function withSystemOut(testCase: TestCase, text: string): void {
  decorate(testCase, (element) => element.ele('system-out').txt(clean(text)));
}

function details(result: ReportedResult, scenario: ScenarioRecord, transcriptFile: string | undefined): string {
  const parts: string[] = [`${result.rule} (${result.level}): ${result.message ?? ''}`];
  if (result.diff?.length) parts.push('diff (expected -> actual):', ...result.diff.map((line) => `  ${line}`));
  if (result.expected !== undefined) parts.push('expected:', truncate(asText(result.expected), MAX_VALUE));
  if (result.actual !== undefined) parts.push('actual:', truncate(asText(result.actual), MAX_VALUE));
  parts.push(transcriptFile ? `transcript: ${transcriptFile}` : `transcript: ${scenario.transcript.length} entries (write them with --transcripts DIR)`);
  parts.push(`scenario: ${result.scenario}, transport: ${result.transport}`);
  return parts.join('\n');
}

export function renderJunit(data: ReportData): string {
  const { report } = data;
  const junit = builder.newBuilder().name(`mcp-sandbox-conformance ${data.target.display}`);
  const both = hasBothTransports(report);
  const suites = new Map<string, ReturnType<typeof junit.testSuite>>();
  for (const result of report.results) {
    const area = areaOf(result.id);
    let suite = suites.get(area);
    if (!suite) {
      suite = junit
        .testSuite()
        .name(area)
        .timestamp(data.startedAt)
        .property('tool', `${data.tool.name} ${data.tool.version}`)
        .property('contract', CONTRACT.revision)
        .property('target', data.target.display);
      suites.set(area, suite);
    }
    const name = result.id.slice(area.length + 1) || result.id;
    const scenario = scenarioOf(data, result);
    const testCase = suite
      .testCase()
      .className(area)
      .name(both ? `${name} (${result.transport})` : name)
      .time(scenario.durationMs / 1000)
      .property('id', result.id)
      .property('rule', result.rule)
      .property('level', result.level)
      .property('status', result.status)
      .property('transport', result.transport);
    if (result.blockedBy) testCase.property('blockedBy', result.blockedBy);
    const file = transcriptFileOf(data, scenario);
    if (file) testCase.property('transcript', file);
    switch (result.status) {
      case 'fail':
      case 'xpass':
        testCase.failure(clean(result.message ?? result.status), `${result.rule} ${result.level}`);
        withContent(testCase, 'failure', details(result, scenario, file));
        break;
      case 'error':
        testCase.error(clean(result.message?.split('\n')[0] ?? 'error'), 'error');
        withContent(testCase, 'error', details(result, scenario, file));
        break;
      case 'skip':
        withSkipMessage(testCase, `${result.reason ?? 'skipped'}${blockedNote(result, report)}: ${result.message ?? ''}`);
        break;
      case 'xfail':
        withSkipMessage(testCase, `expected failure (baseline): ${result.baseline?.entry.reason ?? ''}`);
        withSystemOut(testCase, details(result, scenario, file));
        break;
      case 'warn':
        withSystemOut(testCase, `WARNING (${result.level}, does not fail the run)\n${details(result, scenario, file)}`);
        break;
      case 'pass':
        if (result.message) withSystemOut(testCase, result.message);
        break;
    }
  }
  if (report.startFailure) {
    const testCase = junit.testSuite().name('target').testCase().className('target').name('starts').error(clean(report.startFailure.message), 'start-failure');
    if (report.startFailure.stderrTail) withContent(testCase, 'error', `last lines of its stderr:\n${report.startFailure.stderrTail}`);
  }
  return junit.build() + '\n';
}
