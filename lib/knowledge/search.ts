/**
 * Knowledge search, as the rest of the service imports it: the lexical statement and its
 * constants (lexical-statement.ts), running it (lexical-search.ts), fusing the lists
 * (fusion.ts), the chunks' texts and snippets (chunk-texts.ts). A whole search with every
 * signal is lib/knowledge/retrieve.ts.
 */
export * from './lexical-statement.js';
export * from './lexical-search.js';
export * from './fusion.js';
export * from './chunk-texts.js';
