import { mutantCases } from './matrix-cases.js';

// The self-test, half two: the other half of the mutant table (see matrix-cases.ts).
mutantCases(1);
