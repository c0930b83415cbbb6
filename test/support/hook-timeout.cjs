// The default for every test and hook that does not name its own timeout (Jest's is 5 s). Hooks
// close Nest apps, disconnect clients and stop private servers or whole clusters; on a busy
// machine (the servers matrix runs three tiers side by side) an afterAll that stops a cluster
// took longer than 5 s and failed a suite whose tests had all passed.
jest.setTimeout(30_000);
