import { evaluate, type SearchScope } from './expression-evaluator.js';
import { EXPRESSION_LIMITS } from './expression-limits.js';
import { parseExpression } from './expression-parser.js';

function scope(roots: Record<string, unknown>): SearchScope {
  return { root: (name) => (Object.hasOwn(roots, name) ? roots[name] : undefined) };
}

const order = scope({
  id: '1700000000000-0',
  time: 1_700_000_000_000,
  fields: { n: '7', data: '{"orderId":"A1"}' },
  headers: { tenant: 'acme', region: 'eu-west' },
  payload: { orderId: 'A1', total: 120, tags: ['gift', 'rush'], nested: { ok: true }, lines: [{ sku: 'S-1' }] },
});

const holds = (expression: string, on = order) => evaluate(parseExpression(expression), on);
const refusal = (expression: string) => {
  try {
    parseExpression(expression);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`"${expression.slice(0, 40)}" was accepted`);
};

describe('search expressions', () => {
  it.each([
    ['payload.orderId == "A1"', true],
    ["payload.orderId == 'A2'", false],
    ['payload.orderId == "A1" && headers.tenant != "x" || payload.total > 100', true],
    ['payload.orderId == "B" || payload.total > 100', true],
    ['payload.orderId == "B" || payload.total > 200', false],
    ['!(payload.total <= 120)', false],
    ['payload.total >= 120 && payload.total < 121', true],
    ['fields.n == 7 && fields.n > 6.5', true],
    ['fields.n == "7"', true],
    ['headers.region startsWith "eu-" && headers.region endsWith "west"', true],
    ['fields.data contains "A1"', true],
    ['payload.tags contains "rush"', true],
    ['payload.tags contains "slow"', false],
    ['headers.tenant in ["acme", "globex"]', true],
    ['payload.total in [1, 2]', false],
    ['exists(headers.tenant) && !exists(headers.missing)', true],
    ['payload.nested.ok', true],
    ['payload.lines[0].sku == "S-1" && payload["orderId"] == "A1"', true],
    ['payload.lines[5].sku == "S-1"', false],
    ['headers.missing != "x"', true],
    ['headers.missing == null', false],
    ['id == "1700000000000-0" && time > 0', true],
    ['payload.orderId.length == 2', false],
    ['payload.tags.length == 2', true],
    ['"a" == "a"', true],
    ['payload.total > "abc"', false],
    // Found by expression.property.spec.ts: Number() read these as numbers.
    ['"0x10" == 16 || "0b1" == 1 || "Infinity" > 1 || " 7" == 7', false],
    ['"1e1" == 10 && "-2.5" < 0 && "+3" == 3', true],
  ])('%s → %s', (expression, expected) => {
    expect(holds(expression)).toBe(expected);
  });

  it('reads own properties only: no prototype, no inherited names', () => {
    const hostile = scope({ payload: JSON.parse('{"__proto__":{"admin":true},"a":{}}') });
    expect(holds('payload.a.toString == null', hostile)).toBe(false);
    expect(holds('exists(payload.a.hasOwnProperty)', hostile)).toBe(false);
    expect(holds('exists(payload.admin)', hostile)).toBe(false);
    expect(refusal('payload.__proto__.admin == true')).toMatch(/'__proto__' cannot be searched .* at column 8/);
    expect(refusal('payload["constructor"] == 1')).toMatch(/'constructor' cannot be searched/);
    expect(refusal('payload.a.prototype')).toMatch(/'prototype' cannot be searched/);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it.each([
    ['payload.orderId == "A1")', /unexpected '\)' at column 24/],
    ['payload.orderId == "A1', /unterminated string \(opened with "\) at column 20/],
    ['payload.orderId = "A1"', /unexpected '=' \(compare with '=='\) at column 17/],
    ['payload.a & payload.b', /use '&&'/],
    ['(payload.a == 1', /expected '\)' to close the parenthesis, got end of expression at column 16/],
    ['process.exit(1)', /unknown name 'process' \(a path starts with id, time, fields, headers, payload/],
    ['payload.a == 1 == 2', /join comparisons with && or \|\|/],
    ['payload.a == [1]', /a list needs 'in'/],
    ['payload.a in "x"', /expected '\[' after 'in'/],
    ['payload.a in [payload.b]', /a list holds literals only/],
    ['payload.a == "\\x"', /bad escape '\\x'/],
    ['payload.a == 1.2.3', /'1.2.3' is not a number/],
    ['payload.', /expected a property name after '.'/],
    ['   ', /Search expression is empty/],
    ['payload.a ==', /unexpected end of expression/],
  ])('refuses %s with the column', (expression, message) => {
    expect(refusal(expression)).toMatch(message);
  });

  it('refuses hostile sizes quickly and without a stack overflow', () => {
    const started = Date.now();
    expect(refusal(`${'('.repeat(5_000)}payload.a${')'.repeat(5_000)}`)).toMatch(/characters long; the limit is 2000/);
    expect(refusal(`${'('.repeat(500)}payload.a${')'.repeat(500)}`)).toMatch(/nesting deeper than 24 levels/);
    expect(refusal(`${'!'.repeat(400)}payload.a`)).toMatch(/nesting deeper than 24 levels/);
    expect(refusal(Array.from({ length: 150 }, (_, i) => `id==${i}`).join('||'))).toMatch(
      /more than 200 parts \(at column \d+\)/,
    );
    expect(refusal(`payload.a == "${'x'.repeat(3_000)}"`)).toMatch(/the limit is 2000/);
    expect(refusal(`payload.a in [${Array.from({ length: 150 }, (_, i) => i).join(',')}]`)).toMatch(/at most 100 items/);
    expect(refusal(`payload${'.a'.repeat(20)} == 1`)).toMatch(/longer than 16 segments/);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('has no pattern matching that input can make backtrack: a long haystack is a linear scan', () => {
    const big = scope({ payload: { text: `${'a'.repeat(1_000_000)}b` } });
    const started = Date.now();
    expect(holds(`payload.text contains "${'a'.repeat(1_000)}b"`, big)).toBe(true);
    expect(holds(`payload.text endsWith "ab" && !(payload.text startsWith "b")`, big)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('keeps its limits where the docs say', () => {
    expect(EXPRESSION_LIMITS).toMatchObject({ maxLength: 2_000, maxDepth: 24, maxNodes: 200 });
  });
});
