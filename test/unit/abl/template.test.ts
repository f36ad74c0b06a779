// Template rendering ({{ }}, #if/else, #each with this/@index, filters).

import { fixedContext, parseTemplate, renderTemplate } from '../../../abl';

const ctx = fixedContext(Date.UTC(2025, 0, 1, 12, 0, 0));
const scope = { name: 'ana', n: 0, items: [{ t: 'a' }, { t: 'b' }], obj: { x: 1 }, nul: null, when: Date.UTC(2025, 0, 1, 11, 58, 0) };

describe('renderTemplate', () => {
  it.each([
    ['Hi {{name}}!', 'Hi ana!'],
    ['{{missing}}|{{nul}}|{{nul.x}}', '||'],
    ['{{n}}', '0'],
    ['{{name | upper}} {{"X" | lower}}', 'ANA x'],
    ['{{obj | json}}', '{"x":1}'],
    ['{{obj}}', '{"x":1}'],
    ['{{name | nope}}', ''],
    ['{{when | ago}}', '2 minutes ago'],
    ['{{#if n}}yes{{else}}no{{/if}}', 'no'],
    ['{{#if name}}hi {{name}}{{/if}}', 'hi ana'],
    ['{{#each items}}{{@index}}={{this.t}}{{t}};{{/each}}', '0=aa;1=bb;'],
    ['{{#each missing}}x{{/each}}done', 'done'],
    ['{{#if items}}{{#each items}}[{{t}}]{{/each}}{{/if}}', '[a][b]'],
    ['{{UPPER(name) + "!"}}', 'ANA!'],
    ['{x} stays', '{x} stays'],
    ['{{ a || b }}', 'false'],
    // Handlebars helpers and data variables, as the guides write them
    ['{{#each items}}{{add @index 1}}. {{t}}{{#unless @last}}, {{/unless}}{{/each}}', '1. a, 2. b'],
    ['{{#each items}}{{#if @first}}first {{else}}then {{/if}}{{t}} {{/each}}', 'first a then b '],
    ['{{#if (eq name "ana")}}yes{{else}}no{{/if}} {{#unless (gt (length items) 5)}}few{{/unless}}', 'yes few'],
    ['{{multiply (add 1 2) 3}} {{default missing "n/a"}} {{upper name}}', '9 n/a ANA'],
    ['{{#each obj}}{{@key}}={{this}}{{/each}} {{#each missing}}x{{else}}none{{/each}}', 'x=1 none'],
  ])('%s', (tpl, want) => expect(renderTemplate(tpl, scope, ctx)).toBe(want));

  it('reports problems without throwing', () => {
    expect(parseTemplate('{{#if x}}a').problems).toEqual([{ kind: 'syntax', message: '{{#if}} is never closed', offset: 0 }]);
    expect(parseTemplate('a {{/each}}').problems[0]?.kind).toBe('syntax');
    expect(parseTemplate('{{ a > }}').problems[0]?.kind).toBe('expression');
    expect(parseTemplate('{{ a | shout }}').problems).toEqual([{ kind: 'filter', message: 'shout', offset: 3 }]);
    expect(parseTemplate('{{ open').problems[0]?.message).toMatch(/never closed/);
    expect(renderTemplate('{{#if x}}a', { x: true }, ctx)).toBe('a');
  });
});
