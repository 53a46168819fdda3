"""Planning: loaded cases become the wire jobs of `bridge.contract` (evaluators resolved,
judges chosen, requests built). The worker never imports it."""
