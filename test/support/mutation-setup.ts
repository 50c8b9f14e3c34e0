/**
 * Setup of the mutation runs only (vitest.mutate.config.ts): a property that fails has killed its
 * mutant, and shrinking its counterexample against DynamoDB Local would cost more than the rest
 * of that mutant's run. The normal suite keeps shrinking, for people reading a failure.
 */
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true });
