// A promptfoo model-graded assertion whose grader is a provider file of the config's
// (`provider: file://providers/judge.js`), run by evalrelay's worker as a script
// evaluator: the case on standard input, a {pass, score, reason} verdict on standard
// output. The provider is loaded as promptfoo loads one (a class, constructed with its
// id and config, or an object with callApi), asked with a chat prompt (JSON text, as
// promptfoo hands graders theirs), and its reply read as promptfoo reads a grader's:
// `pass` (true when absent), `score` (the pass as 1 or 0 when absent), failed below
// `threshold`.
const { pathToFileURL } = require("url");
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const data = JSON.parse(Buffer.concat(chunks).toString());
  const cfg = data.config || {};
  const say = (v) => process.stdout.write(JSON.stringify(v));
  const vars = cfg.pf_vars && typeof cfg.pf_vars === "object" ? cfg.pf_vars : {};
  const prompt = JSON.stringify([
    { role: "system", content: cfg.pf_grader_system },
    { role: "user", content: `<Output>\n${data.output || ""}\n</Output>\n<Rubric>\n${cfg.pf_rubric}\n</Rubric>` },
  ]);
  let reply;
  try {
    const imported = await import(pathToFileURL(cfg.pf_provider).href);
    const found = [imported?.default?.default, imported?.default, imported].find(Boolean);
    const options = { id: `file://${cfg.pf_provider}`, config: cfg.pf_provider_config || {} };
    const provider =
      typeof found === "function" ? new found(options)
      : typeof found?.callApi === "function" ? found
      : null;
    if (!provider) throw new Error("the file exports no provider class nor callApi");
    const response = await provider.callApi(prompt, { vars, prompt: { raw: prompt } });
    if (response?.error) throw new Error(String(response.error));
    reply = response?.output;
  } catch (err) {
    say({ pass: false, score: 0, reason: `grader provider failed: ${err.message}` });
    return;
  }
  let parsed = reply;
  if (typeof reply === "string") {
    const start = reply.indexOf("{"), end = reply.lastIndexOf("}");
    try {
      parsed = JSON.parse(start >= 0 && end > start ? reply.slice(start, end + 1) : reply);
    } catch {
      say({ pass: false, score: 0, reason: `grader reply is not JSON: ${reply.slice(0, 200)}` });
      return;
    }
  }
  let pass = parsed?.pass ?? true;
  if (typeof pass !== "boolean") pass = /^(true|yes|pass|y)$/i.test(String(pass));
  let score = typeof parsed?.score === "number" ? parsed.score : Number(pass);
  const threshold = cfg.pf_threshold;
  if (typeof threshold === "number") pass = pass && score >= threshold;
  say({ pass, score: Math.min(Math.max(score, 0), 1), reason: String(parsed?.reason || "") });
});
