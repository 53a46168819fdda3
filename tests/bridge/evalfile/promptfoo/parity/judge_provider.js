// A grader given as a provider file, for test_parity.py: it passes an output holding
// the rubric's first word (score 0.9), else fails it (score 0.2).
class JudgeProvider {
  constructor(options) {
    this.options = options;
  }
  id() {
    return this.options.id;
  }
  async callApi(prompt) {
    const user = JSON.parse(prompt).find((m) => m.role === "user").content;
    const output = user.split("<Output>\n")[1].split("\n</Output>")[0];
    const wanted = user.split("<Rubric>\n")[1].split(" ")[0];
    const pass = output.includes(wanted);
    const reply = { pass, score: pass ? 0.9 : 0.2, reason: `looked for ${wanted}` };
    return { output: JSON.stringify(reply) };
  }
}
module.exports = JudgeProvider;
