"""Training tiny encoders on toy tasks: the tasks and their tokenizer, the token classifier, the
trainer, jobs a page drives a chunk at a time, presets, and how long training would take.

Importing this package imports none of its modules: loading a checkpoint (encoder.io) needs the
tasks, their tokenizer and the classifier, never the trainer."""
