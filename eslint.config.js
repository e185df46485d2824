// typescript-eslint's recommended rules, syntax only (not type-aware): `tsc` already checks types.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig({ ignores: ['dist/', 'node_modules/', 'test-results/', 'coverage/'] }, js.configs.recommended, tseslint.configs.recommended, {
  // Everything here runs on Node: the CLI, the fixtures it spawns, the tests.
  languageOptions: { globals: globals.node },
  rules: {
    // A leading underscore marks a parameter or binding left unused on purpose (a policy
    // signature, a property split off with rest syntax).
    '@typescript-eslint/no-unused-vars': [
      'error',
      { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
    ],
    // Matching control characters is the job of the sanitizer and of the tests that check it.
    'no-control-regex': 'off',
  },
});
