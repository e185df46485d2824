// Loading NODE_EXTRA_CA_CERTS costs every node process about 90 ms of CPU at startup (measured on
// these machines: `node -e 0` 0.11 s with it, 0.03 s without), and the tests start thousands of
// node servers that talk only to loopback. Their children inherit the environment without it.
delete process.env.NODE_EXTRA_CA_CERTS;
// The CLI wraps untrusted text in stop-commands blocks when it runs in GitHub Actions; tests that
// want that behaviour set GITHUB_ACTIONS themselves.
delete process.env.GITHUB_ACTIONS;
