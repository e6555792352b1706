// Checks Cypher statements with Neo4j's own parser and semantic analysis, as Neo4j 5 would.
//
// stdin: JSON list; each item is a statement string, or {"query": "...", "params": ["name", ...]}
// naming the parameters the statement is sent with (then a $x it uses but is not given is an
// error, as on a server). stdout: JSON list, one {"query", "errors", "warnings"} per item, in order.
// Function and procedure names are checked against Neo4j 5's built-ins (the package's schema dump
// of a Neo4j 5 server, without its plugins' apoc.*/gds.*), so a FalkorDB-only call is an error.
import { readFileSync } from 'node:fs';
import { isNotParamError, lintCypherQuery, testData } from '@neo4j-cypher/language-support';

const VERSION = 'CYPHER 5';
const ERROR = 1; // vscode DiagnosticSeverity.Error; 2 is Warning (deprecations)

const builtIns = (registry) =>
  Object.fromEntries(
    Object.entries(registry[VERSION]).filter(([name]) => !name.startsWith('apoc.') && !name.startsWith('gds.')),
  );
const schema = {
  defaultLanguage: VERSION,
  functions: { [VERSION]: builtIns(testData.mockSchema.functions) },
  procedures: { [VERSION]: builtIns(testData.mockSchema.procedures) },
};

const items = JSON.parse(readFileSync(0, 'utf8'));
if (!Array.isArray(items)) throw new Error('expected a JSON list of statements on stdin');
const results = items.map((item) => {
  const query = typeof item === 'string' ? item : item.query;
  const params = typeof item === 'string' ? null : item.params;
  const itemSchema = params ? { ...schema, parameters: Object.fromEntries(params.map((p) => [p, null])) } : schema;
  let diagnostics = lintCypherQuery(query, itemSchema).diagnostics;
  // Without the parameters it is sent with, a statement is only checked for its syntax and names.
  if (!params) diagnostics = diagnostics.filter(isNotParamError);
  const describe = (d) => `${d.message} (at offset ${d.offsets.start}: ${JSON.stringify(query.slice(d.offsets.start, d.offsets.end))})`;
  return {
    query,
    errors: diagnostics.filter((d) => d.severity === ERROR).map(describe),
    warnings: diagnostics.filter((d) => d.severity !== ERROR).map(describe),
  };
});
process.stdout.write(JSON.stringify(results, null, 1) + '\n');
