// promptfoo's javascript assertion, run by evalrelay's worker as a script evaluator:
// the case on standard input, a {pass, score, reason} verdict on standard output.
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const data = JSON.parse(Buffer.concat(chunks).toString());
  const cfg = data.config || {};
  const output = data.output || "";
  const vars = cfg.pf_vars && typeof cfg.pf_vars === "object" ? cfg.pf_vars : {};
  const prompt = (data.input || []).map((m) => String(m.content)).join(" ");
  const context = { vars, prompt, test: { vars } };
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
    process.stdout.write(JSON.stringify({ pass: false, score: 0, reason: `the code threw: ${err.message}` }));
    return;
  }
  const threshold = cfg.pf_threshold;
  let pass;
  if (typeof result === "boolean") pass = result;
  else if (typeof result === "number") pass = threshold === undefined || threshold === null ? result > 0 : result >= threshold;
  else if (result && typeof result === "object" && "pass" in result) pass = Boolean(result.pass);
  else pass = false;
  process.stdout.write(JSON.stringify({ pass, score: pass ? 1 : 0, reason: `returned ${JSON.stringify(result)}` }));
});
