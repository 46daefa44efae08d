/**
 * Distils the shipped sentence model into its static vectors (lib/knowledge/local-model.ts)
 * once, before many processes would each do it at their first question: the test suite and the
 * image build run it. Prints how long it took, or that the vectors were there already.
 */
import { localModel } from '../lib/knowledge/local-model.js';

const started = Date.now();
if (!(await localModel.load())) {
  console.error('The local sentence model could not be loaded (EMBEDDINGS=off?).');
  process.exit(process.env.EMBEDDINGS === 'off' ? 0 : 1);
}
console.log(`Local sentence model ready: ${localModel.dims} dimensions (${Date.now() - started} ms)`);
