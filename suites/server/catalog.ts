import { TargetStartError, type CodexSession, type RawOutcome } from '../../harness/codex-session.js';
import type { Connection } from '../../harness/target.js';
import { structuralDiff, summarizeOutcome } from '../engine/judge.js';
import { fail, notApplicable, pass, type CheckDef, type Scenario, type Verdict } from '../engine/model.js';
import { isObject } from '../../harness/json.js';

const CACHE_KEY = 'codex/tool-catalog-cache';

export const sameCatalog: CheckDef = {
  id: 'catalog/same-across-startups',
  rule: 'CAT-1',
  level: 'MUST',
  title: 'concurrent startups list the same tool catalog',
  summary: `Several startups in the same scope at once see the same tools/list: Codex may share one catalog among overlapping startups. A server whose catalog differs per connection must opt out with capabilities.experimental["${CACHE_KEY}"] = {"cacheable": false}. Source: CONTRACT.md §3 CAT-1.`,
  observes:
    "Besides the scenario's first connection, three startups (catalogStartups) are opened at once, each a fresh server process for a started target; the tools/list each got at its handshake, all pages, is compared deep-equal with the first connection's. Not applicable when any of these handshakes opts out of catalog caching.",
  why: 'Otherwise a Codex session can be shown tools that its own connection does not have, or miss tools it does.',
  typicalMistake: 'Putting per-process or per-connection data (a PID, a port, a session id) into tool names or schemas.',
  fix: 'Keep the catalog a function of configuration only, or opt out of catalog caching.',
  needs: [],
};

export const stableRelist: CheckDef = {
  id: 'catalog/stable-on-relist',
  rule: 'CAT-1',
  level: 'MUST',
  title: 'a second tools/list on one connection returns the same catalog (or the server said it changed)',
  summary:
    'Listing tools again on the same connection gives the same catalog unless the server sent notifications/tools/list_changed in between. Source: CONTRACT.md §3 CAT-1.',
  observes:
    "On the first connection, tools/list is requested again, following nextCursor through every page, and compared deep-equal with the catalog from the handshake; a difference passes only when the connection's transcript holds a notifications/tools/list_changed from the server.",
  why: 'Codex caches the catalog; a silent change leaves it calling tools that are gone or missing new ones.',
  typicalMistake: 'Generating tool entries on every request.',
  fix: 'Build the catalog once; when it does change, send notifications/tools/list_changed.',
  needs: [],
};

export const noCacheOptOut: CheckDef = {
  id: 'catalog/no-cache-opt-out',
  rule: 'CAT-1',
  level: 'INFO',
  title: `does not opt out of tool catalog caching (${CACHE_KEY})`,
  summary: `Opting out of catalog caching (cacheable: false) is allowed, but Codex documents it for development and testing only. Source: CONTRACT.md §3 CAT-1.`,
  observes:
    'The initialize results of the first connection and of the overlapping startups: reported when any sets capabilities.experimental["codex/tool-catalog-cache"].cacheable to false.',
  why: 'A production server relying on the opt-out depends on behaviour Codex does not promise to keep.',
  typicalMistake: 'Opting out to hide a catalog that varies per connection.',
  fix: 'Make the catalog the same for every connection and drop the opt-out.',
  needs: [],
};

export const startupInBudget: CheckDef = {
  id: 'catalog/startup-within-timeout',
  rule: 'CAT-2',
  level: 'MUST',
  title: 'initialize + tools/list finish within the startup timeout, also when startups overlap',
  summary:
    "Each startup (initialize, then tools/list) completes within Codex's startup timeout (30 s by default, startup_timeout_sec), including when several start at once. Source: CONTRACT.md §3 CAT-2.",
  observes:
    "Every overlapping startup (initialize, then tools/list, each under the startup timeout) must complete; one that fails or times out fails the check. The first connection's startup and the others' are timed and reported.",
  why: 'Codex gives up on a server that is not ready in time, and its tools are then missing from the session.',
  typicalMistake: 'Doing slow work (downloads, indexing, locks shared between instances) before answering initialize.',
  fix: 'Answer initialize and tools/list first; do slow work lazily.',
  needs: [],
};

export const startupHeadroom: CheckDef = {
  id: 'catalog/startup-headroom',
  rule: 'CAT-2',
  level: 'INFO',
  title: 'the slowest overlapping startup uses at most half the startup timeout',
  summary: 'A startup that takes more than half the budget here is at risk on a slower or busier machine. Source: CONTRACT.md §3 CAT-2.',
  observes:
    "The slowest of the measured startup times (initialize plus tools/list, the first connection's and the overlapping ones') must be at most half the startup timeout; a startup that did not complete fails it too.",
  why: 'Headroom is what keeps a server inside the timeout in CI and on laptops.',
  typicalMistake: 'Measuring startup only on a fast, idle machine.',
  fix: 'Profile the startup path; load heavy modules lazily.',
  needs: [],
};

const DEFAULT_CONCURRENT_STARTUPS = 3;
const MAX_PAGES = 100;

/** Every tool of a second tools/list, following nextCursor like the handshake; or the page that failed. */
async function listAllTools(session: CodexSession, timeoutMs: number): Promise<{ tools: unknown[] } | { failed: RawOutcome | string }> {
  const tools: unknown[] = [];
  let cursor: unknown;
  for (let page = 0; page < MAX_PAGES; page++) {
    const list = await session.list('tools/list', cursor, timeoutMs);
    if (list.kind !== 'result' || !isObject(list.result) || !Array.isArray(list.result.tools)) return { failed: list };
    tools.push(...list.result.tools.filter(isObject));
    cursor = list.result.nextCursor;
    if (cursor === undefined || cursor === null) return { tools };
  }
  return { failed: `still a nextCursor after ${MAX_PAGES} pages` };
}

export const catalogScenario: Scenario = {
  id: 'catalog/startups',
  title: 'several startups at once, each listing tools',
  checks: [sameCatalog, stableRelist, noCacheOptOut, startupInBudget, startupHeadroom],
  needs: [],
  transports: ['stdio', 'http'],
  long: true,
  // Its overlapping startups are fresh servers of its own; the first catalog and the relist are the
  // shared server's (a change it announced at any time, during any scenario's turn, counts as announced).
  shares: 'handshake',
  run: async (ctx) => {
    const budget = ctx.options.startupTimeoutMs;
    const verdicts = new Map<string, Verdict>();

    // A second listing on the first connection, all pages of it: compared with the whole first catalog.
    const again = await listAllTools(ctx.session, ctx.options.callTimeoutMs);
    const changedNotice = ctx.session.toolsListChanged > 0;
    if ('failed' in again) {
      verdicts.set(
        stableRelist.id,
        fail('the second tools/list failed', {
          expected: 'the same catalog',
          actual: typeof again.failed === 'string' ? again.failed : summarizeOutcome(again.failed),
        }),
      );
    } else {
      const diff = structuralDiff({ tools: ctx.handshake.tools }, { tools: again.tools });
      verdicts.set(
        stableRelist.id,
        diff.length === 0 || changedNotice
          ? pass(changedNotice ? 'the server announced a change' : undefined)
          : fail('the catalog changed between two listings without notifications/tools/list_changed', { diff }),
      );
    }

    // Overlapping startups, each with its own connection (and server process, when the suite starts it).
    const concurrent = ctx.options.catalogStartups ?? DEFAULT_CONCURRENT_STARTUPS;
    const started = await Promise.allSettled(Array.from({ length: concurrent }, () => ctx.openConnection()));
    const ok = started.filter((s): s is PromiseFulfilledResult<Connection> => s.status === 'fulfilled').map((s) => s.value);
    const failures = started.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => (s.reason as Error).message);
    const times = [ctx.handshake.startupMs, ...ok.map((c) => c.handshake.startupMs)];
    const slowest = Math.max(...times);
    const timing = `startups took ${times.join(', ')} ms (budget ${budget} ms)`;
    if (failures.length > 0) {
      const timedOut = started.some((s) => s.status === 'rejected' && s.reason instanceof TargetStartError);
      verdicts.set(
        startupInBudget.id,
        fail(`${failures.length} of ${concurrent} overlapping startups did not complete${timedOut ? ' in time' : ''}`, {
          expected: `each within ${budget} ms`,
          actual: failures,
        }),
      );
      verdicts.set(startupHeadroom.id, fail(`an overlapping startup did not finish within the budget (${budget} ms)`, { actual: failures }));
    } else {
      verdicts.set(startupInBudget.id, pass(timing));
      verdicts.set(
        startupHeadroom.id,
        slowest <= budget / 2 ? pass(timing) : fail(`the slowest startup took ${slowest} ms, more than half the ${budget} ms budget`, { actual: times }),
      );
    }

    const optedOut = [ctx.handshake, ...ok.map((c) => c.handshake)].some((h) => {
      const experimental = isObject(h.initializeResult.capabilities) ? h.initializeResult.capabilities.experimental : undefined;
      const cache = isObject(experimental) ? experimental[CACHE_KEY] : undefined;
      return isObject(cache) && cache.cacheable === false;
    });
    if (optedOut) {
      verdicts.set(sameCatalog.id, notApplicable(`the server opted out of catalog caching (${CACHE_KEY}: {"cacheable": false})`));
      verdicts.set(noCacheOptOut.id, fail(`the server opts out of catalog caching; Codex documents ${CACHE_KEY} for development and testing only`));
    } else {
      verdicts.set(noCacheOptOut.id, pass());
      const catalogs = [ctx.handshake.tools, ...ok.map((c) => c.handshake.tools)];
      const diffs = catalogs
        .slice(1)
        .map((tools, i) => ({ startup: i + 2, diff: structuralDiff({ tools: catalogs[0] }, { tools }) }))
        .filter((d) => d.diff.length > 0);
      verdicts.set(
        sameCatalog.id,
        diffs.length === 0
          ? pass()
          : fail(`${diffs.length} of ${catalogs.length - 1} other startups listed a different catalog than the first`, {
              diff: diffs.flatMap((d) => [`startup ${d.startup} vs startup 1:`, ...d.diff.map((line) => `  ${line}`)]),
            }),
      );
    }
    return verdicts;
  },
};

export const inventoryServed: CheckDef = {
  id: 'catalog/inventory-connection',
  rule: 'CAT-3',
  level: 'SHOULD',
  title: 'serves an inventory connection (initialize without experimental, then the listings)',
  summary:
    'Besides the connections it calls tools on, Codex opens short-lived inventory connections (for app-server mcpServerStatus/list): a fresh server whose initialize carries no capabilities.experimental, then tools/list, resources/list and resources/templates/list. The server answers each of them; a listing it does not offer may answer "method not found" when its capabilities do not name resources. Source: CONTRACT.md §2 and §3 CAT-3.',
  observes:
    'One more connection (a fresh server process for a started target) is opened as Codex 0.171.0 opens an inventory connection: initialize without experimental, notifications/initialized, tools/list through every page, then resources/list and resources/templates/list at once, each with its own progressToken. The check fails when that startup fails or times out, or when a listing gets no answer, a JSON-RPC error (-32601 is accepted only when the initialize result advertises no resources) or a result without its resources or resourceTemplates array.',
  why: "Codex shows the server's tools and resources from these connections; a server that fails them shows up as broken in Codex's server status, or not at all.",
  typicalMistake:
    "Treating a client whose initialize lacks Codex's experimental capabilities as a foreign host and refusing it, or failing resource listings the server never meant to offer.",
  fix: 'Answer initialize whatever capabilities the client advertises; implement resources/list and resources/templates/list, or leave resources out of your capabilities.',
  needs: [],
};

/** What each inventory listing must hold: Codex reads these arrays. */
const INVENTORY_ARRAYS: Record<string, string> = { 'resources/list': 'resources', 'resources/templates/list': 'resourceTemplates' };

/** An inventory connection, judged by what each of its requests got. */
export const inventoryScenario: Scenario = {
  id: 'catalog/inventory',
  title: 'an inventory connection, as Codex opens for its server status',
  checks: [inventoryServed],
  needs: [],
  transports: ['stdio', 'http'],
  // Its inventory connection is a fresh server; of the shared one it needs only the greeting.
  shares: 'handshake',
  run: async (ctx) => {
    let connection: Connection;
    try {
      connection = await ctx.openConnection('inventory');
    } catch (error) {
      if (!(error instanceof TargetStartError)) throw error;
      return new Map([
        [
          inventoryServed.id,
          fail(`the inventory connection did not start: ${error.message}`, { expected: 'initialize and tools/list answered', actual: error.message }),
        ],
      ]);
    }
    const capabilities = connection.handshake.initializeResult.capabilities;
    const offersResources = isObject(capabilities) && capabilities.resources !== undefined;
    const problems = Object.entries(connection.handshake.inventory ?? {}).flatMap(([method, outcome]) => {
      const array = INVENTORY_ARRAYS[method]!;
      if (outcome.kind === 'result' && isObject(outcome.result) && Array.isArray(outcome.result[array])) return [];
      if (outcome.kind === 'error' && outcome.error.code === -32601 && !offersResources) return [];
      return [
        {
          method,
          expected: offersResources ? `a result with a ${array} array` : `a result with a ${array} array, or error -32601`,
          got: summarizeOutcome(outcome),
        },
      ];
    });
    const verdict =
      problems.length === 0
        ? pass()
        : fail(`the inventory connection's ${problems.map((p) => p.method).join(' and ')} failed`, {
            expected: problems.map(({ method, expected }) => ({ method, expected })),
            actual: problems.map(({ method, got }) => ({ method, got })),
          });
    return new Map([[inventoryServed.id, verdict]]);
  },
};

/** The scenarios of this area, in report order (suites/index.ts lists the areas). */
export const catalogScenarios: Scenario[] = [catalogScenario, inventoryScenario];
