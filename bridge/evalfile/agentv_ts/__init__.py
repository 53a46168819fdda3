"""AgentV's TypeScript eval files (`*.eval.ts`, `*.eval.mts`, and `*.eval.js`,
`*.eval.mjs`): a module whose default export is the suite, read as AgentV reads it and
handed to the same translator as the YAML suite."""
