// promptfoo's `transform` (inline JavaScript or a file:// module), run by evalrelay's
// worker before an evaluator grades the answer: {output, prompt, config} on standard
// input, {output} (or {error}) on standard output.
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const data = JSON.parse(Buffer.concat(chunks).toString());
  const cfg = data.config || {};
  const vars = cfg.vars && typeof cfg.vars === "object" ? cfg.vars : {};
  const context = { vars, prompt: data.prompt };
  let result;
  try {
    let fn;
    if (cfg.file) {
      const mod = require(require("path").resolve(cfg.file));
      fn = cfg.function ? mod[cfg.function] : typeof mod === "function" ? mod : mod.default;
      if (typeof fn !== "function") throw new Error(`${cfg.file} exports no function ${cfg.function || "(default)"}`);
    } else {
      const code = String(cfg.code);
      fn = new Function("output", "context", "process", code.includes("\n") ? code : `return ${code}`);
    }
    result = await fn(data.output, context, process);
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: `the transform threw: ${err && err.message}` }));
    return;
  }
  if (result === null || result === undefined) {
    process.stdout.write(JSON.stringify({ error: "the transform returned no value" }));
    return;
  }
  process.stdout.write(JSON.stringify({ output: result }));
});
