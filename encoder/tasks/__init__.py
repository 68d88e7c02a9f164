"""Toy tasks and the model that learns them: the tasks (tasks), their tokenizer (task_tokenizer)
and the token classifier (classifier). Imports only core, so that both encoder.io (loading a task
model) and encoder.train (training one) use them, and loading never imports the trainer."""
