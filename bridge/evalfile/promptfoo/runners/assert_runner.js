// promptfoo's javascript assertion, run by evalrelay's worker as a script evaluator:
// the case on standard input, a {pass, score, reason} verdict on standard output.
// Its return is read as promptfoo reads it: a boolean, a number (the score; a pass
// above 0, or at `threshold`), or a grading result {pass, score, reason} (its own pass
// and score). `not-javascript` turns the pass around and keeps the score; code that
// throws, or returns anything else, fails with score 0.
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const data = JSON.parse(Buffer.concat(chunks).toString());
  const cfg = data.config || {};
  const output = data.output || "";
  const vars = cfg.pf_vars && typeof cfg.pf_vars === "object" ? cfg.pf_vars : {};
  const prompt = (data.input || []).map((m) => String(m.content)).join(" ");
  const context = { vars, prompt, test: { vars } };
  const inverse = Boolean(cfg.pf_inverse);
  const threshold = cfg.pf_threshold === null ? undefined : cfg.pf_threshold;
  const say = (v) => process.stdout.write(JSON.stringify(v));
  let result;
  try {
    if (cfg.pf_file) {
      const mod = require(cfg.pf_file);
      const fn = cfg.pf_function ? mod[cfg.pf_function] : typeof mod === "function" ? mod : mod.default;
      result = await fn(output, context);
    } else {
      let code = cfg.pf_code.trimEnd();
      if (!code.includes("\n")) {
        const t = code.trim().replace(/;+\s*$/, "");
        code = /^(const|let|var)\s/.test(t) ? t : `return ${t}`;
      }
      result = await new Function("output", "context", code)(output, context);
    }
  } catch (err) {
    say({ pass: false, score: 0, reason: `the code threw: ${err.message}` });
    return;
  }
  if (typeof result === "boolean") {
    const pass = result !== inverse;
    say({ pass, score: pass ? 1 : 0, reason: `returned ${result}` });
  } else if (typeof result === "number") {
    const raw = threshold === undefined ? result > 0 : result >= threshold;
    say({ pass: raw !== inverse, score: result, reason: `returned ${result}` });
  } else if (
    result && typeof result === "object" && typeof result.pass === "boolean" &&
    typeof result.score === "number" && typeof result.reason === "string"
  ) {
    say({ pass: result.pass !== inverse, score: result.score, reason: result.reason });
  } else {
    say({ pass: false, score: 0, reason: `returned ${JSON.stringify(result)}: not a boolean, number or grading result` });
  }
});
