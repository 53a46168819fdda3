// evalrelay's stand-in for the `agentv` package, for eval files that import it
// (`import { graders, defineEval } from 'agentv'`) where AgentV is not installed. Each
// helper returns the plain object AgentV's own returns (packages/sdk/src/graders.ts and
// eval.ts); types are erased by tsx. CommonJS, so both `import` and `require` load it.
"use strict";

const EVAL_SUITE_SYMBOL = Symbol.for("agentv/eval-suite");
const TO_EVAL_YAML_OBJECT_SYMBOL = Symbol.for("agentv/to-eval-yaml-object");

const KNOWN_SNAKE_CASE_KEYS = {
  afterAll: "after_all",
  afterEach: "after_each",
  argsMatch: "args_match",
  beforeAll: "before_all",
  beforeEach: "before_each",
  budgetUsd: "budget_usd",
  conversationId: "conversation_id",
  dependsOn: "depends_on",
  expectedOutput: "expected_output",
  explorationTolerance: "exploration_tolerance",
  failOnError: "fail_on_error",
  inputFiles: "input_files",
  keepWorkspaces: "keep_workspaces",
  maxCalls: "max_calls",
  maxCostUsd: "max_cost_usd",
  maxDurationMs: "max_duration_ms",
  maxInput: "max_input",
  maxLlmCalls: "max_llm_calls",
  maxOutput: "max_output",
  maxSteps: "max_steps",
  maxTokens: "max_tokens",
  maxToolCalls: "max_tool_calls",
  minScore: "min_score",
  onDependencyFailure: "on_dependency_failure",
  onTurnFailure: "on_turn_failure",
  outputPath: "output_path",
  readOnly: "read_only",
  reasoningEffort: "reasoning_effort",
  rubricPrompt: "rubric_prompt",
  scoreRange: "score_range",
  scoreRanges: "score_ranges",
  skipDefaults: "skip_defaults",
  targetExplorationRatio: "target_exploration_ratio",
  timeoutMs: "timeout_ms",
  timeoutSeconds: "timeout_seconds",
  useTarget: "use_target",
  defaultTest: "default_test",
  windowSize: "window_size",
};

// ---- graders: each helper is an `assert` entry ------------------------------------

function withCommon(config, options = {}) {
  return {
    ...(options.metric !== undefined ? { metric: options.metric } : {}),
    ...config,
    ...(options.weight !== undefined ? { weight: options.weight } : {}),
    ...(options.required !== undefined ? { required: options.required } : {}),
    ...(options.minScore !== undefined ? { minScore: options.minScore } : {}),
    ...(options.negate !== undefined ? { negate: options.negate } : {}),
    ...(options.transform !== undefined ? { transform: options.transform } : {}),
  };
}

function containsGrader(value, options) {
  return withCommon({ type: "contains", value }, options);
}

function equalsGrader(value, options) {
  return withCommon({ type: "equals", value }, options);
}

function exactGrader(value, options) {
  return equalsGrader(value, options);
}

function regexGrader(pattern, options = {}) {
  const value = pattern instanceof RegExp ? pattern.source : pattern;
  const flags = options.flags ?? (pattern instanceof RegExp ? pattern.flags : undefined);
  return withCommon({ type: "regex", value, ...(flags ? { flags } : {}) }, options);
}

function isJsonGrader(options) {
  return withCommon({ type: "is-json" }, options);
}

function jsonGrader(options) {
  return isJsonGrader(options);
}

function llmRubricGrader(valueOrCriteria, options = {}) {
  return withCommon(
    {
      type: "llm-rubric",
      ...(valueOrCriteria !== undefined ? { value: valueOrCriteria } : {}),
      ...(options.prompt !== undefined ? { prompt: options.prompt } : {}),
      ...(options.provider !== undefined ? { provider: options.provider } : {}),
      ...(options.config !== undefined ? { config: options.config } : {}),
      ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    },
    options,
  );
}

function scriptGrader(command, options = {}) {
  return withCommon(
    {
      type: "script",
      command,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.provider !== undefined ? { provider: options.provider } : {}),
      ...(options.config !== undefined ? { config: options.config } : {}),
    },
    options,
  );
}

function codeGrader(command, options = {}) {
  return scriptGrader(command, options);
}

const graders = Object.freeze({
  contains: containsGrader,
  equals: equalsGrader,
  exact: exactGrader,
  regex: regexGrader,
  isJson: isJsonGrader,
  json: jsonGrader,
  llmRubric: llmRubricGrader,
  codeGrader,
  script: scriptGrader,
  scriptGrader,
});

// ---- defineEval: the suite, branded with its lowering to the YAML contract --------

function lowerEvalYamlValue(value) {
  if (Array.isArray(value)) {
    return value.map((item) => lowerEvalYamlValue(item));
  }
  if (value && typeof value === "object") {
    const result = {};
    for (const [key, nestedValue] of Object.entries(value)) {
      result[KNOWN_SNAKE_CASE_KEYS[key] ?? key] = lowerEvalYamlValue(nestedValue);
    }
    return result;
  }
  return value;
}

function validateRepeatValue(value, location) {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new Error(
      `defineEval() expects ${location} to be a positive integer; object-shaped repeat authoring has been removed.`,
    );
  }
}

function toEvalYamlObject(definition) {
  const lowered = lowerEvalYamlValue(definition);
  const { budget_usd: budgetUsd, repeat, ...rest } = lowered;
  validateRepeatValue(repeat, "repeat");
  if (budgetUsd === undefined && repeat === undefined) return lowered;
  const options =
    lowered.evaluate_options &&
    typeof lowered.evaluate_options === "object" &&
    !Array.isArray(lowered.evaluate_options)
      ? { ...lowered.evaluate_options }
      : {};
  if (budgetUsd !== undefined && options.budget_usd === undefined) options.budget_usd = budgetUsd;
  if (repeat !== undefined && options.repeat === undefined) options.repeat = repeat;
  return { ...rest, evaluate_options: options };
}

const has = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

function validateTopLevelRuntimeFields(definition) {
  if (has(definition, "input")) {
    throw new Error(
      "defineEval() does not accept top-level 'input'. Use prompts with default test vars or tests[].vars instead.",
    );
  }
  if (has(definition, "preprocessors")) {
    throw new Error(
      "defineEval() does not accept top-level 'preprocessors'. Use defaultTest.options.transform or assertion-level transform instead.",
    );
  }
  if (has(definition, "graders")) {
    throw new Error(
      "defineEval() no longer accepts top-level 'graders'. Put grader providers in 'providers' and select them with defaults.grader, defaultTest.options.provider, tests[].options.provider, or assertion provider.",
    );
  }
  if (has(definition, "experiment")) {
    throw new Error(
      "defineEval() no longer accepts top-level 'experiment'. Use tags: { experiment: '<name>' } or CLI --experiment.",
    );
  }
  for (const field of ["model", "policy", "execution", "runs", "earlyExit"]) {
    if (has(definition, field)) {
      throw new Error(
        `defineEval() does not accept top-level '${field}'. Put target overrides in target and repeat controls under repeat, which serializes to evaluate_options.repeat.`,
      );
    }
  }
  validateRepeatValue(definition.repeat, "repeat");
  if (Array.isArray(definition.tests)) {
    definition.tests.forEach((test, index) => {
      if (test && typeof test === "object" && has(test, "input")) {
        throw new Error(
          `defineEval() does not accept tests[${index}].input. Use prompts with tests[].vars instead.`,
        );
      }
      const options = test && test.options;
      if (options && typeof options === "object" && !Array.isArray(options)) {
        validateRepeatValue(options.repeat, `tests[${index}].options.repeat`);
      }
    });
  }
  validateProviderSurface(definition);
}

function validateProviderSurface(definition) {
  const visit = (value, path) => {
    if (Array.isArray(value)) {
      value.forEach((entry, index) => visit(entry, `${path}[${index}]`));
      return;
    }
    if (!value || typeof value !== "object") return;
    if (path.endsWith(".defaults") && has(value, "target")) {
      throw new Error("defineEval() no longer accepts 'defaults.target'. Use 'defaults.provider'.");
    }
    if (has(value, "target")) {
      throw new Error(
        `defineEval() no longer accepts '${path}.target'. Use '${path}.provider' or '${path}.providers' instead.`,
      );
    }
    if (has(value, "targets")) {
      throw new Error(
        `defineEval() no longer accepts '${path}.targets'. Use '${path}.providers' instead.`,
      );
    }
    for (const [key, nested] of Object.entries(value)) visit(nested, `${path}.${key}`);
  };
  visit(definition, "eval");
}

function defineEval(definition) {
  validateTopLevelRuntimeFields(definition);
  if (definition[EVAL_SUITE_SYMBOL] === true) return definition;
  Object.defineProperties(definition, {
    [EVAL_SUITE_SYMBOL]: { value: true, enumerable: false },
    [TO_EVAL_YAML_OBJECT_SYMBOL]: {
      value: () => toEvalYamlObject(definition),
      enumerable: false,
    },
  });
  return definition;
}

module.exports = {
  codeGrader,
  containsGrader,
  defineEval,
  equalsGrader,
  exactGrader,
  graders,
  isJsonGrader,
  jsonGrader,
  llmRubricGrader,
  regexGrader,
  scriptGrader,
  toEvalYamlObject,
};
