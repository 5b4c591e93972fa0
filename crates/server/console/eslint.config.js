// ESLint's flat config for the console: the recommended rules everywhere; the page's code
// (app.js, lib/) runs in the browser, the tests and this file in node. The vendored
// charting library is someone else's minified code and is not linted.
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['vendor/', 'node_modules/'] },
  js.configs.recommended,
  {
    files: ['app.js', 'lib/**/*.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      // uPlot is loaded by its own <script> tag before app.js.
      globals: { ...globals.browser, uPlot: 'readonly' },
    },
  },
  {
    files: ['tests/**/*.js', 'eslint.config.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.node } },
  },
  {
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
      'no-var': 'error',
      'prefer-const': 'error',
    },
  },
];
