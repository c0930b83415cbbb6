import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { probeTrimGap } from '../../libs/nest-redis-streams/src/redis/redis-features.js';
import { readDocuments } from '../readme/documents.js';
import { testContext, unique } from '../support/helpers.js';

// The docs' "Supported Redis versions" (docs/servers.md) is a tested table: `npm run test:servers` runs this spec on
// every server of the matrix (and `npm test` on Debian's), and the row of the server it runs on
// must say what that server answered to the probes, column by column.
const readme = readDocuments();

function tableRows(): string[][] {
  const at = readme.indexOf('<!-- server-table:');
  if (at < 0) throw new Error('No document has a table marked <!-- server-table: … -->');
  const lines = readme.slice(at).split('\n').slice(1);
  const rows: string[][] = [];
  for (const line of lines) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows.slice(2); // the header and its rule
}

const yesNo = (value: boolean) => (value ? 'yes' : 'no');

describe("the docs' table of supported servers", () => {
  const { redis } = testContext();

  it('has a row for the server this suite runs on, saying what it answered', async () => {
    const caps = await probeCapabilities(redis, unique('readme-table'));
    const node = caps.nodes[0];
    const family = node.server === 'valkey' ? 'Valkey' : 'Redis';
    const row = tableRows().find(([server, version]) => server.startsWith(family) && version === node.version);
    if (!row)
      throw new Error(
        `The server table (docs/servers.md) has no row for ${family} ${node.version}, which this suite runs on: add it.`,
      );
    const forgets = await probeTrimGap(redis, `{${unique('readme-gap')}}:probe`);
    const [, , trimLossKept, acked, claim, idmp, ackDelete, floor] = row;
    expect({ trimLossKept, acked, claim, idmp, ackDelete }).toEqual({
      trimLossKept: yesNo(!forgets),
      acked: yesNo(node.trimConditions),
      claim: yesNo(node.claim),
      idmp: yesNo(node.idmp),
      ackDelete: yesNo(node.ackDelete),
    });
    expect(floor.startsWith(node.patchFloor.ok ? 'at the floor' : 'below')).toBe(true);
  });
});
