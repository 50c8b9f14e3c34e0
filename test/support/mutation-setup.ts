/**
 * Setup of the mutation runs only (vitest.mutate.config.ts): a property that fails has killed its
 * mutant, and shrinking its counterexample against DynamoDB Local would cost more than the rest
 * of that mutant's run. The normal suite keeps shrinking, for people reading a failure. A fixed
 * seed: a mutant is killed or survives the same way on every run (incremental results stay true),
 * and a property too weak to kill it shows as a survivor every time rather than now and then.
 */
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true, seed: 20_261_201 });
