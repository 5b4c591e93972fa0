import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeHtml, highlight, offsetOf, tokenize } from '../lib/highlight.js';

const kinds = (text, lang) => tokenize(text, lang).filter((t) => t.type !== 'ws').map((t) => [t.type, t.text]);

test('tokens cover the text exactly, in every language', () => {
  const samples = [
    ["SELECT time, \"Host\" FROM cpu -- note\nWHERE x = 'it''s' AND y >= 1.5e3;", 'sql'],
    ['SELECT mean(usage) FROM /cpu.*/ WHERE host =~ /^a/ AND time > now() - 1h GROUP BY time(5m)', 'influxql'],
    ['sum by (host) (rate(http_requests_total{code!~"5.."}[5m])) # total', 'promql'],
    ["unterminated 'string", 'sql'],
  ];
  for (const [text, lang] of samples) {
    const tokens = tokenize(text, lang);
    assert.equal(tokens.map((t) => t.text).join(''), text);
    for (let i = 1; i < tokens.length; i++) assert.equal(tokens[i].start, tokens[i - 1].end);
  }
});

test('SQL: keywords, functions, strings with doubled quotes, quoted names, comments', () => {
  assert.deepEqual(kinds("SELECT count(*) FROM \"My\"\"T\" WHERE s = 'it''s' -- c", 'sql'), [
    ['keyword', 'SELECT'], ['function', 'count'], ['punct', '('], ['operator', '*'], ['punct', ')'],
    ['keyword', 'FROM'], ['quoted', '"My""T"'], ['keyword', 'WHERE'], ['ident', 's'],
    ['operator', '='], ['string', "'it''s'"], ['comment', '-- c'],
  ]);
  // `1h` is no duration in SQL; `>=` is one operator.
  assert.deepEqual(kinds('x >= 1h', 'sql'), [['ident', 'x'], ['operator', '>='], ['number', '1'], ['ident', 'h']]);
});

test('InfluxQL: regexes after =~ and FROM, division elsewhere, durations', () => {
  assert.deepEqual(kinds('SELECT a / 2 FROM /cpu/ WHERE h =~ /x\\/y/ AND time > now() - 90m', 'influxql'), [
    ['keyword', 'SELECT'], ['ident', 'a'], ['operator', '/'], ['number', '2'], ['keyword', 'FROM'],
    ['regex', '/cpu/'], ['keyword', 'WHERE'], ['ident', 'h'], ['operator', '=~'], ['regex', '/x\\/y/'],
    ['keyword', 'AND'], ['ident', 'time'], ['operator', '>'], ['function', 'now'], ['punct', '('],
    ['punct', ')'], ['operator', '-'], ['duration', '90m'],
  ]);
});

test('PromQL: metric names with colons, label strings, durations, # comments', () => {
  assert.deepEqual(kinds('sum by (job) (rate(a:b_total{x="1"}[1h30m])) # c', 'promql'), [
    ['function', 'sum'], ['keyword', 'by'], ['punct', '('], ['ident', 'job'], ['punct', ')'],
    ['punct', '('], ['function', 'rate'], ['punct', '('], ['ident', 'a:b_total'], ['punct', '{'],
    ['ident', 'x'], ['operator', '='], ['string', '"1"'], ['punct', '}'], ['punct', '['],
    ['duration', '1h30m'], ['punct', ']'], ['punct', ')'], ['punct', ')'], ['comment', '# c'],
  ]);
});

test('highlight escapes HTML and wraps tokens in classed spans', () => {
  const html = highlight("SELECT '<b>&' FROM t", 'sql');
  assert.equal(html, '<span class="tok-keyword">SELECT</span> <span class="tok-string">&#39;&lt;b&gt;&amp;&#39;</span> <span class="tok-keyword">FROM</span> <span class="tok-ident">t</span>');
  assert.ok(!highlight('<script>', 'sql').includes('<script>'));
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});

test('highlight marks the token at an error position', () => {
  const html = highlight('SELECT 1\nFROM nope', 'sql', { line: 2, column: 6 });
  assert.ok(html.includes('<mark class="tok-error"><span class="tok-ident">nope</span></mark>'), html);
  // Past the end: a marked blank after the text.
  assert.ok(highlight('SELECT', 'sql', { line: 1, column: 7 }).endsWith('<mark class="tok-error"> </mark>'));
  // On whitespace: the one blank.
  assert.ok(highlight('a   b', 'sql', { line: 1, column: 3 }).includes('<mark class="tok-error"> </mark>'));
  assert.ok(!highlight('SELECT 1', 'sql', null).includes('<mark'));
});

test('offsetOf counts columns in characters across lines', () => {
  assert.equal(offsetOf('ab\ncd', 2, 2), 4);
  assert.equal(offsetOf('ab\ncd', 1, 1), 0);
  // An emoji is one character (two UTF-16 units).
  assert.equal(offsetOf('😀x', 1, 2), 2);
  assert.equal(offsetOf('ab', 5, 1), 2);
  assert.equal(offsetOf('ab\ncd', 1, 10), 2, 'clamped to the end of its line');
});
