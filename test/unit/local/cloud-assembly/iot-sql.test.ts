import { parseRuleSql, UnsupportedSqlError } from '../../../../local/cloud-assembly/iot-sql';

const input = (payload: string, topic = 'j/data/dev-1/temp') => ({ topic, payload: Buffer.from(payload), receivedAt: 1_700_000_000_123, clientId: 'dev-1' });

describe('parseRuleSql', () => {
  it('evaluates the data rule: the payload base64-encoded, whatever it is, with its topic and arrival', () => {
    const rule = parseRuleSql("SELECT encode(*, 'base64') AS payload, topic() AS topic, timestamp() AS received_at FROM 'j/data/+/+'", '2016-03-23');

    expect(rule.topicFilter).toBe('j/data/+/+');
    expect(rule.select(input('not json {'))).toEqual({
      payload: Buffer.from('not json {').toString('base64'),
      topic: 'j/data/dev-1/temp',
      received_at: 1_700_000_000_123,
    });
  });

  it('evaluates SELECT * with other items over a JSON object, and topic(n) and clientid()', () => {
    const rule = parseRuleSql("select *, topic() as topic, topic(5) as client, clientid() AS cid from '$aws/events/presence/+/+'", '2016-03-23');

    expect(rule.select(input('{"eventType":"connected","clientId":"dev-1"}', '$aws/events/presence/connected/dev-1'))).toEqual({
      eventType: 'connected',
      clientId: 'dev-1',
      topic: '$aws/events/presence/connected/dev-1',
      client: 'dev-1',
      cid: 'dev-1',
    });
  });

  it('evaluates a WHERE of = and <> comparisons joined by AND; a comparison with an undefined value does not hold', () => {
    const rule = parseRuleSql(
      "SELECT topic() AS topic FROM 'j/data/+/+' WHERE clientid() = topic(3) AND topic(4) <> 'secret' AND topic(9) <> 'x'",
      '2016-03-23',
    );
    const ownRule = parseRuleSql("SELECT topic() AS topic FROM 'j/data/+/+' WHERE clientid() = topic(3)", '2016-03-23');

    expect(ownRule.where(input('{}'))).toBe(true);
    expect(ownRule.where(input('{}', 'j/data/dev-2/temp'))).toBe(false);
    expect(ownRule.where({ ...input('{}'), clientId: undefined })).toBe(false);
    // topic(9) is undefined: the whole condition is not true.
    expect(rule.where(input('{}'))).toBe(false);
    expect(parseRuleSql("SELECT * FROM 'a/+'", '2016-03-23').where(input('{}', 'a/b'))).toBe(true);
  });

  it('evaluates startswith(a, b) in a WHERE: true when the string a begins with b; not when a is undefined', () => {
    const rule = parseRuleSql("SELECT * FROM '$aws/events/presence/+/+' WHERE startswith(topic(5), 'dev-') AND topic(4) <> 'x'", '2016-03-23');
    const at = (topic: string) => rule.where(input('{}', topic));

    expect(at('$aws/events/presence/connected/dev-aaaaaaaaaaaaaaaaaaaa')).toBe(true);
    expect(at('$aws/events/presence/connected/console-0123456789abcdef')).toBe(false);
    expect(at('$aws/events/presence/connected/xdev-a')).toBe(false);
    expect(parseRuleSql("SELECT * FROM 'a/+' WHERE startswith(topic(9), 'a')", '2016-03-23').where(input('{}', 'a/b'))).toBe(false);
    expect(parseRuleSql("SELECT * FROM 'a/+' WHERE startswith(clientid(), topic(2))", '2016-03-23').where({ ...input('{}', 'a/dev'), clientId: 'dev-1' })).toBe(
      true,
    );
  });

  it('fails the evaluation of SELECT * over a payload that is not a JSON object', () => {
    const rule = parseRuleSql("SELECT * FROM 'a/+'", '2016-03-23');

    expect(() => rule.select(input('[1,2]', 'a/b'))).toThrow(/not a JSON object/);
    expect(() => rule.select(input('garbage', 'a/b'))).toThrow(/not a JSON object/);
  });

  it.each([
    ["SELECT * FROM 'a/+' WHERE temperature > 50", /the condition "temperature > 50"/],
    ["SELECT * FROM 'a/+' WHERE temperature = 50", /the WHERE operand "temperature"/],
    ["SELECT * FROM 'a/+' WHERE topic(1) = 'a' OR clientid() = 'b'", /the condition/],
    ["SELECT * FROM 'a/+' GROUP BY x", /"GROUP BY x"/],
    ["SELECT * FROM 'a/+' WHERE startswith(topic(1))", /the condition "startswith\(topic\(1\)\)"/],
    ["SELECT * FROM 'a/+' WHERE startswith(temperature, 'a')", /the WHERE operand "temperature"/],
    ["SELECT temperature FROM 'a/+'", /the item "temperature"/],
    ["SELECT upper(topic()) AS t FROM 'a/+'", /the expression "upper\(topic\(\)\)"/],
    ["SELECT encode(*, 'hex') AS p FROM 'a/+'", /the expression/],
    ['SELECT * FROM a', /this statement/],
  ])('refuses SQL outside the subset: %s', (sql, message) => {
    expect(() => parseRuleSql(sql, '2016-03-23')).toThrow(UnsupportedSqlError);
    expect(() => parseRuleSql(sql, '2016-03-23')).toThrow(message);
  });

  it('refuses another SQL version, including the default one when the rule names none', () => {
    expect(() => parseRuleSql("SELECT * FROM 'a'", '2015-10-08')).toThrow(/SQL version 2015-10-08/);
    expect(() => parseRuleSql("SELECT * FROM 'a'")).toThrow(/SQL version 2015-10-08/);
  });
});
