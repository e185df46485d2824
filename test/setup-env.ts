// Loading NODE_EXTRA_CA_CERTS costs every node process about 90 ms of CPU at startup (measured on
// these machines: `node -e 0` 0.11 s with it, 0.03 s without), and the tests start thousands of
// node servers that talk only to loopback. Their children inherit the environment without it.
delete process.env.NODE_EXTRA_CA_CERTS;
// The CLI wraps untrusted text in stop-commands blocks when it runs in GitHub Actions; tests that
// want that behaviour set GITHUB_ACTIONS themselves.
delete process.env.GITHUB_ACTIONS;

// MSC_TEST_CPU_LOG=<file>: each test file appends the CPU its worker process and every process it
// waited for (servers, CLI runs) used while the file ran, to find where the suite's time goes.
if (process.env.MSC_TEST_CPU_LOG) {
  const { afterAll, beforeAll, expect } = await import('vitest');
  const { appendFileSync, readFileSync } = await import('node:fs');
  const cpuSeconds = () => {
    const fields = readFileSync('/proc/self/stat', 'latin1').split(') ')[1]!.split(' ');
    return [11, 12, 13, 14].map((i) => Number(fields[i])).reduce((a, b) => a + b, 0) / 100;
  };
  // From the file's start: a worker that ran another file before counts only this one's share.
  let atStart = 0;
  beforeAll(() => void (atStart = cpuSeconds()));
  afterAll(() => {
    appendFileSync(process.env.MSC_TEST_CPU_LOG!, `${(cpuSeconds() - atStart).toFixed(1)}\t${process.pid}\t${expect.getState().testPath}\n`);
  });
}
