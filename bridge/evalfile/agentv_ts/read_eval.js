// Reads an AgentV TypeScript eval file's config as AgentV's loader does
// (packages/core/src/evaluation/loaders/ts-eval-loader.ts): the module's default export,
// a plain object or a defineEval() suite, lowered to the YAML suite's snake_case keys.
// Writes one JSON line: {"config": ...}, or {"problem": "..."} saying what is wrong.
// `agentv` resolves to the package installed beside the file, else to evalrelay's
// stand-in (agentv_sdk.cjs), through both `import` and `require`.
const { pathToFileURL } = require("url");
const Module = require("module");

const SDK_EVAL_SUITE_SYMBOL = Symbol.for("agentv/eval-suite");
const SDK_TO_EVAL_YAML_OBJECT_SYMBOL = Symbol.for("agentv/to-eval-yaml-object");
const KNOWN_SNAKE_CASE_KEYS = {
  afterAll: "after_all",
  afterEach: "after_each",
  argsMatch: "args_match",
  beforeAll: "before_all",
  beforeEach: "before_each",
  cachePath: "cache_path",
  budgetUsd: "budget_usd",
  conversationId: "conversation_id",
  defaultTest: "default_test",
  dependsOn: "depends_on",
  expectedOutput: "expected_output",
  failOnError: "fail_on_error",
  inputFiles: "input_files",
  keepWorkspaces: "keep_workspaces",
  maxConcurrency: "max_concurrency",
  maxCostUsd: "max_cost_usd",
  maxDurationMs: "max_duration_ms",
  maxToolCalls: "max_tool_calls",
  onDependencyFailure: "on_dependency_failure",
  onTurnFailure: "on_turn_failure",
  outputPath: "output_path",
  readOnly: "read_only",
  reasoningEffort: "reasoning_effort",
  rubricPrompt: "rubric_prompt",
  skipDefaults: "skip_defaults",
  timeoutMs: "timeout_ms",
  timeoutSeconds: "timeout_seconds",
  useTarget: "use_target",
  windowSize: "window_size",
};
const DEFAULT_ONLY =
  "AgentV reads an eval file's default export only: write `export default { name, " +
  "providers, prompts, tests }` (or `export default defineEval({...})`)";

class Problem extends Error {}

function resolveAgentv(shim) {
  const shimUrl = pathToFileURL(shim).href;
  const hook =
    "export async function resolve(specifier, context, next) {" +
    ' if (specifier === "agentv") {' +
    "  try { return await next(specifier, context); }" +
    `  catch { return { url: ${JSON.stringify(shimUrl)}, shortCircuit: true }; }` +
    " }" +
    " return next(specifier, context);" +
    "}";
  Module.register(`data:text/javascript,${encodeURIComponent(hook)}`);
  const resolveFilename = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    if (request !== "agentv") return resolveFilename.call(this, request, ...rest);
    try {
      return resolveFilename.call(this, request, ...rest);
    } catch {
      return shim;
    }
  };
}

function defaultExport(imported) {
  // A TypeScript file tsx compiles to CommonJS comes back as {default: module.exports}.
  const exports = imported.default && imported.default.__esModule ? imported.default : imported;
  return { config: exports.default, names: Object.keys(exports).filter((n) => n !== "default") };
}

function isPlainObject(value) {
  return !!value && typeof value === "object" && !Array.isArray(value);
}

function describe(value) {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "null";
  return `a ${typeof value}`;
}

// AgentV's evaluate() API (a task function, a spec file, an inline target definition)
// runs in AgentV's own process: nothing a worker can be sent.
function programmatic(config) {
  if (typeof config.task === "function") return "a `task` function";
  if (typeof config.specFile === "string") return "`specFile`";
  const target = config.target;
  if (isPlainObject(target) && typeof target.name === "string") {
    return "an inline `target` definition";
  }
  return null;
}

function lower(value, path) {
  if (value instanceof RegExp) return value.source;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "function") {
    throw new Problem(
      `${path} is a JavaScript function, which evalrelay cannot send to its workers; ` +
        "write data there (a script grader runs code: graders.script([...]))",
    );
  }
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "symbol") {
    throw new Problem(`${path} is a symbol; write data there`);
  }
  if (Array.isArray(value)) return value.map((item, i) => lower(item, `${path}[${i}]`));
  if (value && typeof value === "object") {
    const result = {};
    for (const [key, nested] of Object.entries(value)) {
      if (nested === undefined) continue;
      const lowered = KNOWN_SNAKE_CASE_KEYS[key] ?? key;
      result[lowered] = lower(nested, `${path}.${key}`);
      // A RegExp written where a pattern goes keeps its flags, as graders.regex keeps them.
      if (nested instanceof RegExp && nested.flags && value.flags === undefined) {
        result.flags = nested.flags;
      }
    }
    return result;
  }
  return value;
}

function lowerConfig(config) {
  const lowered = lower(config, "default export");
  const { budget_usd: budgetUsd, repeat, ...rest } = lowered;
  if (
    repeat !== undefined &&
    (typeof repeat !== "number" || !Number.isInteger(repeat) || repeat < 1)
  ) {
    throw new Problem(
      "`repeat` must be a positive integer (AgentV removed the object form of repeat)",
    );
  }
  if (budgetUsd === undefined && repeat === undefined) return rest;
  const options = isPlainObject(rest.evaluate_options) ? { ...rest.evaluate_options } : {};
  if (budgetUsd !== undefined && options.budget_usd === undefined) options.budget_usd = budgetUsd;
  if (repeat !== undefined && options.repeat === undefined) options.repeat = repeat;
  return { ...rest, evaluate_options: options };
}

async function read(path, shim) {
  resolveAgentv(shim);
  let imported;
  try {
    imported = await import(pathToFileURL(path).href);
  } catch (error) {
    const said = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new Problem(`importing the module failed: ${said.split("\n")[0]}`);
  }
  const { config, names } = defaultExport(imported);
  if (config === undefined || config === null) {
    const named = names.find((n) => ["config", "evalConfig"].includes(n));
    const hint = named ? ` (it exports \`${named}\`: write \`export default ${named}\`)` : "";
    throw new Problem(`no default export${hint}; ${DEFAULT_ONLY}`);
  }
  const suite = config[SDK_EVAL_SUITE_SYMBOL] === true;
  if (!suite && !isPlainObject(config)) {
    throw new Problem(`the default export is ${describe(config)}, not an eval config; ${DEFAULT_ONLY}`);
  }
  if (suite && typeof config[SDK_TO_EVAL_YAML_OBJECT_SYMBOL] === "function") {
    return lowerConfig(config[SDK_TO_EVAL_YAML_OBJECT_SYMBOL]());
  }
  const api = programmatic(config);
  if (api) {
    throw new Problem(
      `the default export is a config for AgentV's evaluate() API (${api}), which runs in ` +
        "AgentV's own process; write the suite as data: providers, prompts and tests with vars and assert",
    );
  }
  return lowerConfig(config);
}

const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const [path, shim] = JSON.parse(Buffer.concat(chunks).toString());
  let said;
  try {
    said = { config: await read(path, shim) };
  } catch (error) {
    said = { problem: error instanceof Error ? error.message : String(error) };
  }
  process.stdout.write(`\n${JSON.stringify(said)}\n`);
  process.exit(0);
});
