"""Tables read from a Trace (and the config or weights): the shape ledger and costs, norm
statistics, head metrics, attention steps, head ablation, activations, comparisons of two traces,
activation patching and its cone (patching/), the lesson's rules (which read a Trace and check it
against a NumPy block), and the bounds on a run. Live measurement (times, memory, gradients) is
encoder.measure."""
