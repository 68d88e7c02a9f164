"""Tables and measures read from a Trace (and the config or weights): the shape ledger and costs,
norm statistics, head metrics, attention steps, head ablation, activations, and the bounds on a
run."""
