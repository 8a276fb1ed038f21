// Lints Cypher statements with Neo4j's own parser and semantic analyser
// (@neo4j-cypher/language-support). Usage: node cypher_lint.mjs <path to the package's ESM index.js>
// Reads a JSON array of statements on stdin; prints a JSON array of {index, diagnostics} where
// diagnostics are the errors and warnings left after dropping "Parameter $x is not defined".
import { pathToFileURL } from 'node:url';

const modulePath = process.argv[2];
const { lintCypherQuery, isNotParamError, testData } = await import(pathToFileURL(modulePath).href);
const schema = {
  procedures: testData.mockSchema.procedures,
  functions: testData.mockSchema.functions,
};
let input = '';
for await (const chunk of process.stdin) input += chunk;
const statements = JSON.parse(input);
const out = statements.map((query, index) => {
  const { diagnostics } = lintCypherQuery(query, schema);
  return {
    index,
    diagnostics: diagnostics.filter((d) => isNotParamError(d)).map((d) => ({
      severity: d.severity === 1 ? 'error' : d.severity === 2 ? 'warning' : 'info',
      message: d.message.split('\n')[0],
      offset: d.offsets ? d.offsets.start : null,
    })),
  };
});
process.stdout.write(JSON.stringify(out));
