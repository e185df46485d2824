/**
 * How long shrinking a failing sequence goes on (server and host exploration). Each candidate
 * fast-check tries is a rerun on a fresh server or host, and most of them, once the story is as
 * short as it gets, are fast-check trying smaller values at the same length: reruns that cost
 * seconds and shorten nothing. So shrinking stops after `maxRuns` reruns, or once `patience`
 * reruns in a row found no failing sequence smaller than the smallest so far, or once the story is
 * short `enough`; but never on a failure that still holds commands after its break (a replay runs
 * them, so its story would be longer than the one reported: fast-check's next round drops them),
 * except at `maxRuns`. Counted, not timed: where a failure shrinks to does not depend on the
 * machine's load. A size is the story's steps, then the sequence's commands, then anything else.
 */
export class ShrinkBudget {
  private runs = 0;
  private fruitless = 0;
  private smallest: readonly number[] | undefined;
  private latest: readonly number[] | undefined;

  constructor(
    private readonly maxRuns: number,
    private readonly patience: number,
    private readonly enough: (size: readonly number[]) => boolean = () => false,
  ) {}

  /** The failure shrinking starts from, and its size. */
  start(size: readonly number[]): void {
    this.smallest = size;
    this.latest = size;
  }

  /** A rerun while shrinking, with its size when it failed too. */
  rerun(size?: readonly number[]): void {
    this.runs++;
    if (size) this.latest = size;
    if (size && this.smallest && smaller(size, this.smallest)) {
      this.smallest = size;
      this.fruitless = 0;
    } else this.fruitless++;
  }

  /** Reruns made while shrinking. */
  get reruns(): number {
    return this.runs;
  }

  get spent(): boolean {
    if (this.runs >= this.maxRuns) return true;
    const tidy = this.latest === undefined || (this.latest[1] ?? 0) <= this.latest[0]!;
    return tidy && (this.fruitless >= this.patience || (this.smallest !== undefined && this.enough(this.smallest)));
  }
}

/** Element by element, the first difference decides. */
function smaller(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}
