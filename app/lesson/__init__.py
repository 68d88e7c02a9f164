"""The lesson: its text model, its steps by chapter (steps/), its page, its questions and its
handout."""
