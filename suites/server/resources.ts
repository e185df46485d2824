import { isDeepStrictEqual } from 'node:util';
import { summarizeOutcome } from '../engine/judge.js';
import { fail, notApplicable, pass, type CheckDef, type Scenario, type Verdict, takingTurns } from '../engine/model.js';
import type { RawOutcome } from '../../harness/codex-session.js';
import { isObject } from '../../harness/json.js';

/** The caller `_meta` the suite reads with unless the config names one (it passes Codex's HOST-3 rule). */
export const DEFAULT_CALLER_META = { 'x-conformance-caller': { purpose: 'RES-1', note: 'caller metadata Codex forwards verbatim' } };

const resourceCheck = (id: string, title: string, what: string, observes: string): CheckDef => ({
  id,
  rule: 'RES-1',
  level: 'MUST',
  title,
  summary: `resources/read must work ${what}. Codex never puts sandbox keys on resource reads; it always sends _meta, the caller's entries as they are plus its progressToken. Source: CONTRACT.md §2, §3 RES-1 and §4 HOST-3.`,
  observes,
  why: 'A server that expects sandbox keys everywhere, or rejects metadata it does not know, breaks resource reads from Codex.',
  typicalMistake: 'Running the same sandbox guard on every request, or validating _meta strictly.',
  fix: 'Require sandbox keys only where commands run; ignore _meta keys you do not use.',
  needs: ['resources'],
});

export const readWithoutSandboxKeys = resourceCheck(
  'resources/read-without-sandbox-keys',
  'resources/read works with no sandbox keys',
  'without any sandbox keys',
  'The first resource that resources/list returns with a string uri is read as Codex reads it for a caller without _meta: `_meta` holding only a progressToken, before `uri`, and no sandbox keys; the answer must be a result with a contents array. Not applicable when the server lists no resource.',
);
export const readWithCallerMeta = resourceCheck(
  'resources/read-with-caller-meta',
  'resources/read works with caller _meta and returns the same contents',
  'with caller _meta present, and return the same contents as without it',
  "The same resource is read again on the same connection with caller _meta (the configured one, else an x-conformance-caller entry), its entries in order and Codex's progressToken after them (a caller progressToken is overwritten where it stands), and no sandbox keys; the answer must be a result whose contents are deep-equal to those of the read without caller entries.",
);

const contentsOf = (outcome: RawOutcome) => (outcome.kind === 'result' && isObject(outcome.result) ? outcome.result.contents : undefined);

export const resourceScenario: Scenario = {
  id: 'resources/read',
  title: 'reads a listed resource as Codex does',
  checks: [readWithoutSandboxKeys, readWithCallerMeta],
  needs: ['resources'],
  transports: ['stdio', 'http'],
  run: async (ctx) => {
    const timeout = ctx.options.callTimeoutMs;
    const listed = await ctx.session.list('resources/list', undefined, timeout);
    // No answer is not "no resources": what the checks need could not be asked.
    if (listed.kind === 'timeout' || listed.kind === 'closed') {
      const why: Verdict = { status: 'error', message: `resources/list got no answer: ${JSON.stringify(summarizeOutcome(listed))}` };
      return new Map([
        [readWithoutSandboxKeys.id, why],
        [readWithCallerMeta.id, why],
      ]);
    }
    const resources = listed.kind === 'result' && isObject(listed.result) && Array.isArray(listed.result.resources) ? listed.result.resources : [];
    const first = resources.find((r): r is Record<string, unknown> => isObject(r) && typeof r.uri === 'string');
    if (!first) {
      const why = notApplicable(`the server lists no resources (resources/list: ${JSON.stringify(summarizeOutcome(listed))})`);
      return new Map([
        [readWithoutSandboxKeys.id, why],
        [readWithCallerMeta.id, why],
      ]);
    }
    const uri = first.uri as string;
    const plain = await ctx.session.readResource(uri, undefined, timeout);
    const withMeta = await ctx.session.readResource(uri, ctx.resourceReadMeta ?? DEFAULT_CALLER_META, timeout);
    const plainContents = contentsOf(plain);
    const verdicts = new Map<string, Verdict>();
    verdicts.set(
      readWithoutSandboxKeys.id,
      Array.isArray(plainContents)
        ? pass()
        : fail(`resources/read of ${uri} without sandbox keys failed`, { expected: 'a result with contents', actual: summarizeOutcome(plain) }),
    );
    const metaContents = contentsOf(withMeta);
    if (!Array.isArray(metaContents)) {
      verdicts.set(
        readWithCallerMeta.id,
        fail(`resources/read of ${uri} with caller _meta failed`, { expected: 'a result with contents', actual: summarizeOutcome(withMeta) }),
      );
    } else if (Array.isArray(plainContents) && !isDeepStrictEqual(plainContents, metaContents)) {
      verdicts.set(readWithCallerMeta.id, fail('the contents differ with caller _meta present', { expected: plainContents, actual: metaContents }));
    } else verdicts.set(readWithCallerMeta.id, pass());
    return verdicts;
  },
};

/** The scenarios of this area, in report order (suites/index.ts lists the areas). */
export const resourceScenarios: Scenario[] = [takingTurns(resourceScenario)];
