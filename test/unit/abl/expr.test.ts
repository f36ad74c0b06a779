// Expression semantics (ABL.md §4): coercions, null handling, operators and functions.

import { evaluate, evaluateDetailed, fixedContext, parseExpression, type Scope } from '../../../abl';

const ctx = fixedContext(Date.UTC(2025, 0, 15, 12, 0, 0), 42);
const scope: Scope = {
  n: 5, zero: 0, s: '10', word: 'Hello', t: true, f: false, nul: null, arr: [1, 2, 3], empty: [], obj: { a: { b: 2 } }, eobj: {},
  items: [{ id: 'x', price: 3 }, { id: 'y', price: 9 }], falseStr: 'false',
};

function ev(src: string, sc: Scope = scope): unknown {
  const p = parseExpression(src);
  if (!p.ast) throw new Error(`parse failed: ${src}: ${p.error?.message}`);
  return evaluate(p.ast, sc, ctx);
}

describe('truthiness', () => {
  it.each(['false', '0', '""', 'falseStr', 'nul', 'missing', 'empty', 'eobj'])('%s is falsy', (e) => {
    expect(ev(`NOT ${e}`)).toBe(true);
  });
  it.each(['true', '1', '"x"', 'arr', 'obj', 's'])('%s is truthy', (e) => {
    expect(ev(`NOT ${e}`)).toBe(false);
  });
});

describe('equality', () => {
  it('null equals undefined', () => expect(ev('nul == missing')).toBe(true));
  it('numeric strings compare as numbers', () => {
    expect(ev('s == 10')).toBe(true);
    expect(ev('"10.0" == 10')).toBe(true);
    expect(ev('"10" == "10.00"')).toBe(true);
  });
  it('other strings are case-sensitive', () => {
    expect(ev('word == "Hello"')).toBe(true);
    expect(ev('word == "hello"')).toBe(false);
  });
  it('!= is true when either side is null', () => {
    expect(ev('nul != 1')).toBe(true);
    expect(ev('nul != null')).toBe(true);
    expect(ev('n != 5')).toBe(false);
    expect(ev('n != 6')).toBe(true);
  });
});

describe('ordering coerces', () => {
  it.each([
    ['s > 9', true], ['"abc" < "abd"', true], ['t > f', true], ['arr > 2', true], ['missing < 1', true], ['nul >= 0', true],
    ['word > 3', false], ['"2025-01-02" > "2025-01-01"', true],
  ])('%s → %s', (e, want) => expect(ev(e)).toBe(want));
});

describe('operators', () => {
  it('precedence: * before +, comparison after arithmetic, AND before OR', () => {
    expect(ev('1 + 2 * 3')).toBe(7);
    expect(ev('n + 1 > 5 AND zero == 0 OR f')).toBe(true);
    expect(ev('-n + 2')).toBe(-3);
  });
  it('+ concatenates strings', () => expect(ev('word + " " + n')).toBe('Hello 5'));
  it('division by zero is null', () => {
    expect(ev('n / 0')).toBeNull();
    expect(ev('DIV(n, 0)')).toBeNull();
  });
  it('IS SET / IS NOT SET / EXISTS / EMPTY', () => {
    expect(ev('n IS SET')).toBe(true);
    expect(ev('zero IS SET')).toBe(true);
    expect(ev('nul IS NOT SET')).toBe(true);
    expect(ev('EXISTS missing')).toBe(false);
    expect(ev('EMPTY empty AND EMPTY eobj AND EMPTY "" AND EMPTY nul')).toBe(true);
    expect(ev('EMPTY zero')).toBe(false);
  });
  it('contains: substring, array member, not on null', () => {
    expect(ev('word contains "ell"')).toBe(true);
    expect(ev('arr contains 2')).toBe(true);
    expect(ev('arr contains "2"')).toBe(true);
    expect(ev('nul contains "x"')).toBe(false);
  });
  it('IN and NOT IN', () => {
    expect(ev('n IN [1, 5]')).toBe(true);
    expect(ev('n NOT IN [1, 5]')).toBe(false);
    expect(ev('"ell" IN word')).toBe(true);
  });
  it('matches fills match.*', () => {
    const p = parseExpression('"INV-123456" matches /^INV-(?<num>\\d{3})(\\d+)$/');
    const r = evaluateDetailed(p.ast!, scope, ctx);
    expect(r.value).toBe(true);
    expect(r.match).toEqual({ '0': 'INV-123456', '1': '123', '2': '456', num: '123' });
    expect(ev('"ab12" matches /(\\d+)/ AND match.1 == 12')).toBe(true);
    expect(ev('nul matches /x/')).toBe(false);
  });
  it('IMPLIES is NOT p OR q', () => {
    expect(ev('f IMPLIES f')).toBe(true);
    expect(ev('t IMPLIES f')).toBe(false);
  });
  it('paths through null or missing keys are undefined', () => {
    expect(ev('obj.a.b')).toBe(2);
    expect(ev('obj.x.y.z')).toBeUndefined();
    expect(ev('nul.a')).toBeUndefined();
    expect(ev('items[1].id')).toBe('y');
    expect(ev('obj.constructor')).toBeUndefined();
  });
  it('keywords and functions ignore case', () => {
    expect(ev('n is set and not f')).toBe(true);
    expect(ev('upper(word)')).toBe('HELLO');
  });
  it('map shorthand {a, b: x}', () => expect(ev('{n, b: 2}')).toEqual({ n: 5, b: 2 }));
});

describe('functions', () => {
  it.each([
    ['ADD(1, 2, 3)', 6], ['SUB(5, 2)', 3], ['MUL(2, 3)', 6], ['ROUND(2.345, 2)', 2.35], ['ABS(-3)', 3], ['MIN(3, 1, 2)', 1], ['MAX(arr)', 3],
    ['UPPER(nul)', ''], ['LOWER("AB")', 'ab'], ['TRIM("  x ")', 'x'], ['SUBSTRING("hello", 1, 3)', 'el'], ['REPLACE("a-b-c", "-", "+")', 'a+b+c'],
    ['SPLIT("a,b")', ['a', 'b']], ['JOIN(arr, "|")', '1|2|3'], ['PAD_START("7", 3, "0")', '007'], ['PAD_END("7", 3)', '7  '], ['REPEAT("ab", 2)', 'abab'],
    ['MASK("4111111111111111", "last4")', '************1111'], ['MASK("abcdefgh", "first4")', 'abcd****'], ['MASK("abcdefgh", "2*2")', 'ab****gh'],
    ['FORMAT_CURRENCY(1234.5, "USD")', '$1,234.50'], ['FORMAT_DATE("2025-03-05T10:00:00Z", "DD/MM/YYYY HH:mm")', '05/03/2025 10:00'],
    ['FORMAT_DATE("2025-03-05T10:00:00Z", "MMM D, YYYY h A", "America/New_York")', 'Mar 5, 2025 5 AM'],
    ['ORDINAL(1)', '1st'], ['ORDINAL(12)', '12th'], ['ORDINAL(23)', '23rd'],
    ['IS_ARRAY(arr)', true], ['IS_NUMBER(s)', true], ['IS_NUMBER(word)', false], ['IS_NUMBER(" -3.5 ")', true], ['IS_NUMBER("4x")', false], ['IS_STRING(s)', true], ['TO_NUMBER("4.5")', 4.5], ['TO_NUMBER("x")', null], ['TO_STRING(5)', '5'],
    ['LENGTH(word)', 5], ['LENGTH(arr)', 3], ['LENGTH(nul)', 0],
    ['ARRAY_FIND(items, "id", "y").price', 9], ['ARRAY_FIND_INDEX(items, "id", "z")', -1],
    ['OBJECT_KEYS(obj)', ['a']], ['OBJECT_VALUES({a: 1})', [1]], ['OBJECT_MERGE({a: 1}, {b: 2})', { a: 1, b: 2 }],
    ['COALESCE(nul, missing, 0)', 0], ['COALESCE(nul, f)', false],
    ['NOW()', '2025-01-15T12:00:00.000Z'], ['NOW_MS()', Date.UTC(2025, 0, 15, 12, 0, 0)],
    ['MATCHES_PATTERN("a1", "\\\\d")', true], ['NOT_MATCHES_PATTERN("4111 1111 1111 1111", "\\\\d{4}[ -]?\\\\d{4}")', false],
    ['CONTAINS_PII("mail me at a@b.co")', true], ['WORD_COUNT(" a b  c ")', 3],
  ])('%s', (src, want) => expect(ev(src)).toEqual(want));

  it('UNIQUE_ID takes randomness only from the context', () => {
    const a = parseExpression('UNIQUE_ID(10)').ast!;
    const x = evaluate(a, {}, fixedContext(0, 7));
    const y = evaluate(a, {}, fixedContext(0, 7));
    const z = evaluate(a, {}, fixedContext(0, 8));
    expect(x).toEqual(y);
    expect(x).not.toEqual(z);
    expect(String(x)).toMatch(/^[a-z0-9]{10}$/);
    expect(String(evaluate(parseExpression('UNIQUE_ID()').ast!, {}, ctx))).toHaveLength(6);
  });

  it('accepts a lookup function as scope', () => {
    expect(ev('a + b', (name) => (name === 'a' ? 1 : name === 'b' ? 2 : undefined))).toBe(3);
  });
});

describe('parse errors', () => {
  it.each([
    ['a >', 'unexpected end of expression', 3],
    ['(a', 'expected ")" but found the end of the expression', 2],
    ['a IS b', 'expected SET after IS but found "b"', 5],
    ['"abc', 'unterminated string', 0],
    ['a # b', 'unexpected character "#"', 2],
    ['user wants billing', 'unexpected "wants"', 5],
  ])('%s', (src, message, pos) => {
    expect(parseExpression(src).error).toEqual({ message, pos });
  });
});
