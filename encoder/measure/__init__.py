"""Live measurement on this machine: clocks and budgets (timing), each operation's time in a
forward pass (op_times), time against length (scaling), what training keeps for backward
(train_memory), gradient norms at initialisation (gradients), and all of them within one budget
(cost). Builds on core and inspect; nothing below imports it."""
