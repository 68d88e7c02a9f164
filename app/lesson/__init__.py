"""The lesson: its content (steps over the live model), its page and its handout."""
