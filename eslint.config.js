// Lint rules that make DESIGN.md's layout and import rules executable.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const importPlugin = require('eslint-plugin-import');

const layerZones = [
  // Nothing outside api/ imports api/: what a route and a worker both need lives in core/.
  ...['core', 'activities', 'workers', 'workflows', 'db', 'lib', 'providers', 'infra'].map((target) => ({
    target: `./${target}`,
    from: './api',
    message: `${target}/ may not import api/: what both need belongs in core/ (docs/architecture.md).`,
  })),
  // core/ is the domain below the API: db/, lib/, providers/, abl/ and the Temporal client with
  // the workflows' contract (definitions, search attributes, the pure task rules), never a worker's side.
  ...['activities', 'workers', 'infra'].map((from) => ({
    target: './core',
    from: `./${from}`,
    message: `core/ may not import ${from}/ (docs/architecture.md).`,
  })),
  {
    target: './core',
    from: './workflows',
    except: ['./definitions.ts', './search-attributes.ts', './human-task-rules.ts'],
    message: 'core/ reaches workflows through the Temporal client and workflows/definitions.ts only.',
  },
  // db/, providers/ and lib/ are leaves: they never reach up into core, the edge or the workflows.
  ...['db', 'providers', 'lib'].flatMap((target) =>
    ['core', 'workflows', 'activities', 'workers'].map((from) => ({
      target: `./${target}`,
      from: `./${from}`,
      message: `${target}/ may not import ${from}/ (DESIGN.md import rules).`,
    })),
  ),
  // The API talks to workflows through the Temporal client; activities are worker-side only.
  { target: './api', from: './activities', message: 'api/ talks to workflows, never to activities directly.' },
  { target: './api', from: './providers', message: 'api/ reaches providers through core/ (core/llm, core/completions).' },
  // Production code never depends on test helpers.
  ...['api', 'core', 'abl', 'workflows', 'activities', 'workers', 'db', 'providers', 'lib', 'infra'].map((target) => ({
    target: `./${target}`,
    from: './test',
    message: 'production code may not import test/ helpers.',
  })),
  // abl/ is a pure library: it imports nothing of ours outside abl/.
  ...['api', 'core', 'workflows', 'activities', 'workers', 'db', 'providers', 'lib', 'infra'].map((from) => ({
    target: './abl',
    from: `./${from}`,
    message: 'abl/ is pure and self-contained.',
  })),
];

module.exports = tseslint.config(
  // sdk/schema.d.ts is generated (npm run sdk:generate).
  { ignores: ['node_modules/**', 'dist/**', '.data/**', '.tools/**', 'coverage/**', '**/*.js', '**/*.mjs', 'sdk/schema.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { import: importPlugin },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: __dirname },
    },
    settings: { 'import/resolver': { node: { extensions: ['.ts', '.js', '.json'] } } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import/no-cycle': ['error', { maxDepth: 10 }],
      'import/no-restricted-paths': ['error', { basePath: __dirname, zones: layerZones }],
    },
  },
  {
    // Deterministic code: no Node built-ins (Temporal's sandbox and ABL purity).
    files: ['workflows/**/*.ts', 'abl/**/*.ts'],
    rules: {
      'import/no-nodejs-modules': 'error',
      'no-restricted-globals': ['error', 'process', 'Buffer', 'setInterval', 'fetch'],
    },
  },
  {
    // workflows/ imports only abl/, workflows/ and *types* from activities/.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/activities', '**/activities/*'], allowTypeImports: true, message: 'Workflows import activity types only.' },
            { group: ['**/api/*', '**/core/*', '**/db/*', '**/providers/*', '**/lib/*', '**/workers/*', '**/infra/*'], message: 'Workflows import only abl/, workflows/ and activity types.' },
            { group: ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing', 'mongoose', 'express'], message: 'Not allowed in workflow code.' },
          ],
        },
      ],
    },
  },
  {
    // The typed client is self-contained: at run time it imports only its packages and its own
    // files, and of the API only the types it generated. sdk/generate.ts is the build step that reads the API.
    files: ['sdk/**/*.ts'],
    ignores: ['sdk/generate.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['../*', '../**'], message: 'sdk/ imports nothing of ours outside sdk/ (types come from sdk/schema.d.ts).' }],
        },
      ],
    },
  },
  {
    // Browser code (the widget and its voice client, bundled by api/widget/bundle.ts): nothing of ours outside web/ (files sit one folder down), no Node.
    files: ['web/**/*.ts'],
    rules: {
      'import/no-nodejs-modules': 'error',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../../*', '../../**'], message: 'web/ is browser code: it imports nothing of ours outside web/.' }] },
      ],
    },
  },
  {
    files: ['abl/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'abl/ has no clock.' }],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'abl/ has no clock.' }],
    },
  },
);
