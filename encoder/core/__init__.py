"""The encoder itself: its config, the one description of its block, its hook names, the model,
and the capture that records a forward pass. Imports nothing from the other subpackages."""
