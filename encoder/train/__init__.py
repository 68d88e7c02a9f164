"""Training tiny encoders on the toy tasks of encoder.tasks: the trainer, jobs a page drives a
chunk at a time, presets, and how long training would take. Nothing in encoder.io imports it."""
